//! Times the simulator's warp operations and a launch of one warp:
//! `cargo run --release -p zipcoll-targets --features sim --example sim_bench`.
use std::time::Instant;
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
use zipcoll_targets::Lanes;

fn main() {
    const OPS: u32 = 200_000;
    for (name, which) in [("sync", 0u32), ("shfl_idx", 1), ("ballot", 2)] {
        let (t, cpu) = (Instant::now(), cpu_secs());
        launch::<32>(LaunchConfig::new(1, 32), |w: SimWarp<32>| {
            let mut v = w.lane_id();
            for i in 0..OPS {
                match which {
                    0 => w.sync(SimWarp::<32>::FULL),
                    1 => v = w.shfl_idx_u32(SimWarp::<32>::FULL, v, i % 32),
                    _ => v ^= w.ballot(SimWarp::<32>::FULL, v & 1 == 0) as u32,
                }
            }
            std::hint::black_box(v);
        })
        .unwrap();
        println!(
            "{name:10} {:7.1} ns per warp op (32 lanes), {:7.1} ns of CPU time",
            t.elapsed().as_nanos() as f64 / OPS as f64,
            (cpu_secs() - cpu) * 1e9 / OPS as f64
        );
    }
    let (t, cpu) = (Instant::now(), cpu_secs());
    for _ in 0..2000 {
        launch::<32>(LaunchConfig::new(1, 32), |w: SimWarp<32>| w.sync(SimWarp::<32>::FULL)).unwrap();
    }
    println!(
        "launch     {:7.1} us per launch of one warp, {:7.1} us of CPU time",
        t.elapsed().as_nanos() as f64 / 2000.0 / 1000.0,
        (cpu_secs() - cpu) * 1e6 / 2000.0
    );
}

/// CPU time of this process (user + system), from /proc/self/stat (clock ticks of 10 ms).
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<f64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the command's ')'
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}
