# The floor under a small collective's time, two processes on one GPU (run it under MPS, as
# gpu-run.sh's `handoff` step does): what a launch costs, what a hand-off through memory both
# processes map (CUDA IPC) costs inside a kernel, and what a call of one or two hand-offs costs
# when each call is its own kernel, as zipcoll's calls are. No zipcoll code: CuPy kernels of a few
# lines, so that zipcoll's small-call times can be read against what the GPU and driver allow.
#
#   python3 handoff_latency.py [ITERS]
#
# | line      | what runs                                                              | per |
# |-----------|------------------------------------------------------------------------|-----|
# | launch    | each process: ITERS empty kernels back to back (grid x block), both at once | launch |
# | pingpong  | one kernel per process, thread 0 of each: ITERS round trips through two flags (st.release.sys / ld.acquire.sys) | round trip |
# | call1     | ITERS calls, each a kernel per process: rank 0 waits for credit (rank 1's flag >= k - 7), fences, posts k + 1; rank 1 waits for it and posts its credit (a one-step send/recv) | call |
# | call2     | as call1, then rank 0 waits for rank 1's post of the same call (two hand-offs per call, a 2-rank ring step) | call |
#
# Blocks: 1 x 32 threads and 64 x 256 (each block its own flag pair, thread 0 polls, a block
# barrier after the wait, as a block channel does). Times: CUDA events around the timed kernels
# of each process after a barrier of both, the median of 5 runs.
import multiprocessing as mp
import statistics
import sys

SRC = r"""
extern "C" __device__ unsigned ld_acq(const unsigned* p) {
    unsigned v; asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
extern "C" __device__ void st_rel(unsigned* p, unsigned v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
extern "C" __global__ void empty() {}
// flags: per block 64 u32 (256 bytes): [0] rank 0's post, [32] rank 1's post
extern "C" __global__ void pingpong(unsigned* flags, int rank, int iters) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    unsigned* mine = flags + 32 * rank;
    unsigned* theirs = flags + 32 * (1 - rank);
    for (int i = 1; i <= iters; i++) {
        if (rank == 0) { st_rel(mine, i); while (ld_acq(theirs) < (unsigned)i) {} }
        else { while (ld_acq(theirs) < (unsigned)i) {} st_rel(mine, i); }
    }
}
// call k (0-based) of `hops` hand-offs; flags of block b at flags + 64 b
extern "C" __global__ void call(unsigned* flags, int rank, unsigned k, int hops) {
    unsigned* f = flags + 64 * blockIdx.x;
    unsigned* mine = f + 32 * rank;
    unsigned* theirs = f + 32 * (1 - rank);
    if (threadIdx.x == 0) {
        if (rank == 0) {
            while (ld_acq(theirs) + 8 < k + 1) {}      // credit: 8 slots
            __threadfence_system();
            st_rel(mine, k + 1);
            if (hops == 2) while (ld_acq(theirs) < k + 1) {}
        } else {
            while (ld_acq(theirs) < k + 1) {}
            st_rel(mine, k + 1);
        }
    }
    __syncthreads();
}
"""


def worker(rank, q_handle, barrier, results, iters):
    import cupy as cp

    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    empty, pingpong, call = (mod.get_function(n) for n in ("empty", "pingpong", "call"))
    nbytes = 64 * 4 * 64
    if rank == 0:
        flags = cp.zeros(nbytes // 4, dtype=cp.uint32)
        q_handle.put(cp.cuda.runtime.ipcGetMemHandle(flags.data.ptr))
        ptr = flags.data.ptr
    else:
        handle = q_handle.get()
        ptr = cp.cuda.runtime.ipcOpenMemHandle(handle)
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    out = {}

    def reset():
        barrier.wait()
        if rank == 0:
            cp.cuda.runtime.memsetAsync(ptr, 0, nbytes, stream.ptr)
            stream.synchronize()
        barrier.wait()

    def timed(name, launch, n, per=None, before=barrier.wait):
        """5 runs of `launch(i)` for i < n, each after `before()`; the median time per `per`."""
        runs = []
        for _ in range(5):
            before()
            with stream:
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record(stream)
                for i in range(n):
                    launch(i)
                end.record(stream)
                end.synchronize()
            runs.append(cp.cuda.get_elapsed_time(start, end) * 1e3 / (per or n))
        out[name] = statistics.median(runs)

    for grid, block in ((1, 32), (64, 256)):
        timed(f"launch {grid}x{block}", lambda i: empty((grid,), (block,), (), stream=stream), iters)
    rounds = 10 * iters
    args = (cp.uint64(ptr), cp.int32(rank), cp.int32(rounds))
    timed("pingpong", lambda i: pingpong((1,), (32,), args, stream=stream), 1, per=rounds, before=reset)
    for hops in (1, 2):
        for grid, block in ((1, 32), (64, 256)):
            def one_call(k):
                call((grid,), (block,), (cp.uint64(ptr), cp.int32(rank), cp.uint32(k), cp.int32(hops)), stream=stream)
            timed(f"call{hops} {grid}x{block}", one_call, iters, before=reset)
    barrier.wait()
    if rank == 1:
        cp.cuda.runtime.ipcCloseMemHandle(ptr)
    results[rank] = out


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    ctx = mp.get_context("spawn")
    q, barrier = ctx.Queue(), ctx.Barrier(2)
    with ctx.Manager() as m:
        results = m.dict()
        ps = [ctx.Process(target=worker, args=(r, q, barrier, results, iters)) for r in range(2)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
        if any(p.exitcode for p in ps):
            sys.exit("a rank failed")
        for name in results[0]:
            vals = " / ".join(f"{results[r][name]:7.2f}" for r in range(2) if name in results[r])
            print(f"handoff {name:16s} {vals} us (rank 0 / rank 1)")


if __name__ == "__main__":
    main()
