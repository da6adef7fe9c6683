"""``Communicator``: collectives on torch tensors (CPU on the simulator, CUDA on a GPU, ordered
with each tensor's current stream) and numpy arrays (on the simulator)."""


from . import _tensors, _zipcoll
from ._zipcoll import InvalidArgumentError, UniqueId


def _device_name(device):
    if device is None or isinstance(device, str):
        return device
    if isinstance(device, int):
        return f"cuda:{device}"
    if type(device).__module__ == "torch":  # torch.device
        return "sim" if device.type == "cpu" else f"{device.type}:{device.index or 0}"
    raise InvalidArgumentError(f"unknown device {device!r} (sim, cuda:N, an int or a torch.device)")


def _unique_id(uid):
    if isinstance(uid, UniqueId):
        return uid
    if isinstance(uid, (bytes, bytearray, str)):
        return UniqueId.from_bytes(uid.encode() if isinstance(uid, str) else bytes(uid))
    raise InvalidArgumentError("unique_id: a zipcoll.UniqueId or its bytes")


class Communicator:
    """One rank of a communicator (NCCL's ``ncclComm_t``). Calls are asynchronous as NCCL's:
    :meth:`synchronize` waits for them and raises a failure, after which the communicator is
    unusable (``AbortedError``); an argument error raises ``InvalidArgumentError`` and leaves it
    usable. Ranks of one communicator run in threads of one process on the simulator, in one
    process per GPU (or several on one GPU) on CUDA."""

    def __init__(self, unique_id, rank, nranks, device=None, compression=None, lossy=None):
        """Rank ``rank`` of ``nranks``: every rank passes the same ``unique_id`` (a
        :class:`UniqueId` or its bytes); ``device``: ``"sim"``, ``"cuda:N"``, an int or a
        ``torch.device`` (default: the current CUDA device, else the simulator);
        ``compression``: ``"off"``, ``"auto"`` or a codec (default: ``ZIPCOLL_COMPRESSION``, else
        auto); ``lossy``: ``"exact"``, ``"error-bound:abs=EB"``, ``"error-bound:rel=R"`` or
        ``"qsgd:bits=B[,bucket=N][,seed=S]"`` (default: ``ZIPCOLL_LOSSY``, else exact), which its
        f32, bf16 and f16 collectives then apply (sum: within ``nranks x eb`` of the exact sum).
        Blocks until every rank has joined."""
        self._c = _zipcoll.Communicator(
            _unique_id(unique_id), rank, nranks, _device_name(device), compression, lossy
        )

    @classmethod
    def from_env(cls, device=None, compression=None, lossy=None):
        """This process's rank of a job started by torchrun, SLURM, Open MPI or PMI (their
        variables; the root at ``ZIPCOLL_ROOT`` or ``MASTER_ADDR``:``MASTER_PORT + 1``)."""
        self = cls.__new__(cls)
        self._c = _zipcoll.Communicator.from_env(_device_name(device), compression, lossy)
        return self

    rank = property(lambda self: self._c.rank, doc="This rank.")
    nranks = property(lambda self: self._c.nranks, doc="The number of ranks.")
    device = property(lambda self: self._c.device, doc="``sim`` or ``cuda:N``.")
    compression = property(lambda self: self._c.compression, doc="The default compression.")
    lossy = property(lambda self: self._c.lossy, doc="The lossy policy (``exact``: none).")
    transport = property(lambda self: self._c.transport, doc="Each peer's transport, and why.")

    def __repr__(self):
        return f"Communicator(rank={self.rank}, nranks={self.nranks}, device={self.device!r})"

    def _run(self, call, views, *args):
        """Runs ``call(*args, stream=...)`` ordered with the views' stream; on the legacy
        default stream (which a communicator cannot join) the host waits for it before the call
        and for the call after it."""
        cuda = [v for v in views if v.cuda is not None]
        dtypes = {v.dtype for v in views}
        if len(dtypes) > 1:
            raise InvalidArgumentError(f"the tensors' dtypes differ: {sorted(dtypes)}")
        stream = next((v.stream for v in cuda if v.stream is not None), None)
        if stream == 0:
            cuda[0].sync()
            call(*args, stream=None)
            self._c.synchronize()
        else:
            call(*args, stream=stream)

    def all_reduce(self, tensor, op="sum", out=None, dtype=None):
        """Reduces ``tensor`` over the ranks (``op``: sum, prod, min, max, avg) into ``out``, or
        in place; returns the result's tensor."""
        src = _tensors.view(tensor, dtype, writable=out is None)
        dst = src if out is None else _tensors.view(out, dtype, writable=True)
        self._run(self._c.all_reduce, [src, dst], src.mem, dst.mem, src.dtype, op)
        return tensor if out is None else out

    def all_gather(self, tensor, out=None, dtype=None):
        """Every rank's ``tensor``, stacked in rank order: ``out`` (default: a new tensor of shape
        ``(nranks, *tensor.shape)``)."""
        src = _tensors.view(tensor, dtype)
        out = _tensors.empty(src, (self.nranks, *src.shape)) if out is None else out
        dst = _tensors.view(out, dtype, writable=True)
        self._run(self._c.all_gather, [src, dst], src.mem, dst.mem, src.dtype)
        return out

    def reduce_scatter(self, tensor, op="sum", out=None, dtype=None):
        """This rank's block of the reduction of ``tensor`` (``nranks`` equal blocks along its
        first dimension): ``out`` (default: a new tensor of shape
        ``(tensor.shape[0] // nranks, *tensor.shape[1:])``)."""
        src = _tensors.view(tensor, dtype)
        if out is None:
            if not src.shape or src.shape[0] % self.nranks:
                raise InvalidArgumentError(f"shape {src.shape} does not split into {self.nranks} blocks")
            out = _tensors.empty(src, (src.shape[0] // self.nranks, *src.shape[1:]))
        dst = _tensors.view(out, dtype, writable=True)
        self._run(self._c.reduce_scatter, [src, dst], src.mem, dst.mem, src.dtype, op)
        return out

    def all_to_all(self, tensor, out=None, dtype=None):
        """Block ``q`` of ``tensor`` (``nranks`` equal blocks) goes to rank ``q``, whose block
        ``rank`` of ``out`` (default: a new tensor like ``tensor``) receives it."""
        src = _tensors.view(tensor, dtype)
        out = _tensors.empty(src, src.shape) if out is None else out
        dst = _tensors.view(out, dtype, writable=True)
        self._run(self._c.all_to_all, [src, dst], src.mem, dst.mem, src.dtype)
        return out

    def broadcast(self, tensor, root=0, dtype=None):
        """``root``'s ``tensor`` into every rank's ``tensor``; returns it."""
        v = _tensors.view(tensor, dtype, writable=True)
        self._run(self._c.broadcast, [v], v.mem, v.mem, v.dtype, root)
        return tensor

    def reduce(self, tensor, root=0, op="sum", out=None, dtype=None):
        """The reduction of every rank's ``tensor`` into ``root``'s ``out`` (or its ``tensor``, in
        place); other ranks' outputs are untouched. Returns the output's tensor."""
        src = _tensors.view(tensor, dtype, writable=out is None)
        dst = src if out is None else _tensors.view(out, dtype, writable=True)
        self._run(self._c.reduce, [src, dst], src.mem, dst.mem, src.dtype, op, root)
        return tensor if out is None else out

    def send(self, tensor, peer, dtype=None):
        """Sends ``tensor`` to rank ``peer`` (which calls :meth:`recv`)."""
        v = _tensors.view(tensor, dtype)
        self._run(self._c.send, [v], v.mem, v.dtype, peer)

    def recv(self, tensor, peer, dtype=None):
        """Receives into ``tensor`` from rank ``peer``; returns it."""
        v = _tensors.view(tensor, dtype, writable=True)
        self._run(self._c.recv, [v], v.mem, v.dtype, peer)
        return tensor

    def synchronize(self):
        """Waits for every call so far; raises the first failure."""
        self._c.synchronize()

    def query(self):
        """Whether every call so far has finished, without waiting; raises a failure."""
        return self._c.query()

    def barrier(self):
        """Waits until every rank has called it (host code only; calls in flight go on)."""
        self._c.barrier()

    def abort(self):
        """Stops the communicator on every rank; later calls raise ``AbortedError``."""
        self._c.abort()


__all__ = ["Communicator"]
