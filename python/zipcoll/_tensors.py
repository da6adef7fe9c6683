"""Tensors as zipcoll takes them: whatever the caller passes (a torch tensor, a numpy array, an
object with ``__cuda_array_interface__`` or ``__dlpack__``, bytes) becomes a :class:`View`: its
memory (address, bytes, whether it is CUDA memory), its dtype's name, its shape, and on CUDA the
stream its data is ordered on."""

import numpy as np

from ._zipcoll import InvalidArgumentError

# dtype names the host knows, and the names people write for them
_ALIASES = {
    "bf16": "bf16", "bfloat16": "bf16",
    "f16": "f16", "float16": "f16", "half": "f16",
    "f32": "f32", "float32": "f32", "float": "f32",
    "f64": "f64", "float64": "f64", "double": "f64",
    "f8e4m3": "f8e4m3", "float8_e4m3fn": "f8e4m3", "e4m3": "f8e4m3",
    "f8e5m2": "f8e5m2", "float8_e5m2": "f8e5m2", "e5m2": "f8e5m2",
    "i8": "i8", "int8": "i8", "u8": "u8", "uint8": "u8",
    "i32": "i32", "int32": "i32", "u32": "u32", "uint32": "u32",
    "i64": "i64", "int64": "i64", "u64": "u64", "uint64": "u64",
}

# the numpy dtype that holds each dtype's elements (bf16 and fp8 as their bits)
HOLDER = {
    "bf16": np.uint16, "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "f8e4m3": np.uint8, "f8e5m2": np.uint8,
    "i8": np.int8, "u8": np.uint8, "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
}


def dtype_name(d):
    """The host's name of ``d``: a name (``"bf16"``, ``"bfloat16"``, ...), a numpy dtype or a
    torch dtype."""
    if isinstance(d, str):
        key = d
    elif type(d).__module__ == "torch":
        key = str(d).removeprefix("torch.")
    else:
        key = np.dtype(d).name
    name = _ALIASES.get(key.strip().lower())
    if name is None:
        raise InvalidArgumentError(f"unknown or unsupported dtype {d!r} (zipcoll takes {sorted(set(_ALIASES.values()))})")
    return name


def itemsize(name):
    return np.dtype(HOLDER[name]).itemsize


def is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


class View:
    """One tensor's memory and what it holds."""

    def __init__(self, obj, ptr, nbytes, dtype, shape, cuda=None, stream=None, sync=None):
        self.obj = obj  # what keeps the memory alive
        self.ptr, self.nbytes, self.dtype, self.shape = ptr, nbytes, dtype, tuple(shape)
        self.cuda = cuda  # None: host memory; else the CUDA device's index (-1: not known)
        self.stream = stream  # the CUstream its data is ordered on (0: the legacy default)
        self.sync = sync  # waits on the host for `stream` (for the legacy default stream)

    @property
    def mem(self):
        return (self.ptr, self.nbytes, self.cuda is not None)

    @property
    def device(self):
        """Where the codecs run for it: ``cuda:N`` or the simulator (``None``)."""
        return f"cuda:{self.cuda}" if self.cuda is not None and self.cuda >= 0 else None


def _checked_dtype(native, size, dtype):
    """The name of ``native`` (a numpy or torch dtype of ``size``-byte elements), or the caller's
    ``dtype`` if it has elements of that size (e.g. numpy ``uint16`` as ``bf16``)."""
    if dtype is None:
        return dtype_name(native)
    want = dtype_name(dtype)
    if itemsize(want) != size:
        raise InvalidArgumentError(f"dtype {want} does not fit elements of {native}")
    return want


def _torch_view(t, dtype, writable):
    import torch

    if not t.is_contiguous():
        if writable:
            raise InvalidArgumentError("the output tensor must be contiguous")
        t = t.contiguous()
    name = _checked_dtype(t.dtype, t.element_size(), dtype)
    nbytes = t.numel() * t.element_size()
    if t.is_cuda:
        stream = torch.cuda.current_stream(t.device)
        return View(t, t.data_ptr(), nbytes, name, t.shape, t.device.index, stream.cuda_stream, stream.synchronize)
    if t.device.type != "cpu":
        raise InvalidArgumentError(f"tensors on {t.device} are not supported (cpu and cuda are)")
    return View(t, t.data_ptr(), nbytes, name, t.shape)


