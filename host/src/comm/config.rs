//! A communicator's settings: compression policy, transport choice, FIFO geometry, parallelism,
//! calls in flight and timeout, each with a default and an environment variable that overrides
//! it. A value that cannot be used is an error naming the variable and the accepted form.
//!
//! | field          | default (GPU / simulator)  | environment variable        | meaning                                   |
//! |----------------|----------------------------|-----------------------------|-------------------------------------------|
//! | `compression`  | `Lossless(Auto)`           | `ZIPCOLL_COMPRESSION`       | `off`, `auto`, or a codec name (`expans`, ...) |
//! | `lossy`        | `Exact`                    | `ZIPCOLL_LOSSY`             | `exact`, `error-bound:abs=EB`, `error-bound:rel=R`, `qsgd:bits=B[,bucket=N][,seed=S]` ([`super::Lossy`]) |
//! | `transport`    | `Auto`                     | `ZIPCOLL_TRANSPORT`         | `auto`, `p2p`, `net` (`sim` for the simulator's in-process FIFOs) |
//! | `buffer_bytes` | 4 MiB / 64 KiB             | `ZIPCOLL_BUFFER_BYTES`      | bytes of one FIFO (8 slots): 2K..=8G, with the suffixes of [`crate::units`] (`1M`, `64KiB`) |
//! | `channels`     | 64 / 2                     | `ZIPCOLL_CHANNELS`          | channels (each with its own FIFOs) per collective and peer (1..=256) |
//! | `channel_threads` | 256 / 64                | `ZIPCOLL_CHANNEL_THREADS`   | threads driving a channel (a block): 32..=512, whole warps; 32 drives every channel with one warp (the one-warp kernel, whose frames are coded by a warp). Calls every rank sends RAW (compression off, or Auto deciding RAW from the size alone) run the RAW-only block kernel; others the coding block kernel, whose block frames are coded by every thread |
//! | `max_inflight` | 16                         | `ZIPCOLL_MAX_INFLIGHT`      | calls enqueued and not finished (1..=1024; a GPU's call slots) |
//! | `timeout`      | 60 s / 20 s                | `ZIPCOLL_TIMEOUT_MS`        | how long any wait for a peer may last, in ms (at least 1) |
//! | `profile`      | off                        | `ZIPCOLL_PROFILE`           | `1`: time each call's plan upload and kernel on the device (CUDA events), read by `Communicator::call_times` |
//! | `verify_p2p`   | off                        | `ZIPCOLL_VERIFY_P2P`        | `1`: verify RAW frames received over P2P against their checksum, as over NET and SIM (by default P2P's are used as delivered: ARCHITECTURE.md, "RAW over P2P") |
//! | `auto_checks`  | off                        | `ZIPCOLL_AUTO_CHECKS`       | `1`: Auto times the calls it codes and sends RAW where their shape ran faster RAW (`checks.rs`; off by default: on one H100 it sent RAW where ExpAns ran 2x faster, BENCHMARKS.md 2026-12-06) |
//! | `calibration`  | none (the presets)         | `ZIPCOLL_CALIBRATION`       | a file `zipcoll calibrate` wrote: the link's and the coders' rates Auto decides with on the transport it measured (`calibration.rs`); every rank must load the same |
//! | `net`          | [`NetConfig::default`]     | `ZIPCOLL_NET_NTHREADS`, `ZIPCOLL_NET_NSOCKS_PERTHREAD`, `ZIPCOLL_NET_MIN_PIECE`, `ZIPCOLL_NET_SOCKET_BUFFER`, `ZIPCOLL_NET_RATE_LIMIT` | writer threads and sockets per peer, the smallest piece of a striped frame, socket buffers, an optional rate limit |
//!
//! Memory: each rank holds, per peer and channel, one FIFO (`buffer_bytes`) and two staging
//! buffers of a slot each: `(nranks - 1) x channels x buffer_bytes + nranks x channels x 2 x
//! buffer_bytes / 8`, in device memory for P2P and in pinned host memory for NET (about 2.3 GB
//! per rank for 8 ranks with the GPU defaults). Bandwidth grows with `channels` (one warp each;
//! BENCHMARKS.md has a sweep on 2 H200s: 256 channels move about 3x what 64 do).

use super::calibration::Calibration;
use super::Lossy;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::transport::net::NetConfig;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;
use zipcoll_device::codec::CodecId;
use zipcoll_primitives::conn::{NSLOTS, SLOT_ALIGN};

