//! zipcoll from Python: the extension module `zipcoll._zipcoll` that the package `zipcoll`
//! (python/zipcoll/) wraps. It compresses and decompresses tensors with zipcoll's lossless
//! codecs, reports what compression would do to a tensor (the host's `codec::analysis`), and
//! runs a communicator's collectives over caller memory: host memory on the simulator, CUDA
//! device memory ordered with the caller's stream on a GPU.
//!
//! | module        | what it holds                                                         |
//! |---------------|-----------------------------------------------------------------------|
//! | [`errors`]    | the exception hierarchy under `zipcoll.Error`, from the host's errors |
//! | [`names`]     | dtype, codec, reduction and device names as Python passes them        |
//! | [`envelope`]  | the header `compress` puts before the frames (dtype, element count)   |
//! | [`codec`]     | `compress`, `decompress`, `inspect`                                   |
//! | [`memory`]    | caller memory (pointer, length, where) as the communicator's buffers  |
//! | [`comm`]      | `UniqueId` and `Communicator`                                         |
//!
//! The functions here take bytes and raw pointers; the Python package turns numpy arrays, torch
//! tensors, `__cuda_array_interface__` and DLPack objects into them, keeps them alive during a
//! call, and picks the caller's stream. Every blocking call releases the GIL.

use pyo3::prelude::*;

pub mod codec;
pub mod comm;
pub mod envelope;
pub mod errors;
pub mod memory;
pub mod names;

/// The module `zipcoll._zipcoll`.
#[pymodule]
fn _zipcoll(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(codec::compress, m)?)?;
    m.add_function(wrap_pyfunction!(codec::decompress, m)?)?;
    m.add_function(wrap_pyfunction!(codec::inspect, m)?)?;
    m.add_class::<comm::PyUniqueId>()?;
    m.add_class::<comm::PyCommunicator>()?;
    m.add("DTYPES", names::dtype_names())?;
    m.add("CODECS", names::codec_names())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
