//! The kernel manifest: which GPU entry points a kernel fn was built into, for which dtype, op,
//! codec and vendor, under which symbol.
//!
//! `#[zipcoll_codegen::kernel]` writes, for a kernel fn `reduce_copy`, a unit struct
//! `ReduceCopy` that implements [`Kernel`]. The host looks an entry point up by that type, so a
//! kernel that does not exist, or a variant that was not built, is a compile error or a `None`,
//! never a symbol string that fails to resolve at launch:
//!
//! ```text
//! use zipcoll_primitives::manifest::{Kernel, Vendor};
//! let desc = ReduceCopy::find(Some(DType::Bf16), Some(ReduceOp::Sum), Vendor::Nvptx).expect("built");
//! assert_eq!(desc.symbol, "zc_reduce_copy__bf16__sum");
//! let enc = EncodeFrames::find_codec(Some(DType::F32), None, Some(CodecId::Huffman), Vendor::Nvptx);
//! assert_eq!(enc.expect("built").symbol, "zc_encode_frames__f32__huffman");
//! ```
//!
//! | dimension | generic bound          | `KernelDesc` field | lookup                          |
//! |-----------|------------------------|--------------------|---------------------------------|
//! | dtype     | `Elem` (or `Split`)    | `dtype`            | [`Kernel::find`], [`Kernel::find_codec`] |
//! | op        | `RedOp`                | `op`               | [`Kernel::find`], [`Kernel::find_codec`] |
//! | codec     | `SymbolCoder`          | `codec`            | [`Kernel::find_codec`]          |
//! | vendor    | the warp's capabilities | `vendors`         | both                            |

use zipcoll_device::codec::CodecId;
use zipcoll_device::dtype::DType;
use zipcoll_device::reduce::ReduceOp;

/// A GPU vendor: one code-generation backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// NVIDIA, through PTX (`target_arch = "nvptx64"`).
    Nvptx,
    /// AMD, through code objects (`target_arch = "amdgpu"`). Its entry points take the block
    /// and grid sizes (`u32`, `u32`) before the kernel's own arguments.
    Amdgpu,
}

/// One variant of a kernel: the entry point that serves a dtype, op and codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDesc {
    /// The dtype it serves; `None` when the kernel has no dtype dimension.
    pub dtype: Option<DType>,
    /// The reduction it serves; `None` when the kernel has no op dimension.
    pub op: Option<ReduceOp>,
    /// The codec (its symbol coder) it serves; `None` when the kernel has no codec dimension.
    pub codec: Option<CodecId>,
    /// The vendors it was built for.
    pub vendors: &'static [Vendor],
    /// The entry point's unmangled name in the GPU module. Several descs share one symbol when
    /// the kernel was built with `equiv = bits`.
    pub symbol: &'static str,
}

/// A kernel fn's manifest, implemented by the type `#[kernel]` generates for it.
pub trait Kernel {
    /// The kernel fn's name.
    const NAME: &'static str;
    /// Every variant that was built (a developer filter may have left some out).
    const VARIANTS: &'static [KernelDesc];

    /// The variant serving `dtype` and `op` on `vendor`, if it was built: a kernel without a
    /// codec dimension ([`Kernel::find_codec`] with no codec).
    fn find(dtype: Option<DType>, op: Option<ReduceOp>, vendor: Vendor) -> Option<&'static KernelDesc> {
        Self::find_codec(dtype, op, None, vendor)
    }

    /// The variant serving `dtype`, `op` and `codec` on `vendor`, if it was built.
    fn find_codec(
        dtype: Option<DType>,
        op: Option<ReduceOp>,
        codec: Option<CodecId>,
        vendor: Vendor,
    ) -> Option<&'static KernelDesc> {
        Self::VARIANTS
            .iter()
            .find(|d| d.dtype == dtype && d.op == op && d.codec == codec && d.vendors.contains(&vendor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `#[kernel(dtype = [bf16, f16], op = [sum], equiv = bits)]` on `copy_sum` writes.
    struct CopySum;
    impl Kernel for CopySum {
        const NAME: &'static str = "copy_sum";
        const VARIANTS: &'static [KernelDesc] = &[
            KernelDesc {
                dtype: Some(DType::Bf16),
                op: Some(ReduceOp::Sum),
                codec: None,
                vendors: &[Vendor::Nvptx],
                symbol: "zc_copy_sum__b16__sum",
            },
            KernelDesc {
                dtype: Some(DType::F16),
                op: Some(ReduceOp::Sum),
                codec: None,
                vendors: &[Vendor::Nvptx],
                symbol: "zc_copy_sum__b16__sum",
            },
        ];
    }

    #[test]
    fn find_matches_dtype_op_and_vendor() {
        let f16 = CopySum::find(Some(DType::F16), Some(ReduceOp::Sum), Vendor::Nvptx).unwrap();
        assert_eq!(f16.symbol, "zc_copy_sum__b16__sum");
        assert_eq!(f16.dtype, Some(DType::F16));
        assert!(CopySum::find(Some(DType::F16), Some(ReduceOp::Sum), Vendor::Amdgpu).is_none());
        assert!(CopySum::find(Some(DType::F32), Some(ReduceOp::Sum), Vendor::Nvptx).is_none());
        assert!(CopySum::find(Some(DType::F16), None, Vendor::Nvptx).is_none());
        assert!(CopySum::find_codec(
            Some(DType::F16),
            Some(ReduceOp::Sum),
            Some(CodecId::Huffman),
            Vendor::Nvptx
        )
        .is_none());
    }

    /// What `#[kernel(dtype = [f32], codec = [fixedlen, huffman], vendor = [nvptx])]` on
    /// `pack` writes.
    struct Pack;
    impl Kernel for Pack {
        const NAME: &'static str = "pack";
        const VARIANTS: &'static [KernelDesc] = &[
            KernelDesc {
                dtype: Some(DType::F32),
                op: None,
                codec: Some(CodecId::FixedLen),
                vendors: &[Vendor::Nvptx],
                symbol: "zc_pack__f32__fixedlen",
            },
            KernelDesc {
                dtype: Some(DType::F32),
                op: None,
                codec: Some(CodecId::Huffman),
                vendors: &[Vendor::Nvptx],
                symbol: "zc_pack__f32__huffman",
            },
        ];
    }

    #[test]
    fn find_codec_matches_the_codec() {
        let f32 = Some(DType::F32);
        let huffman = Pack::find_codec(f32, None, Some(CodecId::Huffman), Vendor::Nvptx).unwrap();
        assert_eq!(huffman.symbol, "zc_pack__f32__huffman");
        assert!(Pack::find_codec(f32, None, Some(CodecId::ExpAns), Vendor::Nvptx).is_none());
        assert!(Pack::find_codec(f32, None, Some(CodecId::Raw), Vendor::Nvptx).is_none());
        // `find` asks for the variant without a codec, which a codec kernel does not have
        assert!(Pack::find(f32, None, Vendor::Nvptx).is_none());
    }
}
