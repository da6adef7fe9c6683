//! Link and coder rates measured on this machine (`zipcoll calibrate`), which Auto's cost model
//! then decides with in place of its presets (`ZIPCOLL_CALIBRATION=FILE`, [`Config::calibration`]).
//! The presets were measured on H200s over one loopback path; another GPU, NIC or channel count
//! moves the point where coding starts to pay.
//!
//! The file is TOML:
//!
//! ```toml
//! about = "zipcoll calibrate: 2 ranks over net, NVIDIA H100 80GB HBM3, 64 channels"
//! transport = "net"             # the transport it was measured on: net, p2p or sim
//! bandwidth_bytes_per_s = 6.1e9 # RAW send/recv: seconds = latency_s + bytes / bandwidth
//! latency_s = 3.2e-5
//!
//! [codecs.expans]               # one channel's rates (uncompressed bytes per second)
//! encode_bytes_per_s = 5.4e8
//! decode_bytes_per_s = 7.3e8
//! ```
//!
//! | measured                       | how (`zipcoll calibrate`)                                                      |
//! |--------------------------------|--------------------------------------------------------------------------------|
//! | bandwidth, latency             | RAW send/recv at two sizes: the line through the two times ([`fit_link`])     |
//! | a codec's channel rates        | that codec forced at the larger size: the rates (in the preset's encode / decode proportion) with which the pipeline model predicts the time measured ([`fit_channel_rates`]) |
//!
//! Every rank must load the same file (the bootstrap checks it with the rest of the
//! configuration): the size-only gate decides alike on every rank only if the model is alike.
//!
//! [`Config::calibration`]: super::Config::calibration

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use zipcoll_device::arbitrate::{CodecCost, TransportModel};
use zipcoll_device::codec::CodecId;

use super::config::TransportKind;

/// Rates measured on one transport (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// What measured it, for people reading the file.
    #[serde(default)]
    pub about: String,
    /// The transport measured: `net`, `p2p` or `sim`; a communicator on another uses its presets.
    pub transport: String,
    /// RAW send/recv's bytes per second.
    pub bandwidth_bytes_per_s: f64,
    /// RAW send/recv's seconds at any size.
    pub latency_s: f64,
    /// One channel's rates by codec name (`expans`, ...); codecs not named keep the presets'.
    #[serde(default)]
    pub codecs: BTreeMap<String, ChannelRates>,
}

/// One channel's coding rates, in uncompressed bytes per second.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelRates {
    pub encode_bytes_per_s: f64,
    pub decode_bytes_per_s: f64,
}

impl Calibration {
    /// The calibration in `path`, checked ([`Calibration::parse`]).
    pub fn read(path: &Path) -> Result<Calibration> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            what: format!("reading the calibration {}", path.display()),
            source,
        })?;
        Calibration::parse(&text).map_err(|e| Error::InvalidArgument(format!("{}: {e}", path.display())))
    }

    /// A calibration from its TOML text: every rate positive and finite, the latency finite and
    /// not negative, a known transport and codec names. The error says what is wrong.
    pub fn parse(text: &str) -> std::result::Result<Calibration, String> {
        let c: Calibration = toml::from_str(text).map_err(|e| e.to_string())?;
        c.check()?;
        Ok(c)
    }

    /// The TOML text of this calibration.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    fn check(&self) -> std::result::Result<(), String> {
        self.kind()?;
        let rate = |name: &str, v: f64| match v.is_finite() && v > 0.0 {
            true => Ok(()),
            false => Err(format!("{name} = {v}: must be a positive number")),
        };
        rate("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)?;
        if !(self.latency_s.is_finite() && self.latency_s >= 0.0) {
            return Err(format!("latency_s = {}: must be a number >= 0", self.latency_s));
        }
        for (name, r) in &self.codecs {
            let id = codec_named(name)?;
            if id == CodecId::Raw {
                return Err("codecs.raw: RAW has no coding rates".into());
            }
            rate(&format!("codecs.{name}.encode_bytes_per_s"), r.encode_bytes_per_s)?;
            rate(&format!("codecs.{name}.decode_bytes_per_s"), r.decode_bytes_per_s)?;
        }
        Ok(())
    }

    /// The transport it was measured on.
    pub fn kind(&self) -> std::result::Result<TransportKind, String> {
        match self.transport.parse() {
            Ok(TransportKind::Auto) | Err(_) => {
                Err(format!("transport = {:?}: must be net, p2p or sim", self.transport))
            }
            Ok(kind) => Ok(kind),
        }
    }

    /// `model` (a communicator's) with this calibration's bandwidth, latency and channel rates
    /// in place of its own: its coding channels (one pipeline where it has none) at the rates
    /// measured.
    pub fn apply(&self, model: TransportModel) -> TransportModel {
        let channels = model.coders.map_or(1, |c| c.channels);
        let mut one = model.coders.map_or(model.codecs, |c| c.one);
        for (name, r) in &self.codecs {
            if let Ok(id) = codec_named(name) {
                one[id as usize] = CodecCost {
                    fixed_s: one[id as usize].fixed_s,
                    enc_s_per_byte: (1.0 / r.encode_bytes_per_s) as f32,
                    dec_s_per_byte: (1.0 / r.decode_bytes_per_s) as f32,
                };
            }
        }
        TransportModel {
            bandwidth_bytes_per_s: self.bandwidth_bytes_per_s as f32,
            latency_s: self.latency_s as f32,
            ..model
        }
        .with_channel_rates(channels, one)
    }
}

