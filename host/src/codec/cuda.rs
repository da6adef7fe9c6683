//! The codec kernels on a CUDA device with the buffers kept on the device: what
//! [`super::encode`] and [`super::decode`] use for [`crate::Backend::Cuda`], and what benchmarks
//! time (launches are asynchronous on the device's stream; [`CudaCodec::synchronize`] waits).
//!
//! | call                         | launches                        | checks before launching                             |
//! |------------------------------|---------------------------------|-----------------------------------------------------|
//! | [`CudaCodec::launch_encode`] | `encode_frames` / `encode_raw_frames` | input holds `n` elements; slots and lengths hold every frame |
//! | [`CudaCodec::upload_index`]  | nothing (two uploads)           | every frame lies inside the stream                   |
//! | [`CudaCodec::launch_decode`] | `decode_frames`                 | the stream covers the index; output and status fit   |
//!
//! ```text
//! let codec = CudaCodec::new(0)?;
//! let input = codec.gpu().stream().clone_htod(&data)?;            // n elements
//! codec.launch_encode(DType::Bf16, Some(CodecId::Huffman), &input, n, frame_elems,
//!                     &mut slots, slot_bytes, &mut frame_bytes)?;    // slot g at g * slot_bytes
//! let index = codec.upload_index(&offsets, &lens, slots.len())?;    // decode straight from slots
//! codec.launch_decode(DType::Bf16, &slots, &index, &mut out, frame_elems, n, &mut status)?;
//! codec.synchronize()?;
//! ```

use super::{check_frame_elems, gpu_grid, Encoded, FrameUnit, Slots, GPU_BLOCK, GPU_MAX_BLOCKS};
use crate::cuda::{cuda_error, CudaGpu};
use crate::error::{Error, Result};
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use std::sync::Arc;
use zipcoll_device::codec::CodecId;
use zipcoll_device::dtype::DType;
use zipcoll_primitives::kernels::block_codec::{decode_shared_bytes, encode_shared_bytes, BLOCK_THREADS};
use zipcoll_primitives::kernels::codec::STATUS_WORDS;
use zipcoll_primitives::kernels::{
    DecodeBlockFrames, DecodeFrames, EncodeBlockFrames, EncodeBlockRawFrames, EncodeFrames, EncodeRawFrames,
};

/// The warp width of CUDA devices.
const WARP: u32 = 32;

/// The codec kernels of one CUDA device, with frames coded by a warp or by a block.
#[derive(Clone, Debug)]
pub struct CudaCodec {
    gpu: Arc<CudaGpu>,
    unit: FrameUnit,
}

/// The frames' offsets and lengths on the device, checked against a stream's length.
#[derive(Debug)]
pub struct FrameIndex {
    offsets: CudaSlice<u64>,
    lens: CudaSlice<u32>,
    nframes: usize,
    /// The bytes a stream must hold for every frame to lie inside it.
    span: usize,
}

impl FrameIndex {
    /// The number of frames.
    pub fn nframes(&self) -> usize {
        self.nframes
    }
}

/// An [`Error::InvalidArgument`] unless `ok`.
fn require(ok: bool, what: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(what()))
    }
}

impl CudaCodec {
    /// The codec kernels of CUDA device `ordinal` (opened and its module loaded on first use),
    /// one warp per frame.
    pub fn new(ordinal: usize) -> Result<Self> {
        Self::with_unit(ordinal, FrameUnit::Warp)
    }

    /// The codec kernels of CUDA device `ordinal` with frames coded by `unit`.
    pub fn with_unit(ordinal: usize, unit: FrameUnit) -> Result<Self> {
        Ok(Self {
            gpu: CudaGpu::get(ordinal)?,
            unit,
        })
    }

