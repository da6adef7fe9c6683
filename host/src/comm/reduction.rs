//! The reduction a call applies: one of NCCL's built-in operators, or PreMulSum with the
//! caller's scalar (NCCL's `ncclRedOpCreatePreMulSum`). Every call that reduces takes
//! `impl Into<Reduction>`, so a [`ReduceOp`] is passed as it is.
//!
//! | reduction                          | each contribution `x` becomes | then       | kernels run   |
//! |------------------------------------|-------------------------------|------------|---------------|
//! | `ReduceOp::Sum`, `Prod`, `Min`, `Max` | `x`                        | the op     | that op's     |
//! | `ReduceOp::Avg`, float dtypes      | `x * (1 / nranks)`            | summed     | Avg's         |
//! | `ReduceOp::Avg`, integer dtypes    | `x`                           | summed, the sum divided by `nranks` toward zero | Sum's, with `nranks` (NCCL's SumPostDiv) |
//! | [`Reduction::PreMulSum`]`(s)`, [`Reduction::PreMulSumBits`]`(b)` | `x * s` | summed | Avg's, with `s` |
//! | [`Reduction::PreMulSumOnDevice`]`(at)` | `x * s`, `s` the value at `at` when the call runs | summed | Avg's, reading `s` (NCCL's `ncclScalarDevice`) |
//!
//! For the types reduced through f32 the product is computed in f32 and rounded to the dtype
//! once, with the sum (as Avg), the scalar rounded to f32 (which holds every value of those
//! dtypes exactly); for f64 everything is f64. NCCL rounds the scalar to the dtype first, so for
//! bf16, f16 and fp8 a scalar that is not one of the dtype's values gives NCCL's result rounded
//! differently (never for a power of two).
//!
//! Integers follow NCCL: the sum and the products wrap (two's complement), and the average is
//! the wrapped sum divided by `nranks`, rounded toward zero. A PreMulSum scalar for an integer
//! dtype is an integer value of it: [`Reduction::PreMulSum`] with another value (a fraction,
//! out of range) is `InvalidArgument` and the communicator keeps working;
//! [`Reduction::PreMulSumBits`] passes it as NCCL's C API does, the bits of one value of the
//! call's dtype (exact for 64-bit integers, whose values an `f64` does not all hold).
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

use crate::error::{Error, Result};
use zipcoll_device::dtype::DType;
use zipcoll_device::reduce::ReduceOp;

/// One value of a call's dtype in the memory of the communicator's device (this process's
/// memory on the simulator) that the call reads as it runs: PreMulSum's scalar where NCCL's
/// `ncclRedOpCreatePreMulSum` takes `ncclScalarDevice`, so that a value a kernel earlier on the
/// stream computes scales the contributions without a copy to the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceScalar(u64);

impl DeviceScalar {
    /// The value at device address `ptr`. A call checks that it lies in the communicator's
    /// device memory (on a GPU; `InvalidArgument` otherwise).
    ///
    /// # Safety
    /// `ptr` holds one value of the dtype of every call that uses it, readable (any alignment)
    /// by that call's kernels until the call has completed (a later synchronize), in the
    /// memory of the communicator's device (on the simulator: this process's memory).
    pub unsafe fn new(ptr: u64) -> DeviceScalar {
        DeviceScalar(ptr)
    }

    /// The device address.
    pub fn ptr(self) -> u64 {
        self.0
    }
}

/// What the kernels run for a [`Reduction`]: the operator and the work descriptor's scalar,
/// or where the kernels read it.
pub(crate) struct KernelReduction {
    pub op: ReduceOp,
    pub scalar: u64,
    pub scalar_at: Option<DeviceScalar>,
}

/// A call's reduction (see the module table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reduction {
    /// A built-in operator.
    Op(ReduceOp),
    /// Every contribution times the scalar, then summed (NCCL's PreMulSum). For an integer
    /// dtype the scalar must be an integer value of that dtype.
    PreMulSum(f64),
    /// PreMulSum whose scalar is one value of the call's dtype, given by its bits (the low
    /// `size_bytes` bytes, little-endian, as NCCL's `ncclRedOpCreatePreMulSum` reads it).
    PreMulSumBits(u64),
    /// PreMulSum whose scalar is the value in device memory when the call runs.
    PreMulSumOnDevice(DeviceScalar),
}

impl From<ReduceOp> for Reduction {
    fn from(op: ReduceOp) -> Reduction {
        Reduction::Op(op)
    }
}

impl Reduction {
    /// The operator the kernels run on `dtype` over `nranks` ranks and the work descriptor's
    /// `scalar` for it (the module table): for Avg and PreMulSum the bits of the factor of
    /// every contribution ([`DType::scalar_bits`]), for an integer average the divisor
    /// `nranks`, 1 otherwise (unused); for a scalar in device memory, its place.
    /// `InvalidArgument` for a PreMulSum scalar that is not a value of an integer `dtype`.
    pub(crate) fn kernel(self, dtype: DType, nranks: usize) -> Result<KernelReduction> {
        let (op, scalar) = match self {
            Reduction::Op(ReduceOp::Avg) if dtype.is_integer() => (ReduceOp::Sum, nranks as u64),
            Reduction::Op(ReduceOp::Avg) => (ReduceOp::Avg, dtype.avg_scalar(nranks as u32).unwrap_or(1)),
            Reduction::Op(op) => (op, dtype.scalar_bits(1.0).unwrap_or(1)),
            Reduction::PreMulSum(s) => {
                let bits = dtype.scalar_bits(s).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "PreMulSum's scalar {s} is not a value of the integer dtype {dtype:?} (pass an integer in its \
                         range, or Reduction::PreMulSumBits)"
                    ))
                })?;
                (ReduceOp::Avg, bits)
            }
            Reduction::PreMulSumBits(b) => (ReduceOp::Avg, dtype.scalar_of_value(b)),
            Reduction::PreMulSumOnDevice(at) => {
                return Ok(KernelReduction {
                    op: ReduceOp::Avg,
                    scalar: 0,
                    scalar_at: Some(at),
                })
            }
        };
        Ok(KernelReduction {
            op,
            scalar,
            scalar_at: None,
        })
    }
}
