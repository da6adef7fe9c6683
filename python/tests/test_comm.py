"""Communicators on the simulator (ranks as threads) against numpy references: data movement bit
for bit with NaN payloads, ±inf, -0.0 and subnormals, under every compression; reductions bit
for bit where their result does not depend on the order (integers, small whole numbers, min and
max)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import FLOATS, INTS, data, run_ranks

import zipcoll

COMPRESSIONS = ["off", "auto", "expans", "huffman"]
N = 3000


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


def small_whole(dtype, n, seed, most):
    """Whole numbers in -most..most as ``dtype`` (bits for bf16): with 8 for sums and 3 for
    products, exact in any order over four ranks (bf16 holds whole numbers to 256)."""
    v = np.random.default_rng(seed).integers(-most, most + 1, n).astype(np.float32)
    if dtype == "bf16":
        return (v.view(np.uint32) >> 16).astype(np.uint16)
    return v.astype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[dtype])


@pytest.mark.parametrize("nranks", [2, 3, 4])
@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("dtype", ["bf16", "f32", "f8e4m3", "i32"])
def test_data_movement_is_bit_exact(nranks, compression, dtype):
    inputs = [data(dtype, N * nranks, seed=100 * nranks + r) for r in range(nranks)]

    def body(c):
        r, k = c.rank, c.nranks
        mine = inputs[r]
        gathered = c.all_gather(mine[:N], dtype=dtype)
        a2a = c.all_to_all(mine, dtype=dtype)
        b = mine.copy() if r == 1 else np.zeros_like(mine)
        c.broadcast(b, root=1, dtype=dtype)
        got = np.zeros_like(mine[:N])
        if r == 0:
            c.send(mine[:N], peer=k - 1, dtype=dtype)
        if r == k - 1:
            c.recv(got, peer=0, dtype=dtype)
        c.synchronize()
        return gathered, a2a, b, got

    for r, (gathered, a2a, b, got) in enumerate(run_ranks(nranks, body, compression)):
        assert same_bits(gathered, np.stack([inputs[q][:N] for q in range(nranks)]))
        assert same_bits(a2a, np.concatenate([inputs[q][r * N:(r + 1) * N] for q in range(nranks)]))
        assert same_bits(b, inputs[1])
        if r == nranks - 1:
            assert same_bits(got, inputs[0][:N])


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("np_dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
def test_integer_average_is_the_wrapped_sum_divided_toward_zero(nranks, np_dtype):
    info = np.iinfo(np_dtype)
    rng = np.random.default_rng(7)
    xs = [rng.integers(info.min, info.max, size=64, dtype=np_dtype, endpoint=True) for _ in range(nranks)]
    for x in xs:
        x[:4] = [info.min, info.max, 0, info.max if info.min == 0 else -1]
    # Python integers: the sum wrapped to the type, then divided toward zero (as NCCL)
    bits = 8 * np.dtype(np_dtype).itemsize
    wrapped = [sum(int(x[i]) for x in xs) % (1 << bits) for i in range(64)]
    if info.min < 0:
        wrapped = [w - (1 << bits) if w > info.max else w for w in wrapped]
    want = np.array([abs(w) // nranks * (1 if w >= 0 else -1) for w in wrapped], dtype=np_dtype)

    def body(c):
        x = xs[c.rank].copy()
        c.all_reduce(x, op="avg")
        c.synchronize()
        return x

    for got in run_ranks(nranks, body):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("nranks", [2, 4])
@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32", "f64"])
@pytest.mark.parametrize("op", ["sum", "prod", "avg"])
def test_exact_float_reductions(nranks, dtype, op):
    xs = [small_whole(dtype, N * nranks, seed=r, most=3 if op == "prod" else 8) for r in range(nranks)]
    ref = [x if dtype != "bf16" else (x.astype(np.uint32) << 16).view(np.float32) for x in xs]
    want = {"sum": sum(ref), "prod": np.prod(ref, axis=0), "avg": sum(r / nranks for r in ref)}[op]
    want = want.astype(np.float32)
    as_dtype = (want.view(np.uint32) >> 16).astype(np.uint16) if dtype == "bf16" else want.astype(xs[0].dtype)

    def body(c):
        x = xs[c.rank].copy()
        c.all_reduce(x, op=op, dtype=dtype)
        scattered = c.reduce_scatter(xs[c.rank], op=op, dtype=dtype)
        root = xs[c.rank].copy()
        c.reduce(root, root=0, op=op, dtype=dtype)
        c.synchronize()
        return x, scattered, root

    for r, (x, scattered, root) in enumerate(run_ranks(nranks, body, "auto")):
        assert same_bits(x, as_dtype)
        assert same_bits(scattered, as_dtype[r * N:(r + 1) * N])
        assert same_bits(root, as_dtype if r == 0 else xs[r])


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
def test_integer_reductions_wrap_as_numpy(dtype, op):
    nranks = 3
    xs = [data(dtype, 999, seed=7 + r) for r in range(nranks)]
    fn = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}[op]
    want = xs[0]
    for x in xs[1:]:
        want = fn(want, x)

    def body(c):
        out = np.empty_like(xs[c.rank])
        c.all_reduce(xs[c.rank], op=op, out=out)
        c.synchronize()
        return out

    for got in run_ranks(nranks, body, "auto"):
        assert same_bits(got, want)


@pytest.mark.parametrize("dtype", FLOATS)
def test_min_max_agree_across_ranks(dtype):
    """Every rank gets the same min and max, bit for bit (NaNs and signed zeros included); where
    numpy has the dtype and the values are finite and non-zero, numpy's."""
    nranks = 4
    xs = [data(dtype, N, seed=50 + r) for r in range(nranks)]

    def body(c):
        lo, hi = xs[c.rank].copy(), xs[c.rank].copy()
        c.all_reduce(lo, op="min", dtype=dtype)
        c.all_reduce(hi, op="max", dtype=dtype)
        c.synchronize()
        return lo, hi

    results = run_ranks(nranks, body, "expans")
    for lo, hi in results:
        assert same_bits(lo, results[0][0]) and same_bits(hi, results[0][1])
    if dtype in ("f16", "f32"):
        stack = np.stack(xs).view({"f16": np.float16, "f32": np.float32}[dtype])
        plain = (np.isfinite(stack) & (stack != 0)).all(axis=0)
        lo, hi = (v.view(stack.dtype) for v in results[0])
        assert np.array_equal(lo[plain], stack.min(axis=0)[plain])
        assert np.array_equal(hi[plain], stack.max(axis=0)[plain])


