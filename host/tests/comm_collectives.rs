//! The communicator's collectives at the API level, ranks as threads (`run_sim`,
//! `Communicator::init_with` with `Backend::Sim`): every rank's output is bit-identical to the
//! scalar reference that follows the collective's reduction order (`zipcoll_primitives`'
//! `*_reference`), on inputs with NaN payloads, ±0, ±inf, subnormals and normal values
//! (`testdata::elements`), for sizes 0, 1, a few and a few thousand (several frames), in place
//! and out of place, with compression off, Auto and each forced codec.
//!
//! | test                                   | ranks   | transport | what                                              |
//! |----------------------------------------|---------|-----------|---------------------------------------------------|
//! | `every_collective_on_*_ranks`          | 1..=8   | SIM       | every collective, bf16 / f32 x sum / max, every compression |
//! | `every_collective_of_f64_and_the_integers_on_2_to_8_ranks` | 2..=8 | SIM | every collective, f64 / i32 / u8 / i64 x sum / min / prod, every compression (f64 and i64 travel RAW, i32 and u8 coded) |
//! | `every_dtype_and_op_on_3_ranks`        | 3       | SIM       | every dtype x op (integer Avg: the sum divided toward zero): ring, two-shot, reduce_scatter, reduce |
//! | `every_collective_over_net_loopback`   | 2, 3, 4 | NET       | every collective, off / auto / a codec            |
//! | `a_rank_that_finishes_first_leaves_its_peers_intact` | 2..=4 | NET, SIM | a rank drops its communicator right after its last call |
//! | `the_communicator_default_compression_applies` | 2 | SIM (Auto) | `Config::compression` (each codec) when a call does not override it |
//! | `more_calls_than_slots_then_one_synchronize` | 3 | SIM, NET | ten all_reduces enqueued back to back with `max_inflight = 2`, one `synchronize`, then `query` |
//!
//! Every call is followed by `Communicator::synchronize` (calls are asynchronous), except in
//! the last test.

use std::time::Instant;
use zipcoll_device::dtype::{Bf16, Elem, Split, F16, F32, F64, F8E4M3, F8E5M2, I32, I64, I8, U32, U64, U8};
use zipcoll_device::reduce::{Avg, Max, Min, Prod, RedOp, Sum};
use zipcoll_host::comm::{
    run_sim, Algorithm, Communicator, Compression, Config, Data, DeviceBuffer, Lossless, Options, TransportKind,
    LOOPS_PER_CHANNEL,
};
use zipcoll_host::{testdata, CodecId, DType, ReduceOp, Result};
use zipcoll_primitives::collectives::{
    all_gather_reference, all_to_all_reference, post_divide_reference, reduce_reference, reduce_scatter_reference,
    ring_all_reduce_reference, two_shot_all_reduce_reference,
};
use zipcoll_targets::Word;

/// A call of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ring,
    TwoShot,
    AllGather,
    ReduceScatter,
    Reduce(usize),
    Broadcast(usize),
    AllToAll,
    /// A group on every rank: send to `rank + 1`, receive from `rank - 1`.
    Shift,
}

/// One call, the same on every rank.
#[derive(Clone, Copy, Debug)]
struct Case {
    kind: Kind,
    dtype: DType,
    op: ReduceOp,
    count: usize,
    in_place: bool,
    /// `None`: the communicator's own compression.
    compression: Option<Compression>,
    seed: u64,
}

/// Off, Auto and every forced codec (`Force(Raw)` included: RAW frames by request).
fn compressions() -> Vec<Compression> {
    let mut all = vec![Compression::Off, Compression::Lossless(Lossless::Auto)];
    all.extend(CodecId::ALL.map(|c| Compression::Lossless(Lossless::Force(c))));
    all
}

/// Elements of the input and output buffers of rank for `kind` (out of place).
fn lens(kind: Kind, k: usize, count: usize) -> (usize, usize) {
    match kind {
        Kind::AllGather => (count, k * count),
        Kind::ReduceScatter => (k * count, count),
        Kind::AllToAll => (k * count, k * count),
        _ => (count, count),
    }
}

