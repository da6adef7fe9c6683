//! `zipcoll-bench`: GPU benchmarks and GPU-vs-simulator checks of the frame codec.
//!
//! | command      | what it does                                                                  | exit status |
//! |--------------|-------------------------------------------------------------------------------|-------------|
//! | `codec`      | per (data, dtype, codec incl. RAW, frame size): encode and decode timed with CUDA events on device-resident buffers (median of `--repeats` after `--warmup`), compression ratio, a device-to-device memcpy of the same size as the ceiling, round trip checked bit for bit after timing; a markdown table on stdout, CSV with `--out` | 1 on any failed case or mismatch |
//! | `crosscheck` | per (size, dtype, data kind, codec): encode on the GPU and on the simulator, frames byte for byte equal; GPU frames decoded on the simulator and simulator frames on the GPU, both bit for bit the data | 1 on any difference |
//! | `tcp`        | plain TCP over loopback with each `--streams` count of parallel streams (the ceiling of the NET transport on this machine), and with `--net` the NET transport's proxies over the same loopback in the same run (two ranks in this process, host-memory FIFOs, threads as kernels, settings from `ZIPCOLL_NET_*`); GB/s per row (`src/bin/loopback`) | 3 on a socket or transport failure |
//!
//! `codec` and `crosscheck` need a CUDA device and exit with status 3 (saying why) without
//! one: there is no fallback to the simulator; `tcp` needs none. Arguments are checked before anything runs (status 2), the
//! frame sizes against every dtype. Exit statuses are those of every zipcoll tool
//! (`src/bin/common`): 0 ok, 1 a check failed, 2 usage error, 3 runtime error, 141 stdout
//! closed early.
//!
//! ```sh
//! zipcoll-bench codec --sizes 1M,16M,256M,1G --dtype bf16,f16,f32,f8e4m3 --data normal --out results.csv
//! zipcoll-bench codec --data file:weights.bin --dtype bf16          # one raw little-endian tensor
//! zipcoll-bench codec --files /tmp/tensors                          # every NAME_<dtype>.bin in a folder
//! zipcoll-bench crosscheck --sizes 4M,12345
//! zipcoll-bench tcp --streams 1,2,8 --bytes 1G --net
//! ZIPCOLL_NET_RATE_LIMIT=500M zipcoll-bench tcp --streams 1 --bytes 64M --net
//! ```
//!
//! GB/s are uncompressed bytes over the median time (1 GB = 10^9 bytes); the ratio is the
//! frames' bytes (headers included) over the data's. Sizes take the suffixes of
//! `zipcoll::units` (`64K`, `16MiB`, `1G`: powers of 1024) and are rounded down to whole
//! elements.

#[path = "common/mod.rs"]
mod common;
#[path = "loopback/mod.rs"]
mod loopback;

use clap::{Args, Parser, Subcommand};
use common::{say, Fail};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use zipcoll::codec::cuda::CudaCodec;
use zipcoll::codec::{self, check_decode_status, pack_slots, slot_bytes, Encoded, FrameUnit, MAX_FRAME_DATA_BYTES};
use zipcoll::cudarc::driver::sys::CUevent_flags;
use zipcoll::cudarc::driver::CudaSlice;
use zipcoll::{testdata, units, Backend, CodecId, DType};

#[derive(Parser)]
#[command(
    name = "zipcoll-bench",
    version,
    about = "GPU benchmarks and GPU-vs-simulator checks of zipcoll's frame codec",
    after_help = common::EXIT_STATUSES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Times encode and decode of every codec on a CUDA GPU.
    #[command(after_help = common::EXIT_STATUSES)]
    Codec(CodecArgs),
    /// Checks GPU frames against simulator frames, and decoding across the two.
    #[command(after_help = common::EXIT_STATUSES)]
    Crosscheck(CrossArgs),
    /// Plain TCP over loopback with N streams, and the NET transport beside it (--net).
    #[command(after_help = common::EXIT_STATUSES)]
    Tcp(TcpArgs),
}

