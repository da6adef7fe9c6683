//! Buffers that collectives read and write, in the memory of the communicator's device: host
//! memory for the simulator, device memory for a GPU.
//!
//! ```
//! use zipcoll_host::comm::DeviceBuffer;
//! let mut b = DeviceBuffer::host(6);
//! b.copy_from_host(&[1, 2, 3, 4, 5, 6])?;
//! assert_eq!(b.to_host()?, [1, 2, 3, 4, 5, 6]);
//! # Ok::<(), zipcoll_host::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::transport::host_mem::HostBytes;

/// Bytes in the memory a communicator's kernels use.
pub struct DeviceBuffer {
    mem: Mem,
}

enum Mem {
    Host(HostBytes),
    Cuda(crate::comm::cuda_mem::CudaBuffer),
}

impl DeviceBuffer {
    /// `len` zeroed bytes of host memory (for the simulator backends).
    pub fn host(len: usize) -> DeviceBuffer {
        DeviceBuffer {
            mem: Mem::Host(HostBytes::zeroed(len)),
        }
    }

    pub(crate) fn cuda(b: crate::comm::cuda_mem::CudaBuffer) -> DeviceBuffer {
        DeviceBuffer { mem: Mem::Cuda(b) }
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        match &self.mem {
            Mem::Host(h) => h.len(),
            Mem::Cuda(c) => c.len(),
        }
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it is host memory (usable by the simulator backends).
    pub fn is_host(&self) -> bool {
        matches!(self.mem, Mem::Host(_))
    }

    /// Overwrites the first `data.len()` bytes; more than [`DeviceBuffer::len`] is an
    /// [`Error::InvalidArgument`].
    pub fn copy_from_host(&mut self, data: &[u8]) -> Result<()> {
        if data.len() > self.len() {
            return Err(Error::InvalidArgument(format!(
                "{} bytes do not fit a buffer of {}",
                data.len(),
                self.len()
            )));
        }
        match &mut self.mem {
            // SAFETY: `&mut self`: no collective uses the buffer meanwhile.
            Mem::Host(h) => unsafe { h.write(data) },
            Mem::Cuda(c) => c.write(data)?,
        }
        Ok(())
    }

    /// A copy of the bytes (after the collectives that write it have completed: on a GPU this
    /// waits for the communicator's stream).
    pub fn to_host(&self) -> Result<Vec<u8>> {
        match &self.mem {
            // SAFETY: collectives on the simulator complete before their call returns, and
            // `&self` excludes a running call that writes the buffer.
            Mem::Host(h) => Ok(unsafe { h.read() }),
            Mem::Cuda(c) => c.read(),
        }
    }

    /// The address kernels use.
    pub(crate) fn ptr(&self) -> *mut u8 {
        match &self.mem {
            Mem::Host(h) => h.ptr(),
            Mem::Cuda(c) => c.ptr() as *mut u8,
        }
    }
}
