//! Snapshots of the generated GPU code, validated by the vendor tools, one test per
//! architecture (they build in parallel):
//!
//! | test   | builds | checks                                                                        |
//! |--------|--------|-------------------------------------------------------------------------------|
//! | sm_90  | PTX of [`SUBSET`] | no unresolved externs; snapshots: header + entry prototypes; ptxas accepts every entry but the collective variants [`sm90_skips`] leaves out, snapshot of its resources per entry (registers, stack, spills); the block-channel kernels within 128 registers |
//! | sm_80  | PTX of [`NARROW_SUBSET`] | `.target sm_80`; the same kernels as sm_90; ptxas accepts every entry but the collective kernels' variants other than [`SM80_COLLECTIVE`] and the coding block-channel kernel's |
//! | gfx942 | code object of [`SUBSET`] | llvm-readelf's kernel metadata per kernel (registers, spills, LDS, scratch), snapshot |
//! | gfx950 | code object of [`NARROW_SUBSET`] | the same |
//! | device functions | `device/fns` for sm_90 | its `.visible .func`s are exactly the header's `__device__` declarations, width for width; `ptxas -c` accepts it; a `zc_predict_*` call's stack fits the 8 KiB the header asks for; no kernels, no unresolved externs |
//!
//! Needs the GPU toolchain (`bash scripts/setup.sh`); without it these tests fail and say so.
//! Bless changes with `cargo insta review` (or `INSTA_UPDATE=always cargo test -p zipcoll-tests`).

use zipcoll_gpu_build::{build_device_fns, build_subset, GpuArch, Toolchain};
use zipcoll_tests::device_fns::{header_functions, ptx_functions, stack_frames};
use zipcoll_tests::{amd_kernel_summary, ptx_interface, ptxas_resources, PtxInterface};

fn toolchain() -> Toolchain {
    Toolchain::find().unwrap_or_else(|e| panic!("{e}"))
}

/// The module of `subset`'s variants for `arch`, built, with its interface and ptxas's
/// resource lines for the entries that `compile` keeps (ptxas parses the whole module either
/// way; one line per entry kept).
fn nvidia_module(arch: GpuArch, subset: &str, compile: impl Fn(&str) -> bool) -> (String, PtxInterface, String) {
    let tc = toolchain();
    let path = build_subset(&tc, arch, subset).unwrap_or_else(|e| panic!("{e}"));
    let ptx = std::fs::read_to_string(&path).expect("the build wrote the PTX module");
    let interface = ptx_interface(&ptx);
    let entries: Vec<&str> = interface.names().into_iter().filter(|e| compile(e)).collect();
    let report = tc
        .ptxas_entries(&path, arch.cpu(), &entries)
        .unwrap_or_else(|e| panic!("{e}"));
    let resources = ptxas_resources(&report);
    assert_eq!(
        resources.lines().count(),
        entries.len(),
        "one ptxas resource line per entry compiled:\n{report}"
    );
    (ptx, interface, resources)
}

/// Whether sm_90's ptxas run leaves out a collective variant of [`SUBSET`] (which builds only
/// the sums). Every variant of a collective kernel is the same generic body over another dtype
/// (the ops' own arithmetic is in the reduce kernels, all compiled), and ptxas takes long over
/// them on one core (2026-12-05, the sm_90 test over a built module: 272 s when it compiled
/// every variant of [`SUBSET`] but the coded kernel's four others, 143 s with these skips):
///
/// | kernel | variants compiled | ptxas per variant |
/// |--------|-------------------|-------------------|
/// | `zc_collective_block` (the block channels, NVIDIA's default) | every dtype | about 9 s |
/// | `zc_collective` (one-warp channels: `ZIPCOLL_CHANNEL_THREADS=32` only, on NVIDIA) | bf16 and f8e4m3 (the 16- and 8-bit conversions), i64 (the RAW-only body of the dtypes without coders) | about 26 s (i64: less) |
/// | `zc_collective_block_coded` | bf16 (its block coders are in the block codec kernels too, all compiled) | about a minute |
fn sm90_skips(entry: &str) -> bool {
    if is_coded(entry) {
        !entry.ends_with("__bf16__sum")
    } else if entry.starts_with("zc_collective__") {
        !entry.ends_with("__bf16__sum") && !entry.ends_with("__f8e4m3__sum") && !entry.ends_with("__i64__sum")
    } else {
        false
    }
}

fn is_collective(entry: &str) -> bool {
    entry.starts_with("zc_collective__") || entry.starts_with("zc_collective_block__") || is_coded(entry)
}

