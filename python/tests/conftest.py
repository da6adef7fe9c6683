"""Shared helpers: tensors with the values that break lossy or careless code (NaN payloads, ±inf,
-0.0, subnormals) beside normally distributed ones, and ranks run as threads (the simulator's
ranks share one process)."""

import threading

import numpy as np
import pytest

import zipcoll

FLOATS = ["bf16", "f16", "f32", "f8e4m3", "f8e5m2"]
INTS = ["i8", "u8", "i32", "u32", "i64", "u64"]

# per float dtype: (bits dtype, special values' bits: NaN payloads, ±inf, -0.0, subnormals, ±max)
SPECIAL = {
    "f32": (np.uint32, [0x7FC00001, 0xFFA12345, 0x7F800001, 0x7F800000, 0xFF800000, 0x80000000, 0x00000001, 0x807FFFFF, 0x7F7FFFFF]),
    "bf16": (np.uint16, [0x7FC1, 0xFF81, 0x7F80, 0xFF80, 0x8000, 0x0001, 0x807F, 0x7F7F]),
    "f16": (np.uint16, [0x7E01, 0xFC01, 0x7C00, 0xFC00, 0x8000, 0x0001, 0x83FF, 0x7BFF]),
    "f8e4m3": (np.uint8, [0x7F, 0xFF, 0x80, 0x01, 0x87, 0x7E]),
    "f8e5m2": (np.uint8, [0x7D, 0xFE, 0x7C, 0xFC, 0x80, 0x01, 0x83, 0x7B]),
}


def normal_bits(dtype, n, rng):
    """``n`` elements of ``dtype`` near N(0, 1), as the numpy array of their bits (or values)."""
    x = rng.standard_normal(n)
    if dtype == "f32":
        return x.astype(np.float32).view(np.uint32)
    if dtype == "bf16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if dtype == "f16":
        return x.astype(np.float16).view(np.uint16)
    if dtype == "f8e5m2":  # the top byte of an f16
        return (x.astype(np.float16).view(np.uint16) >> 8).astype(np.uint8)
    if dtype == "f8e4m3":
        exp = np.clip(7 + np.round(np.log2(np.abs(x) + 1e-9)), 0, 15).astype(np.uint8)
        return ((x < 0).astype(np.uint8) << 7) | (exp << 3) | rng.integers(0, 8, n, dtype=np.uint8)
    raise ValueError(dtype)


def float_data(dtype, n, seed):
    """Normal values, a run of random bit patterns, and every special value, shuffled in."""
    rng = np.random.default_rng(seed)
    bits_t, special = SPECIAL[dtype]
    x = normal_bits(dtype, n, rng).astype(bits_t)
    k = max(n // 16, 1)
    x[:k] = rng.integers(0, np.iinfo(bits_t).max, k, dtype=bits_t, endpoint=True)
    pos = rng.choice(n, size=min(len(special) * 4, n), replace=False)
    x[pos] = np.resize(np.array(special, dtype=bits_t), len(pos))
    return x


HOLDERS = {"i8": np.int8, "u8": np.uint8, "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64, "f64": np.float64}


def int_data(dtype, n, seed):
    """Random bits as ``dtype`` (an integer, or f64: every pattern, NaN payloads included)."""
    holder = np.dtype(HOLDERS[dtype])
    bits = np.random.default_rng(seed).integers(0, 2**63 - 1, n, dtype=np.int64).astype(np.uint64)
    return bits.astype(np.dtype(f"u{holder.itemsize}")).view(holder)


def data(dtype, n, seed):
    return float_data(dtype, n, seed) if dtype in FLOATS else int_data(dtype, n, seed)


def run_ranks(nranks, body, compression="auto", lossy=None):
    """Runs ``body(comm)`` on every rank of a simulated communicator (``lossy``: its lossy
    policy), one thread each; returns the results in rank order, raising the first rank's
    exception."""
    uid = zipcoll.UniqueId()
    results, errors = [None] * nranks, [None] * nranks

    def rank(r):
        try:
            comm = zipcoll.Communicator(uid.to_bytes(), r, nranks, device="sim", compression=compression, lossy=lossy)
            results[r] = body(comm)
        except BaseException as e:  # reported below, in the main thread
            errors[r] = e

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(nranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        if e is not None:
            raise e
    return results


@pytest.fixture
def ranks():
    return run_ranks
