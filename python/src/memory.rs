//! Caller memory as a communicator's buffers: the package passes each tensor as `(pointer,
//! bytes, on_cuda)` from an object it keeps alive for the call, and these views wrap it
//! without a copy (`DeviceSlice::host_raw` on the simulator, `DeviceSlice::cuda_raw` on a GPU,
//! where every call checks the pointer's device).

use pyo3::prelude::*;
use zipcoll_host::comm::{Data, DeviceSlice};
use zipcoll_host::{Backend, DType, Error};

/// One tensor's memory: its address, its length in bytes, and whether it is CUDA memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromPyObject)]
pub struct Mem(pub usize, pub usize, pub bool);

impl Mem {
    /// Whether the two ranges share a byte.
    fn overlaps(&self, other: &Mem) -> bool {
        self.1 > 0 && other.1 > 0 && self.0 < other.0.saturating_add(other.1) && other.0 < self.0.saturating_add(self.1)
    }

    /// Its whole elements of `dtype` (an error if the length is not a multiple of them).
    pub fn elems(&self, dtype: DType) -> Result<usize, Error> {
        let size = dtype.size_bytes();
        if !self.1.is_multiple_of(size) {
            return Err(Error::InvalidArgument(format!(
                "a buffer of {} bytes is not a whole number of {} elements",
                self.1,
                dtype.name()
            )));
        }
        Ok(self.1 / size)
    }
}

/// `m` as a buffer of a communicator on `backend`; host memory only for the simulator, CUDA
/// memory only for a GPU.
///
/// # Safety
/// `m` is memory of its kind that stays allocated, and that nothing else accesses while the
/// call (and, on a GPU, its work on the caller's stream) uses it, for `'a`.
unsafe fn view<'a>(backend: Backend, m: Mem) -> Result<DeviceSlice<'a>, Error> {
    let Mem(ptr, len, on_cuda) = m;
    match (backend, on_cuda) {
        // SAFETY: the caller's contract: host memory.
        (Backend::Sim | Backend::Sim64, false) => Ok(unsafe { DeviceSlice::host_raw(ptr as *mut u8, len) }),
        // SAFETY: the caller's contract: CUDA memory (its device is checked by the call).
        (Backend::Cuda { .. }, true) => Ok(unsafe { DeviceSlice::cuda_raw(ptr as u64, len) }),
        (b, true) => Err(Error::InvalidArgument(format!(
            "a CUDA tensor given to a communicator on {b}: move it to host memory"
        ))),
        (b, false) => Err(Error::InvalidArgument(format!(
            "a host tensor given to a communicator on {b}: move it to that GPU"
        ))),
    }
}

/// Runs `f` with the [`Data`] of input `src` and output `dst`: one buffer read and written
/// when they are the same memory and `in_place` allows it; an error when they overlap
/// otherwise, or when neither is given.
///
/// # Safety
/// `src` and `dst` are memory of their kind that stays allocated, and that nothing else
/// accesses, while `f` runs (and, on a GPU, while its work on the caller's stream does).
pub unsafe fn with_data(
    backend: Backend,
    src: Option<Mem>,
    dst: Option<Mem>,
    in_place: bool,
    f: impl FnOnce(Data<'_>) -> Result<(), Error>,
) -> Result<(), Error> {
    match (src, dst) {
        (Some(s), Some(d)) if s == d && in_place => {
            // SAFETY: the caller's contract.
            let mut buf = unsafe { view(backend, d) }?;
            f(Data::InPlace(&mut buf))
        }
        (Some(s), Some(d)) if s.overlaps(&d) => Err(Error::InvalidArgument(
            "the input and the output overlap: pass separate tensors".into(),
        )),
        (Some(s), Some(d)) => {
            // SAFETY: the caller's contract; the two do not overlap.
            let (src, mut dst) = unsafe { (view(backend, s)?, view(backend, d)?) };
            f(Data::OutOfPlace {
                src: &src,
                dst: &mut dst,
            })
        }
        (Some(s), None) => {
            // SAFETY: the caller's contract.
            let src = unsafe { view(backend, s) }?;
            f(Data::Input(&src))
        }
        (None, Some(d)) => {
            // SAFETY: the caller's contract.
            let mut dst = unsafe { view(backend, d) }?;
            f(Data::Output(&mut dst))
        }
        (None, None) => Err(Error::InvalidArgument("neither an input nor an output".into())),
    }
}

/// Runs `f` with `m` as a communicator's buffer (a send's or a receive's).
///
/// # Safety
/// As [`with_data`].
pub unsafe fn with_buffer(
    backend: Backend,
    m: Mem,
    f: impl FnOnce(&mut DeviceSlice<'_>) -> Result<(), Error>,
) -> Result<(), Error> {
    // SAFETY: the caller's contract.
    let mut buf = unsafe { view(backend, m) }?;
    f(&mut buf)
}
