//! Who drives a channel: a call that every rank sends RAW runs on blocks of
//! `Config::channel_threads` threads, any other call on one warp per block. On both simulated
//! warp widths (32 and 64 lanes), for 32, 64 and 96 threads per channel (96 is three 32-lane
//! warps, or two 64-lane warps after rounding up), compression off and a forced codec: an
//! all_reduce and a broadcast over three ranks are exact.

use zipcoll_device::codec::CodecId;
use zipcoll_host::comm::{Communicator, Compression, Config, Data, Lossless, Options, TransportKind};
use zipcoll_host::{Backend, DType, ReduceOp};

const N: usize = 3000;

#[test]
fn calls_are_exact_on_every_team_and_warp_width() {
    let k = 3;
    for backend in [Backend::Sim, Backend::Sim64] {
        for threads in [32, 64, 96] {
            for compression in [
                Compression::Off,
                Compression::Lossless(Lossless::Force(CodecId::ExpAns)),
            ] {
                let config = Config {
                    transport: TransportKind::Sim,
                    channel_threads: threads,
                    compression,
                    ..Config::sim()
                };
                let comms = Communicator::init_all(&vec![backend; k], config).unwrap();
                let outs: Vec<(Vec<u8>, Vec<u8>)> = std::thread::scope(|s| {
                    let ranks: Vec<_> = comms
                        .into_iter()
                        .enumerate()
                        .map(|(r, comm)| {
                            s.spawn(move || {
                                let mine: Vec<u8> =
                                    (0..N).flat_map(|i| ((i % 13 + 3 * r) as f32).to_le_bytes()).collect();
                                let (mut sum, mut root) = (comm.alloc(4 * N).unwrap(), comm.alloc(4 * N).unwrap());
                                sum.copy_from_host(&mine).unwrap();
                                root.copy_from_host(&mine).unwrap();
                                let o = Options::default();
                                comm.all_reduce(Data::InPlace(&mut sum), N, DType::F32, ReduceOp::Sum, o)
                                    .unwrap();
                                comm.broadcast(Data::InPlace(&mut root), N, DType::F32, 1, o).unwrap();
                                comm.finalize().unwrap();
                                (sum.to_host().unwrap(), root.to_host().unwrap())
                            })
                        })
                        .collect();
                    ranks.into_iter().map(|h| h.join().unwrap()).collect()
                });
                let sum: Vec<u8> = (0..N)
                    .flat_map(|i| ((0..k).map(|r| (i % 13 + 3 * r) as f32).sum::<f32>()).to_le_bytes())
                    .collect();
                let root: Vec<u8> = (0..N).flat_map(|i| ((i % 13 + 3) as f32).to_le_bytes()).collect();
                for (r, (s, b)) in outs.iter().enumerate() {
                    let case = format!("{backend:?}, {threads} threads, {compression:?}, rank {r}");
                    assert_eq!(s, &sum, "all_reduce: {case}");
                    assert_eq!(b, &root, "broadcast: {case}");
                }
            }
        }
    }
}
