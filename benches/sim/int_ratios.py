"""Ratios of the integer coders on integer data of a few kinds (simulator, `zipcoll.inspect`),
as a Markdown table: each codec's ratio and Auto's pick for the network.

    bash scripts/python-test.sh   # once: builds the module into target/pyenv
    target/pyenv/bin/python benches/sim/int_ratios.py
"""

import numpy as np

import zipcoll

rng = np.random.default_rng(7)
n = 1 << 22
CASES = [
    ("i32", "token ids, uniform below 50257", rng.integers(0, 50257, n).astype(np.int32)),
    ("i32", "N(0, 100^2) rounded", np.round(rng.standard_normal(n) * 100).astype(np.int32)),
    ("u32", "counts, Poisson(1000)", rng.poisson(1000, n).astype(np.uint32)),
    ("u8", "mask, 0 or 1", rng.integers(0, 2, n).astype(np.uint8)),
    ("i8", "int8 weights, N(0, 20^2) clipped", np.clip(np.round(rng.standard_normal(n) * 20), -128, 127).astype(np.int8)),
    ("u8", "uniform bytes", rng.integers(0, 256, n).astype(np.uint8)),
]

print("| dtype | data | fixedlen | expwindow | expans | huffman | Auto's NET pick |")
print("|---|---|---|---|---|---|---|")
for dtype, what, x in CASES:
    a = zipcoll.inspect(x)
    r = a["ratios"]
    print(
        f"| {dtype} | {what} ({x.nbytes >> 20} MiB) | {r['fixedlen']:.4f} | {r['expwindow']:.4f} "
        f"| {r['expans']:.4f} | {r['huffman']:.4f} | {a['pick']} |"
    )
