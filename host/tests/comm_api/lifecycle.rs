//! A communicator's end and its health on the simulator, ranks as threads:
//!
//! | test | what |
//! |------|------|
//! | `finalize_reports_success_after_the_calls` | 3 ranks over SIM and NET: all_reduces enqueued, then `finalize` (no `synchronize` first): `Ok` on every rank, and every rank's result right |
//! | `a_healthy_communicator_has_no_async_error` | `async_error` is `None` before and after calls that succeed |
//! | `init_all_gives_one_communicator_per_device` | `init_all` with 1-4 simulated devices, an all_reduce over them |
//!
//! (`async_error` after a failure: `comm_failures.rs`, the abort tests.)

use std::time::Duration;
use zipcoll_host::comm::{run_sim, Config, Data, Options, TransportKind};
use zipcoll_host::{DType, ReduceOp};

const N: usize = 5000;

fn config(transport: TransportKind) -> Config {
    Config {
        transport,
        timeout: Duration::from_secs(20),
        ..Config::sim()
    }
}

#[test]
fn finalize_reports_success_after_the_calls() {
    for transport in [TransportKind::Sim, TransportKind::Net] {
        let got = run_sim(3, config(transport), |comm| {
            let me = comm.rank();
            let mut buf = comm.alloc(4 * N)?;
            let mine: Vec<u8> = (0..N).flat_map(|i| ((i + me) as f32).to_le_bytes()).collect();
            buf.copy_from_host(&mine)?;
            for _ in 0..3 {
                comm.all_reduce(
                    Data::InPlace(&mut buf),
                    N,
                    DType::F32,
                    ReduceOp::Max,
                    Options::default(),
                )?;
            }
            comm.finalize()?;
            buf.to_host()
        })
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
        let want: Vec<u8> = (0..N).flat_map(|i| ((i + 2) as f32).to_le_bytes()).collect();
        for (rank, out) in got.iter().enumerate() {
            assert_eq!(out, &want, "{transport:?} rank {rank}");
        }
    }
}

#[test]
fn a_healthy_communicator_has_no_async_error() {
    run_sim(2, config(TransportKind::Sim), |comm| {
        assert_eq!(comm.async_error(), None);
        let mut buf = comm.alloc(4 * N)?;
        comm.all_reduce(
            Data::InPlace(&mut buf),
            N,
            DType::F32,
            ReduceOp::Sum,
            Options::default(),
        )?;
        comm.synchronize()?;
        assert_eq!(comm.async_error(), None);
        Ok(())
    })
    .unwrap();
}

/// `init_all` (ncclCommInitAll) with 1-4 simulated devices in this process: the
/// communicators' ranks are their places in the list, and an all_reduce over all of them, each
/// driven by its own thread, is the exact sum.
#[test]
fn init_all_gives_one_communicator_per_device() {
    use zipcoll_host::comm::Communicator;
    use zipcoll_host::Backend;
    for k in 1..=4 {
        let comms = Communicator::init_all(&vec![Backend::Sim; k], config(TransportKind::Sim)).unwrap();
        assert_eq!(comms.len(), k);
        let outs: Vec<Vec<u8>> = std::thread::scope(|s| {
            let ranks: Vec<_> = comms
                .into_iter()
                .enumerate()
                .map(|(r, comm)| {
                    s.spawn(move || {
                        assert_eq!((comm.rank(), comm.nranks()), (r, k));
                        let mut buf = comm.alloc(4 * N).unwrap();
                        let mine: Vec<u8> = (0..N).flat_map(|i| ((i % 7 + r) as f32).to_le_bytes()).collect();
                        buf.copy_from_host(&mine).unwrap();
                        comm.all_reduce(
                            Data::InPlace(&mut buf),
                            N,
                            DType::F32,
                            ReduceOp::Sum,
                            Options::default(),
                        )
                        .unwrap();
                        comm.finalize().unwrap();
                        buf.to_host().unwrap()
                    })
                })
                .collect();
            ranks.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let want: Vec<u8> = (0..N)
            .flat_map(|i| ((0..k).map(|r| (i % 7 + r) as f32).sum::<f32>()).to_le_bytes())
            .collect();
        for (r, out) in outs.iter().enumerate() {
            assert_eq!(out, &want, "{k} devices, rank {r}");
        }
    }
}
