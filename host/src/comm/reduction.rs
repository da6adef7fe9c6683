//! The reduction a call applies: one of NCCL's built-in operators, or PreMulSum with the
//! caller's scalar (NCCL's `ncclRedOpCreatePreMulSum`). Every call that reduces takes
//! `impl Into<Reduction>`, so a [`ReduceOp`] is passed as it is.
//!
//! | reduction                          | each contribution `x` becomes | then       | kernels run   |
//! |------------------------------------|-------------------------------|------------|---------------|
//! | `ReduceOp::Sum`, `Prod`, `Min`, `Max` | `x`                        | the op     | that op's     |
//! | `ReduceOp::Avg`                    | `x * (1 / nranks)`            | summed     | Avg's         |
//! | [`Reduction::PreMulSum`]`(s)`      | `x * s`                       | summed     | Avg's, with `s` |
//!
//! The product is computed in f32 and rounded to the dtype once, with the sum (as Avg); the
//! scalar is an f32 (it holds every value of the narrower float dtypes exactly). NCCL rounds
//! the scalar to the dtype first, so for bf16, f16 and fp8 a scalar that is not one of the
//! dtype's values gives NCCL's result rounded differently (never for a power of two).
//!
//! ```
//! use zipcoll_host::comm::{run_sim, Config, Data, DeviceSlice, Options, Reduction};
//! use zipcoll_host::DType;
//! let out = run_sim(2, Config::sim(), |comm| {
//!     let mut mine: Vec<u8> = 3.0f32.to_le_bytes().repeat(4);
//!     let mut view = DeviceSlice::host(&mut mine);
//!     let quarter_sum = Reduction::PreMulSum(0.25);
//!     comm.all_reduce(Data::InPlace(&mut view), 4, DType::F32, quarter_sum, Options::default())?;
//!     comm.synchronize()?;
//!     drop(view);
//!     Ok(mine)
//! })?;
//! assert_eq!(out[1], 1.5f32.to_le_bytes().repeat(4));
//! # Ok::<(), zipcoll_host::Error>(())
//! ```

use zipcoll_device::reduce::ReduceOp;

/// A call's reduction (see the module table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reduction {
    /// A built-in operator.
    Op(ReduceOp),
    /// Every contribution times the scalar, then summed (NCCL's PreMulSum).
    PreMulSum(f32),
}

impl From<ReduceOp> for Reduction {
    fn from(op: ReduceOp) -> Reduction {
        Reduction::Op(op)
    }
}

impl Reduction {
    /// The operator the kernels run: PreMulSum runs Avg's.
    pub(crate) fn kernel_op(self) -> ReduceOp {
        match self {
            Reduction::Op(op) => op,
            Reduction::PreMulSum(_) => ReduceOp::Avg,
        }
    }

    /// The factor of every contribution over `nranks` ranks (the work descriptor's `scale`):
    /// `1 / nranks` for Avg, the scalar for PreMulSum, 1 otherwise (unused).
    pub(crate) fn scale(self, nranks: usize) -> f32 {
        match self {
            Reduction::Op(ReduceOp::Avg) => 1.0 / nranks as f32,
            Reduction::Op(_) => 1.0,
            Reduction::PreMulSum(s) => s,
        }
    }
}