#[derive(Args)]
struct TcpArgs {
    /// Parallel TCP streams, one row each.
    #[arg(long, value_delimiter = ',', default_value = "1,2,8", value_parser = clap::value_parser!(u16).range(1..=256))]
    streams: Vec<u16>,
    /// Bytes per row, split evenly over the streams (64M, 1G: powers of 1024).
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    bytes: usize,
    /// Bytes per write and read call.
    #[arg(long, default_value = "512K", value_parser = parse_size)]
    chunk: usize,
    /// SO_SNDBUF and SO_RCVBUF of the TCP streams (0: the kernel's autotuning); the NET row
    /// takes ZIPCOLL_NET_SOCKET_BUFFER.
    #[arg(long, default_value = "4M", value_parser = parse_size)]
    buffer: usize,
    /// Also the NET transport: rank 0 to rank 1 over its sockets (ZIPCOLL_NET_NTHREADS,
    /// ZIPCOLL_NET_NSOCKS_PERTHREAD, ZIPCOLL_NET_MIN_PIECE, ZIPCOLL_NET_SOCKET_BUFFER,
    /// ZIPCOLL_NET_RATE_LIMIT apply).
    #[arg(long)]
    net: bool,
    /// NET: connections (one sending and one receiving kernel thread each).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    conns: u16,
    /// NET: bytes of one FIFO slot (a frame fills it), 64..=64M.
    #[arg(long, default_value = "512K", value_parser = parse_size)]
    slot: usize,
}

#[derive(Args)]
struct CodecArgs {
    /// Data sizes in bytes (4096, 64K, 16MiB, 1G: powers of 1024), for generated data and files
    /// alike (a file is read up to the size); ignored with --files.
    #[arg(long, value_delimiter = ',', default_value = "1M,16M,256M,1G", value_parser = parse_size)]
    sizes: Vec<usize>,
    /// Dtypes: bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32 or all [default:
    /// bf16,f16,f32,f8e4m3; with --files: the dtype in each file's name].
    #[arg(long, value_delimiter = ',')]
    dtype: Option<Vec<String>>,
    /// The data: `normal` (N(0,1) rounded to the dtype, seeded) or `file:PATH` (raw
    /// little-endian elements of each --dtype).
    #[arg(long, default_value = "normal")]
    data: String,
    /// A folder of raw little-endian tensors named `NAME_<dtype>.bin`, each benchmarked whole
    /// with the dtype of its name (instead of --data and --sizes).
    #[arg(long)]
    files: Option<PathBuf>,
    /// Codecs: raw, fixedlen, expwindow, expans, huffman or all.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    codec: Vec<String>,
    /// Elements per frame, 1 up to 1 GiB of data (1073741824 fp8, 536870912 bf16 or f16,
    /// 268435456 f32 elements); several values sweep.
    #[arg(long, value_delimiter = ',', default_value = "8192", value_parser = parse_frame_elems)]
    frame_elems: Vec<usize>,
    /// What codes a frame: warp (format 1), block (format 2: raw and expans), or both.
    #[arg(long, value_delimiter = ',', default_value = "warp", value_parser = parse_unit)]
    unit: Vec<FrameUnit>,
    /// Timed runs per measurement, at least 1 (the median is reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    repeats: u32,
    /// Untimed runs before the timed ones.
    #[arg(long, default_value_t = 3)]
    warmup: u32,
    /// Write the results as CSV here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seed of the generated data.
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

#[derive(Args)]
struct CrossArgs {
    /// Data sizes in bytes (4096, 64K, 16MiB: powers of 1024); the simulator side takes a few
    /// seconds per MiB.
    #[arg(long, value_delimiter = ',', default_value = "4M,12345", value_parser = parse_size)]
    sizes: Vec<usize>,
    /// Dtypes: bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32 or all.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    dtype: Vec<String>,
    /// Codecs: raw, fixedlen, expwindow, expans, huffman or all.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    codec: Vec<String>,
    /// Elements per frame, 1 up to 1 GiB of data (1073741824 fp8, 536870912 bf16 or f16,
    /// 268435456 f32 elements).
    #[arg(long, default_value_t = 8192, value_parser = parse_frame_elems)]
    frame_elems: usize,
    /// What codes a frame: warp, block, or both (block frames: raw and expans only).
    #[arg(long, value_delimiter = ',', default_value = "warp", value_parser = parse_unit)]
    unit: Vec<FrameUnit>,
    /// Seed of the generated data.
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

type Res<T> = Result<T, Fail>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    common::exit(match cli.command {
        Command::Codec(args) => run_codec(&args),
        Command::Crosscheck(args) => run_crosscheck(&args),
        Command::Tcp(args) => run_tcp(&args),
    })
}

fn run_tcp(args: &TcpArgs) -> Res<()> {
    if args.chunk == 0 || !(64..=64 << 20).contains(&args.slot) || !args.slot.is_multiple_of(16) {
        return Err(Fail::Usage(
            "--chunk must be nonzero and --slot a multiple of 16 in 64..=64M".into(),
        ));
    }
    let net_config = if args.net {
        Some(zipcoll::transport::net::NetConfig::from_env()?)
    } else {
        None
    };
    say!("| what | bytes | s | GB/s |");
    say!("|------|-------|---|------|");
    let row = |r: loopback::Row| say!("| {} | {} | {:.3} | {:.2} |", r.what, r.bytes, r.seconds, r.gb_per_s());
    let buffer = (args.buffer > 0).then_some(args.buffer);
    for &n in &args.streams {
        let r = loopback::tcp(n.into(), args.bytes as u64, args.chunk, buffer)
            .map_err(|e| Fail::Runtime(format!("tcp x{n}: {e}")))?;
        row(r);
    }
    if let Some(config) = net_config {
        let r = loopback::net(&config, args.conns.into(), args.bytes as u64, args.slot).map_err(Fail::Runtime)?;
        row(r);
    }
    Ok(())
}

/// `--sizes`' values: bytes as [`units::parse_size`] reads them.
fn parse_size(s: &str) -> Result<usize, String> {
    let bytes = units::parse_size(s).map_err(|e| e.to_string())?;
    usize::try_from(bytes).map_err(|_| format!("{bytes} bytes do not fit this machine's memory"))
}

/// `--unit`'s values.
fn parse_unit(s: &str) -> Result<FrameUnit, String> {
    match s {
        "warp" => Ok(FrameUnit::Warp),
        "block" => Ok(FrameUnit::Block),
        _ => Err(format!("{s:?} is not a unit (warp or block)")),
    }
}

/// `--frame-elems`' values: `1..=MAX_FRAME_DATA_BYTES` (each dtype's own limit is checked
/// before any work, [`check_frame_elems`]).
fn parse_frame_elems(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_FRAME_DATA_BYTES).contains(&n) => Ok(n),
        _ => Err(format!("expected a number of elements in 1..={MAX_FRAME_DATA_BYTES}")),
    }
}