fn is_coded(entry: &str) -> bool {
    entry.starts_with("zc_collective_block_coded__")
}

#[test]
fn ptx_sm90_matches_snapshots_and_passes_ptxas() {
    let (ptx, interface, resources) = nvidia_module(GpuArch::Sm90, SUBSET, |e| !sm90_skips(e));
    assert_eq!(
        resources.lines().filter(|l| is_collective(l)).count(),
        12,
        "the block kernel's eight dtypes, the warp kernel's three, the coding block kernel's one:\n{resources}"
    );
    assert_eq!(
        interface.names().iter().filter(|e| is_collective(e)).count(),
        22,
        "the sums of each collective kernel, one per dtype of the subset (the coding block kernel: the coded ones)"
    );
    // the block-channel kernels' launch bounds held: 512 threads fit the register file
    for line in resources.lines().filter(|l| l.starts_with("zc_collective_block_")) {
        let regs: u32 = line
            .split("Used ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(u32::MAX);
        assert!(regs <= 128, "{line}");
    }
    assert!(
        interface.entries.len() >= 50,
        "expected an entry per kernel x dtype (x op of the reduce kernels), found {}",
        interface.entries.len()
    );
    assert!(
        !ptx.contains(".extern .func"),
        "unresolved extern functions in the PTX module"
    );
    insta::assert_snapshot!("ptx_sm90_interface", interface.summary());
    insta::assert_snapshot!("ptxas_sm90_resources", resources);
}

/// The one variant of each collective kernel ptxas compiles for sm_80 (by suffix). Every
/// variant is the same generic body over another dtype x op, while the per-dtype arithmetic
/// and codecs it calls are also in the (much smaller) codec and reduce kernels, which are all
/// compiled; the fp8 variant is the one whose conversions differ most between architectures.
const SM80_COLLECTIVE: &str = "__f8e4m3__sum";

/// The kernel of an entry point: its name without the `__dtype__op` suffix.
fn kernel_of(entry: &str) -> &str {
    entry.split("__").next().unwrap_or(entry)
}

#[test]
fn ptx_sm80_passes_ptxas_with_the_same_kernels() {
    let (ptx, interface, resources) = nvidia_module(GpuArch::Sm80, NARROW_SUBSET, |e| {
        !is_collective(e) || (!is_coded(e) && e.ends_with(SM80_COLLECTIVE))
    });
    assert!(ptx.contains(".target sm_80"), "the sm_80 build targets sm_80");
    assert_eq!(
        resources.lines().filter(|l| is_collective(l)).count(),
        2,
        "each collective kernel's {SM80_COLLECTIVE}:\n{resources}"
    );
    let tc = toolchain();
    let sm90 = build_subset(&tc, GpuArch::Sm90, SUBSET).unwrap_or_else(|e| panic!("{e}"));
    let sm90 = ptx_interface(&std::fs::read_to_string(sm90).expect("the sm_90 module"));
    let kernels = |names: Vec<&str>| -> std::collections::BTreeSet<String> {
        names.into_iter().map(|n| kernel_of(n).to_owned()).collect()
    };
    assert_eq!(
        kernels(interface.names()),
        kernels(sm90.names()),
        "sm_80 and sm_90 export the same kernels"
    );
}

/// The variants the sm_90 and gfx942 tests build (a `ZIPCOLL_KERNEL_FILTER` spec): every kernel,
/// in its sum variants where it has an operator, and every operator of the small reduce
/// kernels, whose bodies are the operators' arithmetic. The full gfx942 code object took 10.5
/// min on one core (2026-12-02), most of it LLVM's AMD backend over the 25 variants of the
/// collective kernel (the block-channel kernel is NVIDIA's only), each the same generic body
/// over another dtype x op: two such builds made the GPU-code job CI's longest; sm_80's rustc
/// build of every variant repeated sm_90's for a module of which ptxas compiles a few
/// collective variants anyway. The sm_90 test built every variant until 2026-12-04, when the
/// 25 variants of the coding block-channel kernel had doubled the module (57 MB of PTX) and the
/// GPU-code job took 22 minutes on the 2-core build machine; every variant is the same body
/// over another dtype x op, each dtype's code is in the sums, and each op's in the reduce
/// kernels. The product build (`scripts/gpu-pack.sh`, the host's build script) keeps every
/// variant, and the GPU machine's `zipcoll-comm check` runs them. Of the dtypes without coders
/// (f64 and the 64-bit integers, whose collective kernels are the RAW-only body) the subset
/// holds i64 and f64, the 8-byte lanes. Of the coded integers it holds i32: its coders are
/// f32's word width with a top-byte split; u32's differ from it in min and max only, and the
/// 8-bit integers' coders are fp8's pair words with a nibble split. Every operator of every
/// integer is in the reduce kernels.
const SUBSET: &str =
    "*:bf16:sum,*:f16:sum,*:f32:sum,*:f8*:sum,*:i32:sum,*:i64:sum,*:f64:sum,reduce_copy,warp_all_reduce";

/// The variants of the second build of an architecture family (sm_80 beside sm_90, gfx950
/// beside gfx942): every kernel in bf16 and the fp8 dtypes, whose conversions are what differs
/// between the architectures of a family (16-bit floats and f32 are the same instructions), in
/// their sum variants, and the reduce kernels' every operator for them. On the 2-core build
/// machine (2026-12-05, one test at a time): the gfx950 test took 172 s against 328 s with
/// [`SUBSET`], the sm_80 test 114 s against 145 s.
const NARROW_SUBSET: &str =
    "*:bf16:sum,*:f8*:sum,reduce_copy:bf16,reduce_copy:f8*,warp_all_reduce:bf16,warp_all_reduce:f8*";

/// The code object of `subset` for `arch`, whose collective kernel has `sums` variants (one sum
/// per dtype the subset holds), against its snapshot.
fn amd_code_object_matches_snapshot(arch: GpuArch, subset: &str, sums: usize) {
    let tc = toolchain();
    let object = build_subset(&tc, arch, subset).unwrap_or_else(|e| panic!("{e}"));
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
    let collectives: Vec<&str> = summary.lines().filter(|l| l.starts_with("zc_collective")).collect();
    assert!(
        collectives.len() == sums && collectives.iter().all(|l| l.contains("__sum:")),
        "the subset holds the sum of each dtype of the collective kernel:\n{summary}"
    );
    insta::assert_snapshot!(format!("amd_{}_kernels", arch.cpu()), summary);
}

#[test]
fn amd_gfx942_code_object_matches_snapshot() {
    amd_code_object_matches_snapshot(GpuArch::Gfx942, SUBSET, 8);
}

#[test]
fn amd_gfx950_code_object_matches_snapshot() {
    amd_code_object_matches_snapshot(GpuArch::Gfx950, NARROW_SUBSET, 3);
}

/// The stack the header (`zipcoll_device_fns.h`) tells callers of `zc_predict_*` to allow.
const PREDICT_STACK_LIMIT: u64 = 8192;

#[test]
fn device_fns_match_their_header_and_pass_ptxas() {
    let tc = toolchain();
    let path = build_device_fns(&tc, GpuArch::Sm90).unwrap_or_else(|e| panic!("{e}"));
    let ptx = std::fs::read_to_string(&path).expect("the build wrote the PTX");
    let header_path = zipcoll_gpu_build::repo_root().join("device/fns/include/zipcoll_device_fns.h");
    let header = std::fs::read_to_string(&header_path).expect("the library's header");
    let (exported, declared) = (ptx_functions(&ptx), header_functions(&header));
    assert_eq!(
        exported.len(),
        23,
        "four functions per dtype and three others: {exported:#?}"
    );
    assert_eq!(
        exported, declared,
        "the PTX's functions and the header's declarations differ"
    );
    assert!(!ptx.contains(".entry"), "the library holds no kernels");
    assert!(!ptx.contains(".extern .func"), "unresolved extern functions in the PTX");
    let (report, _object) = tc.ptxas_relocatable(&path, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    let frames = stack_frames(&report);
    let ours = |n: &str| n.starts_with("zc_");
    // no recursion: a call chain holds each function at most once, so one of ours plus every
    // helper's frame bounds any chain
    let helpers: u64 = frames.iter().filter(|(n, _)| !ours(n)).map(|(_, b)| b).sum();
    for (name, bytes) in frames.iter().filter(|(n, _)| n.starts_with("zc_predict_")) {
        assert!(
            bytes + helpers <= PREDICT_STACK_LIMIT,
            "{name}: {bytes} + {helpers} bytes of helpers' frames exceed the header's {PREDICT_STACK_LIMIT}"
        );
    }
    assert_eq!(
        frames.iter().filter(|(n, _)| ours(n)).count(),
        exported.len(),
        "ptxas compiled every function:\n{report}"
    );
}
