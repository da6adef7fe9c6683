//! Buffers that collectives read and write, in the memory of the communicator's device: host
//! memory for the simulator, device memory for a GPU.
//!
//! Their copies are ordered with the communicator's calls: on a GPU they go on the same stream
//! (the device's), on the simulator the calls have run by the time they return.
//!
//! | method                          | ordered after the calls before it | waits for the device |
//! |---------------------------------|-----------------------------------|----------------------|
//! | [`DeviceBuffer::copy_from_host`] | yes (stream-ordered)             | no: returns once `data` has been copied out |
//! | [`DeviceBuffer::to_host`]       | yes (stream-ordered)              | yes: for the calls before it and the copy |
//!
//! Neither reports a call's failure: [`crate::comm::Communicator::synchronize`] does. A buffer
//! may be dropped while a call that uses it is in flight: its memory is freed on the stream
//! (after the call) where the driver supports stream-ordered allocation, else after waiting for
//! the stream.
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

    /// Overwrites the first `data.len()` bytes, after every call enqueued before (and before
    /// every call enqueued after); more than [`DeviceBuffer::len`] is an
    /// [`Error::InvalidArgument`]. Stream-ordered: on a GPU it returns without waiting for the
    /// device, once `data` has been copied out (it may be reused at once).
    pub fn copy_from_host(&mut self, data: &[u8]) -> Result<()> {
        if data.len() > self.len() {
            return Err(Error::InvalidArgument(format!(
                "{} bytes do not fit a buffer of {}",
                data.len(),
                self.len()
            )));
        }
        match &mut self.mem {
            // SAFETY: `&mut self`, and the simulator's calls have run when they return: no
            // collective uses the buffer meanwhile.
            Mem::Host(h) => unsafe { h.write(data) },
            Mem::Cuda(c) => c.write(data)?,
        }
        Ok(())
    }

    /// A copy of the bytes as the calls enqueued before left them. Synchronizing: on a GPU the
    /// copy is ordered on the stream after those calls, and this waits for them and for it.
    /// Their failures are not reported here ([`crate::comm::Communicator::synchronize`]).
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