def test_argument_errors_leave_the_communicator_usable():
    def body(c):
        x = np.ones(64, np.float32)
        bad = [
            lambda: c.all_reduce(x, op="xor"),
            lambda: c.all_reduce(x, dtype="bf16"),
            lambda: c.all_reduce(x, out=np.empty(10, np.float32)),
            lambda: c.all_reduce(x, out=np.empty(64, np.float16)),
            lambda: c.all_gather(x, out=np.empty(64, np.float32)),
            lambda: c.reduce_scatter(np.ones(63, np.float32)),
            lambda: c.all_to_all(np.ones(63, np.float32)),
            lambda: c.broadcast(x, root=9),
            lambda: c.send(x, peer=c.rank),
            lambda: c.recv(x, peer=5),
            lambda: c.all_reduce(np.ones(4, np.float32)[::2]),
            lambda: c.all_reduce(b"\0" * 16, dtype="f32"),
            lambda: c.all_gather(x, out=x),
        ]
        errors = []
        for call in bad:
            with pytest.raises(zipcoll.InvalidArgumentError) as e:
                call()
            errors.append(str(e.value))
        c.all_reduce(x)
        c.synchronize()
        return x, errors

    for x, errors in run_ranks(2, body):
        assert np.array_equal(x, np.full(64, 2, np.float32))
        assert all(errors)


