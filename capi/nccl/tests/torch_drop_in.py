"""An unchanged torch.distributed program on zipcoll's NCCL drop-in (run on the GPU machine).

    LD_PRELOAD=path/to/libnccl.so python3 torch_drop_in.py [--ranks 2] [--steps 5]

Spawns `--ranks` processes with the "nccl" backend, on GPU `rank % devices` (two ranks share
one GPU when there is one: NCCL itself refuses that, zipcoll runs it). Each rank checks, bit for
bit against a reference this script computes from every rank's seeded inputs:

| call                              | dtypes     | reference                                   |
|-----------------------------------|------------|---------------------------------------------|
| all_reduce sum, avg               | bf16, f32  | the ranks' inputs added in rank order in f32, rounded once (avg: each times 1/ranks first) |
| all_gather_into_tensor            | bf16, f32  | the inputs concatenated                      |
| reduce_scatter_tensor sum         | bf16, f32  | this rank's block of the sum                 |
| broadcast from the last rank      | bf16       | that rank's input                            |
| send/recv around a ring (batch_isend_irecv) | bf16 | the previous rank's input                 |
| all_to_all_single                 | f32        | block r of every rank's input                |

then trains a small MLP with DistributedDataParallel for `--steps` SGD steps, each rank on its
own batch, and compares the parameters with a single-process reference that averages the ranks'
gradients the way DDP does (each divided by the number of ranks, then summed in rank order).
Which library ran is printed (`torch.cuda.nccl.version()`: zipcoll's drop-in reports 2.28.0).
Exit status 0 when every check on every rank held.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

COUNTS = [1 << 20, 12345]


def inputs(rank, count, dtype, tag):
    g = torch.Generator().manual_seed(1000 * tag + rank)
    return torch.randn(count, generator=g).to(dtype)


def summed(parts, scale=None):
    acc = torch.zeros_like(parts[0], dtype=torch.float32)
    for p in parts:
        p = p.to(torch.float32)
        acc = acc + (p * scale if scale is not None else p)
    return acc.to(parts[0].dtype)


def same_bits(got, want):
    got, want = got.cpu().contiguous(), want.cpu().contiguous()
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    view = {2: torch.int16, 4: torch.int32}[got.element_size()]
    return torch.equal(got.view(view), want.view(view))


def collectives(rank, k, dev):
    failures = []

    def check(name, got, want):
        if not same_bits(got, want):
            bad = (got.cpu().float() != want.cpu().float()).sum().item()
            # told apart: a result that is right once the device is idle arrived late (the
            # call was not ordered before the caller's stream), one that is not is wrong
            torch.cuda.synchronize(dev)
            late = same_bits(got, want)
            why = "right after a device synchronize: not ordered with the stream" if late else "wrong"
            failures.append(f"{name}: {bad} elements differ ({why})")

    for count in COUNTS:
        for dtype in (torch.bfloat16, torch.float32):
            tag = count % 997 + (dtype == torch.float32)
            xs = [inputs(r, count, dtype, tag) for r in range(k)]
            t = xs[rank].to(dev)
            dist.all_reduce(t)
            check(f"all_reduce sum {dtype} {count}", t, summed(xs))
            t = xs[rank].to(dev)
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            check(f"all_reduce avg {dtype} {count}", t, summed(xs, 1.0 / k))
            out = torch.empty(count * k, dtype=dtype, device=dev)
            dist.all_gather_into_tensor(out, xs[rank].to(dev))
            check(f"all_gather {dtype} {count}", out, torch.cat(xs))
            big = [inputs(r, count * k, dtype, tag + 7) for r in range(k)]
            out = torch.empty(count, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(out, big[rank].to(dev))
            check(f"reduce_scatter {dtype} {count}", out, summed(big)[rank * count:(rank + 1) * count])
        xs = [inputs(r, count, torch.bfloat16, 3) for r in range(k)]
        t = xs[rank].to(dev)
        dist.broadcast(t, src=k - 1)
        check(f"broadcast {count}", t, xs[k - 1])
        got = torch.empty(count, dtype=torch.bfloat16, device=dev)
        ops = [dist.P2POp(dist.isend, xs[rank].to(dev), (rank + 1) % k),
               dist.P2POp(dist.irecv, got, (rank - 1) % k)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        check(f"send/recv {count}", got, xs[(rank - 1) % k])
        xs = [inputs(r, count * k, torch.float32, 5) for r in range(k)]
        out = torch.empty(count * k, dtype=torch.float32, device=dev)
        dist.all_to_all_single(out, xs[rank].to(dev))
        check(f"all_to_all {count}", out, torch.cat([x[rank * count:(rank + 1) * count] for x in xs]))
    torch.cuda.synchronize(dev)
    return failures


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 10))


def batch(rank, step, dev):
    g = torch.Generator().manual_seed(10_000 + 100 * step + rank)
    return torch.randn(32, 64, generator=g).to(dev), torch.randint(0, 10, (32,), generator=g).to(dev)


def training(rank, k, dev, steps):
    ddp = torch.nn.parallel.DistributedDataParallel(model().to(dev), device_ids=[dev.index])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(steps):
        x, y = batch(rank, step, dev)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    # the reference: one process, every rank's gradients divided by k and summed in rank order
    ref = model().to(dev)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(steps):
        grads = []
        for r in range(k):
            x, y = batch(r, step, dev)
            ref.zero_grad()
            torch.nn.functional.cross_entropy(ref(x), y).backward()
            grads.append([p.grad.clone() for p in ref.parameters()])
        for i, p in enumerate(ref.parameters()):
            acc = torch.zeros_like(p)
            for r in range(k):
                acc = acc + grads[r][i] / k
            p.grad = acc
        ref_opt.step()
    worst = max((a - b).abs().max().item() for a, b in zip(ddp.module.parameters(), ref.parameters()))
    exact = all(same_bits(a.detach(), b.detach()) for a, b in zip(ddp.module.parameters(), ref.parameters()))
    return worst, exact


def rank_main(rank, k, port, steps, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dev = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=k)
    failures = collectives(rank, k, dev)
    worst, exact = training(rank, k, dev, steps)
    if worst > 1e-6:
        failures.append(f"training: parameters differ from the reference by up to {worst:.3g}")
    dist.barrier()
    dist.destroy_process_group()
    results.put((rank, failures, worst, exact))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--port", type=int, default=29533)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, NCCL API {torch.cuda.nccl.version()}, LD_PRELOAD={os.environ.get('LD_PRELOAD')}, "
          f"ZIPCOLL_COMPRESSION={os.environ.get('ZIPCOLL_COMPRESSION')}, {args.ranks} ranks on "
          f"{torch.cuda.device_count()} GPU(s)", flush=True)
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(r, args.ranks, args.port, args.steps, results))
             for r in range(args.ranks)]
    for p in procs:
        p.start()
    ok = True
    for _ in procs:
        rank, failures, worst, exact = results.get(timeout=600)
        print(f"rank {rank}: {len(failures)} failed checks; training max |diff| {worst:.3g}, "
              f"bit-identical parameters: {exact}", flush=True)
        for f in failures:
            print(f"rank {rank}: FAILED {f}", flush=True)
        ok &= not failures
    for p in procs:
        p.join()
        ok &= p.exitcode == 0
    print("torch drop-in:", "ok" if ok else "FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
