//! Groups that hold collectives besides sends and receives (NCCL's `ncclGroupStart` /
//! `ncclGroupEnd`).

use super::{f32_bytes, f32s};
use zipcoll_host::comm::{run_sim, Algorithm, Config, Data, Options};
use zipcoll_host::{DType, Error, ReduceOp};

const N: usize = 1500;

/// Rank `r`'s input: small integers (every order of summation is exact).
fn input(r: usize) -> Vec<f32> {
    (0..N).map(|i| ((i + 3 * r) % 29) as f32).collect()
}

/// 2-5 ranks: one group with a ring and a two-shot all_reduce, an all_gather, a broadcast, and
/// a ring shift of sends and receives (added before the collectives): each result is exact.
#[test]
fn a_group_of_collectives_and_a_ring_shift() {
    for k in 2..=5 {
        let got = run_sim(k, Config::sim(), |comm| {
            let me = comm.rank();
            let mine = f32_bytes(&input(me));
            let (mut a, mut b, mut src, mut shifted) = (
                comm.alloc(4 * N)?,
                comm.alloc(4 * N)?,
                comm.alloc(4 * N)?,
                comm.alloc(4 * N)?,
            );
            let mut gathered = comm.alloc(4 * N * k)?;
            let mut bcast = comm.alloc(4 * N)?;
            for buf in [&mut a, &mut b, &mut src, &mut bcast] {
                buf.copy_from_host(&mine)?;
            }
            let mut g = comm.group();
            g.send(&src, N, DType::F32, (me + 1) % k)?;
            g.recv(&mut shifted, N, DType::F32, (me + k - 1) % k)?;
            g.all_reduce(Data::InPlace(&mut a), N, DType::F32, ReduceOp::Sum, Algorithm::Ring)?;
            g.all_reduce(Data::InPlace(&mut b), N, DType::F32, ReduceOp::Max, Algorithm::TwoShot)?;
            g.all_gather(
                Data::OutOfPlace {
                    src: &src,
                    dst: &mut gathered,
                },
                N,
                DType::F32,
            )?;
            g.broadcast(Data::InPlace(&mut bcast), N, DType::F32, k - 1)?;
            g.launch(Options::default())?;
            comm.synchronize()?;
            Ok([
                a.to_host()?,
                b.to_host()?,
                gathered.to_host()?,
                bcast.to_host()?,
                shifted.to_host()?,
            ])
        })
        .unwrap();
        let sum: Vec<f32> = (0..N).map(|i| (0..k).map(|r| input(r)[i]).sum()).collect();
        let max: Vec<f32> = (0..N)
            .map(|i| (0..k).map(|r| input(r)[i]).fold(f32::MIN, f32::max))
            .collect();
        let all: Vec<f32> = (0..k).flat_map(input).collect();
        for (me, [a, b, gathered, bcast, shifted]) in got.iter().enumerate() {
            assert_eq!(f32s(a), sum, "{k} ranks, rank {me}: ring sum");
            assert_eq!(f32s(b), max, "{k} ranks, rank {me}: two-shot max");
            assert_eq!(f32s(gathered), all, "{k} ranks, rank {me}: all_gather");
            assert_eq!(f32s(bcast), input(k - 1), "{k} ranks, rank {me}: broadcast");
            assert_eq!(f32s(shifted), input((me + k - 1) % k), "{k} ranks, rank {me}: shift");
        }
    }
}

/// A collective's bad argument is refused when it is added; the group's other operations
/// still run at its launch.
#[test]
fn a_bad_collective_is_refused_when_added() {
    run_sim(2, Config::sim(), |comm| {
        let mut a = comm.alloc(4 * N)?;
        let mut small = comm.alloc(8)?;
        let mut g = comm.group();
        match g.all_reduce(Data::InPlace(&mut small), N, DType::F32, ReduceOp::Sum, Algorithm::Ring) {
            Err(Error::InvalidArgument(_)) => {}
            other => panic!("{other:?}"),
        }
        g.all_reduce(Data::InPlace(&mut a), N, DType::F32, ReduceOp::Sum, Algorithm::Ring)?;
        g.launch(Options::default())?;
        comm.synchronize()
    })
    .unwrap();
}