def test_abort_then_calls_raise_aborted():
    def body(c):
        c.barrier()
        c.abort()
        with pytest.raises(zipcoll.AbortedError):
            c.synchronize()
        with pytest.raises(zipcoll.AbortedError):
            c.all_reduce(np.ones(8, np.float32))
        return True

    assert run_ranks(2, body) == [True, True]


def test_unique_id_bytes_round_trip():
    uid = zipcoll.UniqueId()
    assert zipcoll.UniqueId.from_bytes(uid.to_bytes()) == uid == zipcoll.UniqueId.from_bytes(bytes(uid))
    for junk in [b"", b"zc1-xyz", b"\xff\xfe"]:
        with pytest.raises(zipcoll.InvalidArgumentError):
            zipcoll.UniqueId.from_bytes(junk)


def test_communicator_settings_and_errors():
    with pytest.raises(zipcoll.InvalidArgumentError):
        zipcoll.Communicator(zipcoll.UniqueId(), 0, 1, device="sim", compression="gzip")
    with pytest.raises(zipcoll.InvalidArgumentError):
        zipcoll.Communicator(zipcoll.UniqueId(), 0, 1, device="quantum")
    c = zipcoll.Communicator(zipcoll.UniqueId(), 0, 1, device="sim", compression="huffman")
    assert (c.rank, c.nranks, c.device, c.compression) == (0, 1, "sim", "huffman")
    x = np.arange(10, dtype=np.float32)
    assert np.array_equal(c.all_reduce(x.copy()), x)


@pytest.mark.parametrize("nranks", [2, 3])
def test_lossy_all_reduce_stays_within_nranks_times_the_bound(nranks):
    eb = 0.1  # coarse enough that a sum of nranks levels fits the 8-bit levels
    inputs = [np.random.default_rng(40 + r).normal(0, 2, N).astype(np.float32) for r in range(nranks)]
    exact = np.sum(np.stack(inputs).astype(np.float64), axis=0)

    def body(c):
        assert c.lossy == "error-bound:abs=0.1"
        summed = c.all_reduce(inputs[c.rank].copy())
        ints = c.all_reduce(np.arange(N, dtype=np.int32))  # integers travel exactly
        c.synchronize()
        return summed, ints

    for summed, ints in run_ranks(nranks, body, lossy=f"error-bound:abs={eb}"):
        err = np.abs(summed.astype(np.float64) - exact)
        ulp = np.spacing(np.abs(summed)).astype(np.float64)
        assert np.all(err <= nranks * eb + ulp), err.max()
        assert err.max() > eb / 8  # quantized, not exact
        assert np.array_equal(ints, nranks * np.arange(N, dtype=np.int32))
    with pytest.raises(zipcoll.InvalidArgumentError):
        zipcoll.Communicator(zipcoll.UniqueId(), 0, 1, device="sim", lossy="error-bound:abs=-1")


def run_python(code, env):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "WORLD_SIZE", "SLURM_", "OMPI_", "PMI_", "ZIPCOLL_"))}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=60)


def test_from_env_reads_the_launchers_variables():
    code = "import zipcoll; c = zipcoll.Communicator.from_env(device='sim'); print(c.rank, c.nranks)"
    out = run_python(code, {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29611"})
    assert out.returncode == 0 and out.stdout.split() == ["0", "1"], out.stderr
    out = run_python("import zipcoll\ntry: zipcoll.Communicator.from_env()\nexcept zipcoll.InvalidArgumentError: print('none')", {})
    assert out.stdout.strip() == "none", out.stderr


def test_torch_cpu_tensors_on_the_simulator():
    torch = pytest.importorskip("torch")

    def body(c):
        x = torch.full((4, 8), float(c.rank + 1), dtype=torch.bfloat16)
        c.all_reduce(x)
        g = c.all_gather(torch.arange(3, dtype=torch.float32) + c.rank)
        c.synchronize()
        return x, g

    for x, g in run_ranks(2, body):
        assert torch.equal(x, torch.full((4, 8), 3.0, dtype=torch.bfloat16))
        assert torch.equal(g, torch.stack([torch.arange(3.0), torch.arange(3.0) + 1]))
