//! PreMulSum (`Reduction::PreMulSum`, NCCL's `ncclRedOpCreatePreMulSum`) and the integer
//! average on the simulator, ranks as threads, against a reference bit for bit:
//!
//! | test | what |
//! |------|------|
//! | `pre_mul_sum_matches_the_reference` | 2, 3 and 8 ranks, every float dtype, compression off and Auto, ring and two-shot all_reduce, reduce_scatter and reduce with scalars that no dtype but f32 and f64 holds, negative, zero, NaN, one only f64 holds; inputs with NaN payloads, infinities, -0.0 and subnormals |
//! | `pre_mul_sum_of_one_over_nranks_is_avg` | `PreMulSum(1 / k)` gives `ReduceOp::Avg`'s bits |
//! | `integers_average_and_pre_mul_sum_as_nccl` | 2, 3, 5 and 8 ranks, every integer dtype, small frames (several loops per call), one-warp and block channels: Avg (the wrapped sum divided by `nranks` toward zero, NCCL's SumPostDiv), PreMulSum(-3) (3 unsigned) and PreMulSumBits with bits no f64 holds, over ring and two-shot all_reduce, reduce_scatter and reduce; inputs with MIN, MAX, -1, 0, 1 and random words | equal to i128 arithmetic wrapped to the type |
//! | `a_pre_mul_sum_scalar_outside_an_integer_dtype_is_refused` | a fraction, out of range either way, NaN | `InvalidArgument`; the communicator then runs a sum |
//! | `a_group_applies_each_calls_own_scalar` | two all_reduces with different scalars in one group |
//! | `a_scalar_in_device_memory_is_read_as_the_call_runs` | `PreMulSumOnDevice` on 3 ranks (f32, bf16, f64, i64, u8), the value rewritten between calls | each call's bits equal `PreMulSumBits` of the value written before it, and the two values differ |
//! | `a_scalar_at_address_zero_is_refused` | `DeviceScalar` at 0 | `InvalidArgument`; the communicator then runs a sum |

use zipcoll_host::comm::{run_sim, Algorithm, Compression, Config, Data, DeviceScalar, Lossless, Options, Reduction};
use zipcoll_host::reference::{self, CollRef};
use zipcoll_host::{testdata, DType, ReduceOp};

const N: usize = 2500;
const SCALARS: [f64; 6] = [0.1, -3.0, 0.0, 1.0e-30, f64::NAN, 1.0e-300];

/// The calls checked, each with its input elements for `k` ranks (out of place).
#[derive(Clone, Copy, Debug)]
enum Call {
    Ring,
    TwoShot,
    ReduceScatter,
    Reduce(usize),
}

impl Call {
    fn input_elems(self, k: usize) -> usize {
        match self {
            Call::ReduceScatter => k * N,
            _ => N,
        }
    }
}

/// Each rank's input, output (unwritten for a reduce's non-root) and frame size after `call`
/// with `op` on `k` ranks of the simulator with `compression`.
fn run(k: usize, dtype: DType, call: Call, op: Reduction, compression: Compression) -> Vec<(Vec<u8>, Vec<u8>, usize)> {
    run_in(Config::sim(), k, dtype, call, op, compression)
}

/// [`run`] with `config`.
fn run_in(
    config: Config,
    k: usize,
    dtype: DType,
    call: Call,
    op: Reduction,
    compression: Compression,
) -> Vec<(Vec<u8>, Vec<u8>, usize)> {
    let opts = Options {
        compression: Some(compression),
        algorithm: match call {
            Call::TwoShot => Algorithm::TwoShot,
            _ => Algorithm::Ring,
        },
        ..Options::default()
    };
    let size = dtype.size_bytes();
    run_sim(k, config, |comm| {
        let me = comm.rank();
        let input = testdata::elements(dtype, call.input_elems(k), (me * 31 + dtype as usize) as u64);
        let mut src = comm.alloc(input.len())?;
        src.copy_from_host(&input)?;
        let mut dst = comm.alloc(N * size)?;
        let data = Data::OutOfPlace {
            src: &src,
            dst: &mut dst,
        };
        match call {
            Call::Ring | Call::TwoShot => comm.all_reduce(data, N, dtype, op, opts)?,
            Call::ReduceScatter => comm.reduce_scatter(data, N, dtype, op, opts)?,
            Call::Reduce(root) => comm.reduce(data, N, dtype, op, root, opts)?,
        }
        comm.synchronize()?;
        Ok((input, dst.to_host()?, comm.frame_elems(dtype, N)))
    })
    .unwrap()
}

