//! Lossless compression of element buffers into streams of frames, on any backend, with the
//! frame codec of `zipcoll_device::codec`: the data is cut into frames of `frame_elems`
//! elements, one warp encodes or decodes each frame, and frames go back to back, each at a
//! 16-byte aligned offset ([`FRAME_ALIGN`]; the gaps are zero).
//!
//! | call              | does                                                                          |
//! |-------------------|-------------------------------------------------------------------------------|
//! | [`encode`]        | data -> [`Encoded`]: the stream plus each frame's offset and length            |
//! | [`decode`]        | [`Encoded`] -> data, every frame checked (header, payload, checksum)           |
//! | [`parse_stream`]  | stream bytes -> [`Encoded`], by walking and validating the frame headers        |
//! | [`decode_stream`] | [`parse_stream`] then [`decode`]: bytes from any backend decode on any other   |
//! | [`analysis`]      | the entropy bound, predicted sizes, Auto's pick and round-trip ratios of a tensor |
//!
//! | backend         | how                                                                          |
//! |-----------------|------------------------------------------------------------------------------|
//! | `Sim`, `Sim64`  | the generic kernels of `zipcoll_primitives::kernels::codec` on the simulator  |
//! | `Cuda`          | the manifest's entry points through [`cuda::CudaCodec`] (device buffers)      |
//! | `Hip`           | the manifest's entry points through the HIP runner                            |
//!
//! The encoders write each frame into a fixed-size slot ([`slot_bytes`]); the host copies the
//! slots back and packs them into the stream (a host-side copy: the frame lengths are only known
//! after the kernel). Frames are the same bytes on every backend and warp width, so a stream
//! encoded on a GPU decodes on the simulator and the other way round.
//!
//! Every failure is a typed [`Error`]: a frame the codec rejects is [`Error::Frame`] with its
//! index and [`FrameError`] (decoded from the kernels' status records, see
//! `zipcoll_primitives::kernels::codec`), a stream whose frames do not fit together is
//! [`Error::Stream`]. Nothing here panics on the bytes it is given.
//!
//! ```
//! use zipcoll_host::codec::{decode, decode_stream, encode};
//! use zipcoll_host::{testdata, Backend, CodecId, DType};
//! let data = testdata::elements(DType::Bf16, 3000, 1);
//! let enc = encode(Backend::Sim, DType::Bf16, Some(CodecId::FixedLen), &data, 1024)?;
//! assert_eq!(enc.nframes(), 3);
//! assert_eq!(decode(Backend::Sim, &enc)?, data);
//! assert_eq!(decode_stream(Backend::Sim64, DType::Bf16, &enc.bytes)?, data);
//! # Ok::<(), zipcoll_host::Error>(())
//! ```

pub mod analysis;
pub mod cuda;

use crate::backend::Backend;
use crate::dispatch::{dispatch_coded, dispatch_dtype, not_coded};
use crate::error::{Error, Result};
use crate::hip::{HipFunction, HipGpu};
use crate::launch::{Buf, Launch, Param};
use crate::sim;
use zipcoll_device::codec::{max_encoded_len, CodecId};
use zipcoll_device::dtype::DType;
use zipcoll_device::frame::{FrameError, FrameHeader, BLOCK_FRAME_VERSION, FRAME_VERSION, HEADER_BYTES};
use zipcoll_primitives::kernels::codec::{code, frame_error, ENCODE_FAILED, STATUS_WORDS};
use zipcoll_primitives::kernels::{DecodeFrames, EncodeFrames, EncodeRawFrames};

/// Frames start at multiples of this many bytes of a stream (and slots are multiples of it).
pub const FRAME_ALIGN: usize = 16;

/// The most bytes of data one frame may hold (its length must fit the header's `u32`s with room
/// to spare).
pub const MAX_FRAME_DATA_BYTES: usize = 1 << 30;

/// Threads per block of GPU codec launches: whole warps of 32 and of 64 lanes.
const GPU_BLOCK: u32 = 128;

/// Most blocks of a GPU codec launch; the kernels' warp-stride loops cover more frames.
pub(crate) const GPU_MAX_BLOCKS: usize = 1 << 20;

/// The reason a `Corrupt` error gets when the simulator does not reproduce what a GPU reported.
const UNREPRODUCED: &str = "reported by the device; the simulator decodes this frame differently";

