//! A communicator's settings: compression policy, transport choice, FIFO geometry, parallelism,
//! calls in flight and timeout, each with a default and an environment variable that overrides
//! it.
//!
//! | field          | default (GPU / simulator)  | environment variable        | meaning                                   |
//! |----------------|----------------------------|-----------------------------|-------------------------------------------|
//! | `compression`  | `Lossless(Auto)`           | `ZIPCOLL_COMPRESSION`       | `off`, `auto`, or a codec name (`expans`, ...) |
//! | `transport`    | `Auto`                     | `ZIPCOLL_TRANSPORT`         | `auto`, `p2p`, `net` (`sim` for the simulator's in-process FIFOs) |
//! | `buffer_bytes` | 4 MiB / 64 KiB             | `ZIPCOLL_BUFFER_BYTES`      | bytes of one FIFO (8 slots)               |
//! | `channels`     | 64 / 2                     | `ZIPCOLL_CHANNELS`          | warps (each with its own FIFOs) per collective and peer |
//! | `max_inflight` | 16                         | `ZIPCOLL_MAX_INFLIGHT`      | calls enqueued and not finished (1..=1024; a GPU's call slots) |
//! | `timeout`      | 60 s / 20 s                | `ZIPCOLL_TIMEOUT_MS`        | how long any wait for a peer may last     |
//! | `net`          | [`NetConfig::default`]     | `ZIPCOLL_NET_SOCKETS`, `ZIPCOLL_NET_RATE_LIMIT` | sockets per peer, an optional rate limit |
//!
//! Memory: each rank holds, per peer and channel, one FIFO (`buffer_bytes`) and two staging
//! buffers of a slot each: `(nranks - 1) x channels x buffer_bytes + nranks x channels x 2 x
//! buffer_bytes / 8`, in device memory for P2P and in pinned host memory for NET (about 2.3 GB
//! per rank for 8 ranks with the GPU defaults). Bandwidth grows with `channels` (one warp each;
//! BENCHMARKS.md has a sweep on 2 H200s: 256 channels move about 3x what 64 do).

use crate::error::{Error, Result};
use crate::transport::net::NetConfig;
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
    /// (RAW where no codec pays off, e.g. on NVLink).
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
    /// The transport.
    pub transport: TransportKind,
    /// Bytes of one FIFO: `NSLOTS` slots.
    pub buffer_bytes: u64,
    /// Warps per collective (per peer for send/recv), each with its own FIFOs.
    pub channels: usize,
    /// Calls that may be in flight at once (on a GPU, each has a slot with its own scratch,
    /// status records and event); a call beyond them first waits for the oldest.
    pub max_inflight: usize,
    /// The longest any wait for a peer may last.
    pub timeout: Duration,
    /// The NET transport's settings.
    pub net: NetConfig,
}

impl Config {
    /// The defaults for a GPU backend.
    pub fn gpu() -> Config {
        Config {
            compression: Compression::Lossless(Lossless::Auto),
            transport: TransportKind::Auto,
            buffer_bytes: 4 << 20,
            channels: 64,
            max_inflight: 16,
            timeout: Duration::from_secs(60),
            net: NetConfig::default(),
        }
    }

    /// The defaults for the simulator: small FIFOs (frames of a few thousand elements, so tests
    /// cross many frames) and two channels.
    pub fn sim() -> Config {
        Config {
            buffer_bytes: 64 << 10,
            channels: 2,
            timeout: Duration::from_secs(20),
            ..Config::gpu()
        }
    }

    /// These settings with every environment variable of the module table that is set applied.
    pub fn with_env(mut self) -> Result<Config> {
        fn var<T: FromStr>(name: &str) -> Result<Option<T>> {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| Error::InvalidArgument(format!("{name}={v:?} cannot be parsed"))),
                Err(_) => Ok(None),
            }
        }
        if let Some(v) = var::<String>("ZIPCOLL_COMPRESSION")? {
            self.compression = v.parse()?;
        }
        if let Some(v) = var::<String>("ZIPCOLL_TRANSPORT")? {
            self.transport = v.parse()?;
        }
        if let Some(v) = var("ZIPCOLL_BUFFER_BYTES")? {
            self.buffer_bytes = v;
        }
        if let Some(v) = var("ZIPCOLL_CHANNELS")? {
            self.channels = v;
        }
        if let Some(v) = var("ZIPCOLL_MAX_INFLIGHT")? {
            self.max_inflight = v;
        }
        if let Some(v) = var("ZIPCOLL_TIMEOUT_MS")? {
            self.timeout = Duration::from_millis(v);
        }
        self.net = NetConfig::from_env_over(self.net)?;
        Ok(self)
    }

    /// Bytes of one slot: `buffer_bytes / NSLOTS`, rounded down to the slot alignment.
    pub fn slot_bytes(&self) -> u64 {
        self.buffer_bytes / NSLOTS / SLOT_ALIGN * SLOT_ALIGN
    }

    /// Checks the settings: a slot fits at least a header and a few elements, at least one
    /// channel, at least one call in flight, a nonzero timeout.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if self.slot_bytes() < 256 {
            return bad(format!(
                "buffer_bytes {} leaves slots under 256 bytes",
                self.buffer_bytes
            ));
        }
        if self.slot_bytes() > 1 << 30 {
            return bad(format!("buffer_bytes {} makes slots over 1 GiB", self.buffer_bytes));
        }
        if self.channels == 0 || self.channels > 256 {
            return bad(format!("channels {} is not in 1..=256", self.channels));
        }
        if self.max_inflight == 0 || self.max_inflight > 1024 {
            return bad(format!("max_inflight {} is not in 1..=1024", self.max_inflight));
        }
        if self.timeout.is_zero() {
            return bad("timeout is zero".into());
        }
        Ok(())
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
    }
}
