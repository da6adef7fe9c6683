//! The GPU modules embedded at build time by `build.rs`: one PTX module (and, when asked for,
//! its cubin) per NVIDIA architecture, one code object per AMD architecture. Only the
//! architectures the build was for are there: those of the build machine's GPUs, or the ones
//! `ZIPCOLL_GPU_ARCHS` named; none on a machine without a GPU.
//!
//! | arch            | artifact                        |
//! |-----------------|---------------------------------|
//! | [`NvArch::Sm90`]  | PTX, `-Ctarget-cpu=sm_90`; a cubin with `ZIPCOLL_GPU_CUBIN=1` |
//! | [`NvArch::Sm80`]  | PTX, `-Ctarget-cpu=sm_80`; a cubin with `ZIPCOLL_GPU_CUBIN=1` |
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

/// The PTX module for `arch`, if it was built (the GPU toolchain was present at build time and
/// `ZIPCOLL_GPU_ARCHS`, when set, named it).
pub(crate) fn ptx(arch: NvArch) -> Option<&'static str> {
    match arch {
        #[cfg(zipcoll_sm_80)]
        NvArch::Sm80 => Some(include_str!(env!("ZIPCOLL_ARTIFACT_SM_80"))),
        #[cfg(zipcoll_sm_90)]
        NvArch::Sm90 => Some(include_str!(env!("ZIPCOLL_ARTIFACT_SM_90"))),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The cubin compiled ahead of time from [`ptx`]'s module for `arch`, if the build was asked
/// for one (`ZIPCOLL_GPU_CUBIN=1`).
pub(crate) fn cubin(arch: NvArch) -> Option<&'static [u8]> {
    match arch {
        #[cfg(zipcoll_cubin_sm_80)]
        NvArch::Sm80 => Some(include_bytes!(env!("ZIPCOLL_CUBIN_SM_80"))),
        #[cfg(zipcoll_cubin_sm_90)]
        NvArch::Sm90 => Some(include_bytes!(env!("ZIPCOLL_CUBIN_SM_90"))),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The AMD code object for `arch`, if it was built (as [`ptx`]).
pub(crate) fn amd_code_object(arch: AmdArch) -> Option<&'static [u8]> {
    match arch {
        #[cfg(zipcoll_gfx942)]
        AmdArch::Gfx942 => Some(include_bytes!(env!("ZIPCOLL_ARTIFACT_GFX942"))),
        #[cfg(zipcoll_gfx950)]
        AmdArch::Gfx950 => Some(include_bytes!(env!("ZIPCOLL_ARTIFACT_GFX950"))),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}
