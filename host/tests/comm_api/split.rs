//! `Communicator::split` (NCCL's `ncclCommSplit`) on the simulator, ranks as threads:
//!
//! | test | what |
//! |------|------|
//! | `split_by_parity_ranks_by_key` | 2..=8 ranks split by `rank % 2` with keys that reverse the order (and rank 1 with no color): each new rank is its place by key, an all_reduce in each new communicator is its members' exact sum, and the parent still works after it |
//! | `a_split_of_a_split` | 8 ranks -> halves -> quarters; an all_gather in a quarter holds its members' data in key order |

use super::{f32_bytes as bytes, f32s};
use zipcoll_host::comm::{run_sim, Communicator, Config, Data, Options};
use zipcoll_host::{DType, ReduceOp, Result};

const N: usize = 200;

/// Rank `who`'s input: small integers, so every order of summation is exact.
fn input(who: usize) -> Vec<f32> {
    (0..N).map(|i| (i + 100 * who) as f32).collect()
}

/// A sum all_reduce of `input(tag)` over `comm`.
fn all_reduce(comm: &Communicator, tag: usize) -> Result<Vec<f32>> {
    let mut buf = comm.alloc(4 * N)?;
    buf.copy_from_host(&bytes(&input(tag)))?;
    comm.all_reduce(
        Data::InPlace(&mut buf),
        N,
        DType::F32,
        ReduceOp::Sum,
        Options::default(),
    )?;
    comm.synchronize()?;
    Ok(f32s(&buf.to_host()?))
}

fn sum_of(ranks: impl Iterator<Item = usize>) -> Vec<f32> {
    let ranks: Vec<usize> = ranks.collect();
    (0..N).map(|i| ranks.iter().map(|&r| input(r)[i]).sum()).collect()
}

#[test]
fn split_by_parity_ranks_by_key() {
    for k in 2..=8 {
        let got = run_sim(k, Config::sim(), |comm| {
            let me = comm.rank();
            let color = (me != 1).then_some(me as u32 % 2);
            let key = (k - me) as u32;
            let sub = comm.split(color, key, Config::sim())?;
            let out = match &sub {
                Some(s) => Some((s.rank(), s.nranks(), all_reduce(s, me)?)),
                None => None,
            };
            drop(sub);
            let parent = all_reduce(&comm, me)?;
            Ok((out, parent))
        })
        .unwrap();
        for (me, (out, parent)) in got.iter().enumerate() {
            assert_eq!(
                parent,
                &sum_of(0..k),
                "{k} ranks: the parent after the split, rank {me}"
            );
            let members: Vec<usize> = (0..k).filter(|&r| r != 1 && r % 2 == me % 2).collect();
            match out {
                None => assert_eq!(me, 1, "{k} ranks: only rank 1 has no color"),
                Some((rank, n, sum)) => {
                    // keys reverse the order: the highest parent rank is new rank 0
                    let by_key: Vec<usize> = members.iter().rev().copied().collect();
                    assert_eq!(
                        *rank,
                        by_key.iter().position(|&r| r == me).unwrap(),
                        "{k} ranks, rank {me}"
                    );
                    assert_eq!(*n, members.len());
                    assert_eq!(sum, &sum_of(members.iter().copied()), "{k} ranks, rank {me}");
                }
            }
        }
    }
}

#[test]
fn a_split_of_a_split() {
    let got = run_sim(8, Config::sim(), |comm| {
        let me = comm.rank();
        let half = comm
            .split(Some(me as u32 / 4), me as u32, Config::sim())?
            .expect("a color");
        let quarter = half
            .split(Some(half.rank() as u32 / 2), 0, Config::sim())?
            .expect("a color");
        let mut buf = quarter.alloc(4 * N * quarter.nranks())?;
        let mine = bytes(&input(me));
        let mut src = quarter.alloc(4 * N)?;
        src.copy_from_host(&mine)?;
        quarter.all_gather(
            Data::OutOfPlace {
                src: &src,
                dst: &mut buf,
            },
            N,
            DType::F32,
            Options::default(),
        )?;
        quarter.synchronize()?;
        Ok((quarter.rank(), f32s(&buf.to_host()?)))
    })
    .unwrap();
    for (me, (rank, gathered)) in got.iter().enumerate() {
        // quarters {0,1} {2,3} {4,5} {6,7}; equal keys: ranked by the half's rank
        assert_eq!(*rank, me % 2, "rank {me}");
        let first = me / 2 * 2;
        let want: Vec<f32> = input(first).into_iter().chain(input(first + 1)).collect();
        assert_eq!(gathered, &want, "rank {me}");
    }
}
