"""``compress``, ``decompress`` and ``inspect`` on tensors: the tensor's element bytes go to the
extension's codecs, which run on the simulator, or on the tensor's GPU for a CUDA tensor."""

import numpy as np

from . import _tensors, _zipcoll
from ._zipcoll import InvalidArgumentError

FRAME_ELEMS = 65536


def _device(v, device):
    return device if device is not None else v.device


def compress(tensor, codec="auto", dtype=None, frame_elems=FRAME_ELEMS, device=None):
    """The elements of ``tensor`` compressed into ``bytes``: a 16-byte header (dtype, element
    count), then self-checking frames of ``frame_elems`` elements coded with ``codec`` (``auto``:
    the arbitration's pick for the network; ``raw``, ``expans``, ``fixedlen``, ``huffman``,
    ``expwindow``). ``dtype`` names the elements of bytes, or reinterprets an array of the same
    element size (numpy ``uint16`` as ``bf16``). The codecs take bf16, f16, f32, the fp8 types
    and i8, u8, i32, u32 (f64 and the 64-bit integers raise ``InvalidArgumentError``).
    ``device``: ``"sim"`` or ``"cuda:N"`` (default: the tensor's GPU for a CUDA tensor, else the
    simulator)."""
    v = _tensors.view(tensor, dtype)
    return _zipcoll.compress(_tensors.host_bytes(v), v.dtype, codec, frame_elems, _device(v, device))


def decompress(data, dtype=None, shape=None, out=None, device=None):
    """The elements ``compress`` made ``data`` from, bit for bit. With ``out`` (a torch tensor or
    numpy array of the same bytes) they are written there and ``out`` is returned; else a new
    numpy array of ``shape`` (default: flat) whose dtype holds them (``bf16``: ``uint16`` bits,
    fp8: ``uint8`` bits). ``dtype``, if given, must be the compressed one. Raises
    ``CorruptFrameError`` for data that does not decode (a frame rejected, data cut short)."""
    want = None if dtype is None else _tensors.dtype_name(dtype)
    target = None if out is None else _tensors.view(out, want, writable=True)
    if target is not None and want is None:
        want = target.dtype
    where = device if device is not None else (target.device if target is not None else None)
    raw, found = _zipcoll.decompress(bytes(data), want, where)
    if target is not None:
        _tensors.write(target, raw)
        return out
    arr = np.frombuffer(raw, dtype=_tensors.HOLDER[found]).copy()
    if shape is not None:
        shape = tuple(shape) if np.iterable(shape) else (shape,)
        if int(np.prod(shape, dtype=np.int64)) != arr.size:
            raise InvalidArgumentError(f"shape {shape} does not hold {arr.size} elements")
        arr = arr.reshape(shape)
    return arr


def inspect(tensor, dtype=None, frame_elems=FRAME_ELEMS, device=None):
    """What compression does to ``tensor``: a dict with ``ratios`` (each codec's compressed bytes
    over the data, round trip checked bit for bit), ``entropy_ratio`` (the order-0 bound of the
    exponent symbols), ``predicted`` (the arbitration's predicted ratios), ``plans`` (its pick and
    reason on ``nvlink`` and ``net``) and ``pick`` (the network's codec); as ``zipcoll inspect``
    prints for a file."""
    v = _tensors.view(tensor, dtype)
    return _zipcoll.inspect(_tensors.host_bytes(v), v.dtype, frame_elems, _device(v, device))
