#!/usr/bin/env bash
# zipcoll's test suite, as CI runs it: installs the GPU toolchain if missing (so the
# ptxas-validated PTX and AMD snapshot tests run), then formatting, lints and every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