/// Rank `r`'s input bytes for `case`.
fn input(case: &Case, k: usize, r: usize) -> Vec<u8> {
    let (slen, _) = lens(case.kind, k, case.count);
    testdata::elements(case.dtype, slen, case.seed.wrapping_mul(31).wrapping_add(r as u64 + 1))
}

/// What rank `r`'s output buffer initially holds out of place (to see what is left untouched).
fn filler(case: &Case, k: usize, r: usize) -> Vec<u8> {
    let (_, dlen) = lens(case.kind, k, case.count);
    testdata::elements(case.dtype, dlen, case.seed ^ 0x5EED_F111 ^ (r as u64) << 40)
}

fn to_bits<T: Elem>(b: &[u8]) -> Vec<T::Bits> {
    let size = T::DTYPE.size_bytes();
    b.chunks_exact(size)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..size].copy_from_slice(c);
            T::Bits::from_bits64(u64::from_le_bytes(w))
        })
        .collect()
}

fn to_bytes<T: Elem>(v: &[T::Bits]) -> Vec<u8> {
    let size = T::DTYPE.size_bytes();
    v.iter()
        .flat_map(|b| b.to_bits64().to_le_bytes().into_iter().take(size))
        .collect()
}

/// What rank `r`'s output buffer must hold after the call, from every rank's input and the
/// buffer's contents before it (out of place: `dst`; in place: the one buffer).
fn expected(case: &Case, inputs: &[Vec<u8>], r: usize, initial: &[u8], frame_elems: usize) -> Vec<u8> {
    fn by_op<T: Split>(case: &Case, inputs: &[Vec<u8>], r: usize, initial: &[u8], fe: usize) -> Vec<u8> {
        let k = inputs.len() as u64;
        match case.op {
            // an integer average: the sum divided by `nranks` (NCCL's SumPostDiv)
            ReduceOp::Avg if T::DTYPE.is_integer() => typed::<T, Sum>(case, inputs, r, initial, fe, k),
            ReduceOp::Sum => typed::<T, Sum>(case, inputs, r, initial, fe, 1),
            ReduceOp::Prod => typed::<T, Prod>(case, inputs, r, initial, fe, 1),
            ReduceOp::Min => typed::<T, Min>(case, inputs, r, initial, fe, 1),
            ReduceOp::Max => typed::<T, Max>(case, inputs, r, initial, fe, 1),
            ReduceOp::Avg => typed::<T, Avg>(case, inputs, r, initial, fe, 1),
        }
    }
    /// The result of `O` (an average for Avg) whose reduced elements are then divided by
    /// `divisor` (`post_divide_reference`; 1: not divided).
    fn typed<T: Split, O: RedOp>(
        case: &Case,
        inputs: &[Vec<u8>],
        r: usize,
        initial: &[u8],
        fe: usize,
        divisor: u64,
    ) -> Vec<u8> {
        let owned: Vec<Vec<T::Bits>> = inputs.iter().map(|b| to_bits::<T>(b)).collect();
        let ins: Vec<&[T::Bits]> = owned.iter().map(Vec::as_slice).collect();
        let mut out = to_bits::<T>(initial);
        let count = case.count;
        let op = O::new::<T>(ins.len() as u32);
        let divided = |v: &mut [T::Bits]| post_divide_reference::<T, O>(divisor, v);
        match case.kind {
            Kind::Ring => {
                ring_all_reduce_reference::<T, O>(op, &ins, &mut out, fe);
                divided(&mut out);
            }
            Kind::TwoShot => {
                two_shot_all_reduce_reference::<T, O>(op, &ins, &mut out, fe);
                divided(&mut out);
            }
            Kind::AllGather => all_gather_reference::<T>(&ins, &mut out),
            Kind::ReduceScatter => {
                let mut block = vec![T::Bits::default(); count];
                reduce_scatter_reference::<T, O>(op, &ins, r, &mut block);
                divided(&mut block);
                let at = if out.len() == count { 0 } else { r * count };
                out[at..at + count].copy_from_slice(&block);
            }
            Kind::Reduce(root) if root == r => {
                reduce_reference::<T, O>(op, &ins, root, &mut out);
                divided(&mut out);
            }
            Kind::Reduce(_) => {}
            Kind::Broadcast(root) => out.copy_from_slice(ins[root]),
            Kind::AllToAll => all_to_all_reference::<T>(&ins, r, &mut out),
            Kind::Shift => out.copy_from_slice(ins[(r + ins.len() - 1) % ins.len()]),
        }
        to_bytes::<T>(&out)
    }
    match case.dtype {
        DType::Bf16 => by_op::<Bf16>(case, inputs, r, initial, frame_elems),
        DType::F16 => by_op::<F16>(case, inputs, r, initial, frame_elems),
        DType::F32 => by_op::<F32>(case, inputs, r, initial, frame_elems),
        DType::F8E4M3 => by_op::<F8E4M3>(case, inputs, r, initial, frame_elems),
        DType::F8E5M2 => by_op::<F8E5M2>(case, inputs, r, initial, frame_elems),
        DType::I8 => by_op::<I8>(case, inputs, r, initial, frame_elems),
        DType::U8 => by_op::<U8>(case, inputs, r, initial, frame_elems),
        DType::I32 => by_op::<I32>(case, inputs, r, initial, frame_elems),
        DType::U32 => by_op::<U32>(case, inputs, r, initial, frame_elems),
        DType::I64 => by_op::<I64>(case, inputs, r, initial, frame_elems),
        DType::U64 => by_op::<U64>(case, inputs, r, initial, frame_elems),
        DType::F64 => by_op::<F64>(case, inputs, r, initial, frame_elems),
    }
}

