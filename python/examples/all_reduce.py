"""zipcoll from Python on the simulator: compress a tensor and get it back bit for bit, see what
each codec does to it, then all-reduce numpy arrays over four simulated ranks (threads of this
process; on GPUs, one process per rank with torch CUDA tensors and device="cuda:N")."""

import threading

import numpy as np

import zipcoll

x = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)
packed = zipcoll.compress(x, codec="expans")
assert np.array_equal(zipcoll.decompress(packed).view(np.uint32), x.view(np.uint32))
report = zipcoll.inspect(x)
print(f"expans: {len(packed) / x.nbytes:.4f} of the bytes; entropy bound {report['entropy_ratio']:.4f}")
print("ratios:", {c: round(r, 4) for c, r in report["ratios"].items()}, "pick for the network:", report["pick"])

nranks, count = 4, 100_000
uid = zipcoll.UniqueId()  # one rank makes it; its bytes (uid.to_bytes()) go to the others
sums = [None] * nranks


def rank(r):
    comm = zipcoll.Communicator(uid, r, nranks, device="sim", compression="auto")
    buf = np.full(count, r + 1, dtype=np.float32)
    comm.all_reduce(buf)  # in place; asynchronous as NCCL's
    comm.synchronize()  # waits, and raises a failure if there was one
    sums[r] = buf


threads = [threading.Thread(target=rank, args=(r,)) for r in range(nranks)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert all(np.array_equal(s, np.full(count, 10.0, np.float32)) for s in sums)
print(f"all_reduce over {nranks} simulated ranks: every element is {sums[0][0]}")