/// Checks that frames of each of `frame_elems` fit 1 GiB of each of `dtypes`.
fn check_frame_elems(dtypes: impl IntoIterator<Item = DType>, frame_elems: &[usize]) -> Res<()> {
    for dtype in dtypes {
        let most = MAX_FRAME_DATA_BYTES / dtype.size_bytes();
        if let Some(fe) = frame_elems.iter().find(|&&fe| fe > most) {
            return Err(Fail::Usage(format!(
                "--frame-elems {fe}: frames of {} hold at most {most} elements (1 GiB)",
                dtype.name()
            )));
        }
    }
    Ok(())
}

fn parse_dtypes(names: &[String]) -> Res<Vec<DType>> {
    let mut out = Vec::new();
    for name in names {
        match name.trim() {
            "all" => out.extend(DType::CODED),
            n => out.push(DType::CODED.into_iter().find(|d| d.name() == n).ok_or_else(|| {
                Fail::Usage(format!(
                    "unknown dtype {n:?} ({}, all)",
                    DType::CODED.map(DType::name).join(", ")
                ))
            })?),
        }
    }
    out.dedup();
    Ok(out)
}

fn codec_name(c: Option<CodecId>) -> &'static str {
    c.map_or("raw", CodecId::name)
}

/// `None` is RAW.
fn parse_codecs(names: &[String]) -> Res<Vec<Option<CodecId>>> {
    let all: Vec<Option<CodecId>> = CodecId::ALL
        .into_iter()
        .map(|c| (c != CodecId::Raw).then_some(c))
        .collect();
    let mut out = Vec::new();
    for name in names {
        match name.trim() {
            "all" => out.extend(&all),
            n => out.push(*all.iter().find(|c| codec_name(**c) == n).ok_or_else(|| {
                Fail::Usage(format!(
                    "unknown codec {n:?} (raw, fixedlen, expwindow, expans, huffman, all)"
                ))
            })?),
        }
    }
    out.dedup();
    Ok(out)
}

/// `n` N(0,1) elements of `dtype`, generated in parallel in chunks (each seeded from `seed` and
/// its index, so the data does not depend on the number of threads).
fn normal_data(dtype: DType, n: usize, seed: u64) -> Vec<u8> {
    const CHUNK: usize = 1 << 20;
    let size = dtype.size_bytes();
    let mut out = vec![0u8; n * size];
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get());
    let chunks: Vec<(usize, &mut [u8])> = out.chunks_mut(CHUNK * size).enumerate().collect();
    let per_thread = chunks.len().div_ceil(threads).max(1);
    let mut chunks = chunks.into_iter();
    std::thread::scope(|s| loop {
        let batch: Vec<(usize, &mut [u8])> = chunks.by_ref().take(per_thread).collect();
        if batch.is_empty() {
            break;
        }
        s.spawn(move || {
            for (i, dst) in batch {
                let chunk_seed = seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                dst.copy_from_slice(&testdata::normal(dtype, dst.len() / size, chunk_seed));
            }
        });
    });
    out
}