fn buffer(comm: &Communicator, bytes: &[u8]) -> Result<DeviceBuffer> {
    let mut b = comm.alloc(bytes.len())?;
    b.copy_from_host(bytes)?;
    Ok(b)
}

/// Runs `case` on this rank; `Ok(Some(why))` when the output differs from the reference.
fn run_case(comm: &Communicator, case: &Case) -> Result<Option<String>> {
    let (k, r, count, dtype) = (comm.nranks(), comm.rank(), case.count, case.dtype);
    let inputs: Vec<Vec<u8>> = (0..k).map(|q| input(case, k, q)).collect();
    let opts = options(case);
    let size = dtype.size_bytes();
    // (the output's contents before the call, after it)
    let (initial, got) = if case.kind == Kind::Shift {
        let src = buffer(comm, &inputs[r])?;
        let initial = filler(case, k, r);
        let mut dst = buffer(comm, &initial)?;
        let mut g = comm.group();
        // the order within a group does not matter: odd ranks receive first
        if r % 2 == 1 {
            g.recv(&mut dst, count, dtype, (r + k - 1) % k)?;
            g.send(&src, count, dtype, (r + 1) % k)?;
        } else {
            g.send(&src, count, dtype, (r + 1) % k)?;
            g.recv(&mut dst, count, dtype, (r + k - 1) % k)?;
        }
        g.launch(opts)?;
        comm.synchronize()?;
        (initial, dst.to_host()?)
    } else if case.in_place {
        let initial = match case.kind {
            Kind::AllGather => {
                let mut b = filler(case, k, r);
                b[r * count * size..(r + 1) * count * size].copy_from_slice(&inputs[r]);
                b
            }
            _ => inputs[r].clone(),
        };
        let mut buf = buffer(comm, &initial)?;
        call(comm, case, Data::InPlace(&mut buf), opts)?;
        comm.synchronize()?;
        (initial, buf.to_host()?)
    } else {
        let src = buffer(comm, &inputs[r])?;
        let initial = filler(case, k, r);
        let mut dst = buffer(comm, &initial)?;
        call(
            comm,
            case,
            Data::OutOfPlace {
                src: &src,
                dst: &mut dst,
            },
            opts,
        )?;
        comm.synchronize()?;
        if src.to_host()? != inputs[r] {
            return Ok(Some(format!("rank {r}: the input was modified")));
        }
        (initial, dst.to_host()?)
    };
    let want = expected(case, &inputs, r, &initial, comm.frame_elems(dtype, case.count));
    Ok(first_mismatch(size, &want, &got).map(|(i, w, g)| {
        format!(
            "rank {r}: element {i} of {}: want {w:02x?}, got {g:02x?}",
            want.len() / size
        )
    }))
}

