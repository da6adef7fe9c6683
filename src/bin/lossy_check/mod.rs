//! zipcoll-comm's `lossy` check: lossy calls (`zipcoll::comm::Lossy`) of every collective they
//! serve, with their bound checked on every element against the exact result in `f64`, and
//! their bytes compared with the simulator's for the same inputs, computed in this process
//! (the same call sequence, so QSGD's draws match too).
//!
//! | policies | dtypes | calls (sum) |
//! |----------|--------|-------------|
//! | `error-bound:abs=0.1`, `error-bound:rel=1e-2`, `qsgd:bits=5`, `qsgd:bits=4,bucket=256` | f32, bf16 | ring and two-shot all_reduce, reduce_scatter, reduce to the last rank, all_gather, broadcast from rank k/2, all_to_all |
//!
//! The policies are coarse enough that the sums of up to 4 ranks' N(0,1) levels fit the 8-bit
//! levels (calls that cannot, more ranks or finer bounds, travel exactly and are counted so).
//! Every call runs twice: on N(0,1) data, and with specials put in (a NaN on rank 0, an
//! infinity on the last rank and 1e30 on rank 1, in three buckets), whose buckets escape
//! (travel exactly beside the levels). A line per call on rank 0: the largest error over the
//! bound allowed (error bound; at most 1 where it held; QSGD: 0, as only its NaN and infinities
//! are checked; a NaN or an infinity of the exact result must come out as one), whether it
//! quantized and how many buckets escaped, and whether its output equals the simulator's.

use crate::common::say;
use zipcoll::comm::{run_sim, Algorithm, Communicator, Config, Data, Lossy, Options};
use zipcoll::{testdata, DType, Error, ReduceOp};
use zipcoll_device::dtype::{Bf16, F32Exact};

/// One call of the check.
#[derive(Clone, Copy, Debug)]
enum Call {
    AllReduce(Algorithm),
    ReduceScatter,
    Reduce,
    AllGather,
    Broadcast,
    AllToAll,
}

const CALLS: [Call; 7] = [
    Call::AllReduce(Algorithm::Ring),
    Call::AllReduce(Algorithm::TwoShot),
    Call::ReduceScatter,
    Call::Reduce,
    Call::AllGather,
    Call::Broadcast,
    Call::AllToAll,
];

const POLICIES: [&str; 4] = [
    "error-bound:abs=0.1",
    "error-bound:rel=1e-2",
    "qsgd:bits=5",
    "qsgd:bits=4,bucket=256",
];

/// `f32` values of `dtype` (f32 or bf16) bytes.
fn values(dtype: DType, bytes: &[u8]) -> Vec<f32> {
    match dtype {
        DType::Bf16 => bytes
            .chunks_exact(2)
            .map(|b| Bf16::to_f32(u16::from_le_bytes([b[0], b[1]])))
            .collect(),
        _ => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect(),
    }
}

/// One unit in the last place of `y` in `dtype`.
fn ulp(dtype: DType, y: f32) -> f64 {
    let up = match dtype {
        DType::Bf16 => Bf16::to_f32(Bf16::from_f32(y.abs()).wrapping_add(1)),
        _ => f32::from_bits(y.abs().to_bits().wrapping_add(1)),
    };
    (up as f64 - y.abs() as f64).abs()
}

impl Call {
    /// Elements of a rank's input and output for `count`.
    fn sizes(self, count: usize, k: usize) -> (usize, usize) {
        match self {
            Call::AllGather => (count, k * count),
            Call::ReduceScatter => (k * count, count),
            Call::AllToAll => (k * count, k * count),
            _ => (count, count),
        }
    }

