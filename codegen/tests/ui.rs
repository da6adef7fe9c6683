//! Compile-fail tests: each `ui/*.rs` misuses `#[kernel]` and must fail with the message in its
//! `.stderr` file. Regenerate those with `TRYBUILD=overwrite cargo test -p zipcoll-codegen --test ui`
//! and read the diff.

#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
