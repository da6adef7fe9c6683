//! Finding a process's place from a launcher's variables (`comm::launch::rank_env_from`), ranks
//! as threads with their own variables, on the simulator:
//!
//! | test | what |
//! |------|------|
//! | `each_launcher_s_ranks_form_a_communicator` | torchrun, SLURM, Open MPI and PMI variables for 1-4 ranks: each rank's place and local rank, a communicator from them, an all_reduce equal to the exact sum |
//! | `zipcoll_s_own_variables_come_first` | `ZIPCOLL_UNIQUE_ID` with torchrun's variables also set |
//! | `bad_variables_are_argument_errors_naming_them` | non-numbers, a rank not below the ranks, a missing size, no root, port overflow |
//! | `the_magic_tells_jobs_apart` | two jobs at one root address (run ids differ) get different ids, one job the same on every rank |

use super::f32s;
use std::collections::HashMap;
use std::net::TcpListener;
use zipcoll_host::comm::launch::rank_env_from;
use zipcoll_host::comm::{Communicator, Config, Data, Options};
use zipcoll_host::{Backend, DType, Error, ReduceOp};

/// A port that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The variables of `launcher` for `rank` of `nranks`, with the root at 127.0.0.1:`port`.
fn vars(launcher: &str, rank: usize, nranks: usize, port: u16) -> HashMap<String, String> {
    let (r, n) = (rank.to_string(), nranks.to_string());
    let local = (rank % 2).to_string();
    let list: Vec<(&str, String)> = match launcher {
        "torchrun" => vec![
            ("RANK", r),
            ("WORLD_SIZE", n),
            ("LOCAL_RANK", local),
            ("MASTER_ADDR", "127.0.0.1".into()),
            ("MASTER_PORT", (port - 1).to_string()),
            ("TORCHELASTIC_RUN_ID", "run-7".into()),
        ],
        "slurm" => vec![
            ("SLURM_PROCID", r),
            ("SLURM_NTASKS", n),
            ("SLURM_LOCALID", local),
            ("SLURM_JOB_ID", "4242".into()),
            ("SLURM_STEP_ID", "0".into()),
            ("ZIPCOLL_ROOT", format!("localhost:{port}")),
        ],
        "openmpi" => vec![
            ("OMPI_COMM_WORLD_RANK", r),
            ("OMPI_COMM_WORLD_SIZE", n),
            ("OMPI_COMM_WORLD_LOCAL_RANK", local),
            ("MASTER_ADDR", "127.0.0.1".into()),
            ("ZIPCOLL_ROOT_PORT", port.to_string()),
        ],
        "pmi" => vec![
            ("PMI_RANK", r),
            ("PMI_SIZE", n),
            ("ZIPCOLL_ROOT", format!("127.0.0.1:{port}")),
        ],
        other => panic!("no launcher {other}"),
    };
    list.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

fn lookup(vars: &HashMap<String, String>) -> impl Fn(&str) -> Option<String> + '_ {
    |name| vars.get(name).cloned()
}

#[test]
fn each_launcher_s_ranks_form_a_communicator() {
    const N: usize = 300;
    for launcher in ["torchrun", "slurm", "openmpi", "pmi"] {
        for nranks in [1, 2, 4] {
            let port = free_port();
            let sums: Vec<Vec<f32>> = std::thread::scope(|s| {
                let ranks: Vec<_> = (0..nranks)
                    .map(|rank| {
                        s.spawn(move || {
                            let v = vars(launcher, rank, nranks, port);
                            let me = rank_env_from(lookup(&v)).unwrap().expect("a launcher's variables");
                            assert_eq!((me.rank, me.nranks, me.launcher), (rank, nranks, launcher));
                            let local = (launcher != "pmi").then_some(rank % 2);
                            assert_eq!(me.local_rank, local, "{launcher}");
                            let comm = Communicator::init_with(&me.id, me.rank, me.nranks, Backend::Sim, Config::sim())
                                .unwrap();
                            let mine: Vec<u8> = (0..N).flat_map(|i| ((i + 10 * rank) as f32).to_le_bytes()).collect();
                            let mut buf = comm.alloc(4 * N).unwrap();
                            buf.copy_from_host(&mine).unwrap();
                            comm.all_reduce(
                                Data::InPlace(&mut buf),
                                N,
                                DType::F32,
                                ReduceOp::Sum,
                                Options::default(),
                            )
                            .unwrap();
                            comm.synchronize().unwrap();
                            f32s(&buf.to_host().unwrap())
                        })
                    })
                    .collect();
                ranks.into_iter().map(|h| h.join().unwrap()).collect()
            });
            // small integers: every order of summation is exact
            let want: Vec<f32> = (0..N).map(|i| (0..nranks).map(|r| (i + 10 * r) as f32).sum()).collect();
            for (rank, got) in sums.iter().enumerate() {
                assert_eq!(got, &want, "{launcher}, {nranks} ranks, rank {rank}");
            }
        }
    }
}

