//! `Options::stream` on the simulator, which has no streams: the call is refused with
//! `InvalidArgument`, enqueues nothing, and the communicator works after. (The ordering itself
//! is a GPU test: `host/tests/cuda_mem.rs`.)

use super::{f32_bytes, f32s};
use zipcoll_host::comm::{run_sim, CallStream, Config, Data, Options};
use zipcoll_host::{DType, Error, ReduceOp};

#[test]
fn a_stream_on_the_simulator_is_refused_and_nothing_breaks() {
    let sums = run_sim(2, Config::sim(), |comm| {
        let mut buf = comm.alloc(4 * 64)?;
        buf.copy_from_host(&f32_bytes(&[1.0; 64]))?;
        let opts = Options {
            // SAFETY: never used as a stream: the simulator refuses it before any use
            stream: Some(unsafe { CallStream::from_raw(8usize as _) }),
            ..Options::default()
        };
        let refused = comm.all_reduce(Data::InPlace(&mut buf), 64, DType::F32, ReduceOp::Sum, opts);
        assert!(matches!(refused, Err(Error::InvalidArgument(_))), "{refused:?}");
        let mut g = comm.group();
        g.send(&buf, 64, DType::F32, 1 - comm.rank())?;
        assert!(matches!(g.launch(opts), Err(Error::InvalidArgument(_))));
        comm.all_reduce(
            Data::InPlace(&mut buf),
            64,
            DType::F32,
            ReduceOp::Sum,
            Options::default(),
        )?;
        comm.synchronize()?;
        Ok(f32s(&buf.to_host()?))
    })
    .unwrap();
    assert_eq!(
        sums,
        vec![vec![2.0; 64]; 2],
        "one all_reduce ran, the refused one did not"
    );
}