/// Up to `limit` bytes of `path`, rounded down to whole `dtype` elements.
fn read_elements(path: &Path, dtype: DType, limit: Option<usize>) -> Res<Vec<u8>> {
    let mut bytes = std::fs::read(path).map_err(|e| Fail::Runtime(format!("reading {}: {e}", path.display())))?;
    let keep = limit.unwrap_or(bytes.len()).min(bytes.len());
    bytes.truncate(keep - keep % dtype.size_bytes());
    Ok(bytes)
}

/// One input of the `codec` benchmark.
struct Input {
    label: String,
    dtype: DType,
    data: Vec<u8>,
}

/// The dtype of an input, and what makes it when called (inputs are made one at a time:
/// generated data is large).
type MakeInput = (DType, Box<dyn Fn() -> Res<Input>>);

/// The inputs `args` name.
fn inputs(args: &CodecArgs) -> Res<Vec<MakeInput>> {
    let mut makers: Vec<MakeInput> = Vec::new();
    if let Some(dir) = &args.files {
        let filter = args.dtype.as_deref().map(parse_dtypes).transpose()?;
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| Fail::Runtime(format!("reading {}: {e}", dir.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "bin"))
            .collect();
        paths.sort();
        for path in paths {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let dtype = DType::CODED
                .into_iter()
                .find(|d| stem.ends_with(&format!("_{}", d.name())));
            let Some(dtype) = dtype else {
                eprintln!("skipping {}: its name does not end in _<dtype>", path.display());
                continue;
            };
            if filter.as_ref().is_some_and(|f| !f.contains(&dtype)) {
                continue;
            }
            makers.push((
                dtype,
                Box::new(move || {
                    Ok(Input {
                        label: stem.clone(),
                        dtype,
                        data: read_elements(&path, dtype, None)?,
                    })
                }),
            ));
        }
        if makers.is_empty() {
            return Err(Fail::Usage(format!("no NAME_<dtype>.bin files in {}", dir.display())));
        }
        return Ok(makers);
    }
    let dtypes = match &args.dtype {
        Some(names) => parse_dtypes(names)?,
        None => vec![DType::Bf16, DType::F16, DType::F32, DType::F8E4M3],
    };
    let sizes = &args.sizes;
    let file = match args.data.as_str() {
        "normal" => None,
        d => Some(PathBuf::from(d.strip_prefix("file:").ok_or_else(|| {
            Fail::Usage(format!("bad --data {d:?} (normal or file:PATH)"))
        })?)),
    };
    for dtype in dtypes {
        for &size in sizes {
            let (file, seed) = (file.clone(), args.seed);
            makers.push((
                dtype,
                Box::new(move || {
                    let (label, data) = match &file {
                        None => (
                            "normal".to_string(),
                            normal_data(dtype, size / dtype.size_bytes(), seed),
                        ),
                        Some(path) => (
                            path.file_name()
                                .map_or("file".into(), |f| f.to_string_lossy().into_owned()),
                            read_elements(path, dtype, Some(size))?,
                        ),
                    };
                    Ok(Input { label, dtype, data })
                }),
            ));
        }
    }
    Ok(makers)
}

/// One row of the `codec` results.
struct Row {
    data: String,
    dtype: DType,
    codec: Option<CodecId>,
    unit: FrameUnit,
    bytes: usize,
    frame_elems: usize,
    frames: usize,
    ratio: f64,
    encode_ms: f64,
    decode_ms: f64,
    memcpy_ms: f64,
    /// `ok`, or what went wrong.
    check: String,
}

impl Row {
    /// The codec's name, with `/block` for block frames.
    fn codec_label(&self) -> String {
        match self.unit {
            FrameUnit::Warp => codec_name(self.codec).to_owned(),
            FrameUnit::Block => format!("{}/block", codec_name(self.codec)),
        }
    }

    fn gbs(&self, ms: f64) -> f64 {
        if ms > 0.0 {
            self.bytes as f64 / (ms * 1e-3) / 1e9
        } else {
            0.0
        }
    }

