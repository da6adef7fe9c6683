//! Simulator throughput of the frame codec: encode and decode of 1 MiB of N(0,1) bf16 per codec
//! (RAW included) on `Backend::Sim`. The simulator runs every lane as a coroutine, so these
//! numbers measure the CPU model of the kernels (and catch regressions in it), not GPU speed:
//! `zipcoll-bench codec` measures that.
//!
//! | group          | input                         | per iteration                          |
//! |----------------|-------------------------------|----------------------------------------|
//! | `sim_encode`   | 1 MiB of bf16, frames of 8192 | `codec::encode(Backend::Sim, ..)`      |
//! | `sim_decode`   | its frames                    | `codec::decode(Backend::Sim, ..)`      |
//!
//! `cargo bench -p zipcoll-host --bench codec`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use zipcoll_host::codec::{decode, encode};
use zipcoll_host::{testdata, Backend, CodecId, DType};

/// Bytes of data per iteration.
const BYTES: usize = 1 << 20;
/// Elements per frame.
const FRAME: usize = 8192;

fn codecs() -> impl Iterator<Item = (&'static str, Option<CodecId>)> {
    CodecId::ALL
        .into_iter()
        .map(|c| (c.name(), (c != CodecId::Raw).then_some(c)))
}

fn sim_codec(c: &mut Criterion) {
    let data = testdata::normal(DType::Bf16, BYTES / 2, 1);
    let mut enc_group = c.benchmark_group("sim_encode");
    enc_group
        .throughput(Throughput::Bytes(BYTES as u64))
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for (name, codec) in codecs() {
        enc_group.bench_function(BenchmarkId::new("bf16", name), |b| {
            b.iter(|| encode(Backend::Sim, DType::Bf16, codec, &data, FRAME).expect("the simulator encodes"))
        });
    }
    enc_group.finish();

    let mut dec_group = c.benchmark_group("sim_decode");
    dec_group
        .throughput(Throughput::Bytes(BYTES as u64))
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for (name, codec) in codecs() {
        let enc = encode(Backend::Sim, DType::Bf16, codec, &data, FRAME).expect("the simulator encodes");
        dec_group.bench_function(BenchmarkId::new("bf16", name), |b| {
            b.iter(|| decode(Backend::Sim, &enc).expect("the simulator decodes"))
        });
    }
    dec_group.finish();
}

criterion_group!(benches, sim_codec);
criterion_main!(benches);
