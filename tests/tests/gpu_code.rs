//! Snapshots of the generated GPU code, validated by the vendor tools: normalized PTX per
//! kernel entry and ptxas resource lines for sm_90, ptxas acceptance for sm_80, and the kernel
//! metadata of the gfx942 and gfx950 code objects.
//!
//! Needs the GPU toolchain (`bash scripts/setup.sh`); without it these tests fail and say so.
//! Bless changes with `cargo insta review` (or `INSTA_UPDATE=always cargo test -p zipcoll-tests`).

use zipcoll_gpu_build::{build, GpuArch, Toolchain};
use zipcoll_tests::{amd_kernel_summary, ptx_entries, ptxas_resources};

fn toolchain() -> Toolchain {
    Toolchain::find().unwrap_or_else(|e| panic!("{e}"))
}

fn built(tc: &Toolchain, arch: GpuArch) -> std::path::PathBuf {
    build(tc, arch).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn ptx_sm90_entries_match_snapshots_and_pass_ptxas() {
    let tc = toolchain();
    let ptx_path = built(&tc, GpuArch::Sm90);
    let ptx = std::fs::read_to_string(&ptx_path).expect("the build wrote the PTX module");
    let (entries, rest) = ptx_entries(&ptx);
    assert!(
        entries.len() >= 50,
        "expected an entry per kernel x dtype x op, found {}",
        entries.len()
    );
    assert!(
        !ptx.contains(".extern .func"),
        "unresolved extern functions in the PTX module"
    );
    insta::assert_snapshot!("ptx_sm90_module", rest);
    for (name, body) in &entries {
        insta::assert_snapshot!(format!("ptx_sm90_entry_{name}"), body);
    }
    let report = tc.ptxas_verbose(&ptx_path, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    let resources = ptxas_resources(&report);
    assert_eq!(
        resources.lines().count(),
        entries.len(),
        "one ptxas resource line per entry:\n{report}"
    );
    insta::assert_snapshot!("ptxas_sm90_resources", resources);
}

#[test]
fn ptx_sm80_passes_ptxas() {
    let tc = toolchain();
    let ptx_path = built(&tc, GpuArch::Sm80);
    let ptx = std::fs::read_to_string(&ptx_path).expect("the build wrote the PTX module");
    assert!(ptx.contains(".target sm_80"), "the sm_80 build targets sm_80");
    let report = tc.ptxas_verbose(&ptx_path, "sm_80").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ptxas_resources(&report).lines().count(), ptx_entries(&ptx).0.len());
}

#[test]
fn amd_code_objects_match_snapshots() {
    let tc = toolchain();
    for arch in [GpuArch::Gfx942, GpuArch::Gfx950] {
        let notes = tc.readelf_notes(&built(&tc, arch)).unwrap_or_else(|e| panic!("{e}"));
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
}
