//! Buffers that collectives read and write, in the memory of the communicator's device: host
//! memory for the simulator, device memory for a GPU. A [`DeviceBuffer`] is either memory the
//! communicator allocated ([`crate::comm::Communicator::alloc`]) or, through a
//! [`DeviceSlice`], a view of memory the caller owns (a cudarc `CudaSlice`, a raw device
//! pointer, a host slice for the simulator), which every call takes as it takes its own.
//!
//! Their copies are ordered with the communicator's calls: on a GPU they go on the same stream
//! (the communicator's own, [`crate::comm::Communicator::cuda_stream`]), on the simulator the
//! calls have run by the time they return.
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
    /// The caller's memory ([`DeviceSlice`]), `host` for the simulator's.
    View {
        ptr: *mut u8,
        len: usize,
        host: bool,
    },
}

// SAFETY: a view is a pointer the caller vouched for (`DeviceSlice`'s constructors): nothing
// here accesses it except the calls it is passed to and, for host memory, the copies, which
// its borrow orders.
unsafe impl Send for Mem {}
// SAFETY: as above; `&self` methods only read through it.
unsafe impl Sync for Mem {}

/// A view of memory the caller owns, usable wherever a [`DeviceBuffer`] is (it dereferences
/// to one), for `'a`: a cudarc `CudaSlice` or a raw device pointer for a GPU communicator, a
/// host slice for a simulated one (each call checks that the memory is its device's).
///
/// Calls are asynchronous: the memory must stay allocated and untouched by others until the
/// communicator's next [`crate::comm::Communicator::synchronize`], as NCCL's buffers until the
/// stream synchronizes. A call is ordered with the caller's stream given as
/// [`crate::comm::Options::stream`] (NCCL's `stream` argument); without one, with the
/// communicator's stream alone: then synchronize the stream that wrote the memory before the
/// call, and the communicator before reading its output elsewhere.
///
/// [`DeviceBuffer::copy_from_host`] and [`DeviceBuffer::to_host`] work on host views; a
/// device view's owner copies with its own API (an [`Error::InvalidArgument`] otherwise).
///
/// ```
/// use zipcoll_host::comm::{run_sim, Config, Data, DeviceSlice, Options};
/// use zipcoll_host::{DType, ReduceOp};
/// let sums = run_sim(2, Config::sim(), |comm| {
///     let mut mine: Vec<u8> = 1.5f32.to_le_bytes().repeat(4);
///     let mut view = DeviceSlice::host(&mut mine);
///     comm.all_reduce(Data::InPlace(&mut view), 4, DType::F32, ReduceOp::Sum, Options::default())?;
///     comm.synchronize()?;
///     drop(view);
///     Ok(mine)
/// })?;
/// assert_eq!(sums[1], 3.0f32.to_le_bytes().repeat(4));
/// # Ok::<(), zipcoll_host::Error>(())
/// ```
pub struct DeviceSlice<'a> {
    buf: DeviceBuffer,
    _borrow: std::marker::PhantomData<&'a mut [u8]>,
}

impl<'a> DeviceSlice<'a> {
    /// A host slice, for a simulated communicator.
    pub fn host(bytes: &'a mut [u8]) -> DeviceSlice<'a> {
        DeviceSlice::view(bytes.as_mut_ptr(), bytes.len(), true)
    }

    /// `len` bytes of host memory at `ptr`, for a simulated communicator (e.g. from a C caller).
    ///
    /// # Safety
    /// `ptr .. ptr + len` is host memory that stays allocated, and that nothing else accesses
    /// while a call or a copy uses it, for `'a`.
    pub unsafe fn host_raw(ptr: *mut u8, len: usize) -> DeviceSlice<'a> {
        DeviceSlice::view(ptr, len, true)
    }

