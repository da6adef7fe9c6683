//! The cost model: what a batch costs to move over a transport, raw or coded.
//!
//! | item               | what it is                                                          |
//! |--------------------|---------------------------------------------------------------------|
//! | [`CodecCost`]      | one codec's fixed cost `a_c` and its encode/decode seconds per byte  |
//! | [`TransportModel`] | a link's effective bandwidth and latency, the cost of each codec on the whole GPU, and the channels that code a collective's frames |
//! | [`NVLINK`], [`NET`]| the presets (see the module docs of [`crate::arbitrate`] for their sources) |
//!
//! A coded batch crosses three stages, encode -> wire -> decode, and its frames are pipelined
//! through them: while frame `s` is on the wire, the sender encodes frame `s + 1` and the
//! receiver decodes frame `s - 1`. With `E_c`, `W_c`, `D_c` the seconds each stage takes for the
//! whole batch and `q` the part of the batch in the first frame of every pipeline (channel),
//!
//! `T_c = latency + a_c + (1 - q) * max(E_c, W_c, D_c) + q * (E_c + W_c + D_c)`
//!
//! the slowest stage's time plus the fill and drain of the other two. `W_c = P_c / B_eff` (`P_c`
//! the bytes put on the link), `E_c = l_enc * n` and `D_c = l_dec * n` with `n` the uncompressed
//! bytes (GB/s figures of codecs are quoted per uncompressed byte). A batch of one frame per
//! pipeline (`q = 1`) pays the three stages one after another; RAW has `a = E = D = 0` and pays
//! `latency + n / B_eff` whatever `q` is.
//!
//! | `q` | when |
//! |-----|------|
//! | `min(f, n / k) * k / n` | `k` pipelines (channels that have a frame: at most the batch's frames) and frames of `f` bytes |
//! | `f / n` | the presets: one pipeline, a codec kernel over the whole GPU |

use crate::codec::CodecId;

/// Number of codecs ([`CodecId::ALL`]): the length of per-codec tables.
pub const CODECS: usize = CodecId::ALL.len();

/// One codec's cost on a GPU, in seconds (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodecCost {
    /// `a_c`: fixed seconds per batch (table build, launch or pipeline fill).
    pub fixed_s: f32,
    /// `l_enc`: encode seconds per uncompressed byte (`1 / encode bandwidth`).
    pub enc_s_per_byte: f32,
    /// `l_dec`: decode seconds per uncompressed byte (`1 / decode bandwidth`).
    pub dec_s_per_byte: f32,
}

impl CodecCost {
    /// No cost at all: RAW.
    pub const FREE: CodecCost = CodecCost {
        fixed_s: 0.0,
        enc_s_per_byte: 0.0,
        dec_s_per_byte: 0.0,
    };

    /// A cost from encode and decode bandwidths in GB/s (10^9 uncompressed bytes per second).
    pub const fn from_gbps(fixed_s: f32, enc_gbps: f32, dec_gbps: f32) -> CodecCost {
        CodecCost {
            fixed_s,
            enc_s_per_byte: 1.0 / (enc_gbps * 1e9),
            dec_s_per_byte: 1.0 / (dec_gbps * 1e9),
        }
    }
}

/// A link and the cost of each codec when its batches cross it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransportModel {
    /// A short name for reports (`nvlink`, `net`).
    pub name: &'static str,
    /// `B_eff`: bytes per second a collective achieves on this link (bus bandwidth).
    pub bandwidth_bytes_per_s: f32,
    /// Seconds every transfer pays whatever its size.
    pub latency_s: f32,
    /// The cost of each codec coded by the whole GPU, indexed by `CodecId as usize`: the
    /// fastest any number of channels codes.
    pub codecs: [CodecCost; CODECS],
    /// The channels that code a collective's frames, each a pipeline of its own; `None`: one
    /// pipeline at [`TransportModel::codecs`]' rates (a codec kernel over the whole GPU).
    pub coders: Option<Coders>,
}