#[test]
fn zipcoll_s_own_variables_come_first() {
    let mut v = vars("torchrun", 1, 4, 29_501);
    v.insert("ZIPCOLL_UNIQUE_ID".into(), "zc1-00000000000000ab@127.0.0.1:4000".into());
    v.insert("ZIPCOLL_RANK".into(), "2".into());
    v.insert("ZIPCOLL_NRANKS".into(), "3".into());
    let me = rank_env_from(lookup(&v)).unwrap().unwrap();
    assert_eq!((me.rank, me.nranks, me.launcher), (2, 3, "zipcoll"));
    assert_eq!(me.id.magic(), 0xab);
    assert_eq!(
        rank_env_from(|_| None).unwrap().map(|m| m.rank),
        None,
        "no launcher: None"
    );
}

/// A launcher, the variables changed from [`vars`]'s, and what the error must say (empty: no
/// error).
type Case = (&'static str, &'static [(&'static str, &'static str)], &'static str);

#[test]
fn bad_variables_are_argument_errors_naming_them() {
    let cases: [Case; 8] = [
        ("torchrun", &[("RANK", "one")], "RANK=\"one\""),
        ("torchrun", &[("RANK", "4")], "not below the 4 ranks"),
        ("torchrun", &[("WORLD_SIZE", "0")], "0 ranks"),
        ("torchrun", &[("MASTER_PORT", "65535")], "MASTER_PORT"),
        ("torchrun", &[("ZIPCOLL_ROOT_PORT", "0")], "ZIPCOLL_ROOT_PORT"),
        ("slurm", &[("ZIPCOLL_ROOT", "no-port")], "ZIPCOLL_ROOT"),
        (
            "openmpi",
            &[("OMPI_COMM_WORLD_LOCAL_RANK", "x")],
            "OMPI_COMM_WORLD_LOCAL_RANK",
        ),
        ("pmi", &[], ""),
    ];
    for (launcher, changes, want) in cases {
        let mut v = vars(launcher, 1, 4, 40_000);
        for (k, val) in changes {
            v.insert((*k).into(), (*val).into());
        }
        if want.is_empty() {
            assert!(rank_env_from(lookup(&v)).unwrap().is_some(), "{launcher} {changes:?}");
            continue;
        }
        match rank_env_from(lookup(&v)) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains(want), "{launcher} {changes:?}: {m}"),
            other => panic!("{launcher} {changes:?}: {other:?}"),
        }
    }
    let mut no_size = vars("slurm", 1, 4, 40_000);
    no_size.remove("SLURM_NTASKS");
    let mut no_root = vars("slurm", 1, 4, 40_000);
    no_root.remove("ZIPCOLL_ROOT");
    let mut no_port = vars("openmpi", 1, 4, 40_000);
    no_port.remove("ZIPCOLL_ROOT_PORT");
    for (v, want) in [
        (no_size, "SLURM_NTASKS is not set"),
        (no_root, "ZIPCOLL_ROOT"),
        (no_port, "MASTER_PORT"),
    ] {
        match rank_env_from(lookup(&v)) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains(want), "{m}"),
            other => panic!("{want}: {other:?}"),
        }
    }
}

#[test]
fn the_magic_tells_jobs_apart() {
    let port = 41_000;
    let id = |run: &str, rank: usize| {
        let mut v = vars("torchrun", rank, 4, port);
        v.insert("TORCHELASTIC_RUN_ID".into(), run.into());
        rank_env_from(lookup(&v)).unwrap().unwrap().id
    };
    assert_eq!(id("a", 1), id("a", 3), "one job: one id on every rank");
    assert_ne!(id("a", 1).magic(), id("b", 1).magic(), "two jobs at one address");
    assert_eq!(id("a", 2).addr().port(), port);
}