    /// The bytes of a cudarc slice, for a communicator on its GPU (checked at each call).
    ///
    /// ```no_run
    /// use cudarc::driver::CudaContext;
    /// use zipcoll_host::comm::{Communicator, Config, Data, DeviceSlice, Options};
    /// use zipcoll_host::{Backend, DType, ReduceOp};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // one communicator per GPU of this process (here one); a multi-process job starts each
    /// // rank's with `Communicator::init` and the launcher's variables instead
    /// let comm = Communicator::init_all(&[Backend::Cuda { ordinal: 0 }], Config::gpu())?.remove(0);
    /// let stream = CudaContext::new(0)?.default_stream();
    /// let n = 1 << 20;
    /// let mut grads = stream.alloc_zeros::<u16>(n)?; // bf16 bits, written by the caller's kernels
    /// // ordered with the caller's stream only when given as Options::stream
    /// stream.synchronize()?;
    /// let mut view = DeviceSlice::cuda(&mut grads);
    /// comm.all_reduce(Data::InPlace(&mut view), n, DType::Bf16, ReduceOp::Sum, Options::default())?;
    /// comm.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn cuda<T>(slice: &'a mut cudarc::driver::CudaSlice<T>) -> DeviceSlice<'a> {
        use cudarc::driver::DevicePtrMut;
        let bytes = slice.num_bytes();
        let stream = std::sync::Arc::clone(slice.stream());
        // the guard records the slice's use on its own stream; the communicator's calls are
        // ordered by the caller, or by `Options::stream` (see the type's docs)
        let (ptr, _record) = slice.device_ptr_mut(&stream);
        DeviceSlice::view(ptr as *mut u8, bytes, false)
    }

    /// `len` bytes of device memory at `ptr`.
    ///
    /// # Safety
    /// `ptr .. ptr + len` is CUDA device memory (of the communicator's GPU: each call checks the
    /// device of `ptr`) that stays allocated, and that nothing else accesses while a call uses
    /// it, for `'a` and until the communicator's next synchronize.
    pub unsafe fn cuda_raw(ptr: u64, len: usize) -> DeviceSlice<'a> {
        DeviceSlice::view(ptr as *mut u8, len, false)
    }

    fn view(ptr: *mut u8, len: usize, host: bool) -> DeviceSlice<'a> {
        DeviceSlice {
            buf: DeviceBuffer {
                mem: Mem::View { ptr, len, host },
            },
            _borrow: std::marker::PhantomData,
        }
    }
}

impl std::ops::Deref for DeviceSlice<'_> {
    type Target = DeviceBuffer;
    fn deref(&self) -> &DeviceBuffer {
        &self.buf
    }
}

impl std::ops::DerefMut for DeviceSlice<'_> {
    fn deref_mut(&mut self) -> &mut DeviceBuffer {
        &mut self.buf
    }
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
            Mem::View { len, .. } => *len,
        }
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it is host memory (usable by the simulator backends).
    pub fn is_host(&self) -> bool {
        matches!(self.mem, Mem::Host(_) | Mem::View { host: true, .. })
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
            // SAFETY: the view's borrow (`&mut self` through the `DeviceSlice`) and the
            // simulator's calls having run exclude every other access; `data` fits (checked).
            Mem::View { ptr, host: true, .. } => unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), *ptr, data.len())
            },
            Mem::View { .. } => return Err(device_view()),
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
            // SAFETY: `len` readable bytes (the view's constructor); no call runs (as above).
            Mem::View { ptr, len, host: true } => Ok(unsafe { std::slice::from_raw_parts(*ptr, *len) }.to_vec()),
            Mem::View { .. } => Err(device_view()),
        }
    }

    /// The address kernels use.
    pub(crate) fn ptr(&self) -> *mut u8 {
        match &self.mem {
            Mem::Host(h) => h.ptr(),
            Mem::Cuda(c) => c.ptr() as *mut u8,
            Mem::View { ptr, .. } => *ptr,
        }
    }
}

/// The error of a host copy into or out of a view of the caller's device memory.
fn device_view() -> Error {
    Error::InvalidArgument(
        "a view of the caller's device memory: copy with the API that owns it, ordered before the call".into(),
    )
}