    /// The row's cells as [`markdown`] (`csv` false) and [`csv`] (true) write them, in their
    /// headers' order: CSV has more digits, the memcpy time too, and the check quoted (its
    /// double quotes made single).
    fn cells(&self, csv: bool) -> Vec<String> {
        // digits of ratios and times, and of GB/s
        let (fine, coarse) = if csv { (6, 3) } else { (4, 2) };
        let mut cells = vec![
            self.data.clone(),
            self.dtype.name().to_owned(),
            self.codec_label(),
            self.bytes.to_string(),
            self.frame_elems.to_string(),
            self.frames.to_string(),
            format!("{:.*}", fine, self.ratio),
            format!("{:.*}", coarse, self.gbs(self.encode_ms)),
            format!("{:.*}", coarse, self.gbs(self.decode_ms)),
            format!("{:.*}", fine, self.encode_ms),
            format!("{:.*}", fine, self.decode_ms),
            format!("{:.*}", coarse, self.gbs(self.memcpy_ms)),
        ];
        if csv {
            cells.push(format!("{:.6}", self.memcpy_ms));
            cells.push(format!("\"{}\"", self.check.replace('"', "'")));
        } else {
            cells.push(self.check.clone());
        }
        cells
    }
}

/// The median of `v` (0 for none).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The median time in ms of `launch` (`warmup` untimed runs first), each run between two CUDA
/// events on the codec's stream; waits for the device and reports kernel errors at the end.
fn time_ms(codec: &CudaCodec, warmup: u32, repeats: u32, mut launch: impl FnMut() -> Res<()>) -> Res<f64> {
    let stream = codec.gpu().stream();
    let event_error = |e: zipcoll::cudarc::driver::DriverError| Fail::Runtime(format!("CUDA event: {e:?}"));
    for _ in 0..warmup {
        launch()?;
    }
    codec.synchronize()?;
    let mut times = Vec::with_capacity(repeats as usize);
    for _ in 0..repeats {
        let start = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(event_error)?;
        launch()?;
        let end = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(event_error)?;
        times.push(f64::from(start.elapsed_ms(&end).map_err(event_error)?));
    }
    codec.synchronize()?;
    Ok(median(&mut times))
}

/// Device buffers of one (input, frame size) case.
struct Case<'a> {
    codec: &'a CudaCodec,
    input: &'a CudaSlice<u8>,
    dtype: DType,
    n: usize,
    frame_elems: usize,
}

/// A CUDA driver error as a failure.
fn driver(call: &'static str) -> impl Fn(zipcoll::cudarc::driver::DriverError) -> Fail {
    move |e| Fail::Runtime(format!("{call}: {e:?}"))
}

/// Times one codec on one case; returns (encode ms, decode ms, the frames) after checking the
/// round trip against `data`.
fn bench_codec(case: &Case<'_>, codec: Option<CodecId>, data: &[u8], args: &CodecArgs) -> Res<(f64, f64, Encoded)> {
    let Case {
        codec: cc,
        input,
        dtype,
        n,
        frame_elems,
    } = *case;
    let stream = cc.gpu().stream();
    let slot = slot_bytes(dtype, frame_elems)?;
    let nframes = n.div_ceil(frame_elems);
    let mut slots = stream
        .alloc_zeros::<u8>(nframes * slot)
        .map_err(driver("cuMemAlloc (slots)"))?;
    let mut lens = stream.alloc_zeros::<u32>(nframes).map_err(driver("cuMemAlloc"))?;
    let encode_ms = time_ms(cc, args.warmup, args.repeats, || {
        Ok(cc.launch_encode(dtype, codec, input, n, frame_elems, &mut slots, slot, &mut lens)?)
    })?;
    let host_lens = stream.clone_dtoh(&lens).map_err(driver("cuMemcpyDtoH"))?;
    let host_slots = stream.clone_dtoh(&slots).map_err(driver("cuMemcpyDtoH"))?;
    let enc = pack_slots(dtype, codec, n, frame_elems, slot, &host_slots, &host_lens)?;
    drop(host_slots);
    // Decode straight from the slots: frame g at g * slot.
    let offsets: Vec<u64> = (0..nframes as u64).map(|g| g * slot as u64).collect();
    let index = cc.upload_index(&offsets, &host_lens, slots.len())?;
    let mut out = stream
        .alloc_zeros::<u8>(data.len())
        .map_err(driver("cuMemAlloc (output)"))?;
    let mut status = stream
        .alloc_zeros::<u32>(nframes * 4)
        .map_err(driver("cuMemAlloc (status)"))?;
    let decode_ms = time_ms(cc, args.warmup, args.repeats, || {
        Ok(cc.launch_decode(dtype, &slots, &index, &mut out, frame_elems, n, &mut status)?)
    })?;
    let host_status = stream.clone_dtoh(&status).map_err(driver("cuMemcpyDtoH"))?;
    check_decode_status(&enc, &host_status)?;
    let decoded = stream.clone_dtoh(&out).map_err(driver("cuMemcpyDtoH"))?;
    if let Some(i) = decoded.iter().zip(data).position(|(a, b)| a != b) {
        let elem = i / dtype.size_bytes();
        return Err(Fail::Check(format!(
            "round trip differs first at element {elem} (byte {i})"
        )));
    }
    Ok((encode_ms, decode_ms, enc))
}

