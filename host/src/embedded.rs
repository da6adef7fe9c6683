//! The GPU modules embedded at build time by `build.rs`: one PTX module per NVIDIA
//! architecture, one code object per AMD architecture. All `None` when the host was built
//! without the GPU toolchain (`bash scripts/setup.sh` installs it).
//!
//! | arch            | artifact                        |
//! |-----------------|---------------------------------|
//! | [`NvArch::Sm90`]  | PTX, `-Ctarget-cpu=sm_90`     |
//! | [`NvArch::Sm80`]  | PTX, `-Ctarget-cpu=sm_80`     |
//! | [`AmdArch::Gfx942`] | code object v5, gfx942      |
//! | [`AmdArch::Gfx950`] | code object v5, gfx950      |

/// NVIDIA architectures with an embedded PTX module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NvArch {
    /// Ampere and later without Hopper features (compute capability 8.x).
    Sm80,
    /// Hopper (compute capability 9.0 and later).
    Sm90,
}

/// AMD architectures with an embedded code object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmdArch {
    /// CDNA3 (MI300).
    Gfx942,
    /// CDNA4 (MI350).
    Gfx950,
}

/// The PTX module for `arch`, if the GPU toolchain was present at build time.
pub(crate) fn ptx(arch: NvArch) -> Option<&'static str> {
    #[cfg(zipcoll_kernels)]
    {
        Some(match arch {
            NvArch::Sm80 => include_str!(env!("ZIPCOLL_ARTIFACT_SM_80")),
            NvArch::Sm90 => include_str!(env!("ZIPCOLL_ARTIFACT_SM_90")),
        })
    }
    #[cfg(not(zipcoll_kernels))]
    {
        let _ = arch;
        None
    }
}

/// The AMD code object for `arch`, if the GPU toolchain was present at build time.
pub(crate) fn amd_code_object(arch: AmdArch) -> Option<&'static [u8]> {
    #[cfg(zipcoll_kernels)]
    {
        Some(match arch {
            AmdArch::Gfx942 => include_bytes!(env!("ZIPCOLL_ARTIFACT_GFX942")),
            AmdArch::Gfx950 => include_bytes!(env!("ZIPCOLL_ARTIFACT_GFX950")),
        })
    }
    #[cfg(not(zipcoll_kernels))]
    {
        let _ = arch;
        None
    }
}
