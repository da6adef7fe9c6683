"""NCCLZ's Table I for zipcoll's interface quantizers on smooth scientific-like fields and
gradient-like data: the 8-bit symbols' ratio alone (quant), and coded by FixedLen, Huffman and
ExpAns, with the largest error, from `zipcoll inspect FILE --dtype f32 --lossy SPEC` (the
simulator; every coded stream's round trip is checked there).

    cargo build --release --bin zipcoll
    python3 benches/sim/lossy_ratios.py [path/to/zipcoll]

Fields (4 Mi f32 each, written to a temporary directory):

| field      | what                                                                      |
|------------|---------------------------------------------------------------------------|
| smooth2d   | a 2048 x 2048 Gaussian random field: white noise low-passed in Fourier space (spectrum exp(-(k/16)^2)), scaled to unit variance |
| waves3d    | a 128^3 grid of three plane waves and a Gaussian bump (a smooth simulation snapshot) |
| laplace    | i.i.d. Laplace(0, 0.01) values (heavy-tailed, like gradients)              |
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

zipcoll = sys.argv[1] if len(sys.argv) > 1 else "target/release/zipcoll"
rng = np.random.default_rng(11)

n2 = 2048
noise = rng.standard_normal((n2, n2))
kx = np.fft.fftfreq(n2) * n2
k = np.sqrt(kx[:, None] ** 2 + kx[None, :] ** 2)
smooth = np.real(np.fft.ifft2(np.fft.fft2(noise) * np.exp(-((k / 16) ** 2))))
smooth /= smooth.std()

g = np.linspace(0, 1, 128, dtype=np.float64)
x, y, z = np.meshgrid(g, g, g, indexing="ij")
waves = np.sin(6 * x + 2 * y) + 0.5 * np.cos(9 * y - 4 * z) + 0.25 * np.sin(15 * z + x)
waves += 2 * np.exp(-((x - 0.4) ** 2 + (y - 0.6) ** 2 + (z - 0.5) ** 2) / 0.02)

FIELDS = [
    ("smooth2d", smooth.astype(np.float32)),
    ("waves3d", waves.astype(np.float32)),
    ("laplace", rng.laplace(0, 0.01, 1 << 22).astype(np.float32)),
]
SPECS = ["error-bound:rel=1e-4", "error-bound:rel=1e-3", "qsgd:bits=8", "qsgd:bits=4"]


def ratio(out, name):
    m = re.search(r"^\s*" + re.escape(name) + r"\s+ratio ([0-9.]+)", out, re.M)
    return float(m.group(1)) if m else float("nan")


print("| field | quantizer | escapes | largest error | quant | +fixedlen | +huffman | +expans |")
print("|---|---|---|---|---|---|---|---|")
with tempfile.TemporaryDirectory() as tmp:
    for name, data in FIELDS:
        path = os.path.join(tmp, name + ".f32")
        data.tofile(path)
        for spec in SPECS:
            out = subprocess.run(
                [zipcoll, "inspect", path, "--dtype", "f32", "--lossy", spec], capture_output=True, text=True, check=True
            ).stdout
            lossy = re.search(r"lossy\s+\S+: (\d+) escapes .*max error (\S+)", out)
            cells = [f"{1 / ratio(out, c):.2f}x" for c in ["quant", "+fixedlen", "+huffman", "+expans"]]
            print(f"| {name} | {spec} | {lossy.group(1)} | {lossy.group(2)} | " + " | ".join(cells) + " |")