/// The channels of a collective that code its frames: how many, and one channel's cost of each
/// codec.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coders {
    /// Channels (at least 1).
    pub channels: u32,
    /// One channel's cost of each codec.
    pub one: [CodecCost; CODECS],
}

/// One batch's stages, in seconds (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Stages {
    /// `a_c`.
    fixed_s: f32,
    /// `E_c`.
    encode_s: f32,
    /// `D_c`.
    decode_s: f32,
    /// `q`: the part of the batch in the pipelines' first frames, in `(0, 1]`.
    first: f32,
}

impl Stages {
    /// The stages' time with `wire_s` on the wire: the slowest stage plus the others' fill,
    /// `(1 - q) k + q (e + w + d)` with `k` the slowest, computed as `k + q (e + w + d - k)`
    /// so that stages with nothing but the wire (RAW) take `w` exactly, whatever `q`.
    fn pipelined(&self, wire_s: f32) -> f32 {
        let (e, d, q) = (self.encode_s, self.decode_s, self.first);
        let k = e.max(wire_s).max(d);
        k + q * (e + wire_s + d - k)
    }

    /// The most wire seconds `w` with `pipelined(w) <= budget`; negative when there are none.
    /// `pipelined` is `(1 - q) k + q (e + d + w)` up to `w = k = max(e, d)` and `w + q (e + d)`
    /// from there.
    fn max_wire_s(&self, budget: f32) -> f32 {
        let (e, d, q) = (self.encode_s, self.decode_s, self.first);
        let k = e.max(d);
        let rest = budget - q * (e + d);
        if rest >= k {
            rest
        } else {
            (rest - (1.0 - q) * k) / q
        }
    }
}

impl TransportModel {
    /// The cost of `codec` on this link when every channel codes (the whole GPU's rate without
    /// [`TransportModel::coders`]).
    pub fn cost(&self, codec: CodecId) -> CodecCost {
        self.cost_with(codec, u32::MAX)
    }

    /// The cost of `codec` when `active` channels code: each codec encodes and decodes at most
    /// `active` times one channel's rate, and never faster than the whole GPU.
    fn cost_with(&self, codec: CodecId, active: u32) -> CodecCost {
        let all = self.codecs[codec as usize];
        match self.coders {
            None => all,
            Some(coders) => {
                let one = coders.one[codec as usize];
                let k = active.clamp(1, coders.channels.max(1)) as f32;
                CodecCost {
                    fixed_s: all.fixed_s,
                    enc_s_per_byte: all.enc_s_per_byte.max(one.enc_s_per_byte / k),
                    dec_s_per_byte: all.dec_s_per_byte.max(one.dec_s_per_byte / k),
                }
            }
        }
    }

    /// The stages of `codec` for `raw_bytes` in frames of `frame_bytes` (0: one frame).
    fn stages(&self, codec: CodecId, raw_bytes: u64, frame_bytes: u64) -> Stages {
        let frame = match frame_bytes {
            0 => raw_bytes,
            f => f.min(raw_bytes),
        }
        .max(1);
        let frames = raw_bytes.div_ceil(frame).max(1);
        let pipelines = match self.coders {
            None => 1,
            Some(coders) => frames.min(coders.channels.max(1) as u64) as u32,
        };
        let c = self.cost_with(codec, pipelines);
        let raw = raw_bytes as f32;
        let first = match raw_bytes {
            0 => 1.0,
            _ => ((frame as f32).min(raw / pipelines as f32) * pipelines as f32 / raw).min(1.0),
        };
        Stages {
            fixed_s: c.fixed_s,
            encode_s: c.enc_s_per_byte * raw,
            decode_s: c.dec_s_per_byte * raw,
            first,
        }
    }

