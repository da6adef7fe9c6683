//! Device memory of a CUDA communicator: buffers allocated, written, read and freed on its
//! device's stream, the one its calls are enqueued on.

use crate::cuda::{cuda_error, CudaGpu};
use crate::error::Result;
use cudarc::driver::{CudaSlice, DevicePtr};
use std::sync::Arc;

/// Zeroed device memory on one GPU.
pub struct CudaBuffer {
    gpu: Arc<CudaGpu>,
    /// At least one byte (the driver allocates no empty buffers).
    slice: CudaSlice<u8>,
    ptr: u64,
    /// The bytes asked for.
    len: usize,
}

impl CudaBuffer {
    /// `len` zeroed bytes on `gpu`.
    pub fn zeroed(gpu: &Arc<CudaGpu>, len: usize) -> Result<CudaBuffer> {
        gpu.context().bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let slice = gpu
            .stream()
            .alloc_zeros::<u8>(len.max(1))
            .map_err(cuda_error("cuMemAlloc"))?;
        let ptr = slice.device_ptr(gpu.stream()).0;
        Ok(CudaBuffer {
            gpu: Arc::clone(gpu),
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
    /// device's stream (`cuMemcpyHtoDAsync` from pageable memory: the driver stages `data`
    /// before returning, without waiting for the stream).
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        let stream = self.gpu.stream();
        let mut view = self.slice.slice_mut(..data.len());
        stream
            .memcpy_htod(data, &mut view)
            .map_err(cuda_error("cuMemcpyHtoDAsync"))
    }

    /// A copy of the bytes, after everything on the device's stream.
    pub fn read(&self) -> Result<Vec<u8>> {
        let mut out = self
            .gpu
            .stream()
            .clone_dtoh(&self.slice)
            .map_err(cuda_error("cuMemcpyDtoHAsync"))?;
        self.gpu.synchronize()?;
        out.truncate(self.len);
        Ok(out)
    }
}