/// The median time of a device-to-device copy of `input`.
fn bench_memcpy(cc: &CudaCodec, input: &CudaSlice<u8>, args: &CodecArgs) -> Res<f64> {
    let stream = cc.gpu().stream();
    let mut dst = stream.alloc_zeros::<u8>(input.len()).map_err(driver("cuMemAlloc"))?;
    time_ms(cc, args.warmup, args.repeats, || {
        stream.memcpy_dtod(input, &mut dst).map_err(driver("cuMemcpyDtoD"))
    })
}

fn run_codec(args: &CodecArgs) -> Res<()> {
    let codecs = parse_codecs(&args.codec)?;
    let makers = inputs(args)?;
    check_frame_elems(makers.iter().map(|(dtype, _)| *dtype), &args.frame_elems)?;
    let cc = CudaCodec::new(args.device).map_err(|e| Fail::Runtime(format!("codec needs a CUDA GPU: {e}")))?;
    let coders: Vec<CudaCodec> = args
        .unit
        .iter()
        .map(|&u| CudaCodec::with_unit(args.device, u))
        .collect::<Result<_, _>>()?;
    eprintln!("device {}: {:?}", args.device, cc.gpu());
    let mut rows = Vec::new();
    for (_, make) in makers {
        let Input { label, dtype, data } = make()?;
        let n = data.len() / dtype.size_bytes();
        if n == 0 {
            eprintln!("skipping {label} {}: no elements", dtype.name());
            continue;
        }
        let input = cc.gpu().stream().clone_htod(&data).map_err(driver("cuMemcpyHtoD"))?;
        let memcpy_ms = bench_memcpy(&cc, &input, args)?;
        for (&frame_elems, coder) in args.frame_elems.iter().flat_map(|f| coders.iter().map(move |c| (f, c))) {
            let case = Case {
                codec: coder,
                input: &input,
                dtype,
                n,
                frame_elems,
            };
            for &codec in codecs.iter().filter(|&&c| coder.unit().codes(c)) {
                let mut row = Row {
                    data: label.clone(),
                    dtype,
                    codec,
                    unit: coder.unit(),
                    bytes: data.len(),
                    frame_elems,
                    frames: n.div_ceil(frame_elems.max(1)),
                    ratio: 0.0,
                    encode_ms: 0.0,
                    decode_ms: 0.0,
                    memcpy_ms,
                    check: "ok".into(),
                };
                match bench_codec(&case, codec, &data, args) {
                    Ok((e, d, enc)) => (row.encode_ms, row.decode_ms, row.ratio) = (e, d, enc.ratio()),
                    Err(Fail::Check(m) | Fail::Usage(m) | Fail::Runtime(m)) => row.check = format!("FAILED: {m}"),
                }
                eprintln!(
                    "{:<14} {:<7} {:<9} {:>11} B  frame {:>6}  ratio {:.4}  encode {:>8.2} GB/s  decode {:>8.2} GB/s  memcpy {:>8.2} GB/s  {}",
                    row.data,
                    dtype.name(),
                    row.codec_label(),
                    row.bytes,
                    frame_elems,
                    row.ratio,
                    row.gbs(row.encode_ms),
                    row.gbs(row.decode_ms),
                    row.gbs(row.memcpy_ms),
                    row.check
                );
                rows.push(row);
            }
        }
    }
    say!("{}", markdown(&rows).trim_end());
    if let Some(path) = &args.out {
        std::fs::write(path, csv(&rows)).map_err(|e| Fail::Runtime(format!("writing {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    let failed = rows.iter().filter(|r| r.check != "ok").count();
    if failed > 0 {
        return Err(Fail::Check(format!("{failed} of {} cases failed", rows.len())));
    }
    Ok(())
}

/// The results as a markdown table.
fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| data | dtype | codec | bytes | frame elems | frames | ratio | encode GB/s | decode GB/s | encode ms | decode ms | memcpy GB/s | check |\n\
         |------|-------|-------|------:|------------:|-------:|------:|------------:|------------:|----------:|----------:|------------:|-------|\n",
    );
    for r in rows {
        // Writing to a String cannot fail.
        let _ = writeln!(s, "| {} |", r.cells(false).join(" | "));
    }
    s
}

/// The results as CSV.
fn csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "data,dtype,codec,bytes,frame_elems,frames,ratio,encode_gbps,decode_gbps,encode_ms,decode_ms,memcpy_gbps,memcpy_ms,check\n",
    );
    for r in rows {
        // Writing to a String cannot fail.
        let _ = writeln!(s, "{}", r.cells(true).join(","));
    }
    s
}

