//! `UniqueId` and `Communicator`: the host's communicator with its collectives over caller
//! memory ([`crate::memory`]). Calls are asynchronous as NCCL's (`synchronize` waits and
//! reports a failure); on a GPU a call given the caller's stream is ordered with it. An
//! argument error raises `InvalidArgumentError` and enqueues nothing: the communicator stays
//! usable.
//!
//! The methods take memory as `(pointer, bytes, on_cuda)` ([`Mem`]): this is the package's
//! private interface (`zipcoll._comm` passes the memory of tensors it holds for the call), not
//! one for Python code to call with addresses of its own.

use crate::errors::{invalid, to_py};
use crate::memory::{with_buffer, with_data, Mem};
use crate::names;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zipcoll_host::comm::launch::{device_for_rank, rank_env};
use zipcoll_host::comm::{CallStream, Communicator, Compression, Config, Data, Lossy, Options, UniqueId};
use zipcoll_host::{Backend, Error};

/// The rendezvous of one communicator. `UniqueId()` starts its bootstrap root in this process;
/// its bytes go to the other ranks (a file, `torch.distributed`'s store), which rebuild it
/// with `UniqueId.from_bytes`.
#[pyclass(frozen, name = "UniqueId", module = "zipcoll._zipcoll")]
pub struct PyUniqueId {
    id: UniqueId,
}

#[pymethods]
impl PyUniqueId {
    /// A new id whose root runs in this process.
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        let id = py.detach(UniqueId::new).map_err(to_py)?;
        Ok(PyUniqueId { id })
    }

    /// The id whose `to_bytes()` is `data`.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        let text = std::str::from_utf8(data).map_err(|_| invalid("a unique id's bytes are UTF-8 text"))?;
        let id = text.parse().map_err(to_py)?;
        Ok(PyUniqueId { id })
    }

    /// The id as bytes (its text form, `zc1-<magic>@<ip:port>`).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.id.to_string().as_bytes())
    }

    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.to_bytes(py)
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.id == other.id
    }

    fn __repr__(&self) -> String {
        format!("UniqueId({:?})", self.id.to_string())
    }
}

/// One rank of a communicator.
#[pyclass(frozen, name = "Communicator", module = "zipcoll._zipcoll")]
pub struct PyCommunicator {
    comm: Communicator,
}

/// The settings of a communicator on `device`: the defaults, the environment's
/// (`ZIPCOLL_*`), then `compression` and `lossy` if given.
fn settings(device: Backend, compression: Option<&str>, lossy: Option<&str>) -> Result<Config, Error> {
    let mut config = Config::defaults_for(device).with_env()?;
    if let Some(c) = compression {
        config.compression = c.parse::<Compression>()?;
    }
    if let Some(l) = lossy {
        config.lossy = l.parse::<Lossy>()?;
    }
    Ok(config)
}

/// `device`'s backend, or the host's choice for `rank` (the current CUDA device, else GPU
/// `rank % devices`, else the simulator).
fn device_or_default(device: Option<&str>, rank: usize) -> PyResult<Backend> {
    match device {
        Some(d) => names::device(d),
        None => device_for_rank(rank).map_err(to_py),
    }
}

impl PyCommunicator {
    /// Runs `f` on the communicator without the GIL, with the call's options: ordered with
    /// `stream` (a `CUstream` as an integer; 0 or `None`: none) on a GPU.
    fn run(
        &self,
        py: Python<'_>,
        stream: Option<usize>,
        f: impl FnOnce(&Communicator, Options) -> Result<(), Error> + Send,
    ) -> PyResult<()> {
        let stream = match (self.comm.backend(), stream) {
            (Backend::Cuda { .. }, Some(s)) if s != 0 => {
                // SAFETY: the package passes the current torch (or the producer's) stream of
                // the tensors' device, which is the communicator's (each call checks the
                // memory's device), and it stays live while the call runs.
                Some(unsafe { CallStream::from_raw(s as zipcoll_host::cudarc::driver::sys::CUstream) })
            }
            _ => None,
        };
        let opts = Options {
            stream,
            ..Options::default()
        };
        let comm = &self.comm;
        py.detach(|| f(comm, opts)).map_err(to_py)
    }