    /// Predicted seconds to move `raw_bytes` of data as `wire_bytes` coded with `codec`, in
    /// frames of `frame_bytes` uncompressed bytes (0: one frame).
    pub fn time_s(&self, codec: CodecId, raw_bytes: u64, wire_bytes: u64, frame_bytes: u64) -> f32 {
        let s = self.stages(codec, raw_bytes, frame_bytes);
        self.latency_s + s.fixed_s + s.pipelined(wire_bytes as f32 / self.bandwidth_bytes_per_s)
    }

    /// Predicted seconds to move `raw_bytes` as they are.
    pub fn raw_time_s(&self, raw_bytes: u64) -> f32 {
        self.time_s(CodecId::Raw, raw_bytes, raw_bytes, 0)
    }

    /// The most bytes `codec` may put on the link for `raw_bytes` in frames of `frame_bytes`
    /// and take at most `budget_s` seconds (0 if none).
    pub fn max_wire_bytes(&self, codec: CodecId, raw_bytes: u64, frame_bytes: u64, budget_s: f32) -> u64 {
        let s = self.stages(codec, raw_bytes, frame_bytes);
        let wire_s = s.max_wire_s(budget_s - self.latency_s - s.fixed_s);
        // `as` saturates: a negative time is 0 bytes
        (wire_s * self.bandwidth_bytes_per_s) as u64
    }

    /// This link as a collective that codes with `warps` one-warp channels sees it: each a
    /// pipeline at one warp's rate ([`H200_WARP_CODECS`]), together never faster than the
    /// whole GPU (the preset's rate). A collective with few channels codes far slower than a
    /// whole-GPU codec kernel, and a model that ignored that would choose codecs that make the
    /// collective slower than RAW.
    pub fn with_coders(self, warps: u32) -> TransportModel {
        self.with_channel_rates(warps, H200_WARP_CODECS)
    }

    /// This link as a collective whose `blocks` channels are thread blocks sees it: as
    /// [`TransportModel::with_coders`] with one block channel's rates
    /// ([`H200_BLOCK_CHANNEL_CODECS`]: a codec with a block coder codes with the whole block,
    /// the others with its first warp).
    pub fn with_block_coders(self, blocks: u32) -> TransportModel {
        self.with_channel_rates(blocks, H200_BLOCK_CHANNEL_CODECS)
    }

    /// This link coded by `channels` channels of cost `one` each.
    pub fn with_channel_rates(self, channels: u32, one: [CodecCost; CODECS]) -> TransportModel {
        TransportModel {
            coders: Some(Coders {
                channels: channels.max(1),
                one,
            }),
            ..self
        }
    }

    /// This link with its bandwidth capped at `bytes_per_s` (a rate-limited NIC).
    pub fn with_bandwidth_cap(self, bytes_per_s: f32) -> TransportModel {
        TransportModel {
            bandwidth_bytes_per_s: self.bandwidth_bytes_per_s.min(bytes_per_s),
            ..self
        }
    }
}

/// Codec costs on an H200, shared by both presets: each codec's encode / decode GB/s of
/// uncompressed bytes, measured 2026-11-30 on one H200 with `zipcoll-bench codec --sizes 256M
/// --dtype bf16` (BENCHMARKS.md): bf16 N(0,1), 256 MiB, frames of 8192 elements, median of 20
/// runs after 3 warm-up runs. FixedLen 127 / 123, ExpWindow 99 / 125, ExpAns 55 / 103, Huffman
/// 38 / 107 GB/s. RAW stays free: a RAW batch is sent as it is, not framed (RAW frames, a copy
/// with headers, ran at 670 / 304 GB/s). The same run on f32 (fixedlen 237 / 183, expwindow
/// 171 / 182, expans 85 / 163, huffman 70 / 164 GB/s) is faster per byte, an f32 holding one
/// symbol in 4 bytes against bf16's one in 2, so the bf16 costs are on the safe side for f32.
/// `a_c` = 2 us is still a placeholder: a guess at a per-batch table build and pipeline fill.
const H200_CODECS: [CodecCost; CODECS] = [
    CodecCost::FREE,
    CodecCost::from_gbps(2e-6, 127.0, 123.0),
    CodecCost::from_gbps(2e-6, 99.0, 125.0),
    CodecCost::from_gbps(2e-6, 55.0, 103.0),
    CodecCost::from_gbps(2e-6, 38.0, 107.0),
];

