//! The break-even cost model: what a batch costs to move over a transport, raw or coded.
//!
//! | item               | what it is                                                          |
//! |--------------------|---------------------------------------------------------------------|
//! | [`CodecCost`]      | one codec's fixed cost `a_c` and its encode/decode seconds per byte  |
//! | [`TransportModel`] | a link's effective bandwidth and latency, and the cost of each codec |
//! | [`NVLINK`], [`NET`]| the presets (see the module docs of [`crate::arbitrate`] for their sources) |
//!
//! `T_c = latency + a_c + P_c / B_eff + l_enc * E_c + l_dec * D_c`, with `P_c` the bytes put on
//! the link and `E_c = D_c` the uncompressed bytes the encoder reads and the decoder writes
//! (GB/s figures of codecs are quoted per uncompressed byte). RAW has `a = l_enc = l_dec = 0`.

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
    /// The cost of each codec, indexed by `CodecId as usize`.
    pub codecs: [CodecCost; CODECS],
}

impl TransportModel {
    /// The cost of `codec` on this link.
    pub fn cost(&self, codec: CodecId) -> CodecCost {
        self.codecs[codec as usize]
    }

    /// Predicted seconds to move `raw_bytes` of data as `wire_bytes` coded with `codec`.
    pub fn time_s(&self, codec: CodecId, raw_bytes: u64, wire_bytes: u64) -> f32 {
        let c = self.cost(codec);
        let raw = raw_bytes as f32;
        self.latency_s
            + c.fixed_s
            + wire_bytes as f32 / self.bandwidth_bytes_per_s
            + c.enc_s_per_byte * raw
            + c.dec_s_per_byte * raw
    }

    /// Predicted seconds to move `raw_bytes` as they are.
    pub fn raw_time_s(&self, raw_bytes: u64) -> f32 {
        self.time_s(CodecId::Raw, raw_bytes, raw_bytes)
    }

    /// This link as a collective that codes with `warps` warps sees it: each codec encodes and
    /// decodes at most `warps` times its one-warp rate ([`H200_WARP_CODECS`]), and never faster
    /// than the whole GPU (the preset's rate). A collective with few channels codes far slower
    /// than a whole-GPU codec kernel, and a model that ignored that would choose codecs that
    /// make the collective slower than RAW.
    pub fn with_coders(self, warps: u32) -> TransportModel {
        self.with_channel_rates(warps, &H200_WARP_CODECS)
    }

    /// This link as a collective whose `blocks` channels are thread blocks sees it: as
    /// [`TransportModel::with_coders`] with one block channel's rates
    /// ([`H200_BLOCK_CHANNEL_CODECS`]: a codec with a block coder codes with the whole block,
    /// the others with its first warp).
    pub fn with_block_coders(self, blocks: u32) -> TransportModel {
        self.with_channel_rates(blocks, &H200_BLOCK_CHANNEL_CODECS)
    }

    /// Each codec at most `channels` times `one`'s rate, and never faster than the preset's.
    fn with_channel_rates(self, channels: u32, one: &[CodecCost; CODECS]) -> TransportModel {
        let channels = channels.max(1) as f32;
        let mut codecs = self.codecs;
        for (c, one) in codecs.iter_mut().zip(one) {
            c.enc_s_per_byte = c.enc_s_per_byte.max(one.enc_s_per_byte / channels);
            c.dec_s_per_byte = c.dec_s_per_byte.max(one.dec_s_per_byte / channels);
        }
        TransportModel { codecs, ..self }
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

/// ExpAns's encode and decode GB/s in one block channel of an H200 as a collective over NET
/// sees them (see [`H200_BLOCK_CHANNEL_CODECS`]), from the least favourable collective measured
/// on 2026-12-04 with frames coded in device memory (BENCHMARKS.md, "NET frames coded in
/// device memory"; 2 ranks on one H200, 64 channels, bf16 N(0,1), no rate limit): send/recv of
/// 256 MiB with ExpAns forced ran at 0.87x RAW (6.22 against 7.14 GB/s), while all_gather ran
/// at 1.11x and all_reduce at 2.05x. This additive model, with [`NET`]'s bandwidth, predicts
/// 0.87x when coding costs about 105 ps per byte at 64 channels, so encode and decode are set
/// to half of that each: 0.3 GB/s per channel. The same block coder in a CTA of its own codes
/// 0.7 / 0.9 GB/s. With these rates Auto sends RAW on the unlimited NET link (it cannot tell
/// send/recv from all_reduce) and ExpAns under a 500 MB/s limit (where every collective ran at
/// 1.49-1.52x RAW).
const EXPANS_BLOCK_ENC: f32 = 0.3;
const EXPANS_BLOCK_DEC: f32 = 0.3;

/// One block channel's codec rates on an H200 (a channel of the coding block-channel kernel,
/// 256 threads): ExpAns, which has a block coder, at [`EXPANS_BLOCK_ENC`] /
/// [`EXPANS_BLOCK_DEC`]; the other codecs are coded by the block's first warp, at
/// [`H200_WARP_CODECS`]' rates slowed by [`NET_SLOWDOWN`], the factor between ExpAns's rate in
/// a channel over NET and in a CTA of its own (their own rate in a block channel over NET was
/// not measured).
const H200_BLOCK_CHANNEL_CODECS: [CodecCost; CODECS] = [
    CodecCost::FREE,
    slowed(H200_WARP_CODECS[1]),
    slowed(H200_WARP_CODECS[2]),
    CodecCost::from_gbps(0.0, EXPANS_BLOCK_ENC, EXPANS_BLOCK_DEC),
    slowed(H200_WARP_CODECS[4]),
];

/// ExpAns's CTA rate (0.7 / 0.9 GB/s, the mean 0.8) over its rate in a channel over NET.
const NET_SLOWDOWN: f32 = 0.8 / EXPANS_BLOCK_ENC;

/// `c` with its coding [`NET_SLOWDOWN`] times slower.
const fn slowed(c: CodecCost) -> CodecCost {
    CodecCost {
        fixed_s: c.fixed_s,
        enc_s_per_byte: c.enc_s_per_byte * NET_SLOWDOWN,
        dec_s_per_byte: c.dec_s_per_byte * NET_SLOWDOWN,
    }
}

/// NVLink between two H200s (NV18): 327 GB/s, the busbw NCCL 2.28.9's all_reduce of 1 GiB of
/// bf16 reached on 2026-11-30 (peer copies reached 394 GB/s); latency 3 us is a placeholder.
pub const NVLINK: TransportModel = TransportModel {
    name: "nvlink",
    bandwidth_bytes_per_s: 327e9,
    latency_s: 3e-6,
    codecs: H200_CODECS,
};

/// The network path, measured as NCCL's socket transport between the two GPUs of one host over
/// loopback: 4.6 GB/s, NCCL send/recv of 1 GiB with default settings on 2026-11-30 (5.3 GB/s on
/// another machine; all_reduce busbw 3.7-10.2 GB/s); latency 20 us is a placeholder.
pub const NET: TransportModel = TransportModel {
    name: "net",
    bandwidth_bytes_per_s: 4.6e9,
    latency_s: 20e-6,
    codecs: H200_CODECS,
};