    /// Runs the collective `call` without the GIL on input `src` and output `dst` (one buffer
    /// when they are the same memory and `in_place` allows it, [`with_data`]) with the count
    /// `count` computes from the ranks, ordered with `stream` as [`PyCommunicator::run`] does.
    fn collective(
        &self,
        py: Python<'_>,
        stream: Option<usize>,
        (src, dst, in_place): (Mem, Mem, bool),
        count: impl FnOnce(usize) -> Result<usize, Error> + Send,
        call: impl FnOnce(&Communicator, Data<'_>, usize, Options) -> Result<(), Error> + Send,
    ) -> PyResult<()> {
        self.run(py, stream, |c, opts| {
            let n = count(c.nranks())?;
            // SAFETY: the package passes the memory of tensors it keeps alive during the call,
            // which nothing else uses meanwhile (and on a GPU, orders with their stream).
            unsafe { with_data(c.backend(), Some(src), Some(dst), in_place, |d| call(c, d, n, opts)) }
        })
    }
}

#[pymethods]
impl PyCommunicator {
    /// Rank `rank` of `nranks` of the communicator `unique_id` names, on `device` (`sim`,
    /// `cuda:N`; default: the host's choice), with `compression` (`off`, `auto` or a codec;
    /// default: `ZIPCOLL_COMPRESSION`, else auto) and `lossy` (`exact`, `error-bound:abs=EB`,
    /// `error-bound:rel=R`, `qsgd:bits=B[,bucket=N][,seed=S]`; default: `ZIPCOLL_LOSSY`, else
    /// exact). Blocks until every rank has joined.
    #[new]
    #[pyo3(signature = (unique_id, rank, nranks, device = None, compression = None, lossy = None))]
    fn new(
        py: Python<'_>,
        unique_id: &PyUniqueId,
        rank: usize,
        nranks: usize,
        device: Option<&str>,
        compression: Option<&str>,
        lossy: Option<&str>,
    ) -> PyResult<Self> {
        let device = device_or_default(device, rank)?;
        let config = settings(device, compression, lossy).map_err(to_py)?;
        let id = &unique_id.id;
        let comm = py
            .detach(|| Communicator::init_with(id, rank, nranks, device, config))
            .map_err(to_py)?;
        Ok(PyCommunicator { comm })
    }

    /// This process's rank of the job a launcher started (torchrun, SLURM, Open MPI, PMI:
    /// `zipcoll_host::comm::launch`), on `device` (default: the current CUDA device, else GPU
    /// `local rank % devices`, else the simulator).
    #[staticmethod]
    #[pyo3(signature = (device = None, compression = None, lossy = None))]
    fn from_env(
        py: Python<'_>,
        device: Option<&str>,
        compression: Option<&str>,
        lossy: Option<&str>,
    ) -> PyResult<Self> {
        let me = rank_env().map_err(to_py)?.ok_or_else(|| {
            invalid(
                "no launcher variables (RANK/WORLD_SIZE, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, ZIPCOLL_RANK)",
            )
        })?;
        let device = device_or_default(device, me.local_rank.unwrap_or(me.rank))?;
        let config = settings(device, compression, lossy).map_err(to_py)?;
        let comm = py
            .detach(|| Communicator::init_with(&me.id, me.rank, me.nranks, device, config))
            .map_err(to_py)?;
        Ok(PyCommunicator { comm })
    }

    /// This rank.
    #[getter]
    fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// The ranks of the communicator.
    #[getter]
    fn nranks(&self) -> usize {
        self.comm.nranks()
    }

    /// Where its calls run: `sim` or `cuda:N`.
    #[getter]
    fn device(&self) -> String {
        names::device_name(self.comm.backend())
    }

    /// Its default compression: `off`, `auto` or a codec.
    #[getter]
    fn compression(&self) -> String {
        self.comm.config().compression.to_string()
    }

    /// Its lossy policy: `exact`, or the quantizer its float calls use.
    #[getter]
    fn lossy(&self) -> String {
        self.comm.config().lossy.to_string()
    }

    /// Which transport each peer uses, and why.
    #[getter]
    fn transport(&self) -> String {
        self.comm.transport_info().to_owned()
    }

    /// All_reduce of `src` into `dst` (the same memory: in place).
    #[pyo3(signature = (src, dst, dtype, op, stream = None))]
    fn all_reduce(
        &self,
        py: Python<'_>,
        src: Mem,
        dst: Mem,
        dtype: &str,
        op: &str,
        stream: Option<usize>,
    ) -> PyResult<()> {
        let (dtype, op) = (names::dtype(dtype)?, names::reduce_op(op)?);
        let count = |_| src.elems(dtype);
        self.collective(py, stream, (src, dst, true), count, |c, d, n, o| {
            c.all_reduce(d, n, dtype, op, o)
        })
    }

    /// All_gather: `dst` holds `nranks` times `src`.
    #[pyo3(signature = (src, dst, dtype, stream = None))]
    fn all_gather(&self, py: Python<'_>, src: Mem, dst: Mem, dtype: &str, stream: Option<usize>) -> PyResult<()> {
        let dtype = names::dtype(dtype)?;
        let count = |_| src.elems(dtype);
        self.collective(py, stream, (src, dst, false), count, |c, d, n, o| {
            c.all_gather(d, n, dtype, o)
        })
    }