    /// Runs the call on `comm`; the output's bytes.
    fn run(
        self,
        comm: &Communicator,
        dtype: DType,
        count: usize,
        input: &[u8],
        opts: Options,
    ) -> Result<Vec<u8>, Error> {
        let k = comm.nranks();
        let mut src = comm.alloc(input.len())?;
        src.copy_from_host(input)?;
        let mut dst = comm.alloc(self.sizes(count, k).1 * dtype.size_bytes())?;
        let d = Data::OutOfPlace {
            src: &src,
            dst: &mut dst,
        };
        let sum = ReduceOp::Sum;
        match self {
            Call::AllReduce(algorithm) => comm.all_reduce(d, count, dtype, sum, Options { algorithm, ..opts })?,
            Call::ReduceScatter => comm.reduce_scatter(d, count, dtype, sum, opts)?,
            Call::Reduce => comm.reduce(d, count, dtype, sum, k - 1, opts)?,
            Call::AllGather => comm.all_gather(d, count, dtype, opts)?,
            Call::Broadcast => comm.broadcast(d, count, dtype, k / 2, opts)?,
            Call::AllToAll => comm.all_to_all(d, count, dtype, opts)?,
        }
        comm.synchronize()?;
        dst.to_host()
    }

    /// Rank `rank`'s exact output in `f64` and the error each element may have under `lossy`
    /// (QSGD: unbounded per call, so only its NaN and infinities are checked; `None`: a
    /// reduce's non-root, which has no output).
    fn exact(self, lossy: Lossy, rank: usize, count: usize, xs: &[Vec<f32>]) -> Option<(Vec<f64>, Vec<f64>)> {
        let k = xs.len();
        let eb = |x: &[f32]| match lossy {
            Lossy::ErrorBound(zipcoll::comm::Bound::Abs(eb)) => Some(eb as f64),
            Lossy::ErrorBound(zipcoll::comm::Bound::Rel(rel)) => {
                let finite = x.iter().filter(|v| v.is_finite());
                let (lo, hi) = finite.fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
                Some((rel * (hi - lo)) as f64)
            }
            _ => Some(f64::INFINITY),
        };
        let sum = |i: usize| xs.iter().map(|x| x[i] as f64).sum::<f64>();
        let all: Vec<f32> = xs.concat();
        let moved = |x: &[f32], range: &[f32]| {
            Some((
                x.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                vec![eb(range)?; x.len()],
            ))
        };
        match self {
            Call::AllReduce(_) => Some(((0..count).map(sum).collect(), vec![k as f64 * eb(&all)?; count])),
            Call::ReduceScatter => Some((
                (rank * count..(rank + 1) * count).map(sum).collect(),
                vec![k as f64 * eb(&all)?; count],
            )),
            Call::Reduce if rank == k - 1 => Some(((0..count).map(sum).collect(), vec![k as f64 * eb(&all)?; count])),
            Call::Reduce => None,
            Call::AllGather => {
                let parts: Option<Vec<(Vec<f64>, Vec<f64>)>> = xs.iter().map(|x| moved(x, x)).collect();
                let parts = parts?;
                Some((
                    parts.iter().flat_map(|p| p.0.clone()).collect(),
                    parts.iter().flat_map(|p| p.1.clone()).collect(),
                ))
            }
            Call::Broadcast => moved(&xs[k / 2], &xs[k / 2]),
            Call::AllToAll => {
                let parts: Option<Vec<(Vec<f64>, Vec<f64>)>> = xs
                    .iter()
                    .map(|x| moved(&x[rank * count..(rank + 1) * count], x))
                    .collect();
                let parts = parts?;
                Some((
                    parts.iter().flat_map(|p| p.0.clone()).collect(),
                    parts.iter().flat_map(|p| p.1.clone()).collect(),
                ))
            }
        }
    }
}

/// Puts the specials into rank `r`'s input of `n` elements of `dtype`: a NaN with a payload at
/// element 5 of rank 0, -infinity at the last element of the last rank, 1e30 at element
/// `n / 2` of rank 1 (of the first rank where there is one rank).
fn put_specials(dtype: DType, bytes: &mut [u8], r: usize, k: usize) {
    let n = bytes.len() / dtype.size_bytes();
    let mut put = |i: usize, v: f32, bf16_bits: u16| {
        if i < n {
            match dtype {
                DType::Bf16 => bytes[2 * i..2 * i + 2].copy_from_slice(&bf16_bits.to_le_bytes()),
                _ => bytes[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes()),
            }
        }
    };
    if r == 0 {
        put(5, f32::from_bits(0x7FC0_1234), 0x7FC1);
    }
    if r == k - 1 {
        put(n - 1, f32::NEG_INFINITY, 0xFF80);
    }
    if r == 1 % k {
        put(n / 2, 1e30, Bf16::from_f32(1e30));
    }
}

