//! The kernel manifest: which GPU entry points a kernel fn was built into, for which dtype, op
//! and vendor, under which symbol.
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
//! ```

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

/// One variant of a kernel: the entry point that serves a dtype and op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDesc {
    /// The dtype it serves; `None` when the kernel has no dtype dimension.
    pub dtype: Option<DType>,
    /// The reduction it serves; `None` when the kernel has no op dimension.
    pub op: Option<ReduceOp>,
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

    /// The variant serving `dtype` and `op` on `vendor`, if it was built.
    fn find(dtype: Option<DType>, op: Option<ReduceOp>, vendor: Vendor) -> Option<&'static KernelDesc> {
        Self::VARIANTS
            .iter()
            .find(|d| d.dtype == dtype && d.op == op && d.vendors.contains(&vendor))
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
                vendors: &[Vendor::Nvptx],
                symbol: "zc_copy_sum__b16__sum",
            },
            KernelDesc {
                dtype: Some(DType::F16),
                op: Some(ReduceOp::Sum),
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
    }
}
