"""The Python module on a CUDA GPU with torch (not a pytest file: run it on the GPU machine).

Two ranks (spawned processes) on cuda:0, for compression off, expans and auto: compress/decompress
round trips of CUDA bf16 tensors with every codec (on the GPU's codec kernels), then all_reduce,
all_gather, reduce_scatter, broadcast and send/recv on bf16 tensors on a side stream and on the
default stream, each checked bit for bit against torch's own computation. Prints
"python gpu: ok" at the end; exits non-zero on any mismatch or error.

    ZIPCOLL_CUDA_MODULE=/path/zipcoll.sm_90.cubin python gpu_torch.py

``ZIPCOLL_CUDA_MODULE`` (read by the library in every process) loads a prebuilt module, so a
wheel built without GPU architectures runs here; without it the wheel must embed the GPU's
architecture (``ZIPCOLL_GPU_ARCHS=sm_90`` at build time)."""

import os
import sys

import torch
import torch.multiprocessing as mp

import zipcoll

NRANKS = 2
COMPRESSIONS = ["off", "expans", "auto"]
N = 1 << 20  # elements per rank: frames of several MiB, so the codecs engage


def bits(t):
    return t.view(torch.int16)


def check(what, got, want):
    if got.shape != want.shape or not torch.equal(bits(got), bits(want)):
        diff = (bits(got) != bits(want)).nonzero()
        raise SystemExit(f"MISMATCH {what}: {diff.numel()} elements differ, first at {diff[:1].tolist()}")


def tensor(seed, n=N, special=False):
    """N(0, 1) bf16 (with NaN payloads, ±inf, -0.0 and subnormals when ``special``) on cuda:0."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g).to(torch.bfloat16)
    if special:
        odd = torch.tensor([0x7FC1, -0x7F, 0x7F80, -0x80, -0x8000, 0x0001, -0x7F81], dtype=torch.int16)
        x.view(torch.int16)[: odd.numel() * 64] = odd.repeat(64)
    return x.cuda()


def round_trips(rank):
    x = tensor(1000 + rank, special=True)
    for codec in zipcoll.CODECS + ["auto"]:
        packed = zipcoll.compress(x, codec=codec)
        check(f"compress/decompress {codec}", zipcoll.decompress(packed, out=torch.empty_like(x)), x)
    ratio = len(zipcoll.compress(x, codec="expans")) / (2 * x.numel())
    if rank == 0:
        print(f"round trips ok; expans ratio {ratio:.4f} on cuda; inspect pick: {zipcoll.inspect(x)['pick']}")


def collectives(comm, rank, label):
    peer_inputs = [tensor(10 * r + 1) for r in range(NRANKS)]
    mine = peer_inputs[rank]
    total = sum(t.float() for t in peer_inputs).to(torch.bfloat16)  # torch's bf16 add of two ranks

    x = mine.clone()
    comm.all_reduce(x)
    y = comm.all_reduce(mine, out=torch.empty_like(mine))
    gathered = comm.all_gather(tensor(100 + rank, special=True))
    scattered = comm.reduce_scatter(mine)
    b = tensor(7, special=True) if rank == 0 else torch.zeros(N, dtype=torch.bfloat16, device="cuda")
    comm.broadcast(b, root=0)
    got = torch.zeros(N, dtype=torch.bfloat16, device="cuda")
    if rank == 0:
        comm.send(tensor(300, special=True), peer=1)
    else:
        comm.recv(got, peer=0)
    torch.cuda.current_stream().synchronize()  # the calls are ordered with the tensors' stream

    check(f"{label} all_reduce in place", x, total)
    check(f"{label} all_reduce out of place", y, total)
    check(f"{label} all_gather", gathered, torch.stack([tensor(100 + r, special=True) for r in range(NRANKS)]))
    check(f"{label} reduce_scatter", scattered, total.view(NRANKS, -1)[rank])
    check(f"{label} broadcast", b, tensor(7, special=True))
    if rank == 1:
        check(f"{label} send/recv", got, tensor(300, special=True))


def rank_main(rank, uids):
    torch.cuda.set_device(0)
    for compression, uid in zip(COMPRESSIONS, uids):
        comm = zipcoll.Communicator(uid, rank, NRANKS, device="cuda:0", compression=compression)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            collectives(comm, rank, f"{compression}, side stream")
        collectives(comm, rank, f"{compression}, default stream")
        comm.synchronize()
        if rank == 0:
            print(f"collectives ok with compression {compression} ({comm.transport.splitlines()[0] if comm.transport else ''})")
    if rank == 0:  # after the collectives: rank 1 would otherwise wait for it in the bootstrap
        round_trips(rank)


def main():
    if not torch.cuda.is_available():
        sys.exit("gpu_torch.py needs a CUDA GPU")
    print(f"torch {torch.__version__}, zipcoll {zipcoll.__version__}, ZIPCOLL_CUDA_MODULE={os.environ.get('ZIPCOLL_CUDA_MODULE', '(unset)')}")
    uids = [zipcoll.UniqueId().to_bytes() for _ in COMPRESSIONS]  # their roots run in this process
    mp.spawn(rank_main, args=(uids,), nprocs=NRANKS, join=True)
    print("python gpu: ok")


if __name__ == "__main__":
    main()