/// Where two encodings first differ, in words.
fn first_difference(gpu: &Encoded, sim: &Encoded) -> String {
    if gpu.frame_lens != sim.frame_lens {
        let g = gpu.frame_lens.iter().zip(&sim.frame_lens).position(|(a, b)| a != b);
        return match g {
            Some(g) => format!(
                "frame {g} is {} bytes on the GPU, {} on the simulator",
                gpu.frame_lens[g], sim.frame_lens[g]
            ),
            None => format!(
                "{} frames on the GPU, {} on the simulator",
                gpu.nframes(),
                sim.nframes()
            ),
        };
    }
    match gpu.bytes.iter().zip(&sim.bytes).position(|(a, b)| a != b) {
        Some(i) => {
            let g = gpu.frame_offsets.iter().rposition(|&o| o <= i as u64).unwrap_or(0);
            format!(
                "frame {g} differs at byte {} (GPU {:#04x}, simulator {:#04x})",
                i as u64 - gpu.frame_offsets.get(g).copied().unwrap_or(0),
                gpu.bytes[i],
                sim.bytes[i]
            )
        }
        None => "the streams differ in length or layout".into(),
    }
}

/// One crosscheck combination; `Err` says what differs.
fn crosscheck_one(
    gpu: Backend,
    unit: FrameUnit,
    dtype: DType,
    codec: Option<CodecId>,
    data: &[u8],
    frame_elems: usize,
) -> Res<String> {
    let t = Instant::now();
    let on_gpu = codec::encode_with(gpu, unit, dtype, codec, data, frame_elems)
        .map_err(|e| Fail::Runtime(format!("GPU encode: {e}")))?;
    let on_sim = codec::encode_with(Backend::Sim, unit, dtype, codec, data, frame_elems)
        .map_err(|e| Fail::Runtime(format!("simulator encode: {e}")))?;
    if on_gpu != on_sim {
        return Err(Fail::Check(format!(
            "GPU and simulator frames differ: {}",
            first_difference(&on_gpu, &on_sim)
        )));
    }
    let gpu_to_sim = codec::decode_stream(Backend::Sim, dtype, &on_gpu.bytes)
        .map_err(|e| Fail::Check(format!("GPU frames on the simulator: {e}")))?;
    if gpu_to_sim != data {
        return Err(Fail::Check(
            "GPU frames decoded on the simulator differ from the data".into(),
        ));
    }
    let sim_to_gpu = codec::decode_stream(gpu, dtype, &on_sim.bytes)
        .map_err(|e| Fail::Check(format!("simulator frames on the GPU: {e}")))?;
    if sim_to_gpu != data {
        return Err(Fail::Check(
            "simulator frames decoded on the GPU differ from the data".into(),
        ));
    }
    Ok(format!(
        "{} frames, ratio {:.4}, GPU == sim bytes, GPU->sim ok, sim->GPU ok ({:.1} s)",
        on_gpu.nframes(),
        on_gpu.ratio(),
        t.elapsed().as_secs_f64()
    ))
}

