"""compress / decompress / inspect on the simulator."""

import os
import re
import subprocess

import numpy as np
import pytest
from conftest import FLOATS, HOLDERS, data

import zipcoll

CODECS = ["raw", "expans", "fixedlen", "huffman", "expwindow", "auto"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_is_bit_exact(dtype, codec):
    x = data(dtype, 5000, seed=len(dtype) * 31 + len(codec))
    packed = zipcoll.compress(x, codec=codec, dtype=dtype, frame_elems=1024)
    back = zipcoll.decompress(packed, dtype=dtype)
    assert back.itemsize == x.itemsize and np.array_equal(back.view(np.uint8), x.view(np.uint8))
    out = np.empty_like(x)
    assert zipcoll.decompress(packed, out=out, dtype=dtype) is out
    assert np.array_equal(out.view(np.uint8), x.view(np.uint8))


def test_codecs_shrink_normal_data():
    x = np.random.default_rng(1).standard_normal(1 << 16).astype(np.float32)
    sizes = {c: len(zipcoll.compress(x, codec=c)) for c in ["raw", "expans", "huffman"]}
    assert sizes["expans"] < 0.9 * x.nbytes and sizes["huffman"] < 0.9 * x.nbytes
    assert sizes["raw"] > x.nbytes


def test_numpy_dtypes_and_shapes_come_back():
    x = np.arange(24, dtype=np.float16).reshape(2, 3, 4) - 7.5
    back = zipcoll.decompress(zipcoll.compress(x), shape=x.shape)
    assert back.dtype == np.float16 and back.shape == (2, 3, 4) and np.array_equal(back, x)
    # bytes in, with their dtype; a non-contiguous array is read as its values
    assert np.array_equal(zipcoll.decompress(zipcoll.compress(x.tobytes(), dtype="f16")), x.reshape(-1))
    assert np.array_equal(zipcoll.decompress(zipcoll.compress(x[:, ::2])), x[:, ::2].reshape(-1))
    empty = zipcoll.decompress(zipcoll.compress(np.zeros(0, np.float32)))
    assert empty.size == 0 and empty.dtype == np.float32


@pytest.mark.parametrize("dtype", ["i8", "u8", "i32", "u32"])
@pytest.mark.parametrize("codec", CODECS)
def test_integers_round_trip_and_shrink_where_high_bits_repeat(dtype, codec):
    holder = np.dtype(HOLDERS[dtype])
    rng = np.random.default_rng(len(dtype) * 7 + len(codec))
    # magnitudes below 16 (8-bit: high nibbles 0) or 2^20 (32-bit: top byte 0), some random words
    small = rng.integers(0, 16 if holder.itemsize == 1 else 1 << 20, 8192).astype(holder)
    x = np.concatenate([small, data(dtype, 100, 5)])
    packed = zipcoll.compress(x, codec=codec, dtype=dtype, frame_elems=1024)
    back = zipcoll.decompress(packed, dtype=dtype)
    assert back.dtype == holder and np.array_equal(back.view(np.uint8), x.view(np.uint8))
    if codec not in ("raw", "auto"):  # Auto sends data this small RAW
        assert len(packed) < 0.8 * x.nbytes, (dtype, codec, len(packed) / x.nbytes)


def test_auto_codes_integers_where_it_pays():
    # 4 MiB of i32 below 2^20 (top byte 0): Auto's network plan codes it, to about 0.75
    x = np.random.default_rng(3).integers(0, 1 << 20, 1 << 20).astype(np.int32)
    packed = zipcoll.compress(x, dtype="i32")
    assert len(packed) < 0.76 * x.nbytes, len(packed) / x.nbytes
    assert np.array_equal(zipcoll.decompress(packed, dtype="i32"), x)


@pytest.mark.parametrize("dtype", ["i64", "u64", "f64"])
def test_uncoded_dtypes_are_an_argument_error(dtype):
    with pytest.raises(zipcoll.InvalidArgumentError, match="codec"):
        zipcoll.compress(data(dtype, 100, 1), dtype=dtype)


def test_argument_errors():
    x = np.ones(10, np.float32)
    for bad in [dict(codec="zstd"), dict(dtype="bf8"), dict(dtype="f16"), dict(frame_elems=0), dict(device="tpu")]:
        with pytest.raises(zipcoll.InvalidArgumentError):
            zipcoll.compress(x, **bad)
    packed = zipcoll.compress(x)
    with pytest.raises(zipcoll.InvalidArgumentError, match="f32"):
        zipcoll.decompress(packed, dtype="bf16")
    with pytest.raises(zipcoll.InvalidArgumentError, match="bytes"):
        zipcoll.decompress(packed, out=np.empty(11, np.float32))
    with pytest.raises(zipcoll.InvalidArgumentError):
        zipcoll.decompress(packed, shape=(3, 3))
    assert issubclass(zipcoll.InvalidArgumentError, zipcoll.Error)


@pytest.mark.parametrize("codec", ["raw", "expans", "huffman"])
def test_every_truncation_raises(codec):
    x = data("bf16", 300, seed=7)
    packed = zipcoll.compress(x, codec=codec, dtype="bf16", frame_elems=64)
    for cut in range(len(packed)):
        with pytest.raises(zipcoll.CorruptFrameError):
            zipcoll.decompress(packed[:cut])


@pytest.mark.parametrize("codec", ["raw", "expans", "fixedlen"])
def test_every_flipped_byte_raises(codec):
    x = data("f32", 200, seed=8)
    packed = zipcoll.compress(x, codec=codec, dtype="f32", frame_elems=64)
    for i in range(len(packed)):
        bad = bytearray(packed)
        bad[i] ^= 0x41
        with pytest.raises(zipcoll.Error) as e:
            zipcoll.decompress(bytes(bad))
        assert isinstance(e.value, (zipcoll.CorruptFrameError, zipcoll.InvalidArgumentError)), (i, e.value)


def test_garbage_raises():
    for junk in [b"", b"ZCPY", b"\0" * 64, os.urandom(1000)]:
        with pytest.raises(zipcoll.CorruptFrameError):
            zipcoll.decompress(junk)


def test_inspect_fields_are_sane():
    x = data("bf16", 1 << 15, seed=3)
    r = zipcoll.inspect(x, dtype="bf16", frame_elems=4096)
    assert r["dtype"] == "bf16" and r["elements"] == x.size and r["frame_elems"] == 4096
    assert set(r["ratios"]) == set(zipcoll.CODECS) == set(r["predicted"])
    assert 0 < r["entropy_ratio"] < 1 and r["raw_bits"] == 8 and r["word_bits"] == 16
    assert r["ratios"]["raw"] > 1
    best = min(r["ratios"][c] for c in r["ratios"] if c != "raw")
    assert r["entropy_ratio"] - 0.05 < best < 1
    assert set(r["plans"]) == {"nvlink", "net"}
    for p in r["plans"].values():
        assert p["codec"] in zipcoll.CODECS and p["reason"] and p["raw_s"] > 0
    assert r["pick"] == r["plans"]["net"]["codec"]
    with pytest.raises(zipcoll.InvalidArgumentError):
        zipcoll.inspect(np.zeros(0, np.float32))


def cli():
    path = os.environ.get("ZIPCOLL_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("ZIPCOLL_CLI names no zipcoll binary (scripts/test.sh sets it)")
    return path


def test_inspect_agrees_with_the_cli(tmp_path):
    x = data("bf16", 20000, seed=4)
    f = tmp_path / "t.bin"
    f.write_bytes(x.tobytes())
    out = subprocess.run([cli(), "inspect", str(f), "--dtype", "bf16", "--frame-elems", "4096"], capture_output=True, text=True, check=True).stdout
    r = zipcoll.inspect(x, dtype="bf16", frame_elems=4096)
    assert float(re.search(r"entropy\s+ratio (\S+)", out).group(1)) == pytest.approx(r["entropy_ratio"], abs=1e-4)
    for codec, ratio in r["ratios"].items():
        assert float(re.search(rf"{codec}\s+ratio (\S+)", out).group(1)) == pytest.approx(ratio, abs=1e-4)
    assert re.search(r"net\s+pick (\S+)", out).group(1) == r["pick"]


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(data("bf16", 3000, seed=5).view(np.int16)).view(torch.bfloat16)
    packed = zipcoll.compress(x, codec="expans")
    y = zipcoll.decompress(packed, out=torch.empty_like(x))
    assert torch.equal(y.view(torch.int16), x.view(torch.int16))
    assert zipcoll.inspect(x)["dtype"] == "bf16"
