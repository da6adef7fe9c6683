//! zipcoll-comm's `premulsum` check: NCCL's PreMulSum with its scalar given by value
//! (`Reduction::PreMulSumBits`, `ncclScalarHostImmediate`) and in device memory
//! (`Reduction::PreMulSumOnDevice`, `ncclScalarDevice`, rewritten between calls), for every
//! dtype, against the scalar reference bit for bit.
//!
//! | per dtype (two scalars each) | calls                                                        |
//! |------------------------------|--------------------------------------------------------------|
//! | floats, fp8, integers (signed: a negative scalar; unsigned: the largest value) | ring and two-shot all_reduce, reduce_scatter, reduce to rank 0, each with the scalar by value and in device memory |

use crate::common::say;
use std::sync::Arc;
use zipcoll::comm::{Algorithm, Communicator, Data, DeviceScalar, Options, Reduction};
use zipcoll::cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use zipcoll::reference::{self, CollRef};
use zipcoll::{testdata, DType, Error};

/// Elements per rank's output: odd, several frames.
const N: usize = 100_003;

/// Each dtype with two scalars, as the bits of a value of the dtype.
const SCALARS: [(DType, [u64; 2]); 11] = [
    (DType::F32, [0x3E80_0000, 0xC060_0000]),                     // 0.25, -3.5
    (DType::Bf16, [0x3F00, 0xC040]),                              // 0.5, -3.0
    (DType::F16, [0x3800, 0xC300]),                               // 0.5, -3.5
    (DType::F8E4M3, [0x30, 0xC4]),                                // 0.5, -3.0
    (DType::F64, [0x3FB9_9999_9999_999A, 0x4000_0000_0000_0000]), // 0.1, 2.0
    (DType::I8, [0xFD, 7]),                                       // -3, 7
    (DType::U8, [3, 0xFF]),
    (DType::I32, [0xFFFF_FFFD, 7]), // -3, 7
    (DType::U32, [3, 0xFFFF_FFFF]),
    (DType::I64, [0x8000_0000_0000_3039, 7]), // i64::MIN + 12345, 7
    (DType::U64, [3, u64::MAX]),
];

/// The calls checked.
#[derive(Clone, Copy, Debug)]
enum Call {
    Ring,
    TwoShot,
    ReduceScatter,
    ReduceToZero,
}

const CALLS: [Call; 4] = [Call::Ring, Call::TwoShot, Call::ReduceScatter, Call::ReduceToZero];

/// Eight bytes of the communicator's memory for a scalar: device memory on a GPU (written on
/// the communicator's stream, so in order with its calls), host memory on the simulator.
enum ScalarCell {
    Host(Vec<u8>),
    Cuda(CudaSlice<u8>, Arc<CudaStream>),
}

impl ScalarCell {
    fn new(comm: &Communicator) -> Result<ScalarCell, Error> {
        Ok(match comm.cuda_stream() {
            None => ScalarCell::Host(vec![0; 8]),
            Some(s) => ScalarCell::Cuda(s.alloc_zeros::<u8>(8).map_err(cuda_error)?, Arc::clone(s)),
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        match self {
            ScalarCell::Host(v) => v[..bytes.len()].copy_from_slice(bytes),
            ScalarCell::Cuda(d, s) => {
                let mut cell = [0u8; 8];
                cell[..bytes.len()].copy_from_slice(bytes);
                s.memcpy_htod(&cell, d).map_err(cuda_error)?;
            }
        }
        Ok(())
    }

    /// The scalar's address.
    ///
    /// # Safety
    /// The cell outlives every call given the result.
    unsafe fn at(&mut self) -> DeviceScalar {
        let ptr = match self {
            ScalarCell::Host(v) => v.as_mut_ptr() as u64,
            ScalarCell::Cuda(d, s) => d.device_ptr(s).0,
        };
        // SAFETY: the caller keeps the cell alive; it holds eight bytes, one value of any dtype.
        unsafe { DeviceScalar::new(ptr) }
    }
}

fn cuda_error(e: zipcoll::cudarc::driver::DriverError) -> Error {
    Error::Cuda {
        call: "a copy of the scalar",
        message: format!("{e:?}"),
    }
}

/// Rank `rank`'s input for `call`, the same on every rank that computes it.
fn input(dtype: DType, call: Call, k: usize, rank: usize) -> Vec<u8> {
    let n = match call {
        Call::ReduceScatter => k * N,
        _ => N,
    };
    testdata::elements(dtype, n, (rank * 131 + dtype as usize) as u64)
}

/// The check on one rank; `true` when every output was the reference's.
pub fn premulsum(comm: &Communicator) -> Result<bool, Error> {
    let (me, k) = (comm.rank(), comm.nranks());
    let mut all_ok = true;
    for (dtype, values) in SCALARS {
        let size = dtype.size_bytes();
        let mut scalar = ScalarCell::new(comm)?;
        // SAFETY: `scalar` lives to the end of this iteration, after the calls that read it
        // (each is synchronized before the next write).
        let at = unsafe { scalar.at() };
        let (mut cases, mut wrong) = (0, Vec::new());
        for bits in values {
            scalar.write(&bits.to_le_bytes()[..size])?;
            for call in CALLS {
                let inputs: Vec<Vec<u8>> = (0..k).map(|q| input(dtype, call, k, q)).collect();
                let mut src = comm.alloc(inputs[me].len())?;
                src.copy_from_host(&inputs[me])?;
                let frame_elems = comm.frame_elems(dtype, N);
                let want = match call {
                    Call::Ring => Some(CollRef::RingAllReduce { frame_elems }),
                    Call::TwoShot => Some(CollRef::TwoShotAllReduce { frame_elems }),
                    Call::ReduceScatter => Some(CollRef::ReduceScatter { rank: me }),
                    Call::ReduceToZero => (me == 0).then_some(CollRef::Reduce { root: 0 }),
                }
                .map(|c| reference::collective(c, dtype, Reduction::PreMulSumBits(bits), &inputs))
                .transpose()?;
                for op in [Reduction::PreMulSumBits(bits), Reduction::PreMulSumOnDevice(at)] {
                    let mut dst = comm.alloc(N * size)?;
                    let opts = Options {
                        algorithm: match call {
                            Call::TwoShot => Algorithm::TwoShot,
                            _ => Algorithm::Ring,
                        },
                        ..Options::default()
                    };
                    let data = Data::OutOfPlace {
                        src: &src,
                        dst: &mut dst,
                    };
                    match call {
                        Call::Ring | Call::TwoShot => comm.all_reduce(data, N, dtype, op, opts)?,
                        Call::ReduceScatter => comm.reduce_scatter(data, N, dtype, op, opts)?,
                        Call::ReduceToZero => comm.reduce(data, N, dtype, op, 0, opts)?,
                    }
                    comm.synchronize()?;
                    cases += 1;
                    let got = dst.to_host()?;
                    if want.as_ref().is_some_and(|w| *w != got) {
                        wrong.push(format!("{call:?} scalar {bits:#x} {op:?}"));
                    }
                }
            }
        }
        all_ok &= wrong.is_empty();
        say!(
            "premulsum over {:?}: rank {me} {dtype:?}: {cases} calls, {} differ from the reference{}{}",
            comm.transport(),
            wrong.len(),
            if wrong.is_empty() { "" } else { ": " },
            wrong.join(", ")
        );
    }
    Ok(all_ok)
}