/// How a collective encodes what it sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// RAW frames.
    Off,
    /// Lossless frames: the received data is bit-identical to what was sent.
    Lossless(Lossless),
}

/// Which lossless codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lossless {
    /// The arbitration decides per call from a sample of the data and the link's cost model
    /// (RAW where no codec pays off, e.g. on NVLink). On a GPU a call of a dtype and count seen
    /// before decides from the latest such call's sample that has arrived, so that no call
    /// waits for the ones before it but a shape's first; and the calls are timed, so that where
    /// coding turns out slower than RAW for a call's shape, its next calls send RAW (trying
    /// the codec again now and then).
    Auto,
    /// Always this codec (each frame still goes RAW where coding does not shrink it).
    Force(CodecId),
}

impl FromStr for Compression {
    type Err = Error;
    /// `off`, `auto`, or a codec's name (`fixedlen`, `expwindow`, `expans`, `huffman`; `raw`
    /// means `off`).
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "off" | "raw" => return Ok(Compression::Off),
            "auto" => return Ok(Compression::Lossless(Lossless::Auto)),
            _ => {}
        }
        CodecId::ALL
            .into_iter()
            .find(|c| format!("{c:?}").eq_ignore_ascii_case(&s))
            .map(|c| Compression::Lossless(Lossless::Force(c)))
            .ok_or_else(|| Error::InvalidArgument(format!("unknown compression {s:?}: off, auto or a codec name")))
    }
}

impl fmt::Display for Compression {
    /// What [`Compression::from_str`] reads back: `off`, `auto` or the codec's name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::Off => f.write_str("off"),
            Compression::Lossless(Lossless::Auto) => f.write_str("auto"),
            Compression::Lossless(Lossless::Force(c)) => f.write_str(c.name()),
        }
    }
}

/// Which transport carries the frames between ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportKind {
    /// By topology: the simulator's in-process FIFOs for simulated ranks of one process, P2P
    /// for GPUs with peer access, NET otherwise.
    Auto,
    /// FIFOs in the receiving GPU's memory, written by the sending GPU (CUDA IPC, peer access).
    P2p,
    /// FIFOs in host memory drained and filled by proxy threads over TCP.
    Net,
    /// FIFOs in host memory shared by the simulated ranks of one process.
    Sim,
}

impl FromStr for TransportKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(TransportKind::Auto),
            "p2p" | "nvlink" => Ok(TransportKind::P2p),
            "net" | "socket" => Ok(TransportKind::Net),
            "sim" => Ok(TransportKind::Sim),
            other => Err(Error::InvalidArgument(format!(
                "unknown transport {other:?}: auto, p2p, net or sim"
            ))),
        }
    }
}

/// A communicator's settings (see the module table).
#[derive(Clone, Debug)]
pub struct Config {
    /// The default compression of every call.
    pub compression: Compression,
    /// The default lossy policy of every call it can serve ([`Lossy`]; `Exact`: none).
    pub lossy: Lossy,
    /// The transport.
    pub transport: TransportKind,
    /// Bytes of one FIFO: `NSLOTS` slots.
    pub buffer_bytes: u64,
    /// Channels per collective (per peer for send/recv), each with its own FIFOs.
    pub channels: usize,
    /// Threads driving each channel (a block of the block-channel kernels; 32: one warp, the
    /// one-warp kernel). Every rank must agree on whether it is 32.
    pub channel_threads: u32,
    /// Calls that may be in flight at once (on a GPU, each has a slot with its own scratch,
    /// status records and event); a call beyond them first waits for the oldest.
    pub max_inflight: usize,
    /// The longest any wait for a peer may last.
    pub timeout: Duration,
    /// Whether each call's device time is measured (CUDA events around the plan's upload and
    /// the kernel; the simulator's run time), for [`super::Communicator::call_times`].
    pub profile: bool,
    /// Whether RAW frames received over P2P are verified against their checksum (the fast
    /// path's check pass), as NET's and SIM's always are; by default they are used as delivered
    /// (ARCHITECTURE.md, "RAW over P2P"). Coded frames and frame headers are always verified.
    pub verify_p2p: bool,
    /// Whether Auto checks its choices against the calls' realized times on a GPU
    /// (`checks.rs`); off: Auto follows its cost model alone.
    pub auto_checks: bool,
    /// Rates measured by `zipcoll calibrate`, which Auto's model then uses on the transport
    /// they were measured on (`calibration.rs`); `None`: the presets.
    pub calibration: Option<Calibration>,
    /// The NET transport's settings.
    pub net: NetConfig,
}

