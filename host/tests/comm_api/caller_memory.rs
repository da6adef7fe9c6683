//! Memory the caller owns (`DeviceSlice`) in the communicator's calls, on the simulator, ranks
//! as threads:
//!
//! | test | what |
//! |------|------|
//! | `calls_take_views_of_the_caller_s_memory` | 1-4 ranks: all_reduce in place on a view of part of a caller's vector, out of place from a view into a communicator buffer and back, all_gather into a view: exact results, bytes outside the views untouched |
//! | `views_that_overlap_other_than_in_place_are_refused` | raw views of one vector: a shifted output is `InvalidArgument` (the communicator works after), the in-place layout through two views runs |
//! | `a_device_view_on_a_simulated_communicator_is_refused` | a raw device view: `InvalidArgument` from the call (the communicator works after) and from its host copies |

use super::{f32_bytes, f32s};
use zipcoll_host::comm::{run_sim, Config, Data, DeviceSlice, Options};
use zipcoll_host::{DType, Error, ReduceOp};

const N: usize = 777;

/// Rank `r`'s input: small integers (every order of summation is exact).
fn input(r: usize) -> Vec<f32> {
    (0..N).map(|i| ((i * 3 + r * 5) % 41) as f32).collect()
}

#[test]
fn calls_take_views_of_the_caller_s_memory() {
    for k in 1..=4 {
        let got = run_sim(k, Config::sim(), |comm| {
            let (me, o) = (comm.rank(), Options::default());
            // in place, on a view of the middle of the caller's vector
            let mut mine = vec![0xEEu8; 4 * N + 24];
            mine[8..8 + 4 * N].copy_from_slice(&f32_bytes(&input(me)));
            let mut view = DeviceSlice::host(&mut mine[8..8 + 4 * N]);
            comm.all_reduce(Data::InPlace(&mut view), N, DType::F32, ReduceOp::Sum, o)?;
            comm.synchronize()?;
            drop(view);
            // out of place: a view in, a communicator buffer out, and back into another view
            let mut src = f32_bytes(&input(me));
            let src_view = DeviceSlice::host(&mut src);
            let mut max = comm.alloc(4 * N)?;
            comm.all_reduce(
                Data::OutOfPlace {
                    src: &src_view,
                    dst: &mut max,
                },
                N,
                DType::F32,
                ReduceOp::Max,
                o,
            )?;
            let mut back = vec![0u8; 4 * N];
            let mut back_view = DeviceSlice::host(&mut back);
            comm.all_reduce(
                Data::OutOfPlace {
                    src: &max,
                    dst: &mut back_view,
                },
                N,
                DType::F32,
                ReduceOp::Min,
                o,
            )?;
            comm.synchronize()?;
            let back_host = back_view.to_host()?;
            drop(back_view);
            assert_eq!(back_host, back, "a host view reads what the call wrote");
            // all_gather into a view
            let mut gathered = vec![0u8; 4 * N * k];
            let mut g_view = DeviceSlice::host(&mut gathered);
            comm.all_gather(
                Data::OutOfPlace {
                    src: &src_view,
                    dst: &mut g_view,
                },
                N,
                DType::F32,
                o,
            )?;
            comm.synchronize()?;
            drop(g_view);
            Ok((mine, back, gathered))
        })
        .unwrap();
        let sum: Vec<f32> = (0..N).map(|i| (0..k).map(|r| input(r)[i]).sum()).collect();
        let max: Vec<f32> = (0..N)
            .map(|i| (0..k).map(|r| input(r)[i]).fold(f32::MIN, f32::max))
            .collect();
        let all: Vec<f32> = (0..k).flat_map(input).collect();
        for (me, (mine, back, gathered)) in got.iter().enumerate() {
            assert_eq!(f32s(&mine[8..8 + 4 * N]), sum, "{k} ranks, rank {me}: in place");
            assert!(
                mine[..8].iter().chain(&mine[8 + 4 * N..]).all(|&b| b == 0xEE),
                "outside the view"
            );
            assert_eq!(
                f32s(back),
                max,
                "{k} ranks, rank {me}: out of place (min of equal maxima)"
            );
            assert_eq!(f32s(gathered), all, "{k} ranks, rank {me}: all_gather");
        }
    }
}

#[test]
fn a_device_view_on_a_simulated_communicator_is_refused() {
    run_sim(2, Config::sim(), |comm| {
        // SAFETY: the view is never dereferenced: the simulated communicator refuses it, and
        // its host copies refuse a device view before touching it.
        let mut view = unsafe { DeviceSlice::cuda_raw(0x7000_0000, 4 * N) };
        let o = Options::default();
        match comm.all_reduce(Data::InPlace(&mut view), N, DType::F32, ReduceOp::Sum, o) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("another backend"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(view.to_host(), Err(Error::InvalidArgument(_))));
        assert!(matches!(
            view.copy_from_host(&[1, 2, 3]),
            Err(Error::InvalidArgument(_))
        ));
        let mut buf = comm.alloc(4 * N)?;
        comm.all_reduce(Data::InPlace(&mut buf), N, DType::F32, ReduceOp::Sum, o)?;
        comm.synchronize()
    })
    .unwrap();
}

#[test]
fn views_that_overlap_other_than_in_place_are_refused() {
    let got = run_sim(2, Config::sim(), |comm| {
        let (me, o) = (comm.rank(), Options::default());
        let mut mine = f32_bytes(&input(me));
        mine.extend([0u8; 8]);
        let p = mine.as_mut_ptr();
        // SAFETY: the views lie in `mine`, which outlives them and is not touched while they
        // live; the call that could write through two of them is refused, and the in-place one
        // reads and writes the same bytes.
        let (src, mut shifted, mut same) = unsafe {
            (
                DeviceSlice::host_raw(p, 4 * N),
                DeviceSlice::host_raw(p.add(4), 4 * N),
                DeviceSlice::host_raw(p, 4 * N),
            )
        };
        let shift = Data::OutOfPlace {
            src: &src,
            dst: &mut shifted,
        };
        match comm.all_reduce(shift, N, DType::F32, ReduceOp::Sum, o) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("overlap"), "{m}"),
            other => panic!("rank {me}: {other:?}"),
        }
        comm.all_reduce(
            Data::OutOfPlace {
                src: &src,
                dst: &mut same,
            },
            N,
            DType::F32,
            ReduceOp::Sum,
            o,
        )?;
        comm.synchronize()?;
        drop((src, shifted, same));
        mine.truncate(4 * N);
        Ok(mine)
    })
    .unwrap();
    let sum: Vec<f32> = (0..N).map(|i| input(0)[i] + input(1)[i]).collect();
    for out in got {
        assert_eq!(f32s(&out), sum);
    }
}
