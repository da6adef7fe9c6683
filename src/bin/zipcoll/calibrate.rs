//! `zipcoll calibrate`: measures this machine's link and coders as Auto's cost model sees them
//! and writes them to a file that communicators then decide with (`ZIPCOLL_CALIBRATION=FILE`;
//! `zipcoll_host::comm::calibration`). Two ranks (`--ranks`) on the GPUs, one process each (two
//! per GPU where there is one), or simulator threads with `--transport sim` or without a GPU:
//!
//! | step | measures                                                                  |
//! |------|---------------------------------------------------------------------------|
//! | 1    | RAW send/recv (each rank to the next) at the two `--sizes`: bandwidth and latency, the line through the two times |
//! | 2    | each of `--codecs` forced at the larger size: one channel's encode and decode rates with which the pipeline model predicts that time |
//!
//! Times are the slowest rank's median of `-n` calls, each timed alone after one warm-up call
//! (the two sizes of step 1 in alternation); the data is bf16 N(0,1).
//! Rank 0 writes the file and prints it.
//!
//! ```sh
//! zipcoll calibrate --transport net --out net.toml        # then: ZIPCOLL_CALIBRATION=net.toml
//! zipcoll calibrate --transport sim --sizes 64K,512K      # the simulator's rates
//! ```

use crate::across_ranks::across_ranks;
use crate::common::Fail;
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;
use zipcoll::comm::calibration::{fit_channel_rates, fit_link, Calibration};
use zipcoll::comm::launch::{child_communicator, spawn_ranks};
use zipcoll::comm::{run_sim, Communicator, Compression, Config, DeviceBuffer, Lossless, Options, TransportKind};
use zipcoll::{testdata, units, CodecId, DType, Error, ReduceOp};

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Where to write the calibration (TOML).
    #[arg(long, default_value = "zipcoll-calibration.toml")]
    out: PathBuf,
    /// The transport to measure: net, p2p or sim (the simulator's threads).
    #[arg(long, default_value = "net", value_parser = parse_transport)]
    transport: TransportKind,
    /// Ranks (at least 2).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(2..))]
    ranks: u16,
    /// The two sizes (bytes per rank, K/M/G suffixes) of the RAW fit; codecs run at the larger.
    #[arg(long, default_value = "4M,64M", value_delimiter = ',', value_parser = parse_bytes)]
    sizes: Vec<u64>,
    /// The codecs whose channel rates are measured (those left out keep the presets' rates,
    /// with which Auto may then prefer them).
    #[arg(long, default_value = "fixedlen,expwindow,expans,huffman", value_delimiter = ',', value_parser = parse_codec)]
    codecs: Vec<CodecId>,
    /// Timed calls per measurement, at least 1.
    #[arg(short = 'n', long = "iters", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    iters: u32,
}

fn parse_transport(s: &str) -> Result<TransportKind, String> {
    match s.parse() {
        Ok(TransportKind::Auto) => Err("name the transport to measure: net, p2p or sim".into()),
        Ok(kind) => Ok(kind),
        Err(e) => Err(format!("{e}")),
    }
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    units::parse_size(s).map_err(|e| e.to_string())
}

fn parse_codec(s: &str) -> Result<CodecId, String> {
    match s.parse::<Compression>() {
        Ok(Compression::Lossless(Lossless::Force(c))) if c != CodecId::Raw => Ok(c),
        _ => Err(format!("{s:?}: a codec name (fixedlen, expwindow, expans, huffman)")),
    }
}

/// Runs the calibration: this process is a rank, or it starts them.
pub fn run(args: &CalibrateArgs) -> Result<(), Fail> {
    let (small, large) = match args.sizes[..] {
        [a, b] if a < b && a >= 1024 => (a, b),
        _ => {
            return Err(Fail::Usage(
                "--sizes takes two sizes, the first smaller, at least 1K".into(),
            ))
        }
    };
    let config = |base: Config| -> Result<Config, Error> {
        let mut c = base.with_env()?;
        // measured against the presets, never against an earlier calibration
        c.calibration = None;
        c.transport = args.transport;
        Ok(c)
    };
    let sizes = (small, large);
    if let Some(comm) = child_communicator(config(Config::gpu())?)? {
        return on_rank(comm, args, sizes).map_err(Fail::from);
    }
    if zipcoll::cuda::is_available() && args.transport != TransportKind::Sim {
        return match spawn_ranks(usize::from(args.ranks))? {
            0 => Ok(()),
            2 => Err(Fail::Usage("a rank refused its arguments (above)".into())),
            code => Err(Fail::Runtime(format!("a rank failed with exit status {code} (above)"))),
        };
    }
    let sim = match args.transport {
        TransportKind::P2p => return Err(Fail::Usage("--transport p2p needs GPUs".into())),
        _ => config(Config::sim())?,
    };
    run_sim(usize::from(args.ranks), sim, |comm| on_rank(comm, args, sizes))?;
    Ok(())
}