fn run_crosscheck(args: &CrossArgs) -> Res<()> {
    let dtypes = parse_dtypes(&args.dtype)?;
    let codecs = parse_codecs(&args.codec)?;
    check_frame_elems(dtypes.iter().copied(), &[args.frame_elems])?;
    let gpu = Backend::Cuda { ordinal: args.device };
    gpu.prepare()
        .map_err(|e| Fail::Runtime(format!("crosscheck needs a CUDA GPU: {e}")))?;
    let (mut total, mut failed) = (0, 0);
    for &size in &args.sizes {
        for &dtype in &dtypes {
            let n = size / dtype.size_bytes();
            // N(0,1) compresses (the coders' paths); the special values test escapes and RAW.
            let kinds = [
                ("normal", testdata::normal(dtype, n, args.seed)),
                ("specials", testdata::elements(dtype, n, args.seed)),
            ];
            for (kind, data) in &kinds {
                for (&unit, &codec) in args.unit.iter().flat_map(|u| codecs.iter().map(move |c| (u, c))) {
                    if !unit.codes(codec) {
                        continue;
                    }
                    total += 1;
                    let line = crosscheck_one(gpu, unit, dtype, codec, data, args.frame_elems);
                    let (verdict, text) = match line {
                        Ok(text) => ("ok  ", text),
                        Err(Fail::Check(text) | Fail::Usage(text) | Fail::Runtime(text)) => {
                            failed += 1;
                            ("FAIL", text)
                        }
                    };
                    say!(
                        "{verdict} {:<7} {:<9} {:<5} {:<8} {:>9} B: {text}",
                        dtype.name(),
                        codec_name(codec),
                        unit.name(),
                        kind,
                        data.len()
                    );
                }
            }
        }
    }
    say!("{} passed, {failed} failed", total - failed);
    if failed > 0 {
        return Err(Fail::Check(format!("{failed} of {total} combinations differ")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_sizes_are_checked_per_dtype() {
        assert_eq!(parse_frame_elems("8192"), Ok(8192));
        assert!(parse_frame_elems("0").is_err());
        assert!(parse_frame_elems(&(MAX_FRAME_DATA_BYTES + 1).to_string()).is_err());
        assert!(check_frame_elems([DType::F8E4M3], &[MAX_FRAME_DATA_BYTES]).is_ok());
        match check_frame_elems([DType::Bf16, DType::F32], &[8192, 1 << 29]) {
            Err(Fail::Usage(m)) => assert!(m.contains("f32 hold at most 268435456"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("17179869184G").is_err());
    }

    #[test]
    fn names_parse() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_codecs(&names(&["all"])).ok().map(|c| c.len()), Some(5));
        assert_eq!(
            parse_codecs(&names(&["raw", "huffman"])).ok(),
            Some(vec![None, Some(CodecId::Huffman)])
        );
        assert!(parse_codecs(&names(&["zstd"])).is_err());
        assert_eq!(parse_dtypes(&names(&["all"])).ok(), Some(DType::CODED.to_vec()));
        assert_eq!(parse_dtypes(&names(&["f8e4m3"])).ok(), Some(vec![DType::F8E4M3]));
        assert!(parse_dtypes(&names(&["fp8"])).is_err());
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn table_rows_keep_their_format() {
        let row = Row {
            data: "normal".into(),
            dtype: DType::Bf16,
            codec: Some(CodecId::ExpAns),
            unit: FrameUnit::Warp,
            bytes: 1_000_000,
            frame_elems: 8192,
            frames: 62,
            ratio: 0.75,
            encode_ms: 0.5,
            decode_ms: 0.25,
            memcpy_ms: 0.125,
            check: "FAILED: \"x\"".into(),
        };
        let md = markdown(std::slice::from_ref(&row));
        let md_row = "| normal | bf16 | expans | 1000000 | 8192 | 62 | 0.7500 | 2.00 | 4.00 | 0.5000 | 0.2500 | 8.00 | FAILED: \"x\" |";
        assert_eq!(md.lines().nth(2), Some(md_row));
        let csv = csv(std::slice::from_ref(&row));
        let csv_row =
            "normal,bf16,expans,1000000,8192,62,0.750000,2.000,4.000,0.500000,0.250000,8.000,0.125000,\"FAILED: 'x'\"";
        assert_eq!(csv.lines().nth(1), Some(csv_row));
        for (table, sep) in [(&md, '|'), (&csv, ',')] {
            let mut lines = table.lines();
            let header = lines.next().unwrap_or_default().matches(sep).count();
            assert_eq!(lines.next_back().map(|l| l.matches(sep).count()), Some(header));
        }
    }

    #[test]
    fn generated_data_is_seeded_per_chunk() {
        let a = normal_data(DType::Bf16, 3 << 20, 9);
        assert_eq!(a.len(), 6 << 20);
        assert_eq!(&a[..2 << 20], &testdata::normal(DType::Bf16, 1 << 20, 9)[..]);
    }

    #[test]
    fn first_difference_names_the_frame() {
        let data = testdata::elements(DType::F32, 3000, 1);
        let a = codec::encode(Backend::Sim, DType::F32, None, &data, 1000).unwrap_or_else(|e| panic!("{e}"));
        let mut b = a.clone();
        let at = b.frame_offsets[2] as usize + 40;
        b.bytes[at] ^= 1;
        let want = format!(
            "frame 2 differs at byte 40 (GPU {:#04x}, simulator {:#04x})",
            b.bytes[at], a.bytes[at]
        );
        assert_eq!(first_difference(&b, &a), want);
    }
}
