//! The exceptions: every failure is a subclass of `zipcoll.Error`, chosen from the host's typed
//! [`Error`], with its message.
//!
//! | exception                      | host errors                                                |
//! |--------------------------------|------------------------------------------------------------|
//! | `InvalidArgumentError`         | `InvalidArgument` (nothing was enqueued; a communicator stays usable) |
//! | `CorruptFrameError`            | `Frame`, `Stream`, and a compressed buffer that is not one  |
//! | `TimeoutError`                 | `Timeout`                                                  |
//! | `RemoteError`                  | `Remote`, `Collective`, `Bootstrap`: a peer or a collective failed |
//! | `AbortedError`                 | `Aborted`: the communicator failed or was aborted before   |
//! | `BackendError`                 | `BackendUnavailable`, `Cuda`, `Hip`, `KernelNotBuilt`, `KernelsNotBuilt`, `Sim` |
//! | `Error`                        | anything else (`Io`)                                       |

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use zipcoll_host::Error;

create_exception!(zipcoll, ZipcollError, PyException, "The root of zipcoll's exceptions.");
create_exception!(
    zipcoll,
    InvalidArgumentError,
    ZipcollError,
    "An argument the call cannot take; nothing was enqueued."
);
create_exception!(
    zipcoll,
    CorruptFrameError,
    ZipcollError,
    "Compressed data that does not decode: a rejected frame, a stream whose frames do not fit, a truncated buffer."
);
create_exception!(zipcoll, TimeoutError, ZipcollError, "A peer did not answer in time.");
create_exception!(
    zipcoll,
    RemoteError,
    ZipcollError,
    "A peer failed or left, the rendezvous failed, or a collective failed on this rank."
);
create_exception!(
    zipcoll,
    AbortedError,
    ZipcollError,
    "The communicator was aborted, or failed before: make a new one."
);
create_exception!(
    zipcoll,
    BackendError,
    ZipcollError,
    "The device cannot run the call: no driver or GPU, kernels not built, a driver call failed."
);

/// Adds the exceptions to the module (`Error` is [`ZipcollError`]).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<ZipcollError>())?;
    m.add("InvalidArgumentError", py.get_type::<InvalidArgumentError>())?;
    m.add("CorruptFrameError", py.get_type::<CorruptFrameError>())?;
    m.add("TimeoutError", py.get_type::<TimeoutError>())?;
    m.add("RemoteError", py.get_type::<RemoteError>())?;
    m.add("AbortedError", py.get_type::<AbortedError>())?;
    m.add("BackendError", py.get_type::<BackendError>())?;
    Ok(())
}

/// The Python exception of a host error (see the module table).
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::InvalidArgument(_) => InvalidArgumentError::new_err(msg),
        Error::Frame { .. } | Error::Stream { .. } => CorruptFrameError::new_err(msg),
        Error::Timeout { .. } => TimeoutError::new_err(msg),
        Error::Remote { .. } | Error::Collective { .. } | Error::Bootstrap(_) => RemoteError::new_err(msg),
        Error::Aborted => AbortedError::new_err(msg),
        Error::BackendUnavailable { .. }
        | Error::Cuda { .. }
        | Error::Hip { .. }
        | Error::KernelNotBuilt { .. }
        | Error::KernelsNotBuilt { .. }
        | Error::Sim(_) => BackendError::new_err(msg),
        _ => ZipcollError::new_err(msg),
    }
}

/// An [`InvalidArgumentError`] saying `msg`.
pub fn invalid(msg: impl Into<String>) -> PyErr {
    InvalidArgumentError::new_err(msg.into())
}
