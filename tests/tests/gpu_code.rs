//! Snapshots of the generated GPU code, validated by the vendor tools, one test per
//! architecture (they build in parallel):
//!
//! | test   | builds | checks                                                                        |
//! |--------|--------|-------------------------------------------------------------------------------|
//! | sm_90  | PTX    | no unresolved externs; ptxas accepts it; snapshots: header + entry prototypes, ptxas resources per entry (registers, stack, spills) |
//! | sm_80  | PTX    | `.target sm_80`; the same entries as sm_90; ptxas accepts every entry but 24 of the 25 collective variants (see [`SM80_COLLECTIVE`]) |
//! | gfx942, gfx950 | code objects | llvm-readelf's kernel metadata per kernel (registers, spills, LDS, scratch), snapshot |
//!
//! Needs the GPU toolchain (`bash scripts/setup.sh`); without it these tests fail and say so.
//! Bless changes with `cargo insta review` (or `INSTA_UPDATE=always cargo test -p zipcoll-tests`).

use zipcoll_gpu_build::{build, GpuArch, Toolchain};
use zipcoll_tests::{amd_kernel_summary, ptx_interface, ptxas_resources, PtxInterface};

fn toolchain() -> Toolchain {
    Toolchain::find().unwrap_or_else(|e| panic!("{e}"))
}

/// The module for `arch`, built, with its interface and ptxas's resource lines (one per entry).
fn nvidia_module(arch: GpuArch) -> (String, PtxInterface, String) {
    let tc = toolchain();
    let path = build(&tc, arch).unwrap_or_else(|e| panic!("{e}"));
    let ptx = std::fs::read_to_string(&path).expect("the build wrote the PTX module");
    let interface = ptx_interface(&ptx);
    let report = tc.ptxas_verbose(&path, arch.cpu()).unwrap_or_else(|e| panic!("{e}"));
    let resources = ptxas_resources(&report);
    assert_eq!(
        resources.lines().count(),
        interface.entries.len(),
        "one ptxas resource line per entry:\n{report}"
    );
    (ptx, interface, resources)
}

#[test]
fn ptx_sm90_matches_snapshots_and_passes_ptxas() {
    let (ptx, interface, resources) = nvidia_module(GpuArch::Sm90);
    assert!(
        interface.entries.len() >= 50,
        "expected an entry per kernel x dtype x op, found {}",
        interface.entries.len()
    );
    assert!(
        !ptx.contains(".extern .func"),
        "unresolved extern functions in the PTX module"
    );
    insta::assert_snapshot!("ptx_sm90_interface", interface.summary());
    insta::assert_snapshot!("ptxas_sm90_resources", resources);
}

/// The one collective variant ptxas compiles for sm_80. Every `zc_collective` variant is the
/// same generic body over another dtype x op, while the per-dtype arithmetic and codecs it
/// calls are also in the (much smaller) codec and reduce kernels, which are all compiled; the
/// fp8 variant is the one whose conversions differ most between architectures.
const SM80_COLLECTIVE: &str = "zc_collective__f8e4m3__sum";

#[test]
fn ptx_sm80_passes_ptxas_with_the_same_entries() {
    let tc = toolchain();
    let path = build(&tc, GpuArch::Sm80).unwrap_or_else(|e| panic!("{e}"));
    let ptx = std::fs::read_to_string(&path).expect("the build wrote the PTX module");
    assert!(ptx.contains(".target sm_80"), "the sm_80 build targets sm_80");
    let interface = ptx_interface(&ptx);
    let sm90 = build(&tc, GpuArch::Sm90).unwrap_or_else(|e| panic!("{e}"));
    let sm90 = ptx_interface(&std::fs::read_to_string(sm90).expect("the sm_90 module"));
    let (mut a, mut b) = (interface.names(), sm90.names());
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b, "sm_80 and sm_90 export the same kernels");
    // ptxas over every entry but the collective's other variants (a fifth of the module's time)
    let entries: Vec<&str> = a
        .iter()
        .copied()
        .filter(|e| !e.starts_with("zc_collective__") || *e == SM80_COLLECTIVE)
        .collect();
    assert!(entries.contains(&SM80_COLLECTIVE), "{SM80_COLLECTIVE} is an entry");
    let report = tc
        .ptxas_entries(&path, "sm_80", &entries)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        ptxas_resources(&report).lines().count(),
        entries.len(),
        "one ptxas resource line per entry compiled:\n{report}"
    );
}

fn amd_code_object_matches_snapshot(arch: GpuArch) {
    let tc = toolchain();
    let object = build(&tc, arch).unwrap_or_else(|e| panic!("{e}"));
    let notes = tc.readelf_notes(&object).unwrap_or_else(|e| panic!("{e}"));
    let summary = amd_kernel_summary(&notes);
    assert!(
        summary.starts_with(&format!("target amdgcn-amd-amdhsa--{}", arch.cpu())),
        "{summary}"
    );
    assert!(
        summary.lines().count() > 50,
        "expected a kernel per variant:\n{summary}"
    );
    insta::assert_snapshot!(format!("amd_{}_kernels", arch.cpu()), summary);
}

#[test]
fn amd_gfx942_code_object_matches_snapshot() {
    amd_code_object_matches_snapshot(GpuArch::Gfx942);
}

#[test]
fn amd_gfx950_code_object_matches_snapshot() {
    amd_code_object_matches_snapshot(GpuArch::Gfx950);
}