/// What codes one frame: a warp (format version 1, the communication kernels' frames) or a
/// whole thread block (version 2, `zipcoll_device::codec::block_frame`: RAW and ExpAns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FrameUnit {
    /// One warp per frame.
    #[default]
    Warp,
    /// One thread block per frame.
    Block,
}

impl FrameUnit {
    /// The frame format version this unit writes.
    pub fn version(self) -> u8 {
        match self {
            FrameUnit::Warp => FRAME_VERSION,
            FrameUnit::Block => BLOCK_FRAME_VERSION,
        }
    }
    /// The unit that writes frames of `version`, if any.
    pub fn of_version(version: u8) -> Option<FrameUnit> {
        [FrameUnit::Warp, FrameUnit::Block]
            .into_iter()
            .find(|u| u.version() == version)
    }
    /// Whether this unit has a coder for `codec` (`None`: RAW).
    pub fn codes(self, codec: Option<CodecId>) -> bool {
        match self {
            FrameUnit::Warp => true,
            FrameUnit::Block => matches!(codec, None | Some(CodecId::Raw) | Some(CodecId::ExpAns)),
        }
    }
    /// `warp` or `block`.
    pub fn name(self) -> &'static str {
        match self {
            FrameUnit::Warp => "warp",
            FrameUnit::Block => "block",
        }
    }
}

/// A stream of frames and where each one is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The frames back to back, each starting at a [`FRAME_ALIGN`]-aligned offset (zero bytes
    /// in between; none after the last frame).
    pub bytes: Vec<u8>,
    /// Where each frame starts in `bytes`.
    pub frame_offsets: Vec<u64>,
    /// Each frame's length in bytes (header included).
    pub frame_lens: Vec<u32>,
    /// The elements' type.
    pub dtype: DType,
    /// The codec the frames were encoded with (`None`: RAW). A frame that would not get smaller
    /// is RAW whatever the codec; for a parsed stream, the codec of its first frame that is not
    /// RAW.
    pub codec: Option<CodecId>,
    /// Elements per frame; the last frame may hold fewer.
    pub frame_elems: usize,
    /// Elements in all.
    pub n: usize,
    /// What coded the frames (from their version).
    pub unit: FrameUnit,
}

impl Encoded {
    /// The number of frames.
    pub fn nframes(&self) -> usize {
        self.frame_lens.len()
    }

    /// Bytes of the data the frames hold.
    pub fn raw_bytes(&self) -> usize {
        self.n * self.dtype.size_bytes()
    }

    /// Bytes of all frames, headers included (the alignment gaps are not counted).
    pub fn encoded_bytes(&self) -> u64 {
        self.frame_lens.iter().map(|&l| u64::from(l)).sum()
    }

    /// [`Encoded::encoded_bytes`] over [`Encoded::raw_bytes`] (1.0 for no data).
    pub fn ratio(&self) -> f64 {
        match self.raw_bytes() {
            0 => 1.0,
            raw => self.encoded_bytes() as f64 / raw as f64,
        }
    }

    /// Frame `i`'s bytes, if it exists and lies inside `bytes`.
    pub fn frame(&self, i: usize) -> Option<&[u8]> {
        let start = usize::try_from(*self.frame_offsets.get(i)?).ok()?;
        let len = *self.frame_lens.get(i)? as usize;
        self.bytes.get(start..start.checked_add(len)?)
    }
}

/// Frame slots as the encoders write them: what the host packs into a stream.
pub(crate) struct Slots {
    /// `nframes * slot_bytes` bytes: frame `g` (or its status record) at `g * slot_bytes`.
    pub bytes: Vec<u8>,
    /// Per frame: its length, or `ENCODE_FAILED`.
    pub frame_bytes: Vec<u32>,
}

/// The number of whole `dtype` elements in `data`.
fn elements(dtype: DType, data: &[u8]) -> Result<usize> {
    let size = dtype.size_bytes();
    if !data.len().is_multiple_of(size) {
        return Err(Error::InvalidArgument(format!(
            "the data has {} bytes, not a whole number of {dtype:?} elements ({size} bytes each)",
            data.len()
        )));
    }
    Ok(data.len() / size)
}