impl Config {
    /// The defaults for a GPU backend.
    pub fn gpu() -> Config {
        Config {
            compression: Compression::Lossless(Lossless::Auto),
            lossy: Lossy::Exact,
            transport: TransportKind::Auto,
            buffer_bytes: 4 << 20,
            channels: 64,
            channel_threads: 256,
            max_inflight: 16,
            timeout: Duration::from_secs(60),
            profile: false,
            verify_p2p: false,
            auto_checks: false,
            calibration: None,
            net: NetConfig::default(),
        }
    }

    /// The defaults for the simulator: small FIFOs (frames of a few thousand elements, so tests
    /// cross many frames) and two channels.
    pub fn sim() -> Config {
        Config {
            buffer_bytes: 64 << 10,
            channels: 2,
            channel_threads: 64,
            timeout: Duration::from_secs(20),
            ..Config::gpu()
        }
    }

    /// The defaults for `device`: [`Config::sim`] for the simulators, [`Config::gpu`] otherwise.
    pub fn defaults_for(device: Backend) -> Config {
        match device {
            Backend::Sim | Backend::Sim64 => Config::sim(),
            _ => Config::gpu(),
        }
    }

    /// These settings with every environment variable of the module table that is set (and not
    /// empty) applied. A value that cannot be used is [`Error::InvalidArgument`] naming the
    /// variable and the accepted form, e.g. `ZIPCOLL_CHANNELS="0": channels must be in
    /// 1..=256`. Sizes take the suffixes of [`crate::units`] (`ZIPCOLL_BUFFER_BYTES=1M`).
    pub fn with_env(self) -> Result<Config> {
        self.with_vars(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
    }

    /// [`Config::with_env`] with the variables `var` returns.
    fn with_vars(mut self, var: impl Fn(&str) -> Option<String>) -> Result<Config> {
        // (the variable, its value) for those set and not empty
        let set = |name: &'static str| var(name).filter(|v| !v.trim().is_empty()).map(|v| (name, v));
        let bad = |(name, v): (&str, String), why: String| Error::InvalidArgument(format!("{name}={v:?}: {why}"));
        fn number<T: FromStr>(v: &str) -> std::result::Result<T, String> {
            v.trim().parse().map_err(|_| "expected a whole number".to_owned())
        }
        if let Some((name, v)) = set("ZIPCOLL_COMPRESSION") {
            self.compression = v.parse().map_err(|e: Error| bad((name, v), reason(e)))?;
        }
        if let Some((name, v)) = set("ZIPCOLL_LOSSY") {
            self.lossy = v.parse().map_err(|e: Error| bad((name, v), reason(e)))?;
        }
        if let Some((name, v)) = set("ZIPCOLL_TRANSPORT") {
            self.transport = v.parse().map_err(|e: Error| bad((name, v), reason(e)))?;
        }
        if let Some(nv) = set("ZIPCOLL_BUFFER_BYTES") {
            self.buffer_bytes = crate::units::parse_size(&nv.1)
                .map_err(|e| format!("{}: {}", e.why, BUFFER_RANGE))
                .and_then(|b| check_buffer_bytes(b).map(|()| b))
                .map_err(|why| bad(nv, why))?;
        }
        if let Some(nv) = set("ZIPCOLL_CHANNELS") {
            self.channels = number(&nv.1)
                .map_err(|why| format!("{why}: {}", CHANNELS_RANGE))
                .and_then(|n| check_channels(n).map(|()| n))
                .map_err(|why| bad(nv, why))?;
        }
        if let Some(nv) = set("ZIPCOLL_CHANNEL_THREADS") {
            self.channel_threads = number(&nv.1)
                .map_err(|why| format!("{why}: {}", THREADS_RANGE))
                .and_then(|n| check_channel_threads(n).map(|()| n))
                .map_err(|why| bad(nv, why))?;
        }
        if let Some(nv) = set("ZIPCOLL_MAX_INFLIGHT") {
            self.max_inflight = number(&nv.1)
                .map_err(|why| format!("{why}: {}", INFLIGHT_RANGE))
                .and_then(|n| check_max_inflight(n).map(|()| n))
                .map_err(|why| bad(nv, why))?;
        }
        if let Some(nv) = set("ZIPCOLL_TIMEOUT_MS") {
            self.timeout = number(&nv.1)
                .map_err(|why| format!("{why}: {}", TIMEOUT_RANGE))
                .map(Duration::from_millis)
                .and_then(|t| check_timeout(t).map(|()| t))
                .map_err(|why| bad(nv, why))?;
        }
        let flag = |nv: (&'static str, String)| match nv.1.trim() {
            "1" => Ok(true),
            "0" => Ok(false),
            _ => Err(bad(nv, "expected 0 or 1".into())),
        };
        if let Some(nv) = set("ZIPCOLL_PROFILE") {
            self.profile = flag(nv)?;
        }
        if let Some(nv) = set("ZIPCOLL_VERIFY_P2P") {
            self.verify_p2p = flag(nv)?;
        }
        if let Some(nv) = set("ZIPCOLL_AUTO_CHECKS") {
            self.auto_checks = flag(nv)?;
        }
        if let Some(nv) = set("ZIPCOLL_CALIBRATION") {
            self.calibration =
                Some(Calibration::read(std::path::Path::new(nv.1.trim())).map_err(|e| bad(nv, reason(e)))?);
        }
        self.net = NetConfig::from_env_over(self.net)?;
        Ok(self)
    }

    /// Bytes of one slot: `buffer_bytes / NSLOTS`, rounded down to the slot alignment.
    pub fn slot_bytes(&self) -> u64 {
        self.buffer_bytes / NSLOTS / SLOT_ALIGN * SLOT_ALIGN
    }

    /// Checks the settings: a slot fits at least a header and a few elements and at most
    /// 1 GiB, 1..=256 channels, 1..=1024 calls in flight, a timeout of at least 1 ms. The
    /// error names the field, its environment variable and the accepted range.
    pub fn validate(&self) -> Result<()> {
        let field = |name: &str, value: String, var: &str, why: String| {
            Err(Error::InvalidArgument(format!(
                "Config::{name} = {value}: {why} ({var})"
            )))
        };
        self.lossy.validate()?;
        if let Err(why) = check_buffer_bytes(self.buffer_bytes) {
            return field(
                "buffer_bytes",
                self.buffer_bytes.to_string(),
                "ZIPCOLL_BUFFER_BYTES",
                why,
            );
        }
        if let Err(why) = check_channels(self.channels) {
            return field("channels", self.channels.to_string(), "ZIPCOLL_CHANNELS", why);
        }
        if let Err(why) = check_channel_threads(self.channel_threads) {
            return field(
                "channel_threads",
                self.channel_threads.to_string(),
                "ZIPCOLL_CHANNEL_THREADS",
                why,
            );
        }
        if let Err(why) = check_max_inflight(self.max_inflight) {
            return field(
                "max_inflight",
                self.max_inflight.to_string(),
                "ZIPCOLL_MAX_INFLIGHT",
                why,
            );
        }
        if let Err(why) = check_timeout(self.timeout) {
            return field("timeout", format!("{:?}", self.timeout), "ZIPCOLL_TIMEOUT_MS", why);
        }
        Ok(())
    }
}

/// The accepted FIFO sizes: 8 slots of 256 bytes (a header and a few elements) to 1 GiB.
const BUFFER_BYTES: std::ops::RangeInclusive<u64> = NSLOTS * 256..=NSLOTS << 30;
const BUFFER_RANGE: &str = "a FIFO's bytes must be in 2K..=8G (8 slots of 256 bytes to 1 GiB; K, M, G suffixes)";
/// The accepted channel counts.
const MAX_CHANNELS: usize = 256;
const CHANNELS_RANGE: &str = "channels must be in 1..=256";
/// The accepted threads per channel: whole warps, at most 512 (the block-channel kernel is
/// compiled for blocks of at most 512: `zipcoll-gpu-build`'s `LAUNCH_BOUNDS`).
const MAX_CHANNEL_THREADS: u32 = 512;
const THREADS_RANGE: &str = "channel threads must be a multiple of 32 in 32..=512";
/// The accepted numbers of calls in flight.
const MAX_INFLIGHT: usize = 1024;
const INFLIGHT_RANGE: &str = "calls in flight must be in 1..=1024";
const TIMEOUT_RANGE: &str = "the timeout must be at least 1 ms";

fn check_buffer_bytes(bytes: u64) -> std::result::Result<(), String> {
    match BUFFER_BYTES.contains(&bytes) {
        true => Ok(()),
        false => Err(BUFFER_RANGE.into()),
    }
}

fn check_channels(n: usize) -> std::result::Result<(), String> {
    match (1..=MAX_CHANNELS).contains(&n) {
        true => Ok(()),
        false => Err(CHANNELS_RANGE.into()),
    }
}

fn check_channel_threads(n: u32) -> std::result::Result<(), String> {
    match (32..=MAX_CHANNEL_THREADS).contains(&n) && n.is_multiple_of(32) {
        true => Ok(()),
        false => Err(THREADS_RANGE.into()),
    }
}

fn check_max_inflight(n: usize) -> std::result::Result<(), String> {
    match (1..=MAX_INFLIGHT).contains(&n) {
        true => Ok(()),
        false => Err(INFLIGHT_RANGE.into()),
    }
}

fn check_timeout(t: Duration) -> std::result::Result<(), String> {
    match t >= Duration::from_millis(1) {
        true => Ok(()),
        false => Err(TIMEOUT_RANGE.into()),
    }
}

/// An [`Error::InvalidArgument`]'s message (other errors in full).
fn reason(e: Error) -> String {
    match e {
        Error::InvalidArgument(m) => m,
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_names_parse() {
        assert_eq!("off".parse::<Compression>().unwrap(), Compression::Off);
        assert_eq!(
            "Auto".parse::<Compression>().unwrap(),
            Compression::Lossless(Lossless::Auto)
        );
        assert_eq!(
            "expans".parse::<Compression>().unwrap(),
            Compression::Lossless(Lossless::Force(CodecId::ExpAns))
        );
        assert!(matches!("zstd".parse::<Compression>(), Err(Error::InvalidArgument(_))));
        // every setting's name reads back as itself (forcing RAW is `raw`, which reads as off)
        let every = [Compression::Off, Compression::Lossless(Lossless::Auto)]
            .into_iter()
            .chain(
                CodecId::ALL[1..]
                    .iter()
                    .map(|&c| Compression::Lossless(Lossless::Force(c))),
            );
        for c in every {
            assert_eq!(c.to_string().parse::<Compression>().unwrap(), c, "{c}");
        }
        assert_eq!(
            Compression::Lossless(Lossless::Force(CodecId::ExpAns)).to_string(),
            "expans"
        );
        assert_eq!("NET".parse::<TransportKind>().unwrap(), TransportKind::Net);
        assert!("ib".parse::<TransportKind>().is_err());
    }

    #[test]
    fn validation_rejects_what_cannot_work() {
        assert!(Config::sim().validate().is_ok());
        assert!(Config::gpu().validate().is_ok());
        let tiny = Config {
            buffer_bytes: 1024,
            ..Config::sim()
        };
        assert!(tiny.validate().is_err());
        let none = Config {
            channels: 0,
            ..Config::sim()
        };
        assert!(none.validate().is_err());
        for bad in [0, 16, 48, 544] {
            let c = Config {
                channel_threads: bad,
                ..Config::gpu()
            };
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains("ZIPCOLL_CHANNEL_THREADS"), "{bad}: {e}");
        }
        for bad in [0, 1025] {
            let c = Config {
                max_inflight: bad,
                ..Config::gpu()
            };
            assert!(matches!(c.validate(), Err(Error::InvalidArgument(_))), "{bad}");
        }
        let one = Config {
            max_inflight: 1,
            ..Config::gpu()
        };
        assert!(one.validate().is_ok());
        assert_eq!(Config::gpu().slot_bytes(), 512 << 10);
        let slow = Config {
            timeout: Duration::from_micros(10),
            ..Config::sim()
        };
        let e = slow.validate().unwrap_err().to_string();
        assert!(e.contains("Config::timeout") && e.contains("ZIPCOLL_TIMEOUT_MS"), "{e}");
    }

    /// `Config::sim()` with the variables `vars`, the others unset.
    fn with(vars: &[(&str, &str)]) -> Result<Config> {
        let vars: Vec<(String, String)> = vars.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        Config::sim().with_vars(|name| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()))
    }