    /// What codes one frame.
    pub fn unit(&self) -> FrameUnit {
        self.unit
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<CudaGpu> {
        &self.gpu
    }

    /// Waits for every launch and reports any error a kernel met.
    pub fn synchronize(&self) -> Result<()> {
        self.gpu.synchronize()
    }

    /// The launch geometry for `nframes` frames: whole warps, one per frame, or one block of
    /// `BLOCK_THREADS` per frame with `shared` bytes of dynamic shared memory.
    fn config(&self, nframes: usize, shared: usize) -> LaunchConfig {
        match self.unit {
            FrameUnit::Warp => LaunchConfig {
                grid_dim: (gpu_grid(nframes, WARP), 1, 1),
                block_dim: (GPU_BLOCK, 1, 1),
                shared_mem_bytes: 0,
            },
            FrameUnit::Block => LaunchConfig {
                // In range: clamped to GPU_MAX_BLOCKS, which fits a u32.
                grid_dim: (nframes.clamp(1, GPU_MAX_BLOCKS) as u32, 1, 1),
                block_dim: (BLOCK_THREADS, 1, 1),
                // In range: tens of KiB.
                shared_mem_bytes: shared as u32,
            },
        }
    }

    /// The encoder entry point for `dtype` and `codec` (`None` or `Raw`: RAW frames).
    fn encoder(&self, dtype: DType, codec: Option<CodecId>) -> Result<CudaFunction> {
        let registry = self.gpu.registry();
        let codec = codec.filter(|&c| c != CodecId::Raw);
        require(self.unit.codes(codec), || {
            format!("{} has no block coder yet", codec.map_or("raw", CodecId::name))
        })?;
        match (self.unit, codec) {
            (FrameUnit::Warp, Some(c)) => registry.function_codec::<EncodeFrames>(Some(dtype), None, Some(c)),
            (FrameUnit::Warp, None) => registry.function::<EncodeRawFrames>(Some(dtype), None),
            (FrameUnit::Block, Some(c)) => registry.function_codec::<EncodeBlockFrames>(Some(dtype), None, Some(c)),
            (FrameUnit::Block, None) => registry.function::<EncodeBlockRawFrames>(Some(dtype), None),
        }
    }

    /// Launches the encoder of `dtype` and `codec` (`None` or `Raw`: RAW frames) over the `n`
    /// elements at the start of `input`, in frames of `frame_elems`: frame `g` goes to
    /// `slots[g * slot_bytes ..]`, its length (or `ENCODE_FAILED` and a status record at the
    /// slot's start) to `frame_bytes[g]`. Asynchronous. A `slot_bytes` below
    /// [`super::slot_bytes`] makes frames fail with `OutputTooSmall`, never write outside a slot.
    #[allow(clippy::too_many_arguments)]
    pub fn launch_encode(
        &self,
        dtype: DType,
        codec: Option<CodecId>,
        input: &CudaSlice<u8>,
        n: usize,
        frame_elems: usize,
        slots: &mut CudaSlice<u8>,
        slot_bytes: usize,
        frame_bytes: &mut CudaSlice<u32>,
    ) -> Result<()> {
        check_frame_elems(dtype, frame_elems)?;
        let nframes = n.div_ceil(frame_elems);
        let input_bytes = n.checked_mul(dtype.size_bytes());
        require(input_bytes.is_some_and(|b| b <= input.len()), || {
            format!("{n} {dtype:?} elements do not fit the input's {} bytes", input.len())
        })?;
        let slot_total = nframes.checked_mul(slot_bytes);
        require(slot_total.is_some_and(|b| b <= slots.len()), || {
            format!("{nframes} slots of {slot_bytes} bytes do not fit {} bytes", slots.len())
        })?;
        require(nframes <= frame_bytes.len(), || {
            format!("{nframes} frame lengths do not fit {} entries", frame_bytes.len())
        })?;
        if nframes == 0 {
            return Ok(());
        }
        let f = self.encoder(dtype, codec)?;
        let (n, frame_elems, slot_bytes) = (n as u64, frame_elems as u64, slot_bytes as u64);
        let mut builder = self.gpu.stream().launch_builder(&f);
        builder
            .arg(input)
            .arg(&n)
            .arg(&frame_elems)
            .arg(slots)
            .arg(&slot_bytes)
            .arg(frame_bytes);
        // SAFETY: every EncodeFrames and EncodeRawFrames entry point takes (input: *const Bits,
        // n: usize, frame_elems: usize, out: *mut u8, slot_bytes: usize, frame_bytes: *mut u32),
        // as pushed; the checks above keep the kernel inside `input` (n elements of the dtype
        // whose entry point this is), `slots` (nframes slots) and `frame_bytes` (nframes
        // entries), which are distinct allocations (`slots` and `frame_bytes` are borrowed
        // mutably); cudarc keeps them alive until the stream is done with them; GPU_BLOCK is
        // whole warps.
        // Block frames: the EncodeBlockFrames entry points take the same parameters, and get the
        // shared memory their coders need for BLOCK_THREADS threads.
        unsafe { builder.launch(self.config(nframes, encode_shared_bytes())) }
            .map_err(cuda_error("cuLaunchKernel (encode)"))?;
        Ok(())
    }

    /// Uploads the frames' `offsets` and `lens` after checking that every frame lies inside a
    /// stream of `stream_len` bytes.
    pub fn upload_index(&self, offsets: &[u64], lens: &[u32], stream_len: usize) -> Result<FrameIndex> {
        require(offsets.len() == lens.len(), || {
            format!("{} frame offsets but {} frame lengths", offsets.len(), lens.len())
        })?;
        let mut span = 0usize;
        for (g, (&offset, &len)) in offsets.iter().zip(lens).enumerate() {
            let end = usize::try_from(offset).ok().and_then(|o| o.checked_add(len as usize));
            match end {
                Some(end) if end <= stream_len => span = span.max(end),
                _ => {
                    return Err(Error::Stream {
                        frame: g,
                        reason: format!("{len} bytes at offset {offset} reach past the stream's {stream_len} bytes"),
                    })
                }
            }
        }
        let stream = self.gpu.stream();
        // Zero-length uploads are not allowed: keep one dummy entry.
        let upload_u64 = |v: &[u64]| stream.clone_htod(if v.is_empty() { &[0u64][..] } else { v });
        let upload_u32 = |v: &[u32]| stream.clone_htod(if v.is_empty() { &[0u32][..] } else { v });
        Ok(FrameIndex {
            offsets: upload_u64(offsets).map_err(cuda_error("cuMemcpyHtoD (frame offsets)"))?,
            lens: upload_u32(lens).map_err(cuda_error("cuMemcpyHtoD (frame lengths)"))?,
            nframes: offsets.len(),
            span,
        })
    }

    /// Launches the decoder of `dtype` over the frames of `index` in `frames`: frame `g`'s
    /// elements go to `out` from element `g * frame_elems` (at most `frame_elems`, never past
    /// `n`), its status record to `status[4g .. 4g + 4]`. Asynchronous.
    #[allow(clippy::too_many_arguments)]
    pub fn launch_decode(
        &self,
        dtype: DType,
        frames: &CudaSlice<u8>,
        index: &FrameIndex,
        out: &mut CudaSlice<u8>,
        frame_elems: usize,
        n: usize,
        status: &mut CudaSlice<u32>,
    ) -> Result<()> {
        require(index.span <= frames.len(), || {
            format!(
                "the frame index reaches byte {} of a stream of {}",
                index.span,
                frames.len()
            )
        })?;
        let out_bytes = n.checked_mul(dtype.size_bytes());
        require(out_bytes.is_some_and(|b| b <= out.len()), || {
            format!("{n} {dtype:?} elements do not fit the output's {} bytes", out.len())
        })?;
        require(index.nframes.saturating_mul(STATUS_WORDS) <= status.len(), || {
            format!("{} status records do not fit {} words", index.nframes, status.len())
        })?;
        if index.nframes == 0 {
            return Ok(());
        }
        let f = match self.unit {
            FrameUnit::Warp => self.gpu.registry().function::<DecodeFrames>(Some(dtype), None)?,
            FrameUnit::Block => self.gpu.registry().function::<DecodeBlockFrames>(Some(dtype), None)?,
        };
        let (nframes, frame_elems, n) = (index.nframes as u64, frame_elems as u64, n as u64);
        let mut builder = self.gpu.stream().launch_builder(&f);
        builder
            .arg(frames)
            .arg(&index.offsets)
            .arg(&index.lens)
            .arg(&nframes)
            .arg(out)
            .arg(&frame_elems)
            .arg(&n)
            .arg(status);
        // SAFETY: every DecodeFrames entry point takes (frames: *const u8, frame_offsets:
        // *const u64, frame_lens: *const u32, nframes: usize, out: *mut Bits, frame_elems: usize,
        // n: usize, status: *mut u32), as pushed; `upload_index` checked that every frame lies
        // in the first `span <= frames.len()` bytes; the index holds `nframes` entries; `out`
        // holds `n` elements and `status` `STATUS_WORDS * nframes` words, distinct allocations
        // borrowed mutably; cudarc keeps every buffer alive until the stream is done with it;
        // GPU_BLOCK is whole warps.
        // Block frames: DecodeBlockFrames takes the same parameters, with its shared memory.
        unsafe { builder.launch(self.config(index.nframes, decode_shared_bytes())) }
            .map_err(cuda_error("cuLaunchKernel (decode)"))?;
        Ok(())
    }

    /// Encodes host data into host slots: upload, [`CudaCodec::launch_encode`], download.
    pub(crate) fn encode_slots(
        &self,
        dtype: DType,
        codec: Option<CodecId>,
        data: &[u8],
        frame_elems: usize,
        slot_bytes: usize,
    ) -> Result<Slots> {
        let stream = self.gpu.stream();
        let n = data.len() / dtype.size_bytes();
        let nframes = n.div_ceil(frame_elems);
        let input = stream.clone_htod(data).map_err(cuda_error("cuMemcpyHtoD"))?;
        let mut slots = stream
            .alloc_zeros::<u8>(nframes * slot_bytes)
            .map_err(cuda_error("cuMemAlloc"))?;
        let mut frame_bytes = stream.alloc_zeros::<u32>(nframes).map_err(cuda_error("cuMemAlloc"))?;
        self.launch_encode(
            dtype,
            codec,
            &input,
            n,
            frame_elems,
            &mut slots,
            slot_bytes,
            &mut frame_bytes,
        )?;
        self.synchronize()?;
        Ok(Slots {
            bytes: stream.clone_dtoh(&slots).map_err(cuda_error("cuMemcpyDtoH"))?,
            frame_bytes: stream.clone_dtoh(&frame_bytes).map_err(cuda_error("cuMemcpyDtoH"))?,
        })
    }

    /// Decodes `enc` (whose layout the caller checked) into host data and status records.
    pub(crate) fn decode_to_host(&self, enc: &Encoded) -> Result<(Vec<u8>, Vec<u32>)> {
        let stream = self.gpu.stream();
        let frames = stream.clone_htod(&enc.bytes).map_err(cuda_error("cuMemcpyHtoD"))?;
        let index = self.upload_index(&enc.frame_offsets, &enc.frame_lens, enc.bytes.len())?;
        let mut out = stream
            .alloc_zeros::<u8>(enc.raw_bytes())
            .map_err(cuda_error("cuMemAlloc"))?;
        let mut status = stream
            .alloc_zeros::<u32>(enc.nframes() * STATUS_WORDS)
            .map_err(cuda_error("cuMemAlloc"))?;
        self.launch_decode(
            enc.dtype,
            &frames,
            &index,
            &mut out,
            enc.frame_elems,
            enc.n,
            &mut status,
        )?;
        self.synchronize()?;
        let status_bytes: Vec<u32> = stream.clone_dtoh(&status).map_err(cuda_error("cuMemcpyDtoH"))?;
        let data = stream.clone_dtoh(&out).map_err(cuda_error("cuMemcpyDtoH"))?;
        Ok((data, status_bytes))
    }
}