/// Checks that the codecs are built for `dtype` ([`DType::coded`]): f64 and the 64-bit integers
/// move through the collectives uncompressed, and the frame codec API does not take them.
fn check_coded(dtype: DType) -> Result<()> {
    if dtype.coded() {
        Ok(())
    } else {
        Err(not_coded(dtype))
    }
}

/// Checks that frames of `frame_elems` elements of `dtype` can be encoded.
fn check_frame_elems(dtype: DType, frame_elems: usize) -> Result<()> {
    let bytes = frame_elems.checked_mul(dtype.size_bytes());
    if frame_elems == 0 || bytes.is_none_or(|b| b > MAX_FRAME_DATA_BYTES) {
        return Err(Error::InvalidArgument(format!(
            "frame_elems must be between 1 and {} for {dtype:?}, got {frame_elems}",
            MAX_FRAME_DATA_BYTES / dtype.size_bytes()
        )));
    }
    Ok(())
}

/// The size of an encoder's slot for frames of `frame_elems` elements of `dtype`: the frame
/// codec's `max_encoded_len`, rounded up to [`FRAME_ALIGN`].
pub fn slot_bytes(dtype: DType, frame_elems: usize) -> Result<usize> {
    check_frame_elems(dtype, frame_elems)?;
    let max = dispatch_dtype!(dtype, |T| max_encoded_len::<T>(frame_elems));
    Ok(max.next_multiple_of(FRAME_ALIGN))
}

/// The grid of a GPU codec launch over `nframes` frames on warps of `width` lanes.
fn gpu_grid(nframes: usize, width: u32) -> u32 {
    let warps_per_block = (GPU_BLOCK / width) as usize;
    // In range: clamped to GPU_MAX_BLOCKS, which fits a u32.
    nframes.div_ceil(warps_per_block).clamp(1, GPU_MAX_BLOCKS) as u32
}

/// Encodes `data` (little-endian `dtype` elements) into frames of `frame_elems` elements with
/// `codec` (`None` or `Some(CodecId::Raw)`: RAW frames) on `backend`.
///
/// Errors: [`Error::InvalidArgument`] for data that is not whole elements or a `frame_elems`
/// outside `1..=MAX_FRAME_DATA_BYTES / size`; [`Error::Frame`] if the codec rejects a frame;
/// the backend's errors.
pub fn encode(
    backend: Backend,
    dtype: DType,
    codec: Option<CodecId>,
    data: &[u8],
    frame_elems: usize,
) -> Result<Encoded> {
    encode_with(backend, FrameUnit::Warp, dtype, codec, data, frame_elems)
}

/// [`encode`] with frames coded by `unit`. Block frames run on CUDA and the simulator (32-lane
/// warps); a codec without a block coder, or another backend, is [`Error::InvalidArgument`].
pub fn encode_with(
    backend: Backend,
    unit: FrameUnit,
    dtype: DType,
    codec: Option<CodecId>,
    data: &[u8],
    frame_elems: usize,
) -> Result<Encoded> {
    let codec = codec.filter(|&c| c != CodecId::Raw);
    check_unit(unit, codec, backend)?;
    check_coded(dtype)?;
    let n = elements(dtype, data)?;
    let slot_bytes = slot_bytes(dtype, frame_elems)?;
    let slots = if n == 0 {
        Slots {
            bytes: Vec::new(),
            frame_bytes: Vec::new(),
        }
    } else {
        let id = codec.unwrap_or(CodecId::Raw);
        match (unit, backend) {
            (FrameUnit::Block, Backend::Cuda { ordinal }) => {
                cuda::CudaCodec::with_unit(ordinal, unit)?.encode_slots(dtype, codec, data, frame_elems, slot_bytes)?
            }
            (FrameUnit::Block, _) => dispatch_coded!(dtype, |T| sim::encode_block_frames::<T>(
                id,
                data,
                frame_elems,
                slot_bytes
            ))?,
            (_, Backend::Sim) => sim_encode::<32>(dtype, id, data, frame_elems, slot_bytes)?,
            (_, Backend::Sim64) => sim_encode::<64>(dtype, id, data, frame_elems, slot_bytes)?,
            (_, Backend::Cuda { ordinal }) => {
                cuda::CudaCodec::new(ordinal)?.encode_slots(dtype, codec, data, frame_elems, slot_bytes)?
            }
            (_, Backend::Hip { ordinal }) => hip_encode(ordinal, dtype, codec, data, n, frame_elems, slot_bytes)?,
        }
    };
    pack_slots(
        dtype,
        codec,
        n,
        frame_elems,
        slot_bytes,
        &slots.bytes,
        &slots.frame_bytes,
    )
}