    /// The message of the error `vars` give.
    fn message(vars: &[(&str, &str)]) -> String {
        match with(vars) {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("{vars:?}: {other:?}"),
        }
    }

    #[test]
    fn variables_take_the_units_parser_and_their_ranges() {
        let c = with(&[
            ("ZIPCOLL_BUFFER_BYTES", "1M"),
            ("ZIPCOLL_CHANNELS", " 8 "),
            ("ZIPCOLL_MAX_INFLIGHT", "4"),
            ("ZIPCOLL_TIMEOUT_MS", "1500"),
            ("ZIPCOLL_COMPRESSION", "expans"),
            ("ZIPCOLL_TRANSPORT", "net"),
            ("ZIPCOLL_CHANNEL_THREADS", "512"),
            ("ZIPCOLL_PROFILE", "1"),
            ("ZIPCOLL_VERIFY_P2P", "1"),
            ("ZIPCOLL_AUTO_CHECKS", "1"),
        ])
        .unwrap();
        assert!(c.auto_checks && !Config::gpu().auto_checks);
        assert_eq!(c.channel_threads, 512);
        assert!(c.profile && !Config::gpu().profile);
        assert!(c.verify_p2p && !Config::gpu().verify_p2p);
        let e = with(&[("ZIPCOLL_PROFILE", "yes")]).unwrap_err().to_string();
        assert!(e.contains("ZIPCOLL_PROFILE=\"yes\": expected 0 or 1"), "{e}");
        let e = with(&[("ZIPCOLL_VERIFY_P2P", "on")]).unwrap_err().to_string();
        assert!(e.contains("ZIPCOLL_VERIFY_P2P=\"on\": expected 0 or 1"), "{e}");
        assert_eq!(
            (c.buffer_bytes, c.channels, c.max_inflight, c.timeout),
            (1 << 20, 8, 4, Duration::from_millis(1500))
        );
        assert_eq!(c.compression, Compression::Lossless(Lossless::Force(CodecId::ExpAns)));
        assert_eq!(c.transport, TransportKind::Net);
        assert_eq!(with(&[("ZIPCOLL_BUFFER_BYTES", "1GiB")]).unwrap().buffer_bytes, 1 << 30);
        assert_eq!(
            with(&[("ZIPCOLL_CHANNELS", "")]).unwrap().channels,
            Config::sim().channels
        );
    }