fn codec_named(name: &str) -> std::result::Result<CodecId, String> {
    CodecId::ALL
        .into_iter()
        .find(|c| c.name() == name)
        .ok_or_else(|| format!("codecs.{name}: not a codec (fixedlen, expwindow, expans, huffman)"))
}

/// The bandwidth (bytes per second) and latency (seconds, at least 0) of the line through two
/// RAW timings `(bytes, seconds)`; `None` when the larger size was not slower.
pub fn fit_link(small: (u64, f64), large: (u64, f64)) -> Option<(f64, f64)> {
    let (db, dt) = (large.0 as f64 - small.0 as f64, large.1 - small.1);
    if db <= 0.0 || dt <= 0.0 {
        return None;
    }
    let bandwidth = db / dt;
    Some((bandwidth, (small.1 - small.0 as f64 / bandwidth).max(0.0)))
}

/// One channel's rates for `codec` with which `model` predicts `measured_s` for `raw_bytes`
/// sent as `wire_bytes` in frames of `frame_bytes`: `model`'s own channel rates for it scaled
/// by one factor (so in their encode / decode proportion), found by bisection over factors
/// 10^-8..10^8: the smallest that predicts no more than `measured_s`. Where the coders are
/// hidden behind the wire, faster rates predict the same time, and the fit gives the slowest
/// that explains it (a lower bound). A time the model cannot reach within the factors gives
/// the nearest end: faster than the model predicts at any coder speed, the fastest.
pub fn fit_channel_rates(
    model: TransportModel,
    codec: CodecId,
    raw_bytes: u64,
    wire_bytes: u64,
    frame_bytes: u64,
    measured_s: f64,
) -> ChannelRates {
    let channels = model.coders.map_or(1, |c| c.channels);
    let base = model.coders.map_or(model.codecs, |c| c.one)[codec as usize];
    let scaled = |k: f64| {
        let mut one = model.coders.map_or(model.codecs, |c| c.one);
        one[codec as usize] = CodecCost {
            fixed_s: base.fixed_s,
            enc_s_per_byte: (f64::from(base.enc_s_per_byte) / k) as f32,
            dec_s_per_byte: (f64::from(base.dec_s_per_byte) / k) as f32,
        };
        model.with_channel_rates(channels, one)
    };
    let predicted = |k: f64| f64::from(scaled(k).time_s(codec, raw_bytes, wire_bytes, frame_bytes));
    // log-space bisection: predicted(k) falls as k grows
    let (mut lo, mut hi) = (-8.0f64, 8.0f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        match predicted(10f64.powf(mid)) > measured_s {
            true => lo = mid,
            false => hi = mid,
        }
    }
    let k = 10f64.powf(hi);
    ChannelRates {
        encode_bytes_per_s: k / f64::from(base.enc_s_per_byte),
        decode_bytes_per_s: k / f64::from(base.dec_s_per_byte),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zipcoll_device::arbitrate::NET;

    fn example() -> Calibration {
        Calibration {
            about: "test".into(),
            transport: "net".into(),
            bandwidth_bytes_per_s: 6.1e9,
            latency_s: 3.2e-5,
            codecs: BTreeMap::from([(
                "expans".into(),
                ChannelRates {
                    encode_bytes_per_s: 5.4e8,
                    decode_bytes_per_s: 7.3e8,
                },
            )]),
        }
    }

    #[test]
    fn the_file_reads_back_and_bad_values_are_named() {
        let c = example();
        assert_eq!(Calibration::parse(&c.to_toml()), Ok(c.clone()));
        let with = |edit: &dyn Fn(&mut Calibration)| {
            let mut bad = c.clone();
            edit(&mut bad);
            Calibration::parse(&bad.to_toml()).unwrap_err()
        };
        assert!(with(&|b| b.bandwidth_bytes_per_s = 0.0).contains("bandwidth_bytes_per_s"));
        assert!(with(&|b| b.latency_s = -1.0).contains("latency_s"));
        assert!(with(&|b| b.transport = "ib".into()).contains("transport"));
        assert!(with(&|b| b.transport = "auto".into()).contains("transport"));
        let rates = c.codecs["expans"];
        assert!(with(&|b| {
            b.codecs.insert("zstd".into(), rates);
        })
        .contains("codecs.zstd"));
        assert!(with(&|b| {
            b.codecs.insert("raw".into(), rates);
        })
        .contains("RAW"));
        assert!(with(&|b| b.codecs.get_mut("expans").unwrap().decode_bytes_per_s = f64::NAN).contains("decode"));
        assert!(
            Calibration::parse("transport = \"net\"\nbandwidth_bytes_per_s = 1e9\nlatency_s = 0\nspeed = 3\n")
                .unwrap_err()
                .contains("speed")
        );
        assert!(Calibration::parse("not toml").is_err());
    }

    #[test]
    fn the_model_takes_the_measured_rates() {
        let c = example();
        let m = c.apply(NET.with_block_coders(64));
        assert_eq!((m.bandwidth_bytes_per_s, m.latency_s), (6.1e9, 3.2e-5));
        let coders = m.coders.unwrap();
        assert_eq!(coders.channels, 64);
        let expans = coders.one[CodecId::ExpAns as usize];
        assert!((1.0 / expans.enc_s_per_byte - 5.4e8).abs() < 1e3);
        assert!((1.0 / expans.dec_s_per_byte - 7.3e8).abs() < 1e3);
        // codecs not named keep the model's channel rates
        let before = NET.with_block_coders(64).coders.unwrap().one;
        assert_eq!(coders.one[CodecId::Huffman as usize], before[CodecId::Huffman as usize]);
    }

    #[test]
    fn fits_recover_the_rates_that_made_the_times() {
        assert_eq!(fit_link((1 << 20, 1e-3), (1 << 20, 2e-3)), None);
        let (b, l) = fit_link(
            (4 << 20, 30e-6 + (4 << 20) as f64 / 6e9),
            (64 << 20, 30e-6 + (64 << 20) as f64 / 6e9),
        )
        .unwrap();
        assert!((b / 6e9 - 1.0).abs() < 1e-6 && (l - 30e-6).abs() < 1e-9, "{b} {l}");
        // a model whose ExpAns channels run at 3x the preset's: the fit finds 3x (2 channels,
        // so that coding, not the wire, bounds the time)
        let model = NET.with_block_coders(2);
        let (raw, wire, frame) = (64u64 << 20, (64u64 << 20) * 2 / 3, 512u64 << 10);
        let truth = fit_target(model, 3.0);
        let measured = f64::from(truth.time_s(CodecId::ExpAns, raw, wire, frame));
        let fitted = fit_channel_rates(model, CodecId::ExpAns, raw, wire, frame, measured);
        let base = model.coders.unwrap().one[CodecId::ExpAns as usize];
        let k = fitted.encode_bytes_per_s * f64::from(base.enc_s_per_byte);
        assert!((k - 3.0).abs() < 0.01, "{k}");
        assert!((fitted.decode_bytes_per_s * f64::from(base.dec_s_per_byte) - k).abs() < 1e-6);
        // faster than any coder speed explains: the fastest
        let fastest = fit_channel_rates(model, CodecId::ExpAns, raw, wire, frame, 1e-9);
        assert!(fastest.encode_bytes_per_s * f64::from(base.enc_s_per_byte) > 9e7);
        // coding hidden behind the wire (64 channels): the slowest rates that explain the time
        let model = NET.with_block_coders(64);
        let measured = f64::from(fit_target(model, 3.0).time_s(CodecId::ExpAns, raw, wire, frame));
        let fitted = fit_channel_rates(model, CodecId::ExpAns, raw, wire, frame, measured);
        let k =
            fitted.encode_bytes_per_s * f64::from(model.coders.unwrap().one[CodecId::ExpAns as usize].enc_s_per_byte);
        assert!(k > 1.0 && k <= 3.0 + 1e-3, "{k}");
        let refit = fit_target(model, k as f32).time_s(CodecId::ExpAns, raw, wire, frame);
        assert!((f64::from(refit) / measured - 1.0).abs() < 1e-3, "{refit} {measured}");
    }

    /// `model` with its ExpAns channel rates times `k`.
    fn fit_target(model: TransportModel, k: f32) -> TransportModel {
        let mut one = model.coders.unwrap().one;
        let c = &mut one[CodecId::ExpAns as usize];
        c.enc_s_per_byte /= k;
        c.dec_s_per_byte /= k;
        model.with_channel_rates(model.coders.unwrap().channels, one)
    }
}
