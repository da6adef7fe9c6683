//! Builds zipcoll's GPU module for every architecture (when the GPU toolchain of
//! `scripts/setup.sh` is installed) and embeds the results: `src/embedded.rs` reads the paths
//! from `ZIPCOLL_ARTIFACT_<ARCH>` under `cfg(zipcoll_kernels)`.
//!
//! Without the toolchain the host still builds (the simulator needs no GPU code) and CUDA/HIP
//! launches return `Error::KernelsNotBuilt`, naming `bash scripts/setup.sh`.

use zipcoll_gpu_build::{build, repo_root, BuildError, GpuArch, Toolchain};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(zipcoll_kernels)");
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
    let tc = match Toolchain::find() {
        Ok(tc) => tc,
        Err(e @ BuildError::ToolchainMissing { .. }) => {
            println!("cargo::warning=GPU kernels not embedded: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    for arch in GpuArch::ALL {
        match build(&tc, arch) {
            Ok(path) => println!(
                "cargo::rustc-env=ZIPCOLL_ARTIFACT_{}={}",
                arch.cpu().to_uppercase(),
                path.display()
            ),
            Err(e) => panic!("building the GPU kernels for {}: {e}", arch.cpu()),
        }
    }
    println!("cargo::rustc-cfg=zipcoll_kernels");
}