/// Checks that `unit` can code `codec` on `backend`.
fn check_unit(unit: FrameUnit, codec: Option<CodecId>, backend: Backend) -> Result<()> {
    if !unit.codes(codec) {
        return Err(Error::InvalidArgument(format!(
            "{} has no block coder yet (block frames: raw, expans)",
            codec.map_or("raw", CodecId::name)
        )));
    }
    if unit == FrameUnit::Block && matches!(backend, Backend::Hip { .. } | Backend::Sim64) {
        return Err(Error::InvalidArgument(format!(
            "block frames run on CUDA and the 32-lane simulator, not on {backend:?}"
        )));
    }
    Ok(())
}

/// `encode_frames` / `encode_raw_frames` for (`dtype`, `id`) on the simulator with `W` lanes.
fn sim_encode<const W: u32>(
    dtype: DType,
    id: CodecId,
    data: &[u8],
    frame_elems: usize,
    slot_bytes: usize,
) -> Result<Slots> {
    dispatch_coded!(dtype, |T| sim::encode_frames::<W, T>(id, data, frame_elems, slot_bytes))
}

/// The encoders on a HIP device.
fn hip_encode(
    ordinal: usize,
    dtype: DType,
    codec: Option<CodecId>,
    data: &[u8],
    n: usize,
    frame_elems: usize,
    slot_bytes: usize,
) -> Result<Slots> {
    let gpu = HipGpu::get(ordinal)?;
    let f = match codec {
        Some(c) => gpu
            .registry()
            .function_codec::<EncodeFrames>(Some(dtype), None, Some(c))?,
        None => gpu.registry().function::<EncodeRawFrames>(Some(dtype), None)?,
    };
    let nframes = n.div_ceil(frame_elems);
    let bufs = [Buf::In(data), Buf::Out(nframes * slot_bytes), Buf::Out(nframes * 4)];
    let params = [
        Param::Buf(0),
        Param::U64(n as u64),
        Param::U64(frame_elems as u64),
        Param::Buf(1),
        Param::U64(slot_bytes as u64),
        Param::Buf(2),
    ];
    // SAFETY: every EncodeFrames and EncodeRawFrames entry point takes (input: *const Bits,
    // n: usize, frame_elems: usize, out: *mut u8, slot_bytes: usize, frame_bytes: *mut u32) after
    // the AMD geometry parameters, as `params` lists; `input` holds `n` elements of the dtype
    // whose entry point was looked up, `out` `nframes * slot_bytes` bytes and `frame_bytes`
    // `nframes` u32s, none overlapping; GPU_BLOCK is whole wavefronts.
    let (bytes, lens) = unsafe { hip_run_frames(&gpu, &f, nframes, &bufs, &params, "encode") }?;
    Ok(Slots {
        bytes,
        frame_bytes: u32s_from_le(&lens),
    })
}

/// Launches codec kernel `f` on a HIP device for `nframes` frames (one warp each, blocks of
/// [`GPU_BLOCK`] threads) with `bufs` and `params`; returns its two output buffers (`what` names
/// the launch in the error if it returned fewer).
///
/// # Safety
/// As [`HipGpu::run`]: `params` are, in order and exact type, the parameters of `f` after its
/// geometry parameters, and with this geometry the kernel accesses only the buffers it is
/// given, within their sizes.
unsafe fn hip_run_frames(
    gpu: &HipGpu,
    f: &HipFunction,
    nframes: usize,
    bufs: &[Buf<'_>],
    params: &[Param],
    what: &str,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let launch = Launch {
        grid_dim: gpu_grid(nframes, 64),
        block_dim: GPU_BLOCK,
        shared_bytes: 0,
        bufs,
        params,
    };
    // SAFETY: forwarded to the caller.
    let mut outputs = unsafe { gpu.run(f, &launch) }?.into_iter();
    match (outputs.next(), outputs.next()) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(Error::InvalidArgument(format!(
            "the {what} launch returned no output buffers"
        ))),
    }
}

