//! Builds zipcoll's GPU module for the architectures it will run on and embeds the results:
//! `src/embedded.rs` reads the paths from `ZIPCOLL_ARTIFACT_<ARCH>` (and, for an ahead-of-time
//! cubin, `ZIPCOLL_CUBIN_<ARCH>`) under `cfg(zipcoll_<arch>)`, one per architecture built.
//!
//! | variable                    | effect                                                       |
//! |-----------------------------|--------------------------------------------------------------|
//! | unset `ZIPCOLL_GPU_ARCHS`   | the architectures of this machine's GPUs; none without a GPU  |
//! | `ZIPCOLL_GPU_ARCHS=sm_90,gfx942` | those (`all`: every one; `none`: the simulator only)    |
//! | `ZIPCOLL_GPU_CUBIN=1`       | also compile each NVIDIA module with ptxas and embed the cubin (no driver JIT at the first launch) |
//! | `ZIPCOLL_TOOLCHAIN`         | where `scripts/setup.sh` installed the GPU toolchain          |
//!
//! Without GPU code the host still builds (the simulator needs none) and CUDA/HIP launches
//! return `Error::KernelsNotBuilt`. Architectures named in `ZIPCOLL_GPU_ARCHS` without the
//! toolchain installed are a build error; detected ones are a warning.

use zipcoll_gpu_build::{build, repo_root, selection, BuildError, GpuArch, Reason, Toolchain};

const CUBIN_ENV: &str = "ZIPCOLL_GPU_CUBIN";

fn main() {
    for arch in GpuArch::ALL {
        println!("cargo::rustc-check-cfg=cfg(zipcoll_{})", arch.cpu());
        println!("cargo::rustc-check-cfg=cfg(zipcoll_cubin_{})", arch.cpu());
    }
    for var in [
        "ZIPCOLL_TOOLCHAIN",
        "ZIPCOLL_KERNEL_FILTER",
        "ZIPCOLL_GPU_ARCHS",
        CUBIN_ENV,
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let selection = selection().unwrap_or_else(|e| panic!("{e}"));
    if selection.archs.is_empty() {
        return;
    }
    let repo = repo_root();
    // (a path that does not exist would rerun this script at every build)
    for dir in [
        "device/src",
        "targets/src",
        "primitives/src",
        "primitives/kernels",
        "codegen/src",
        ".toolchain/stamp",
    ]
    .map(|d| repo.join(d))
    .into_iter()
    .filter(|p| p.exists())
    {
        println!("cargo::rerun-if-changed={}", dir.display());
    }
    let tc = match Toolchain::find() {
        Ok(tc) => tc,
        Err(e @ BuildError::ToolchainMissing { .. }) if selection.reason == Reason::Detected => {
            println!("cargo::warning=GPU kernels not embedded for this machine's GPUs: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let cubin = std::env::var(CUBIN_ENV).is_ok_and(|v| v == "1");
    for arch in selection.archs {
        let path = build(&tc, arch).unwrap_or_else(|e| panic!("building the GPU kernels for {}: {e}", arch.cpu()));
        let name = arch.cpu().to_uppercase();
        println!("cargo::rustc-env=ZIPCOLL_ARTIFACT_{name}={}", path.display());
        println!("cargo::rustc-cfg=zipcoll_{}", arch.cpu());
        if cubin && arch.is_nvidia() {
            let bin = tc
                .cubin(&path, arch.cpu())
                .unwrap_or_else(|e| panic!("compiling the {} module ahead of time: {e}", arch.cpu()));
            println!("cargo::rustc-env=ZIPCOLL_CUBIN_{name}={}", bin.display());
            println!("cargo::rustc-cfg=zipcoll_cubin_{}", arch.cpu());
        }
    }
}
