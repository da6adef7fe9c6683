//! Resources across many communicators (its own test binary: it counts the process's open
//! files and threads, which tests running beside it would change).

use std::time::Duration;
use zipcoll_host::comm::{run_sim, Config, Data, Options, TransportKind};
use zipcoll_host::{DType, Error, ReduceOp};

fn short(transport: TransportKind, timeout: Duration) -> Config {
    Config {
        transport,
        timeout,
        ..Config::sim()
    }
}

/// Open files and threads of this process.
fn fds_and_threads() -> (usize, usize) {
    let count = |d: &str| std::fs::read_dir(d).map_or(0, |e| e.count());
    (count("/proc/self/fd"), count("/proc/self/task"))
}

/// 1000 cycles of init, a collective, an abort on one rank and drop, over NET (sockets,
/// proxy threads, the bootstrap's root and ring): the process's open files and threads end
/// where they started (a leak of one per cycle would show as 1000), and every cycle's abort is
/// a typed error on the other rank.
#[test]
fn init_abort_cycles_leak_no_fds_or_threads_net() {
    let config = short(TransportKind::Net, Duration::from_secs(10));
    // one cycle first: lazily created process state (the allocator's, the sim's) is not a leak
    cycle(&config);
    let before = fds_and_threads();
    for _ in 0..1000 {
        cycle(&config);
    }
    // threads that were joined may take a moment to leave /proc
    let mut after = fds_and_threads();
    for _ in 0..50 {
        if after == before {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        after = fds_and_threads();
    }
    assert_eq!(
        after, before,
        "(open files, threads) before and after 1000 init/abort cycles"
    );
}

/// Two ranks: rank 1 aborts while rank 0 waits in an all_reduce for it.
fn cycle(config: &Config) {
    let results = run_sim(2, config.clone(), |comm| {
        if comm.rank() == 1 {
            comm.abort();
            return Ok(true);
        }
        let mut buf = comm.alloc(64 * 4)?;
        let r = comm
            .all_reduce(
                Data::InPlace(&mut buf),
                64,
                DType::F32,
                ReduceOp::Sum,
                Options::default(),
            )
            .and_then(|()| comm.synchronize());
        Ok(matches!(r, Err(Error::Remote { rank: 1, .. })))
    })
    .expect("init");
    assert_eq!(results, vec![true, true]);
}