/// How far `y` is from the exact `s` in units of the error `a` allowed: 0 or infinity where `s`
/// is not finite (whether `y` is the same infinity, or a NaN for a NaN).
fn error_ratio(dtype: DType, y: f32, s: f64, a: f64) -> f64 {
    match s.is_finite() {
        true => (y as f64 - s).abs() / (a + ulp(dtype, y)),
        false if (s.is_nan() && y.is_nan()) || y as f64 == s => 0.0,
        false => f64::INFINITY,
    }
}

/// The check on one rank with `count` elements per block; `true` when it passed.
pub fn lossy(comm: &Communicator, count: usize) -> Result<bool, Error> {
    let (rank, k) = (comm.rank(), comm.nranks());
    let mut plan = Vec::new();
    for spec in POLICIES {
        let lossy: Lossy = spec.parse()?;
        for (dtype, specials) in [
            (DType::F32, false),
            (DType::Bf16, false),
            (DType::F32, true),
            (DType::Bf16, true),
        ] {
            for (c, call) in CALLS.into_iter().enumerate() {
                let n = call.sizes(count, k).0;
                let inputs: Vec<Vec<u8>> = (0..k)
                    .map(|r| {
                        let mut input = testdata::normal(dtype, n, (c * 64 + r) as u64);
                        if specials {
                            put_specials(dtype, &mut input, r, k);
                        }
                        input
                    })
                    .collect();
                plan.push((spec, lossy, dtype, call, inputs, specials));
            }
        }
    }
    let opts = |lossy| Options {
        lossy: Some(lossy),
        ..Options::default()
    };
    let (mut outs, mut quantized) = (Vec::new(), Vec::new());
    for (_, lossy, dtype, call, inputs, _) in &plan {
        let before = comm.lossy_counts();
        outs.push(call.run(comm, *dtype, count, &inputs[rank], opts(*lossy))?);
        let after = comm.lossy_counts();
        quantized.push((after.quantized > before.quantized, after.escaped - before.escaped));
    }
    // the simulator's outputs for this rank, the same calls in the same order
    let sim = if comm.backend().is_sim() {
        None
    } else {
        let config = Config {
            timeout: comm.config().timeout,
            ..Config::sim()
        };
        let all: Vec<Vec<Vec<u8>>> = run_sim(k, config, |s| {
            let r = s.rank();
            plan.iter()
                .map(|(_, lossy, dtype, call, inputs, _)| call.run(&s, *dtype, count, &inputs[r], opts(*lossy)))
                .collect()
        })?;
        all.into_iter().nth(rank)
    };
    let mut ok = true;
    for (i, (spec, lossy, dtype, call, inputs, specials)) in plan.iter().enumerate() {
        let xs: Vec<Vec<f32>> = inputs.iter().map(|b| values(*dtype, b)).collect();
        let worst = match call.exact(*lossy, rank, count, &xs) {
            Some((want, allow)) => {
                let got = values(*dtype, &outs[i]);
                let w = got
                    .iter()
                    .zip(&want)
                    .zip(&allow)
                    .map(|((&y, &s), &a)| error_ratio(*dtype, y, s, a))
                    .fold(0.0f64, f64::max);
                ok &= got.len() == want.len() && w <= 1.0;
                format!("{w:.3}")
            }
            None => "-".into(),
        };
        let same = match &sim {
            Some(s) => {
                ok &= s[i] == outs[i];
                if s[i] == outs[i] {
                    "equal"
                } else {
                    "DIFFERENT"
                }
            }
            None => "(this is the simulator)",
        };
        if rank == 0 {
            let how = match quantized[i] {
                (true, 0) => "quantized".to_string(),
                (true, e) => format!("quantized, {e} buckets escaped"),
                (false, _) => "EXACT".to_string(),
            };
            let data = if *specials { " with specials" } else { "" };
            say!("lossy {spec} {dtype:?} {call:?}{data}: {how}, error / bound {worst}, bytes vs the simulator: {same}");
        }
    }
    Ok(ok)
}
