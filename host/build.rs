//! Builds zipcoll's GPU module for every architecture (when the GPU toolchain of
//! `scripts/setup.sh` is installed) and embeds the results: `src/embedded.rs` reads the paths
//! from `ZIPCOLL_ARTIFACT_<ARCH>` under `cfg(zipcoll_<arch>)`, one per architecture built.
//!
//! `ZIPCOLL_GPU_ARCHS=sm_90,gfx942` builds only the architectures named.
//!
//! Without the toolchain the host still builds (the simulator needs no GPU code) and CUDA/HIP
//! launches return `Error::KernelsNotBuilt`, naming `bash scripts/setup.sh`.

use zipcoll_gpu_build::{build, repo_root, BuildError, GpuArch, Toolchain};

fn main() {
    for arch in GpuArch::ALL {
        println!("cargo::rustc-check-cfg=cfg(zipcoll_{})", arch.cpu());
    }
    let repo = repo_root();
    for dir in [
        "device/src",
        "targets/src",
        "primitives/src",
        "primitives/kernels",
        "codegen/src",
        ".toolchain/stamp",
    ] {
        println!("cargo::rerun-if-changed={}", repo.join(dir).display());
    }
    println!("cargo::rerun-if-env-changed=ZIPCOLL_TOOLCHAIN");
    println!("cargo::rerun-if-env-changed=ZIPCOLL_KERNEL_FILTER");
    println!("cargo::rerun-if-env-changed=ZIPCOLL_GPU_ARCHS");
    // a comma-separated subset of the architectures (e.g. `sm_90` for a quick build for one
    // machine); all of them by default
    let wanted = std::env::var("ZIPCOLL_GPU_ARCHS").ok();
    let wanted = |a: GpuArch| {
        wanted
            .as_deref()
            .is_none_or(|w| w.split(',').any(|c| c.trim() == a.cpu()))
    };
    let tc = match Toolchain::find() {
        Ok(tc) => tc,
        Err(e @ BuildError::ToolchainMissing { .. }) => {
            println!("cargo::warning=GPU kernels not embedded: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    for arch in GpuArch::ALL.into_iter().filter(|&a| wanted(a)) {
        match build(&tc, arch) {
            Ok(path) => {
                println!(
                    "cargo::rustc-env=ZIPCOLL_ARTIFACT_{}={}",
                    arch.cpu().to_uppercase(),
                    path.display()
                );
                println!("cargo::rustc-cfg=zipcoll_{}", arch.cpu());
            }
            Err(e) => panic!("building the GPU kernels for {}: {e}", arch.cpu()),
        }
    }
}