fn options(case: &Case) -> Options {
    Options {
        compression: case.compression,
        algorithm: match case.kind {
            Kind::TwoShot => Algorithm::TwoShot,
            _ => Algorithm::Ring,
        },
        ..Options::default()
    }
}

fn call(comm: &Communicator, case: &Case, data: Data<'_>, opts: Options) -> Result<()> {
    let (count, dtype, op) = (case.count, case.dtype, case.op);
    match case.kind {
        Kind::Ring | Kind::TwoShot => comm.all_reduce(data, count, dtype, op, opts),
        Kind::AllGather => comm.all_gather(data, count, dtype, opts),
        Kind::ReduceScatter => comm.reduce_scatter(data, count, dtype, op, opts),
        Kind::Reduce(root) => comm.reduce(data, count, dtype, op, root, opts),
        Kind::Broadcast(root) => comm.broadcast(data, count, dtype, root, opts),
        Kind::AllToAll => comm.all_to_all(data, count, dtype, opts),
        Kind::Shift => unreachable!("a group"),
    }
}

/// The first element where two outputs differ: (index, expected bytes, actual bytes).
fn first_mismatch(size: usize, want: &[u8], got: &[u8]) -> Option<(usize, Vec<u8>, Vec<u8>)> {
    if want.len() != got.len() {
        return Some((usize::MAX, vec![], vec![]));
    }
    want.chunks(size)
        .zip(got.chunks(size))
        .position(|(a, b)| a != b)
        .map(|i| {
            let at = i * size..(i + 1) * size;
            (i, want[at.clone()].to_vec(), got[at].to_vec())
        })
}

