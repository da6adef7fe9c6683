//! A communicator's end and its health on the simulator, ranks as threads:
//!
//! | test | what |
//! |------|------|
//! | `finalize_reports_success_after_the_calls` | 3 ranks over SIM and NET: all_reduces enqueued, then `finalize` (no `synchronize` first): `Ok` on every rank, and every rank's result right |
//! | `a_healthy_communicator_has_no_async_error` | `async_error` is `None` before and after calls that succeed |
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