fn check(k: usize, dtype: DType, call: Call, op: Reduction, compression: Compression) {
    let got = run(k, dtype, call, op, compression);
    let inputs: Vec<Vec<u8>> = got.iter().map(|(i, _, _)| i.clone()).collect();
    for (r, (_, out, fe)) in got.iter().enumerate() {
        let frame_elems = *fe;
        let c = match call {
            Call::Ring => CollRef::RingAllReduce { frame_elems },
            Call::TwoShot => CollRef::TwoShotAllReduce { frame_elems },
            Call::ReduceScatter => CollRef::ReduceScatter { rank: r },
            Call::Reduce(root) if root == r => CollRef::Reduce { root },
            Call::Reduce(_) => continue,
        };
        let want = reference::collective(c, dtype, op, &inputs).unwrap();
        assert!(
            out == &want,
            "{k} ranks, {dtype:?}, {call:?}, {op:?}, {compression:?}: rank {r}'s output differs from the reference"
        );
    }
}

#[test]
fn pre_mul_sum_matches_the_reference() {
    for k in [2, 3, 8] {
        for dtype in DType::ALL.into_iter().filter(|d| !d.is_integer()) {
            for compression in [Compression::Off, Compression::Lossless(Lossless::Auto)] {
                for (i, call) in [Call::Ring, Call::TwoShot, Call::ReduceScatter, Call::Reduce(k - 1)]
                    .into_iter()
                    .enumerate()
                {
                    // every scalar somewhere, not every one everywhere (the sweep stays short)
                    let scalar = SCALARS[(i + k + dtype as usize) % SCALARS.len()];
                    check(k, dtype, call, Reduction::PreMulSum(scalar), compression);
                }
            }
        }
    }
}

#[test]
fn pre_mul_sum_of_one_over_nranks_is_avg() {
    for k in [2, 3, 5] {
        for dtype in DType::ALL.into_iter().filter(|d| !d.is_integer()) {
            let off = Compression::Off;
            let avg = run(k, dtype, Call::Ring, ReduceOp::Avg.into(), off);
            let scaled = run(k, dtype, Call::Ring, Reduction::PreMulSum(1.0 / k as f64), off);
            assert_eq!(avg, scaled, "{k} ranks, {dtype:?}");
        }
    }
}

#[test]
fn a_group_applies_each_calls_own_scalar() {
    let k = 3;
    let got = run_sim(k, Config::sim(), |comm| {
        let me = comm.rank() as f32;
        let ones: Vec<u8> = (0..N).flat_map(|i| ((i % 10) as f32 + me).to_le_bytes()).collect();
        let mut a = comm.alloc(4 * N)?;
        let mut b = comm.alloc(4 * N)?;
        a.copy_from_host(&ones)?;
        b.copy_from_host(&ones)?;
        let mut g = comm.group();
        g.all_reduce(
            Data::InPlace(&mut a),
            N,
            DType::F32,
            Reduction::PreMulSum(0.5),
            Algorithm::Ring,
        )?;
        g.all_reduce(
            Data::InPlace(&mut b),
            N,
            DType::F32,
            Reduction::PreMulSum(-2.0),
            Algorithm::Ring,
        )?;
        g.launch(Options::default())?;
        comm.synchronize()?;
        Ok((a.to_host()?, b.to_host()?))
    })
    .unwrap();
    // small integers: every product and sum is exact
    let sum = |i: usize| (0..k).map(|r| (i % 10) as f32 + r as f32).sum::<f32>();
    let want = |s: f32| -> Vec<u8> { (0..N).flat_map(|i| (s * sum(i)).to_le_bytes()).collect() };
    for (r, (a, b)) in got.iter().enumerate() {
        assert_eq!(a, &want(0.5), "rank {r}: the group's first call");
        assert_eq!(b, &want(-2.0), "rank {r}: the group's second call");
    }
}