/// Every rank's part; rank 0 writes and prints the file.
fn on_rank(comm: Communicator, args: &CalibrateArgs, (small, large): (u64, u64)) -> Result<(), Error> {
    let dtype = DType::Bf16;
    let elems = |bytes: u64| (bytes / 2) as usize;
    let (count, count_small) = (elems(large), elems(small));
    let mut src = comm.alloc(large as usize)?;
    src.copy_from_host(&testdata::normal(dtype, count, 1000 + comm.rank() as u64))?;
    let mut dst = comm.alloc(large as usize)?;
    let off = Compression::Off;
    let raw = timed(&comm, args, &[count_small, count], &src, &mut dst, off)?;
    let ((t_small, _), (t_large, raw_wire)) = (raw[0], raw[1]);
    let (bandwidth, latency) = fit_link((small, t_small), (large, t_large)).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "RAW send/recv of {large} bytes ({t_large:.6} s) was not slower than of {small} ({t_small:.6} s): give --sizes further apart"
        ))
    })?;
    // the model this communicator decides with, then with the measured link
    let plan = comm.auto_plan(&src, count, dtype)?;
    let calibrated = Calibration {
        about: String::new(),
        transport: transport_name(comm.transport()).into(),
        bandwidth_bytes_per_s: bandwidth,
        latency_s: latency,
        codecs: BTreeMap::new(),
    };
    let channels = plan.link.coders.map_or(1, |c| c.channels);
    let link = calibrated.apply(plan.link);
    let frame_bytes = (comm.frame_elems(dtype, count) * dtype.size_bytes()) as u64;
    let mut codecs = BTreeMap::new();
    for &codec in &args.codecs {
        let (seconds, wire) = timed(
            &comm,
            args,
            &[count],
            &src,
            &mut dst,
            Compression::Lossless(Lossless::Force(codec)),
        )?[0];
        // NET counts the bytes on the wire; elsewhere the sample's prediction stands in
        let wire_bytes = match (wire, raw_wire) {
            (Some(w), Some(r)) if r > 0 => (large as f64 * w as f64 / r as f64) as u64,
            _ => plan.plan.predictions.map_or(large, |p| p.get(codec)),
        };
        let rates = fit_channel_rates(link, codec, large, wire_bytes, frame_bytes, seconds);
        codecs.insert(codec.name().to_owned(), rates);
    }
    if comm.rank() == 0 {
        let about = format!(
            "zipcoll calibrate: {} ranks over {}, {channels} channel(s), {} to {} bytes of bf16 N(0,1), {} call(s) each",
            comm.nranks(),
            transport_name(comm.transport()),
            small,
            large,
            args.iters
        );
        let file = Calibration {
            about,
            codecs,
            ..calibrated
        };
        let text = file.to_toml();
        std::fs::write(&args.out, &text).map_err(|source| Error::Io {
            what: format!("writing {}", args.out.display()),
            source,
        })?;
        println!("# written to {}", args.out.display());
        print!("{text}");
    }
    Ok(())
}

fn transport_name(kind: TransportKind) -> &'static str {
    match kind {
        TransportKind::P2p => "p2p",
        TransportKind::Sim => "sim",
        _ => "net",
    }
}

/// Per count of `counts`: the slowest rank's median seconds per send/recv (each rank to the
/// next) of that many bf16 with `compression`, and this rank's bytes on the wire per call where
/// the transport counts them. One warm-up call per count, then `args.iters` rounds that each
/// time one call of every count, so that a machine busy with other work slows every count
/// alike (a count timed after another would meet a different load).
fn timed(
    comm: &Communicator,
    args: &CalibrateArgs,
    counts: &[usize],
    src: &DeviceBuffer,
    dst: &mut DeviceBuffer,
    compression: Compression,
) -> Result<Vec<(f64, Option<u64>)>, Error> {
    let (rank, k) = (comm.rank(), comm.nranks());
    let opts = Options {
        compression: Some(compression),
        ..Options::default()
    };
    let call = |dst: &mut DeviceBuffer, count: usize| -> Result<(), Error> {
        let mut g = comm.group();
        g.send(src, count, DType::Bf16, (rank + 1) % k)?;
        g.recv(dst, count, DType::Bf16, (rank + k - 1) % k)?;
        g.launch(opts)
    };
    for &count in counts {
        call(dst, count)?;
    }
    comm.synchronize()?;
    comm.barrier()?;
    let mut seconds = vec![Vec::with_capacity(args.iters as usize); counts.len()];
    let mut wire = vec![Some(0u64); counts.len()];
    for _ in 0..args.iters {
        for (j, &count) in counts.iter().enumerate() {
            let (before, start) = (comm.wire_bytes_sent(), Instant::now());
            call(dst, count)?;
            comm.synchronize()?;
            seconds[j].push(start.elapsed().as_secs_f64());
            let sent = before.zip(comm.wire_bytes_sent()).map(|(b, a)| a - b);
            wire[j] = wire[j].zip(sent).map(|(w, s)| w + s);
        }
    }
    // the median shrugs off a call that another process slowed down
    let mine: Vec<f64> = seconds
        .iter_mut()
        .map(|s| {
            s.sort_by(f64::total_cmp);
            s[s.len() / 2]
        })
        .collect();
    let slowest = across_ranks(comm, &mine, ReduceOp::Max)?;
    Ok(slowest
        .into_iter()
        .zip(wire)
        .map(|(t, w)| (t, w.map(|w| w / u64::from(args.iters))))
        .collect())
}
