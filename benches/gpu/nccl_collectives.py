# NCCL (torch.distributed) on the same machine as zipcoll's GPU runs, one process per GPU:
#
#   python3 nccl_collectives.py compare DUMP_DIR   # NCCL on the inputs `zipcoll-comm check --dump` wrote;
#                                                  # zipcoll's outputs must be within float tolerance
#   python3 nccl_collectives.py bench TAG SIZES    # bf16 all_reduce / all_gather / send-recv, median time
#
# `bench` prints one line per size like zipcoll-comm's: algbw and busbw (nccl-tests' formulas).
# For NCCL's socket transport run it with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
# NCCL_SOCKET_IFNAME=lo (and NCCL_SOCKET_NTHREADS / NCCL_NSOCKS_PERTHREAD).
import os, sys, glob, statistics, numpy as np, torch, torch.distributed as dist, torch.multiprocessing as mp

DT = {"Bf16": torch.bfloat16, "F32": torch.float32}

def load(path, dtype):
    raw = np.fromfile(path, dtype=np.uint8)
    return torch.from_numpy(raw.copy()).view(dtype)

def compare(rank, world, root):
    ok = True
    for d in sorted(glob.glob(os.path.join(root, "*"))):
        name, dname = os.path.basename(d).split("__")
        dt = DT[dname]
        x = load(os.path.join(d, f"rank{rank}.in"), dt).cuda()
        ours = load(os.path.join(d, f"rank{rank}.out"), dt).cuda()
        n = x.numel()
        if name == "all_reduce_ring" or name == "all_reduce_twoshot":
            y = x.clone(); dist.all_reduce(y)
        elif name == "all_gather":
            y = torch.empty(n * world, dtype=dt, device="cuda"); dist.all_gather_into_tensor(y, x)
        elif name == "reduce_scatter":
            y = torch.empty(n // world, dtype=dt, device="cuda"); dist.reduce_scatter_tensor(y, x)
        elif name.startswith("reduce_root"):
            r = int(name[len("reduce_root"):]); y = x.clone(); dist.reduce(y, r)
            if rank != r: y = torch.zeros_like(x)
        elif name.startswith("broadcast_root"):
            r = int(name[len("broadcast_root"):]); y = x.clone(); dist.broadcast(y, r)
        elif name == "all_to_all":
            y = torch.empty_like(x); dist.all_to_all_single(y, x)
        elif name == "send_recv_shift":
            y = torch.empty_like(x)
            reqs = [dist.isend(x, (rank + 1) % world), dist.irecv(y, (rank - 1) % world)]
            for q in reqs: q.wait()
        else:
            continue
        torch.cuda.synchronize()
        a, b = ours.float(), y.float()
        finite = torch.isfinite(a) & torch.isfinite(b)
        same_nonfinite = bool(((~torch.isfinite(a)) == (~torch.isfinite(b))).all())
        tol = 2e-2 if dt == torch.bfloat16 else 1e-5
        err = ((a - b).abs() / (b.abs() + 1e-3))[finite]
        worst = float(err.max()) if err.numel() else 0.0
        good = same_nonfinite and worst <= tol
        ok &= good
        if rank == 0:
            print(f"compare {name:18s} {dname:5s} n={n:9d} max rel err {worst:.3e} (tol {tol:g}), "
                  f"non-finite positions {'equal' if same_nonfinite else 'DIFFER'}: {'ok' if good else 'FAILED'}", flush=True)
    return ok

def timed(f, iters):
    for _ in range(3): f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    return statistics.median(ts)

def bench(rank, world, tag, sizes):
    for nbytes in sizes:
        n = nbytes // 2
        x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(n * world, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        iters = 20 if nbytes <= (64 << 20) else 5
        ar = timed(lambda: dist.all_reduce(x), iters)
        ag = timed(lambda: dist.all_gather_into_tensor(out, x), iters)
        def sr():
            if rank == 0: dist.send(x, 1)
            elif rank == 1: dist.recv(y, 0)
        dist.barrier()
        srt = timed(sr, iters)
        if rank == 0:
            bus = 2 * (world - 1) / world
            print(f"nccl {tag} {world} ranks size {nbytes >> 20:6d} MiB: all_reduce {ar*1e3:8.3f} ms algbw {nbytes/ar/1e9:7.2f} GB/s "
                  f"busbw {nbytes/ar/1e9*bus:7.2f} | all_gather {ag*1e3:8.3f} ms algbw {nbytes*world/ag/1e9:7.2f} GB/s "
                  f"busbw {nbytes*world/ag/1e9*(world-1)/world:7.2f} | send/recv {srt*1e3:8.3f} ms {nbytes/srt/1e9:7.2f} GB/s", flush=True)

def main(rank, world, argv, result):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29517")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    ok = True
    if argv[0] == "compare":
        ok = compare(rank, world, argv[1])
    else:
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        sizes = [int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s) for s in argv[2].split(",")]
        bench(rank, world, argv[1], sizes)
    result[rank] = int(ok)
    dist.destroy_process_group()

if __name__ == "__main__":
    world = torch.cuda.device_count()
    result = mp.Manager().dict()
    mp.spawn(main, args=(world, sys.argv[1:], result), nprocs=world)
    sys.exit(0 if all(result.get(r, 0) for r in range(world)) else 1)
