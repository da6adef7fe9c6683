//! Rooted collectives with a buffer only where a rank uses one (`Data::Input` for a reduce's
//! other ranks, `Data::Output` for a broadcast's), on the simulator, ranks as threads:
//!
//! | test | what |
//! |------|------|
//! | `reduce_and_broadcast_need_no_unused_buffer` | 1-5 ranks, every root, compression off and Auto: the root's reduce equals the exact sum; every rank's broadcast output is the root's input |
//! | `a_buffer_alone_elsewhere_is_an_argument_error` | `Input` on the root, `Output` on a broadcast's root, either for another collective: `InvalidArgument`, and the communicator works after |

use super::f32_bytes as bytes;
use zipcoll_host::comm::{run_sim, Compression, Config, Data, Lossless, Options};
use zipcoll_host::{DType, Error, ReduceOp};

const N: usize = 3000;

/// Rank `r`'s input: small integers (every order of summation is exact).
fn input(r: usize) -> Vec<f32> {
    (0..N).map(|i| ((i * 7 + r * 13) % 50) as f32).collect()
}

#[test]
fn reduce_and_broadcast_need_no_unused_buffer() {
    for k in 1..=5 {
        for root in 0..k {
            for c in [Compression::Off, Compression::Lossless(Lossless::Auto)] {
                let o = Options {
                    compression: Some(c),
                    ..Options::default()
                };
                let got = run_sim(k, Config::sim(), |comm| {
                    let me = comm.rank();
                    let mut src = comm.alloc(4 * N)?;
                    src.copy_from_host(&bytes(&input(me)))?;
                    let mut dst = comm.alloc(4 * N)?;
                    let data = match me == root {
                        true => Data::OutOfPlace {
                            src: &src,
                            dst: &mut dst,
                        },
                        false => Data::Input(&src),
                    };
                    comm.reduce(data, N, DType::F32, ReduceOp::Sum, root, o)?;
                    comm.synchronize()?;
                    let reduced = dst.to_host()?;
                    let mut out = comm.alloc(4 * N)?;
                    let data = match me == root {
                        true => Data::OutOfPlace {
                            src: &src,
                            dst: &mut out,
                        },
                        false => Data::Output(&mut out),
                    };
                    comm.broadcast(data, N, DType::F32, root, o)?;
                    comm.synchronize()?;
                    Ok((reduced, out.to_host()?))
                })
                .unwrap();
                let sum: Vec<f32> = (0..N).map(|i| (0..k).map(|r| input(r)[i]).sum()).collect();
                for (me, (reduced, broadcast)) in got.iter().enumerate() {
                    if me == root {
                        assert_eq!(reduced, &bytes(&sum), "{k} ranks, root {root}, {c:?}");
                    }
                    assert_eq!(
                        broadcast,
                        &bytes(&input(root)),
                        "{k} ranks, root {root}, rank {me}, {c:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_buffer_alone_elsewhere_is_an_argument_error() {
    let got = run_sim(3, Config::sim(), |comm| {
        let me = comm.rank();
        let o = Options::default();
        let mut buf = comm.alloc(4 * N)?;
        buf.copy_from_host(&bytes(&input(me)))?;
        let refused = |r: zipcoll_host::Result<()>, what: &str| match r {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("alone"), "rank {me}, {what}: {m}"),
            other => panic!("rank {me}, {what}: {other:?}"),
        };
        // rank 1 is the root of both
        if me == 1 {
            refused(
                comm.reduce(Data::Input(&buf), N, DType::F32, ReduceOp::Sum, 1, o),
                "reduce's root",
            );
            refused(
                comm.broadcast(Data::Output(&mut buf), N, DType::F32, 1, o),
                "broadcast's root",
            );
        }
        refused(
            comm.all_reduce(Data::Input(&buf), N, DType::F32, ReduceOp::Sum, o),
            "all_reduce",
        );
        refused(
            comm.all_gather(Data::Output(&mut buf), N / 3, DType::F32, o),
            "all_gather",
        );
        comm.all_reduce(Data::InPlace(&mut buf), N, DType::F32, ReduceOp::Sum, o)?;
        comm.synchronize()?;
        buf.to_host()
    })
    .unwrap();
    let sum: Vec<f32> = (0..N).map(|i| (0..3).map(|r| input(r)[i]).sum()).collect();
    for out in got {
        assert_eq!(out, bytes(&sum));
    }
}
