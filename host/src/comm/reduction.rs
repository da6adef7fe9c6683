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
//! For the types reduced through f32 the product is computed in f32 and rounded to the dtype
//! once, with the sum (as Avg), the scalar rounded to f32 (which holds every value of those
//! dtypes exactly); for f64 everything is f64. NCCL rounds the scalar to the dtype first, so for
//! bf16, f16 and fp8 a scalar that is not one of the dtype's values gives NCCL's result rounded
//! differently (never for a power of two).
//!
//! Integer dtypes take Sum, Prod, Min and Max. Avg and PreMulSum on them are
//! `InvalidArgument` (the communicator keeps working): NCCL averages integers by dividing the
//! sum by `nranks`, a post-operation zipcoll's schedules lack, and no PreMulSum kernel is built
//! for them.
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

use crate::dispatch::not_built_for_integers;
use crate::error::Result;
use zipcoll_device::dtype::DType;
use zipcoll_device::reduce::ReduceOp;

/// A call's reduction (see the module table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reduction {
    /// A built-in operator.
    Op(ReduceOp),
    /// Every contribution times the scalar, then summed (NCCL's PreMulSum).
    PreMulSum(f64),
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

    /// The bits of the factor of every contribution of `dtype` over `nranks` ranks (the work
    /// descriptor's `scalar`, [`DType::scalar_bits`]): `1 / nranks` for Avg, the scalar for
    /// PreMulSum, 1 otherwise (unused). `InvalidArgument` where no kernel is built: Avg and
    /// PreMulSum of an integer dtype.
    pub(crate) fn scalar(self, dtype: DType, nranks: usize) -> Result<u64> {
        let refused = |what: &str| not_built_for_integers(what, dtype);
        match self {
            Reduction::Op(ReduceOp::Avg) => dtype.avg_scalar(nranks as u32).ok_or_else(|| refused("Avg")),
            Reduction::Op(_) => Ok(dtype.scalar_bits(1.0).unwrap_or(1)),
            Reduction::PreMulSum(s) => dtype.scalar_bits(s).ok_or_else(|| refused("PreMulSum")),
        }
    }
}