/// Little-endian u32s.
fn u32s_from_le(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Little-endian bytes of u32s.
fn u32s_to_le(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Little-endian bytes of u64s.
fn u64s_to_le(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The error of status record `record` of `frame`, with `reason` for a `Corrupt` one.
fn record_error(frame: usize, record: [u32; STATUS_WORDS], reason: &'static str) -> Error {
    let [c, a, b, _] = record;
    match frame_error(c, a, b, reason) {
        Some(error) => Error::Frame { frame, error },
        None => Error::Stream {
            frame,
            reason: format!("the kernel wrote a status record no frame error has: {record:?}"),
        },
    }
}

/// Packs the slots an encoder wrote (`slots`: frame `g` at `g * slot_bytes`; `frame_bytes`: one
/// length per frame) for `n` elements of `dtype` in frames of `frame_elems` into a stream (see
/// [`Encoded`]).
///
/// Errors: [`Error::Frame`] for the first frame the encoder failed on (its status record, read
/// from its slot); [`Error::Stream`] when the lengths do not match the frames or the slots.
pub fn pack_slots(
    dtype: DType,
    codec: Option<CodecId>,
    n: usize,
    frame_elems: usize,
    slot_bytes: usize,
    slots: &[u8],
    frame_bytes: &[u32],
) -> Result<Encoded> {
    let nframes = if n == 0 {
        0
    } else {
        check_frame_elems(dtype, frame_elems)?;
        n.div_ceil(frame_elems)
    };
    let covered = nframes.checked_mul(slot_bytes).is_some_and(|b| b <= slots.len());
    if frame_bytes.len() != nframes || (slot_bytes == 0 && nframes > 0) || !covered {
        return Err(Error::Stream {
            frame: 0,
            reason: format!(
                "{} frame lengths and {} slot bytes for {nframes} frames in slots of {slot_bytes} bytes",
                frame_bytes.len(),
                slots.len()
            ),
        });
    }
    let mut bytes = Vec::new();
    let mut frame_offsets = Vec::with_capacity(nframes);
    let mut unit = None;
    for (g, (&len, slot)) in frame_bytes
        .iter()
        .zip(slots.chunks_exact(slot_bytes.max(1)))
        .enumerate()
    {
        if len == ENCODE_FAILED {
            let words = u32s_from_le(slot.get(..STATUS_WORDS * 4).unwrap_or(&[]));
            let record = <[u32; STATUS_WORDS]>::try_from(words.as_slice()).unwrap_or([ENCODE_FAILED; STATUS_WORDS]);
            return Err(record_error(g, record, ""));
        }
        let frame = slot.get(..len as usize).ok_or_else(|| Error::Stream {
            frame: g,
            reason: format!("the encoder reports {len} bytes in a slot of {slot_bytes}"),
        })?;
        // what coded the stream: the first frame's version (the decoder checks every frame's)
        if unit.is_none() {
            unit = frame.get(2).copied().and_then(FrameUnit::of_version);
        }
        bytes.resize(bytes.len().next_multiple_of(FRAME_ALIGN), 0);
        frame_offsets.push(bytes.len() as u64);
        bytes.extend_from_slice(frame);
    }
    Ok(Encoded {
        bytes,
        frame_offsets,
        frame_lens: frame_bytes.to_vec(),
        dtype,
        codec,
        frame_elems,
        n,
        unit: unit.unwrap_or_default(),
    })
}

/// Checks that `enc`'s frames fit together: counts, and every frame inside `bytes`.
fn check_layout(enc: &Encoded) -> Result<()> {
    let nframes = enc.frame_offsets.len();
    if enc.frame_lens.len() != nframes {
        return Err(Error::Stream {
            frame: nframes.min(enc.frame_lens.len()),
            reason: format!("{nframes} frame offsets but {} frame lengths", enc.frame_lens.len()),
        });
    }
    let expected = if enc.n == 0 {
        0
    } else {
        check_frame_elems(enc.dtype, enc.frame_elems)?;
        enc.n.div_ceil(enc.frame_elems)
    };
    if nframes != expected {
        return Err(Error::Stream {
            frame: nframes.min(expected),
            reason: format!(
                "{nframes} frames, but {} elements in frames of {} make {expected}",
                enc.n, enc.frame_elems
            ),
        });
    }
    if enc.n.checked_mul(enc.dtype.size_bytes()).is_none() {
        return Err(Error::InvalidArgument(format!(
            "{} elements do not fit in memory",
            enc.n
        )));
    }
    for g in 0..nframes {
        if enc.frame(g).is_none() {
            return Err(Error::Stream {
                frame: g,
                reason: format!(
                    "{} bytes at offset {} reach past the stream's {} bytes",
                    enc.frame_lens[g],
                    enc.frame_offsets[g],
                    enc.bytes.len()
                ),
            });
        }
    }
    Ok(())
}

/// Decodes every frame of `enc` on `backend`; returns the data (little-endian elements).
///
/// Errors: [`Error::Stream`] when the frames do not fit together (counts, a frame past the end
/// of `bytes`, a frame holding another number of elements than its place in the data);
/// [`Error::Frame`] for the first frame the codec rejects (with the exact [`FrameError`]); the
/// backend's errors.
pub fn decode(backend: Backend, enc: &Encoded) -> Result<Vec<u8>> {
    check_coded(enc.dtype)?;
    check_layout(enc)?;
    if enc.nframes() == 0 {
        return Ok(Vec::new());
    }
    check_unit(enc.unit, None, backend)?;
    let (data, status) = match (enc.unit, backend) {
        (FrameUnit::Block, Backend::Cuda { ordinal }) => {
            cuda::CudaCodec::with_unit(ordinal, FrameUnit::Block)?.decode_to_host(enc)?
        }
        (FrameUnit::Block, _) => dispatch_coded!(enc.dtype, |T| sim::decode_block_frames::<T>(
            &enc.bytes,
            &enc.frame_offsets,
            &enc.frame_lens,
            enc.frame_elems,
            enc.n
        ))?,
        (_, Backend::Sim) => sim_decode::<32>(enc)?,
        (_, Backend::Sim64) => sim_decode::<64>(enc)?,
        (_, Backend::Cuda { ordinal }) => cuda::CudaCodec::new(ordinal)?.decode_to_host(enc)?,
        (_, Backend::Hip { ordinal }) => hip_decode(ordinal, enc)?,
    };
    check_decode_status(enc, &status)?;
    Ok(data)
}

/// `decode_frames` for `enc.dtype` on the simulator with `W` lanes.
fn sim_decode<const W: u32>(enc: &Encoded) -> Result<(Vec<u8>, Vec<u32>)> {
    dispatch_coded!(enc.dtype, |T| sim::decode_frames::<W, T>(
        &enc.bytes,
        &enc.frame_offsets,
        &enc.frame_lens,
        enc.frame_elems,
        enc.n
    ))
}

/// `decode_frames` on a HIP device.
fn hip_decode(ordinal: usize, enc: &Encoded) -> Result<(Vec<u8>, Vec<u32>)> {
    let gpu = HipGpu::get(ordinal)?;
    let f = gpu.registry().function::<DecodeFrames>(Some(enc.dtype), None)?;
    let nframes = enc.nframes();
    let (offsets, lens) = (u64s_to_le(&enc.frame_offsets), u32s_to_le(&enc.frame_lens));
    let bufs = [
        Buf::In(&enc.bytes),
        Buf::In(&offsets),
        Buf::In(&lens),
        Buf::Out(enc.raw_bytes()),
        Buf::Out(nframes * STATUS_WORDS * 4),
    ];
    let params = [
        Param::Buf(0),
        Param::Buf(1),
        Param::Buf(2),
        Param::U64(nframes as u64),
        Param::Buf(3),
        Param::U64(enc.frame_elems as u64),
        Param::U64(enc.n as u64),
        Param::Buf(4),
    ];
    // SAFETY: every DecodeFrames entry point takes (frames: *const u8, frame_offsets: *const u64,
    // frame_lens: *const u32, nframes: usize, out: *mut Bits, frame_elems: usize, n: usize,
    // status: *mut u32) after the AMD geometry parameters, as `params` lists; `check_layout`
    // checked that every frame lies inside `bytes` and that there are `nframes` offsets and
    // lengths; `out` holds `n` elements and `status` `STATUS_WORDS * nframes` u32s, overlapping
    // nothing; GPU_BLOCK is whole wavefronts.
    let (data, status) = unsafe { hip_run_frames(&gpu, &f, nframes, &bufs, &params, "decode") }?;
    Ok((data, u32s_from_le(&status)))
}

/// Turns the status records that the decoder wrote for the frames of `enc` (`STATUS_WORDS` per
/// frame) into the first error, if any: [`Error::Frame`] for a rejected frame (the exact
/// [`FrameError`]: a `Corrupt` one gets its reason from decoding the frame again on the
/// simulator), [`Error::Stream`] for one that held another number of elements than its place
/// in the data. `enc`'s layout must be consistent (as [`decode`] checks it).
pub fn check_decode_status(enc: &Encoded, status: &[u32]) -> Result<()> {
    check_layout(enc)?;
    for g in 0..enc.nframes() {
        let record: [u32; STATUS_WORDS] = status
            .get(g * STATUS_WORDS..(g + 1) * STATUS_WORDS)
            .and_then(|r| r.try_into().ok())
            .ok_or_else(|| Error::Stream {
                frame: g,
                reason: format!("the decoder returned {} status words", status.len()),
            })?;
        let expected = enc.frame_elems.min(enc.n - g * enc.frame_elems);
        if record[0] != code::OK {
            let reason = if record[0] == code::CORRUPT {
                corrupt_reason(enc, g, expected)
            } else {
                ""
            };
            return Err(record_error(g, record, reason));
        }
        if record[3] as usize != expected {
            return Err(Error::Stream {
                frame: g,
                reason: format!("it holds {} elements, its place in the data {expected}", record[3]),
            });
        }
    }
    Ok(())
}

/// The reason of the `Corrupt` error that frame `g` of `enc` got: the frame decoded again on
/// the simulator, which says why (a status record cannot).
fn corrupt_reason(enc: &Encoded, g: usize, capacity: usize) -> &'static str {
    let Some(frame) = enc.frame(g) else {
        return UNREPRODUCED;
    };
    match decode_one(enc, frame, capacity) {
        Ok(Err(FrameError::Corrupt { reason, .. })) => reason,
        _ => UNREPRODUCED,
    }
}

/// Frame `frame` of `enc` decoded alone on the simulator.
fn decode_one(enc: &Encoded, frame: &[u8], capacity: usize) -> Result<std::result::Result<usize, FrameError>> {
    match enc.unit {
        FrameUnit::Warp => dispatch_coded!(enc.dtype, |T| sim::decode_one_frame::<32, T>(frame, capacity)),
        FrameUnit::Block => dispatch_coded!(enc.dtype, |T| sim::decode_one_block_frame::<T>(frame, capacity)),
    }
}

/// Reads a stream of `dtype` frames (as [`Encoded::bytes`] lays them out) by walking and
/// validating its frame headers ([`FrameHeader::parse`]): every frame holds `dtype` data, at
/// least one element, the same number of elements as the first frame (the last may hold
/// fewer). The frames' payloads are checked by [`decode`].
///
/// Errors: [`Error::Frame`] for a header that does not parse (with its [`FrameError`], e.g.
/// `Truncated` for a cut stream) or holds another dtype (`WrongDType`) or not whole elements
/// (`BadRawLength`); [`Error::Stream`] for frames of the wrong size.
pub fn parse_stream(dtype: DType, bytes: &[u8]) -> Result<Encoded> {
    let size = dtype.size_bytes();
    let mut frame_offsets = Vec::new();
    let mut frame_lens = Vec::new();
    let mut counts = Vec::new();
    let mut codec = None;
    let mut unit = None;
    let mut offset = 0usize;
    while offset < bytes.len() {
        let g = frame_lens.len();
        let reject = |error| Error::Frame { frame: g, error };
        // the first frame's version says what coded the stream; the others must agree
        let version = match unit {
            Some(u) => FrameUnit::version(u),
            None => bytes
                .get(offset + 2)
                .copied()
                .filter(|&v| FrameUnit::of_version(v).is_some())
                .unwrap_or(FRAME_VERSION),
        };
        let h = FrameHeader::parse_version(&bytes[offset..], version).map_err(reject)?;
        unit = FrameUnit::of_version(version);
        let frame_dtype = h
            .dtype_id()
            .ok_or(reject(FrameError::UnknownDType { found: h.dtype }))?;
        if frame_dtype != dtype {
            return Err(reject(FrameError::WrongDType {
                frame: frame_dtype,
                expected: dtype,
            }));
        }
        let raw_bytes = h.raw_bytes as usize;
        if !raw_bytes.is_multiple_of(size) || raw_bytes > MAX_FRAME_DATA_BYTES {
            return Err(reject(FrameError::BadRawLength {
                raw_bytes: h.raw_bytes,
                capacity: MAX_FRAME_DATA_BYTES,
            }));
        }
        if raw_bytes == 0 {
            return Err(Error::Stream {
                frame: g,
                reason: "it holds no elements (a stream's frames hold at least one)".into(),
            });
        }
        let len = HEADER_BYTES + h.payload_bytes as usize;
        let len32 = u32::try_from(len).map_err(|_| Error::Stream {
            frame: g,
            reason: format!("its {len} bytes do not fit a frame length"),
        })?;
        if codec.is_none() && h.codec_id() != Some(CodecId::Raw) {
            codec = h.codec_id();
        }
        frame_offsets.push(offset as u64);
        frame_lens.push(len32);
        counts.push(raw_bytes / size);
        // `parse` checked that the frame lies inside `bytes`, so this neither overflows nor
        // passes far beyond the end.
        offset = (offset + len).next_multiple_of(FRAME_ALIGN);
    }
    let frame_elems = counts.first().copied().unwrap_or(0);
    let last = counts.len().saturating_sub(1);
    for (g, &count) in counts.iter().enumerate() {
        if count > frame_elems || (g < last && count != frame_elems) {
            return Err(Error::Stream {
                frame: g,
                reason: format!(
                    "it holds {count} elements; a stream's frames hold as many as the first ({frame_elems}), the last \
                     at most as many"
                ),
            });
        }
    }
    Ok(Encoded {
        bytes: bytes.to_vec(),
        frame_offsets,
        frame_lens,
        dtype,
        codec,
        frame_elems,
        n: counts.iter().sum(),
        unit: unit.unwrap_or_default(),
    })
}

/// Decodes a stream of `dtype` frames (as [`Encoded::bytes`] lays them out, from any backend)
/// on `backend`: [`parse_stream`], then [`decode`].
pub fn decode_stream(backend: Backend, dtype: DType, bytes: &[u8]) -> Result<Vec<u8>> {
    decode(backend, &parse_stream(dtype, bytes)?)
}

/// A stream of small symbols coded by one symbol coder (what the lossy quantizers of
/// `zipcoll_device::lossy` produce): the coded section and what its decoder needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodedSymbols {
    /// The coder (not RAW).
    pub codec: CodecId,
    /// Symbols coded.
    pub n: usize,
    /// Bits per symbol (`1..=8`).
    pub bits: u32,
    /// The coder's parameters (a frame header's `params` and `params2`).
    pub params: (u16, u32),
    /// The coded section.
    pub bytes: Vec<u8>,
}

/// Codes `symbols` (each below `2^bits`, `bits` in `1..=8`) with `codec`'s symbol coder on the
/// simulator; `Ok(None)` when the coder gives up (its section would exceed its bound).
/// [`Error::InvalidArgument`] for RAW (no coder), bad `bits` or a symbol out of range.
pub fn encode_symbols(codec: CodecId, symbols: &[u8], bits: u32) -> Result<Option<CodedSymbols>> {
    if !(1..=8).contains(&bits) {
        return Err(Error::InvalidArgument(format!("symbols of {bits} bits (1..=8)")));
    }
    if let Some(s) = symbols.iter().find(|&&s| u32::from(s) >> bits != 0) {
        return Err(Error::InvalidArgument(format!("symbol {s} does not fit {bits} bits")));
    }
    Ok(sim::code_symbols(codec, symbols, bits)?.map(|(bytes, c)| CodedSymbols {
        codec,
        n: symbols.len(),
        bits,
        params: (c.params, c.params2),
        bytes,
    }))
}

/// The symbols of `coded`, decoded on the simulator; [`Error::Frame`] (frame 0) if the coder
/// rejects the section.
pub fn decode_symbols(coded: &CodedSymbols) -> Result<Vec<u8>> {
    sim::decode_symbols(coded.codec, &coded.bytes, coded.n, coded.bits, coded.params)?
        .map_err(|error| Error::Frame { frame: 0, error })
}
