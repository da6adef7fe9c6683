//! Device memory of a CUDA communicator: buffers allocated, written, read and freed on the
//! communicator's stream, the one its calls are enqueued on.

use crate::cuda::cuda_error;
use crate::error::Result;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::sync::Arc;

/// Zeroed device memory on one GPU, ordered on a communicator's stream.
pub struct CudaBuffer {
    stream: Arc<CudaStream>,
    /// At least one byte (the driver allocates no empty buffers).
    slice: CudaSlice<u8>,
    ptr: u64,
    /// The bytes asked for.
    len: usize,
}

impl CudaBuffer {
    /// `len` zeroed bytes on `stream`'s GPU, allocated, copied and freed on `stream`.
    pub fn zeroed(stream: &Arc<CudaStream>, len: usize) -> Result<CudaBuffer> {
        stream
            .context()
            .bind_to_thread()
            .map_err(cuda_error("cuCtxSetCurrent"))?;
        let slice = stream.alloc_zeros::<u8>(len.max(1)).map_err(cuda_error("cuMemAlloc"))?;
        let ptr = slice.device_ptr(stream).0;
        Ok(CudaBuffer {
            stream: Arc::clone(stream),
            ptr,
            slice,
            len,
        })
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Its device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Overwrites the first `data.len()` bytes (the caller checked the length), ordered on the
    /// stream (`cuMemcpyHtoDAsync` from pageable memory: the driver stages `data` before
    /// returning, without waiting for the stream).
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        let mut view = self.slice.slice_mut(..data.len());
        self.stream
            .memcpy_htod(data, &mut view)
            .map_err(cuda_error("cuMemcpyHtoDAsync"))
    }

    /// A copy of the bytes, after everything on the stream.
    pub fn read(&self) -> Result<Vec<u8>> {
        let mut out = self
            .stream
            .clone_dtoh(&self.slice)
            .map_err(cuda_error("cuMemcpyDtoHAsync"))?;
        self.stream.synchronize().map_err(cuda_error("cuStreamSynchronize"))?;
        out.truncate(self.len);
        Ok(out)
    }
}