/// An element of an integer `dtype` (little-endian bytes) as a number, signed or unsigned as
/// the type.
fn int_value(dtype: DType, bytes: &[u8]) -> i128 {
    let mut word = [0u8; 16];
    word[..bytes.len()].copy_from_slice(bytes);
    let v = i128::from_le_bytes(word);
    let shift = 128 - 8 * bytes.len() as u32;
    let signed = matches!(dtype, DType::I8 | DType::I32 | DType::I64);
    if signed {
        (v << shift) >> shift
    } else {
        v
    }
}

/// `v` wrapped to an integer `dtype` (two's complement), as little-endian bytes.
fn int_bytes(dtype: DType, v: i128) -> Vec<u8> {
    v.to_le_bytes()[..dtype.size_bytes()].to_vec()
}

/// Small frames, so that every call runs several loops of its schedule (the average divides
/// after each loop), on channels of `threads` (32: one warp; more: a block).
fn small_frames(threads: u32) -> Config {
    Config {
        buffer_bytes: 8 << 10,
        channel_threads: threads,
        ..Config::sim()
    }
}

#[test]
fn integers_average_and_pre_mul_sum_as_nccl() {
    // the scalar of PreMulSumBits: bits above the dtype's width are ignored, and the 64-bit
    // types get a value no f64 holds (i64::MIN + 12345, 2^63 + 12345)
    const BITS: u64 = 0x8000_0000_0000_3039;
    for k in [2, 3, 5, 8] {
        for dtype in DType::ALL.into_iter().filter(|d| d.is_integer()) {
            let size = dtype.size_bytes();
            let by_bits = int_value(dtype, &BITS.to_le_bytes()[..size]);
            // -3 where the type holds it
            let three = if int_value(dtype, &[0xff; 8][..size]) < 0 {
                -3
            } else {
                3
            };
            // (the reduction, each contribution's factor, the divisor of the sum)
            let cases = [
                (ReduceOp::Avg.into(), 1, k as i128),
                (Reduction::PreMulSum(three as f64), three, 1),
                (Reduction::PreMulSumBits(BITS), by_bits, 1),
            ];
            for call in [Call::Ring, Call::TwoShot, Call::ReduceScatter, Call::Reduce(k / 2)] {
                for (op, factor, divisor) in cases {
                    let got = run_in(
                        small_frames(if k % 2 == 1 { 32 } else { 64 }),
                        k,
                        dtype,
                        call,
                        op,
                        Compression::Lossless(Lossless::Auto),
                    );
                    let frame_elems = got[0].2;
                    assert!(
                        k * frame_elems < N,
                        "{k} ranks, {dtype:?}: one loop ({frame_elems} elements a frame)"
                    );
                    for (r, (_, out, _)) in got.iter().enumerate() {
                        let first = match call {
                            Call::ReduceScatter => r * N,
                            Call::Reduce(root) if root != r => continue,
                            _ => 0,
                        };
                        // an independent reference: i128 arithmetic wrapped to the type, the
                        // average rounded toward zero
                        let want: Vec<u8> = (0..N)
                            .flat_map(|e| {
                                let at = (first + e) * size..(first + e + 1) * size;
                                let sum = got.iter().fold(0i128, |acc, (input, _, _)| {
                                    acc.wrapping_add(int_value(dtype, &input[at.clone()]).wrapping_mul(factor))
                                });
                                let wrapped = int_value(dtype, &int_bytes(dtype, sum));
                                int_bytes(dtype, wrapped / divisor)
                            })
                            .collect();
                        assert!(
                            out == &want,
                            "{k} ranks, {dtype:?}, {call:?}, {op:?}: rank {r}'s output differs"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_pre_mul_sum_scalar_outside_an_integer_dtype_is_refused() {
    let got = run_sim(2, Config::sim(), |comm| {
        let mut outcomes = Vec::new();
        let refused = [
            (DType::I32, 2.5),
            (DType::U8, 256.0),
            (DType::U32, -1.0),
            (DType::I8, -129.0),
            (DType::I64, f64::NAN),
            (DType::U64, 1.0e20),
        ];
        for (dtype, scalar) in refused {
            let mut buf = comm.alloc(16 * dtype.size_bytes())?;
            buf.copy_from_host(&vec![3u8; 16 * dtype.size_bytes()])?;
            let op = Reduction::PreMulSum(scalar);
            let call = comm.all_reduce(Data::InPlace(&mut buf), 16, dtype, op, Options::default());
            outcomes.push(matches!(call, Err(zipcoll_host::Error::InvalidArgument(_))));
            // the communicator goes on: 0x03 bytes summed over two ranks are 0x06 in every byte
            comm.all_reduce(Data::InPlace(&mut buf), 16, dtype, ReduceOp::Sum, Options::default())?;
            comm.synchronize()?;
            outcomes.push(buf.to_host()? == vec![6u8; 16 * dtype.size_bytes()]);
        }
        Ok(outcomes)
    })
    .unwrap();
    for (r, outcomes) in got.iter().enumerate() {
        assert_eq!(outcomes.len(), 12);
        assert!(outcomes.iter().all(|&ok| ok), "rank {r}: {outcomes:?}");
    }
}

#[test]
fn a_scalar_in_device_memory_is_read_as_the_call_runs() {
    // (dtype, the scalar's two values as bits: each call must use the one written before it)
    let cases = [
        (DType::F32, [0.25f32.to_bits() as u64, (-3.5f32).to_bits() as u64]),
        (DType::Bf16, [0x3F00, 0xC040]),
        (DType::F64, [0.1f64.to_bits(), (-1.0e300f64).to_bits()]),
        (DType::I64, [i64::MIN as u64 + 12345, 7]),
        (DType::U8, [3, 255]),
    ];
    for (dtype, values) in cases {
        let size = dtype.size_bytes();
        let got = run_sim(3, Config::sim(), |comm| {
            let input = testdata::elements(dtype, N, 40 + comm.rank() as u64);
            // the simulator's device memory is this process's
            let mut scalar = vec![0u8; size];
            // SAFETY: `scalar` holds one value of `dtype` and outlives the calls (each is
            // synchronized before the next write).
            let at = unsafe { DeviceScalar::new(scalar.as_mut_ptr() as u64) };
            let mut outputs = Vec::new();
            for bits in values {
                scalar.copy_from_slice(&bits.to_le_bytes()[..size]);
                for op in [Reduction::PreMulSumOnDevice(at), Reduction::PreMulSumBits(bits)] {
                    let mut buf = comm.alloc(N * size)?;
                    buf.copy_from_host(&input)?;
                    comm.all_reduce(Data::InPlace(&mut buf), N, dtype, op, Options::default())?;
                    comm.synchronize()?;
                    outputs.push(buf.to_host()?);
                }
            }
            Ok(outputs)
        })
        .unwrap();
        for (r, outputs) in got.iter().enumerate() {
            assert_eq!(outputs[0], outputs[1], "{dtype:?} rank {r}: the first value");
            assert_eq!(outputs[2], outputs[3], "{dtype:?} rank {r}: the second value");
            assert_ne!(
                outputs[0], outputs[2],
                "{dtype:?} rank {r}: both values gave one result"
            );
        }
    }
}

#[test]
fn a_scalar_at_address_zero_is_refused() {
    let got = run_sim(2, Config::sim(), |comm| {
        let mut buf = comm.alloc(16 * 4)?;
        buf.copy_from_host(&[1u8; 64])?;
        // SAFETY: never read: the call refuses address 0 before it enqueues anything.
        let op = Reduction::PreMulSumOnDevice(unsafe { DeviceScalar::new(0) });
        let refused = comm.all_reduce(Data::InPlace(&mut buf), 16, DType::F32, op, Options::default());
        comm.all_reduce(
            Data::InPlace(&mut buf),
            16,
            DType::I32,
            ReduceOp::Sum,
            Options::default(),
        )?;
        comm.synchronize()?;
        Ok((
            matches!(refused, Err(zipcoll_host::Error::InvalidArgument(_))),
            buf.to_host()?,
        ))
    })
    .unwrap();
    for (refused, sum) in got {
        assert!(refused);
        assert_eq!(sum, [2u8; 64]);
    }
}
