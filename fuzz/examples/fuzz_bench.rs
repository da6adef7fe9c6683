//! Times each fuzz target on its checked-in corpus and on mutations of it, in-process, without
//! libFuzzer: `cargo run --release -p zipcoll-fuzz --example fuzz_bench [target..]`
//! (`ZIPCOLL_FUZZ_BENCH_SECS`, default 3). For profiling the targets (`perf record`).

use std::time::{Duration, Instant};

fn main() {
    let secs: f64 = std::env::var("ZIPCOLL_FUZZ_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3.0);
    let only: Vec<String> = std::env::args().skip(1).collect();
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (name, f) in zipcoll_fuzz::targets::TARGETS {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(root.join(name))
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect();
        seeds.sort();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (start, cpu0) = (Instant::now(), cpu_secs());
        let mut n = 0u64;
        let mut bytes = 0u64;
        while start.elapsed() < Duration::from_secs_f64(secs) {
            for _ in 0..16 {
                let mut input = seeds[(rnd() % seeds.len() as u64) as usize].clone();
                // a few byte changes, as libFuzzer's mutations
                for _ in 0..rnd() % 3 {
                    if !input.is_empty() {
                        let i = (rnd() % input.len() as u64) as usize;
                        input[i] = rnd() as u8;
                    }
                }
                bytes += input.len() as u64;
                let _ = std::panic::catch_unwind(|| f(&input));
                n += 1;
            }
        }
        let t = start.elapsed().as_secs_f64();
        let cpu = cpu_secs() - cpu0;
        println!(
            "{name:24} {:>10.0} exec/s wall, {:>10.0} exec/s of CPU time (mean input {} B)",
            n as f64 / t,
            n as f64 / cpu.max(1e-9),
            bytes / n.max(1)
        );
    }
}

/// CPU time of this process (user + system), from /proc/self/stat (clock ticks of 10 ms).
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<f64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    // fields 14 and 15 of stat (utime, stime) are 12 and 13 after the command's ')'
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}