/// Runs `cases` in order on every rank of one `k`-rank communicator; panics with every
/// mismatch and error found.
fn run_cases(k: usize, config: Config, cases: &[Case]) {
    let want_transport = config.transport;
    let results = run_sim(k, config, |comm| {
        let mut report = Vec::new();
        if want_transport != TransportKind::Auto && comm.transport() != want_transport {
            report.push(format!("rank {} runs over {:?}", comm.rank(), comm.transport()));
        }
        for case in cases {
            match run_case(&comm, case) {
                Ok(None) => {}
                Ok(Some(why)) => report.push(format!("{case:?}: {why}")),
                // the communicator is unusable after a failure: stop at the first
                Err(e) => {
                    report.push(format!("{case:?}: rank {}: {e}", comm.rank()));
                    break;
                }
            }
        }
        Ok(report)
    })
    .expect("the communicator");
    let failures: Vec<String> = results.into_iter().flatten().collect();
    assert!(
        failures.is_empty(),
        "{k} ranks: {} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Deterministic pseudo-random sizes.
struct Sizes(testdata::Rng);

impl Sizes {
    /// Sizes for the `i`-th call, in turn: 0 or 1, a few hundred, a few thousand, several
    /// hundred. Frames (`Communicator::frame_elems`) shrink with the count (down to 64
    /// elements) so that every channel gets several loops; a few thousand elements span
    /// several frames per channel.
    fn next(&mut self, i: usize) -> usize {
        match i % 4 {
            0 => [0, 1][i / 4 % 2],
            1 => 2 + self.0.below(300) as usize,
            2 => 3000 + self.0.below(3000) as usize,
            _ => 300 + self.0.below(1500) as usize,
        }
    }
}

/// The calls of one `k`-rank communicator: every kind with every compression (sizes, dtypes,
/// ops and in place / out of place in turn).
fn sweep(k: usize, dtypes: &[DType], ops: &[ReduceOp], compressions: &[Compression], seed: u64) -> Vec<Case> {
    let mut kinds = vec![Kind::Ring, Kind::TwoShot, Kind::AllGather, Kind::ReduceScatter];
    // roots: the first, the last and one in the middle
    let mut roots = vec![0, k - 1, k / 2];
    roots.dedup();
    roots.sort_unstable();
    roots.dedup();
    kinds.extend(roots.iter().map(|&r| Kind::Reduce(r)));
    kinds.extend(roots.iter().map(|&r| Kind::Broadcast(r)));
    kinds.push(Kind::AllToAll);
    if k > 1 {
        kinds.push(Kind::Shift);
    }
    let mut sizes = Sizes(testdata::Rng::new(seed ^ k as u64));
    let mut cases = Vec::new();
    let mut i = 0usize;
    for kind in kinds {
        for (j, &compression) in compressions.iter().enumerate() {
            let count = sizes.next(i + k);
            cases.push(Case {
                kind,
                dtype: dtypes[(i / 2 + k) % dtypes.len()],
                op: ops[(i + k / 2) % ops.len()],
                count,
                in_place: kind != Kind::AllToAll && (i + j / 3 + k).is_multiple_of(2),
                compression: Some(compression),
                seed: seed.wrapping_add(i as u64 * 7919),
            });
            i += 1;
        }
    }
    cases
}

/// Every collective on `ks` ranks (see [`sweep`]).
fn every_collective_on(ks: std::ops::RangeInclusive<usize>) {
    let t = Instant::now();
    for k in ks {
        let tk = Instant::now();
        let cases = sweep(
            k,
            &[DType::Bf16, DType::F32],
            &[ReduceOp::Sum, ReduceOp::Max],
            &compressions(),
            100 + k as u64,
        );
        // odd ranks run with quarter-size FIFOs (2 KiB slots: frames of under 512 f32 or 1024
        // bf16 elements), so the few thousand elements of a ring all_reduce span several loops
        let config = match k % 2 {
            0 => Config::sim(),
            _ => Config {
                buffer_bytes: 16 << 10,
                ..Config::sim()
            },
        };
        run_cases(k, config, &cases);
        eprintln!("{k} ranks: {} calls in {:?}", cases.len(), tk.elapsed());
    }
    eprintln!("total {:?}", t.elapsed());
}

#[test]
fn every_collective_on_1_to_5_ranks() {
    every_collective_on(1..=5);
}

#[test]
fn every_collective_on_6_to_8_ranks() {
    every_collective_on(6..=8);
}

/// f64 and the integers over every collective on 2..=8 ranks, with every compression: f64 and
/// i64 have no coders (they travel RAW whatever the compression, through the RAW path's
/// two-word lanes and one-element tails), i32 and u8 are coded by the forced codecs and Auto
/// (`testdata::elements`' integers are mostly within ±1000: i32's top bytes repeat).
#[test]
fn every_collective_of_f64_and_the_integers_on_2_to_8_ranks() {
    for k in 2..=8 {
        let cases = sweep(
            k,
            &[DType::F64, DType::I32, DType::U8, DType::I64],
            &[ReduceOp::Sum, ReduceOp::Min, ReduceOp::Prod],
            &compressions(),
            300 + k as u64,
        );
        run_cases(k, Config::sim(), &cases);
    }
}

#[test]
fn every_dtype_and_op_on_3_ranks() {
    let k = 3;
    let comps = compressions();
    let mut sizes = Sizes(testdata::Rng::new(77));
    let mut cases = Vec::new();
    let mut i = 0usize;
    for dtype in DType::ALL {
        for op in ReduceOp::ALL {
            for kind in [Kind::Ring, Kind::TwoShot, Kind::ReduceScatter, Kind::Reduce(i % k)] {
                // (shifted every 4 calls so each kind gets every size class)
                let turn = i + i / 4;
                cases.push(Case {
                    kind,
                    dtype,
                    op,
                    // no empty calls here: every case reduces something
                    count: sizes.next(turn).max(1 + i % 3),
                    in_place: (i / 3) % 2 == 1,
                    compression: Some(comps[i % comps.len()]),
                    seed: 5000 + i as u64,
                });
                i += 1;
            }
        }
    }
    let t = Instant::now();
    run_cases(k, Config::sim(), &cases);
    eprintln!("{} calls in {:?}", cases.len(), t.elapsed());
}

#[test]
fn every_collective_over_net_loopback() {
    let codec = Compression::Lossless(Lossless::Force(CodecId::ExpAns));
    let comps = [Compression::Off, Compression::Lossless(Lossless::Auto), codec];
    for k in [2, 3, 4] {
        let t = Instant::now();
        let mut cases = sweep(
            k,
            &[DType::Bf16, DType::F32],
            &[ReduceOp::Sum, ReduceOp::Max],
            &comps,
            900,
        );
        // a few calls with the communicator's own compression (the config's, a codec here)
        for c in cases.iter_mut().step_by(5) {
            c.compression = None;
        }
        let config = Config {
            transport: TransportKind::Net,
            compression: Compression::Lossless(Lossless::Force(CodecId::Huffman)),
            ..Config::sim()
        };
        run_cases(k, config, &cases);
        eprintln!("NET, {k} ranks: {} calls in {:?}", cases.len(), t.elapsed());
    }
}

/// A rank whose last call returned may drop its communicator at once while its peers still
/// run theirs: frames of that call still in its local FIFOs reach the peers (on NET the
/// communicator closes its transport gracefully). In a ring shift every rank receives from
/// one peer and sends to another, so the first rank done leaves with frames still to deliver;
/// a broadcast's root only sends.
#[test]
fn a_rank_that_finishes_first_leaves_its_peers_intact() {
    for transport in [TransportKind::Net, TransportKind::Sim] {
        for (i, k) in [2, 3, 4, 3, 2, 4].into_iter().enumerate() {
            let case = Case {
                // the root of a broadcast only sends: it returns with its last frames queued
                kind: if i % 2 == 0 { Kind::Shift } else { Kind::Broadcast(0) },
                dtype: DType::Bf16,
                op: ReduceOp::Sum,
                count: 20_000 + 77 * i,
                in_place: false,
                compression: Some(Compression::Off),
                seed: 4242 + i as u64,
            };
            let config = Config {
                transport,
                ..Config::sim()
            };
            run_cases(k, config, &[case]);
        }
    }
}

#[test]
fn the_communicator_default_compression_applies() {
    // sim transport chosen by Auto for ranks of one process; Options::default() uses the
    // config's compression (each codec once), results still bit-identical
    for (i, codec) in CodecId::ALL.into_iter().enumerate() {
        let config = Config {
            compression: Compression::Lossless(Lossless::Force(codec)),
            ..Config::sim()
        };
        let cases = [Case {
            kind: Kind::Ring,
            dtype: DType::Bf16,
            op: ReduceOp::Sum,
            count: 3000 + i,
            in_place: false,
            compression: None,
            seed: 42 + i as u64,
        }];
        run_cases(2, config, &cases);
    }
    let kinds = run_sim(2, Config::sim(), |comm| Ok(comm.transport())).unwrap();
    assert_eq!(kinds, vec![TransportKind::Sim; 2]);
}

/// More calls in flight than call slots: ten all_reduces (ring and two-shot in turn, bf16 and
/// f32, several ops and compressions, in place and out of place), each on its own buffers and
/// data, enqueued back to back on communicators with `max_inflight = 2` and synchronized once:
/// every output is bit-identical to the reference, and `query()` then says all have finished.
#[test]
fn more_calls_than_slots_then_one_synchronize() {
    let k = 3;
    let comps = [
        Compression::Off,
        Compression::Lossless(Lossless::Auto),
        Compression::Lossless(Lossless::Force(CodecId::ExpAns)),
    ];
    let cases: Vec<Case> = (0..10)
        .map(|i| Case {
            kind: if i % 2 == 0 { Kind::Ring } else { Kind::TwoShot },
            dtype: [DType::Bf16, DType::F32][i / 2 % 2],
            op: [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min][i % 3],
            count: 1000 + 700 * i,
            in_place: i % 3 == 0,
            compression: Some(comps[i % comps.len()]),
            seed: 7000 + i as u64,
        })
        .collect();
    for transport in [TransportKind::Sim, TransportKind::Net] {
        let config = Config {
            transport,
            max_inflight: 2,
            ..Config::sim()
        };
        let reports = run_sim(k, config, |comm| {
            let r = comm.rank();
            // (the call, its output's contents before it, its input buffer, its output buffer)
            let mut enqueued = Vec::new();
            for case in &cases {
                let mine = input(case, k, r);
                if case.in_place {
                    let mut buf = buffer(&comm, &mine)?;
                    call(&comm, case, Data::InPlace(&mut buf), options(case))?;
                    enqueued.push((case, mine, None, buf));
                } else {
                    let src = buffer(&comm, &mine)?;
                    let initial = filler(case, k, r);
                    let mut dst = buffer(&comm, &initial)?;
                    let data = Data::OutOfPlace {
                        src: &src,
                        dst: &mut dst,
                    };
                    call(&comm, case, data, options(case))?;
                    enqueued.push((case, initial, Some(src), dst));
                }
            }
            comm.synchronize()?;
            let mut report = Vec::new();
            if !comm.query()? {
                report.push(format!("rank {r}: query() is false after synchronize()"));
            }
            for (case, initial, _src, out) in &enqueued {
                let inputs: Vec<Vec<u8>> = (0..k).map(|q| input(case, k, q)).collect();
                let size = case.dtype.size_bytes();
                let want = expected(case, &inputs, r, initial, comm.frame_elems(case.dtype, case.count));
                if let Some((i, w, g)) = first_mismatch(size, &want, &out.to_host()?) {
                    report.push(format!("{case:?}: rank {r}: element {i}: want {w:02x?}, got {g:02x?}"));
                }
            }
            Ok(report)
        })
        .expect("every rank's calls");
        let failures: Vec<String> = reports.into_iter().flatten().collect();
        assert!(failures.is_empty(), "{transport:?}:\n{}", failures.join("\n"));
    }
}

#[test]
fn frames_shrink_with_the_call_and_stay_whole() {
    let sizes = run_sim(3, Config::sim(), |comm| {
        let mut rows = Vec::new();
        for dtype in [DType::Bf16, DType::F32, DType::F8E4M3] {
            let max = comm.max_frame_elems(dtype);
            let mut last = 0;
            for count in [0, 1, 100, 5_000, 50_000, 500_000, 50_000_000] {
                let fe = comm.frame_elems(dtype, count);
                rows.push((dtype, count, fe, max));
                assert!(
                    fe.is_multiple_of(64) && fe >= 64 && fe <= max,
                    "{dtype:?} {count}: {fe} of {max}"
                );
                assert!(fe >= last, "{dtype:?}: frames never shrink as calls grow");
                last = fe;
            }
            assert_eq!(
                comm.frame_elems(dtype, usize::MAX / 2),
                max,
                "{dtype:?}: large calls use whole slots"
            );
            // a call that fills channels x loops whole frames gets whole frames
            let full = comm.nranks() * comm.config().channels * LOOPS_PER_CHANNEL * max;
            assert_eq!(comm.frame_elems(dtype, full), max);
            assert!(comm.frame_elems(dtype, full / 4) < max);
        }
        Ok(rows)
    })
    .unwrap();
    assert!(
        sizes.windows(2).all(|w| w[0] == w[1]),
        "every rank computes the same frames"
    );
    // NET's proxies pay per frame: its frames stay whole slots
    let net = Config {
        transport: TransportKind::Net,
        ..Config::sim()
    };
    run_sim(2, net, |comm| {
        for count in [1, 100, 5_000, 500_000] {
            assert_eq!(comm.frame_elems(DType::Bf16, count), comm.max_frame_elems(DType::Bf16));
        }
        Ok(())
    })
    .unwrap();
}