    #[test]
    fn bad_variables_name_themselves_and_the_accepted_form() {
        let cases: [(&str, &str, &str); 11] = [
            (
                "ZIPCOLL_CHANNEL_THREADS",
                "100",
                "ZIPCOLL_CHANNEL_THREADS=\"100\": channel threads must be a multiple of 32 in 32..=512",
            ),
            (
                "ZIPCOLL_CHANNELS",
                "0",
                "ZIPCOLL_CHANNELS=\"0\": channels must be in 1..=256",
            ),
            (
                "ZIPCOLL_CHANNELS",
                "257",
                "ZIPCOLL_CHANNELS=\"257\": channels must be in 1..=256",
            ),
            (
                "ZIPCOLL_CHANNELS",
                "two",
                "ZIPCOLL_CHANNELS=\"two\": expected a whole number: channels must be in 1..=256",
            ),
            (
                "ZIPCOLL_MAX_INFLIGHT",
                "0",
                "ZIPCOLL_MAX_INFLIGHT=\"0\": calls in flight must be in 1..=1024",
            ),
            (
                "ZIPCOLL_TIMEOUT_MS",
                "0",
                "ZIPCOLL_TIMEOUT_MS=\"0\": the timeout must be at least 1 ms",
            ),
            (
                "ZIPCOLL_TIMEOUT_MS",
                "1s",
                "ZIPCOLL_TIMEOUT_MS=\"1s\": expected a whole number",
            ),
            (
                "ZIPCOLL_BUFFER_BYTES",
                "1K",
                "ZIPCOLL_BUFFER_BYTES=\"1K\": a FIFO's bytes must be in 2K..=8G",
            ),
            (
                "ZIPCOLL_BUFFER_BYTES",
                "17179869184G",
                "ZIPCOLL_BUFFER_BYTES=\"17179869184G\": it does not fit 64 bits",
            ),
            (
                "ZIPCOLL_COMPRESSION",
                "zstd",
                "ZIPCOLL_COMPRESSION=\"zstd\": unknown compression",
            ),
            (
                "ZIPCOLL_TRANSPORT",
                "ib",
                "ZIPCOLL_TRANSPORT=\"ib\": unknown transport \"ib\": auto, p2p, net or sim",
            ),
        ];
        for (name, value, want) in cases {
            let m = message(&[(name, value)]);
            assert!(m.starts_with(want), "{name}={value}: {m}");
        }
    }
}
