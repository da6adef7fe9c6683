//! Teardown order on SIM, observed through the SIM transport's count of live endpoints (its
//! own test binary: nothing else makes endpoints meanwhile): a rank's FIFO memory, which its
//! peers' kernels write, outlives that rank's communicator while a peer still holds it, and
//! is freed once the last peer's communicator is dropped. (P2P's order, barrier - close
//! mappings - barrier - free, needs a GPU: `zipcoll-comm cycles` and `kill` on the GPU machine.)

use std::sync::Barrier;
use zipcoll_host::comm::{Communicator, Config, Data, Options, TransportKind, UniqueId};
use zipcoll_host::transport::sim::live_endpoints;
use zipcoll_host::{Backend, DType, ReduceOp};

#[test]
fn a_ranks_fifos_live_until_its_last_peer_drops() {
    let id = UniqueId::new().unwrap();
    let config = Config {
        transport: TransportKind::Sim,
        ..Config::sim()
    };
    assert_eq!(live_endpoints(), 0);
    // rank 1 leaves first: rank 0 holds rank 1's region only as its send FIFOs (rank 0's own
    // region, with the control block, every rank also holds for the abort word)
    let (both_up, rank1_dropped) = (Barrier::new(2), Barrier::new(2));
    let init = |rank| Communicator::init_with(&id, rank, 2, Backend::Sim, config.clone()).unwrap();
    let reduce = |comm: &Communicator| {
        let mut buf = comm.alloc(64 * 4).unwrap();
        comm.all_reduce(
            Data::InPlace(&mut buf),
            64,
            DType::F32,
            ReduceOp::Sum,
            Options::default(),
        )
        .and_then(|()| comm.synchronize())
        .unwrap();
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            let comm = init(1);
            reduce(&comm);
            both_up.wait();
            drop(comm);
            rank1_dropped.wait();
        });
        let comm = init(0);
        reduce(&comm);
        both_up.wait();
        assert_eq!(live_endpoints(), 2, "one endpoint per rank");
        rank1_dropped.wait();
        assert_eq!(
            live_endpoints(),
            2,
            "rank 1's FIFOs were freed with its communicator while rank 0 still holds them"
        );
        drop(comm);
    });
    assert_eq!(live_endpoints(), 0, "FIFOs outlive every communicator (a leak)");
}