    /// Reduce_scatter: `src` holds `nranks` times `dst`.
    #[pyo3(signature = (src, dst, dtype, op, stream = None))]
    fn reduce_scatter(
        &self,
        py: Python<'_>,
        src: Mem,
        dst: Mem,
        dtype: &str,
        op: &str,
        stream: Option<usize>,
    ) -> PyResult<()> {
        let (dtype, op) = (names::dtype(dtype)?, names::reduce_op(op)?);
        let count = |_| dst.elems(dtype);
        self.collective(py, stream, (src, dst, false), count, |c, d, n, o| {
            c.reduce_scatter(d, n, dtype, op, o)
        })
    }

    /// All_to_all: block `q` of `src` goes to rank `q`, block `rank` of its `dst`.
    #[pyo3(signature = (src, dst, dtype, stream = None))]
    fn all_to_all(&self, py: Python<'_>, src: Mem, dst: Mem, dtype: &str, stream: Option<usize>) -> PyResult<()> {
        let dtype = names::dtype(dtype)?;
        let count = |nranks| per_rank(src.elems(dtype)?, nranks);
        self.collective(py, stream, (src, dst, false), count, |c, d, n, o| {
            c.all_to_all(d, n, dtype, o)
        })
    }

    /// Broadcast of `root`'s `src` into every rank's `dst` (in place when they are the same).
    #[pyo3(signature = (src, dst, dtype, root, stream = None))]
    fn broadcast(
        &self,
        py: Python<'_>,
        src: Mem,
        dst: Mem,
        dtype: &str,
        root: usize,
        stream: Option<usize>,
    ) -> PyResult<()> {
        let dtype = names::dtype(dtype)?;
        let count = |_| dst.elems(dtype);
        self.collective(py, stream, (src, dst, true), count, |c, d, n, o| {
            c.broadcast(d, n, dtype, root, o)
        })
    }

    /// Reduce of every rank's `src` into `root`'s `dst` (in place when they are the same).
    #[pyo3(signature = (src, dst, dtype, op, root, stream = None))]
    #[allow(clippy::too_many_arguments)]
    fn reduce(
        &self,
        py: Python<'_>,
        src: Mem,
        dst: Mem,
        dtype: &str,
        op: &str,
        root: usize,
        stream: Option<usize>,
    ) -> PyResult<()> {
        let (dtype, op) = (names::dtype(dtype)?, names::reduce_op(op)?);
        let count = |_| src.elems(dtype);
        self.collective(py, stream, (src, dst, true), count, |c, d, n, o| {
            c.reduce(d, n, dtype, op, root, o)
        })
    }

    /// Sends `buf` to `peer`.
    #[pyo3(signature = (buf, dtype, peer, stream = None))]
    fn send(&self, py: Python<'_>, buf: Mem, dtype: &str, peer: usize, stream: Option<usize>) -> PyResult<()> {
        let dtype = names::dtype(dtype)?;
        self.run(py, stream, |c, opts| {
            let count = buf.elems(dtype)?;
            // SAFETY: as in `collective`.
            unsafe { with_buffer(c.backend(), buf, |b| c.send(b, count, dtype, peer, opts)) }
        })
    }

    /// Receives `buf` from `peer`.
    #[pyo3(signature = (buf, dtype, peer, stream = None))]
    fn recv(&self, py: Python<'_>, buf: Mem, dtype: &str, peer: usize, stream: Option<usize>) -> PyResult<()> {
        let dtype = names::dtype(dtype)?;
        self.run(py, stream, |c, opts| {
            let count = buf.elems(dtype)?;
            // SAFETY: as in `collective`.
            unsafe { with_buffer(c.backend(), buf, |b| c.recv(b, count, dtype, peer, opts)) }
        })
    }

    /// Waits for every call enqueued so far; raises the first failure.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, None, |c, _| c.synchronize())
    }

    /// Whether every call enqueued so far has finished (without waiting); raises a failure.
    fn query(&self, py: Python<'_>) -> PyResult<bool> {
        let comm = &self.comm;
        py.detach(|| comm.query()).map_err(to_py)
    }

    /// Waits until every rank has called it (a host barrier, not ordered with the calls).
    fn barrier(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, None, |c, _| c.barrier())
    }

    /// Stops the communicator on every rank; later calls raise `AbortedError`.
    fn abort(&self) {
        self.comm.abort();
    }
}

/// `elems` split into `nranks` equal blocks: the block's elements.
fn per_rank(elems: usize, nranks: usize) -> Result<usize, Error> {
    if nranks == 0 || !elems.is_multiple_of(nranks) {
        return Err(Error::InvalidArgument(format!(
            "{elems} elements do not split into {nranks} equal blocks"
        )));
    }
    Ok(elems / nranks)
}
