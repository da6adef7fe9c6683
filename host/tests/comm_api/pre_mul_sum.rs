//! PreMulSum (`Reduction::PreMulSum`, NCCL's `ncclRedOpCreatePreMulSum`) on the simulator,
//! ranks as threads, against the scalar reference bit for bit:
//!
//! | test | what |
//! |------|------|
//! | `pre_mul_sum_matches_the_reference` | 2, 3 and 8 ranks, every float dtype, compression off and Auto, ring and two-shot all_reduce, reduce_scatter and reduce with scalars that no dtype but f32 and f64 holds, negative, zero, NaN, one only f64 holds; inputs with NaN payloads, infinities, -0.0 and subnormals |
//! | `pre_mul_sum_of_one_over_nranks_is_avg` | `PreMulSum(1 / k)` gives `ReduceOp::Avg`'s bits |
//! | `integers_refuse_avg_and_pre_mul_sum` | `InvalidArgument` for both on every integer dtype; the communicator then runs a sum |
//! | `a_group_applies_each_calls_own_scalar` | two all_reduces with different scalars in one group |

use zipcoll_host::comm::{run_sim, Algorithm, Compression, Config, Data, Lossless, Options, Reduction};
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
    let opts = Options {
        compression: Some(compression),
        algorithm: match call {
            Call::TwoShot => Algorithm::TwoShot,
            _ => Algorithm::Ring,
        },
        ..Options::default()
    };
    let size = dtype.size_bytes();
    run_sim(k, Config::sim(), |comm| {
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

#[test]
fn integers_refuse_avg_and_pre_mul_sum() {
    let got = run_sim(2, Config::sim(), |comm| {
        let mut outcomes = Vec::new();
        for dtype in DType::ALL.into_iter().filter(|d| d.is_integer()) {
            let mut buf = comm.alloc(16 * dtype.size_bytes())?;
            buf.copy_from_host(&vec![3u8; 16 * dtype.size_bytes()])?;
            for op in [ReduceOp::Avg.into(), Reduction::PreMulSum(2.0)] {
                let refused = comm.all_reduce(Data::InPlace(&mut buf), 16, dtype, op, Options::default());
                outcomes.push(matches!(refused, Err(zipcoll_host::Error::InvalidArgument(_))));
            }
            comm.all_reduce(Data::InPlace(&mut buf), 16, dtype, ReduceOp::Sum, Options::default())?;
            comm.synchronize()?;
            // 0x03 bytes summed over two ranks: 0x06 in every byte for every width
            outcomes.push(buf.to_host()? == vec![6u8; 16 * dtype.size_bytes()]);
        }
        Ok(outcomes)
    })
    .unwrap();
    for (r, outcomes) in got.iter().enumerate() {
        assert_eq!(outcomes.len(), 18);
        assert!(outcomes.iter().all(|&ok| ok), "rank {r}: {outcomes:?}");
    }
}
