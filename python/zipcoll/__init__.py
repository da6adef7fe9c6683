"""zipcoll from Python: compress, decompress and inspect tensors with zipcoll's lossless codecs,
and run a compressing communicator's collectives (all_reduce, all_gather, reduce_scatter,
all_to_all, broadcast, reduce, send/recv) on torch tensors and numpy arrays.

    import zipcoll
    data = zipcoll.compress(x, codec="expans")          # x: a torch tensor or numpy array
    y = zipcoll.decompress(data, out=torch.empty_like(x))  # bit for bit
    zipcoll.inspect(x)["ratios"]                        # every codec's ratio

    uid = zipcoll.UniqueId()                            # on one rank; its bytes to the others
    comm = zipcoll.Communicator(uid, rank, nranks, device="cuda:0", compression="auto")
    comm.all_reduce(grads)                              # on the tensor's current stream
    comm.synchronize()

Every error is a ``zipcoll.Error``: ``InvalidArgumentError``, ``CorruptFrameError``,
``TimeoutError``, ``RemoteError``, ``AbortedError``, ``BackendError``."""

from ._codec import compress, decompress, inspect
from ._comm import Communicator
from ._zipcoll import (
    CODECS,
    DTYPES,
    AbortedError,
    BackendError,
    CorruptFrameError,
    Error,
    InvalidArgumentError,
    RemoteError,
    TimeoutError,
    UniqueId,
    __version__,
)

__all__ = [
    "compress", "decompress", "inspect", "Communicator", "UniqueId", "CODECS", "DTYPES",
    "Error", "InvalidArgumentError", "CorruptFrameError", "TimeoutError", "RemoteError",
    "AbortedError", "BackendError", "__version__",
]
