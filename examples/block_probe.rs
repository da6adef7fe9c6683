//! Probe of block frames on one backend: encode on the simulator or CUDA, decode on the other,
//! each step under a watchdog. `block_probe ELEMS [sim|cuda] [sim|cuda]`.
fn main() {
    use zipcoll::codec::{decode, encode_with, FrameUnit};
    use zipcoll::{testdata, Backend, CodecId, DType};
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(1 << 20, |s| s.parse().unwrap());
    let pick = |s: Option<&String>| match s.map(String::as_str) {
        Some("cuda") => Backend::Cuda { ordinal: 0 },
        _ => Backend::Sim,
    };
    let (enc_on, dec_on) = (pick(args.get(2)), pick(args.get(3)));
    std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_secs(15));
        eprintln!("watchdog: still running after 15 s");
        std::process::exit(3);
    });
    let data = testdata::normal(DType::Bf16, n, 1);
    let t = std::time::Instant::now();
    eprintln!("encoding on {enc_on:?}");
    let enc = encode_with(enc_on, FrameUnit::Block, DType::Bf16, Some(CodecId::ExpAns), &data, 32768).unwrap();
    eprintln!("encoded {} frames ratio {:.4} in {:?}; decoding on {dec_on:?}", enc.nframes(), enc.ratio(), t.elapsed());
    let back = decode(dec_on, &enc).unwrap();
    assert_eq!(back, data);
    eprintln!("decoded in {:?}", t.elapsed());
}