def _numpy_view(a, dtype, writable):
    if not a.flags.c_contiguous:
        if writable:
            raise InvalidArgumentError("the output array must be C-contiguous")
        a = np.ascontiguousarray(a)
    if writable and not a.flags.writeable:
        raise InvalidArgumentError("the output array is read-only")
    name = _checked_dtype(a.dtype, a.itemsize, dtype)
    return View(a, a.__array_interface__["data"][0], a.nbytes, name, a.shape)


def _cai_view(x, dtype, writable):
    cai = x.__cuda_array_interface__
    shape, typestr = tuple(cai["shape"]), cai["typestr"]
    name = _checked_dtype(np.dtype(typestr), np.dtype(typestr).itemsize, dtype)
    if cai.get("strides") not in (None, tuple(np.empty(shape, dtype=typestr).strides)):
        raise InvalidArgumentError("__cuda_array_interface__ objects must be C-contiguous")
    ptr, read_only = cai["data"]
    if writable and read_only:
        raise InvalidArgumentError("the output object is read-only")
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(typestr).itemsize
    stream = cai.get("stream")
    if stream in (1, 2):  # the legacy and per-thread default streams: wait for them on the host
        import torch

        return View(x, ptr, nbytes, name, shape, -1, 0, torch.cuda.synchronize)
    return View(x, ptr, nbytes, name, shape, -1, stream)


def view(x, dtype=None, writable=False):
    """``x`` as a :class:`View` (``writable``: the call writes it, so no copy may stand in)."""
    if isinstance(x, View):
        return x
    if is_torch(x):
        return _torch_view(x, dtype, writable)
    if isinstance(x, np.ndarray):
        return _numpy_view(x, dtype, writable)
    if hasattr(x, "__cuda_array_interface__"):
        return _cai_view(x, dtype, writable)
    if hasattr(x, "__dlpack__"):
        try:
            import torch

            return _torch_view(torch.from_dlpack(x), dtype, writable)
        except ImportError:
            return _numpy_view(np.from_dlpack(x), dtype, writable)
    if isinstance(x, (bytes, bytearray, memoryview)):
        if dtype is None:
            raise InvalidArgumentError("bytes need a dtype")
        if writable and isinstance(x, bytes):
            raise InvalidArgumentError("bytes are read-only: pass a bytearray or an array")
        name = dtype_name(dtype)
        return _numpy_view(np.frombuffer(x, dtype=HOLDER[name]), name, writable)
    if writable:
        raise InvalidArgumentError(f"cannot write into a {type(x).__name__}")
    return _numpy_view(np.asarray(x), dtype, False)


def host_bytes(v):
    """The elements of ``v`` as bytes in host memory (CUDA tensors are copied on their stream)."""
    x = v.obj
    if is_torch(x):
        import torch

        return x.detach().contiguous().reshape(-1).view(torch.uint8).cpu().numpy().tobytes()
    if isinstance(x, np.ndarray):
        return x.tobytes()
    import torch

    return torch.as_tensor(x, device="cuda").reshape(-1).view(torch.uint8).cpu().numpy().tobytes()


def write(v, raw):
    """Copies the element bytes ``raw`` into ``v`` (on a CUDA tensor's stream)."""
    if len(raw) != v.nbytes:
        raise InvalidArgumentError(f"the output holds {v.nbytes} bytes, the data {len(raw)}")
    if not raw:
        return
    x = v.obj
    if is_torch(x):
        import torch

        src = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
        x.reshape(-1).view(torch.uint8).copy_(src, non_blocking=False)
    elif isinstance(x, np.ndarray):
        np.copyto(x.reshape(-1).view(np.uint8), np.frombuffer(raw, dtype=np.uint8))
    else:
        raise InvalidArgumentError(f"cannot write into a {type(x).__name__}: pass a torch tensor or a numpy array")


def empty(v, shape):
    """A new tensor like ``v``'s object (torch or numpy; bytes give numpy) of ``shape``."""
    x = v.obj
    if is_torch(x):
        import torch

        return torch.empty(shape, dtype=x.dtype, device=x.device)
    if isinstance(x, np.ndarray):
        return np.empty(shape, dtype=x.dtype)
    if v.cuda is not None:
        import torch

        return torch.empty(shape, dtype=torch.as_tensor(x, device="cuda").dtype, device="cuda")
    return np.empty(shape, dtype=HOLDER[v.dtype])