/// One warp's codec rates on an H200: the encode / decode GB/s of each codec at 1 MiB in the
/// same run as [`H200_CODECS`] (64 frames of 8192 bf16 elements, one warp each, too few to
/// fill the GPU: FixedLen 4.4 / 5.5, ExpWindow 4.6 / 5.7, ExpAns 3.4 / 4.4, Huffman 2.4 / 5.0
/// GB/s), divided by the 64 warps. RAW stays free (its frames are written by the primitives'
/// vectorized copy, not by a codec).
const H200_WARP_CODECS: [CodecCost; CODECS] = [
    CodecCost::FREE,
    CodecCost::from_gbps(0.0, 4.4 / 64.0, 5.5 / 64.0),
    CodecCost::from_gbps(0.0, 4.6 / 64.0, 5.7 / 64.0),
    CodecCost::from_gbps(0.0, 3.4 / 64.0, 4.4 / 64.0),
    CodecCost::from_gbps(0.0, 2.4 / 64.0, 5.0 / 64.0),
];

/// ExpAns's encode and decode GB/s in one block channel of an H200: a CTA's rate with frames of
/// 262144 bf16 elements (512 KiB, a NET slot), measured on 2026-12-04 with `zipcoll-bench codec
/// --codec expans --unit block --dtype bf16 --sizes 16M --frame-elems 262144` (32 CTAs of 128
/// threads, one frame each: 0.68 / 0.92 GB/s per CTA; BENCHMARKS.md, "channels that code are
/// thread blocks"). With them and [`NET`]'s bandwidth the pipeline model predicts ExpAns
/// send/recv over NET at 1.32x RAW for 64 MiB and 1.45x for 256 MiB (64 channels, frames of
/// 512 KiB, wire ratio 0.6656); on 2026-12-05 one H200 ran them at 1.28x and 1.54x (BENCHMARKS.md,
/// "RAW over NET staged").
const EXPANS_BLOCK_ENC: f32 = 0.68;
const EXPANS_BLOCK_DEC: f32 = 0.92;

/// One block channel's codec rates on an H200 (a channel of the coding block-channel kernel):
/// ExpAns, which has a block coder, at [`EXPANS_BLOCK_ENC`] / [`EXPANS_BLOCK_DEC`]; the other
/// codecs are coded by the block's first warp, at one warp's rates ([`H200_WARP_CODECS`]).
const H200_BLOCK_CHANNEL_CODECS: [CodecCost; CODECS] = [
    CodecCost::FREE,
    H200_WARP_CODECS[1],
    H200_WARP_CODECS[2],
    CodecCost::from_gbps(0.0, EXPANS_BLOCK_ENC, EXPANS_BLOCK_DEC),
    H200_WARP_CODECS[4],
];

/// NVLink between two H200s (NV18): 327 GB/s, the busbw NCCL 2.28.9's all_reduce of 1 GiB of
/// bf16 reached on 2026-11-30 (peer copies reached 394 GB/s); latency 3 us is a placeholder.
pub const NVLINK: TransportModel = TransportModel {
    name: "nvlink",
    bandwidth_bytes_per_s: 327e9,
    latency_s: 3e-6,
    codecs: H200_CODECS,
    coders: None,
};

/// The network path, measured as NCCL's socket transport between the two GPUs of one host over
/// loopback: 4.6 GB/s, NCCL send/recv of 1 GiB with default settings on 2026-11-30 (5.3 GB/s on
/// another machine; all_reduce busbw 3.7-10.2 GB/s); latency 20 us is a placeholder.
pub const NET: TransportModel = TransportModel {
    name: "net",
    bandwidth_bytes_per_s: 4.6e9,
    latency_s: 20e-6,
    codecs: H200_CODECS,
    coders: None,
};
