//! The NVIDIA backend: PTX through `asm!` (`core::arch::nvptx` has no shuffles or votes).
//!
//! | file         | what                                                        |
//! |--------------|-------------------------------------------------------------|
//! | `special.rs` | `%tid`, `%ctaid`, ... , `bar.sync`, dynamic shared memory   |
//! | `lanes.rs`   | `shfl.sync`, `vote.sync`, `match.any.sync`, `activemask`    |
//! | `memory.rs`  | `ld/st.{volatile,relaxed,acquire,release}.{cta,gpu,sys}`, `fence`, `atom` |
//! | `abi.rs`     | the kernel ABI: the panic handler                           |
//!
//! Needs `sm_70` or newer (`*.sync` warp operations, scoped memory operations).

mod abi;
mod lanes;
mod memory;
mod special;

/// The warp of the thread running a kernel (32 lanes). A zero-sized handle.
#[derive(Clone, Copy, Debug)]
pub struct NvptxWarp {
    _private: (),
}

impl NvptxWarp {
    /// The handle of the calling thread's warp (kernel entry points create it).
    #[inline(always)]
    pub fn new() -> Self {
        Self { _private: () }
    }
}

impl Default for NvptxWarp {
    fn default() -> Self {
        Self::new()
    }
}

/// Expands to a `match` on a [`crate::Scope`] that picks the `asm!` whose template has
/// `.cta`, `.gpu` or `.sys` between `$pre` and `$post`.
macro_rules! asm_scoped {
    ($scope:expr, $pre:literal, $post:literal, $($operands:tt)*) => {
        match $scope {
            $crate::Scope::Block => core::arch::asm!(concat!($pre, ".cta", $post), $($operands)*),
            $crate::Scope::Gpu => core::arch::asm!(concat!($pre, ".gpu", $post), $($operands)*),
            $crate::Scope::System => core::arch::asm!(concat!($pre, ".sys", $post), $($operands)*),
        }
    };
}
use asm_scoped;
