#!/usr/bin/env bash
# Runs zipcoll's GPU checks and benchmarks on a machine with an NVIDIA GPU, from binaries built
# elsewhere (the GPU machine has no Rust): `bash scripts/gpu-pack.sh` on the build machine packs
# them into .gpu/bin.tar.zst, then this script runs there. Logs go to $OUT/logs.tgz (default ./gpu-out).
#
# | step        | what                                                                        |
# |-------------|-----------------------------------------------------------------------------|
# | example     | reduce_copy + warp_all_reduce, every dtype x op, GPU vs simulator bit for bit |
# | sanitizer   | the same, small, under compute-sanitizer memcheck                           |
# | sanitizer_codec | the codec crosscheck, small, under compute-sanitizer memcheck           |
# | crosscheck  | every dtype x codec: GPU frames == sim frames; GPU<->sim decode              |
# | tensors     | a small GPT trained a few steps: weights, gradients, activations            |
# | bench       | zipcoll-bench codec on N(0,1) and the tensors; nvCOMP ANS/Bitcomp on the same |
# | inspect     | `zipcoll inspect --gpu` over the tensors                                    |
# | comm        | the all_reduce example on every GPU; `zipcoll-comm check` over P2P and NET (bit for bit vs the reference and the simulator), NCCL on the same inputs within float tolerance; `zipcoll-comm kill` over both |
# | torch_nccl  | capi/nccl/tests/torch_drop_in.py (torch.distributed collectives bit for bit, then DDP training against a one-process reference) with zipcoll's libnccl.so in LD_PRELOAD, once per ZIPCOLL_COMPRESSION of TORCH_COMPRESSIONS (default `off expans auto`; COMM_RANKS ranks, default 2) |
# | device_fns  | device/fns/examples: a CUDA C++ program's kernels (nvcc, -rdc) call zipcoll's device functions, linked with .gpu/bin/zipcoll_device_fns.ptx by cuLink: bf16/f32/fp8 round trips bit for bit, the same frames from 128 and 512 threads, damaged frames rejected, the predictor against the realized bytes, GB/s; then the same under compute-sanitizer memcheck |
# | python_gpu  | python/tests/gpu_torch.py with the wheel gpu-pack.sh packed: compress/decompress of CUDA bf16 tensors, then the collectives on torch tensors (2 ranks on cuda:0) bit for bit against torch |
# | comm_sanitizer | the all_reduce example, small, every rank under compute-sanitizer memcheck |
# | bench_block | block frames (one CTA per frame) against warp frames and nvCOMP ANS on the same tensors, one invocation; the block kernels' ptxas resources |
# | crosscheck_block | block frames: GPU bytes == sim bytes, each side decodes the other's |
# | sanitize_block | compute-sanitizer memcheck, racecheck and synccheck on the block crosscheck (small) |
# | block_variants | the block codec kernels from each .gpu-probe/*.ptx (e.g. the same PTX with `.maxnreg` set), each compiled by ptxas and timed on the tensors (after `tensors`) |
# | ncu_block   | Nsight Compute on the bf16 block ExpAns encoder and decoder (speed of light, occupancy, warp stalls) |
# | ncu_source  | Nsight Compute source counters of the bf16 block ExpAns encoder and decoder: per SASS instruction, executions and stall samples (CSV) |
# | gpu_tests   | the host's GPU-only tests (.gpu/tests, from gpu-pack.sh) with ZIPCOLL_REQUIRE_GPU=1: they fail, not skip, if the GPU path breaks |
# | race_sync   | compute-sanitizer racecheck and synccheck on the all_reduce example (COMM_RANKS ranks, small) and on the codec crosscheck (small) |
# | p2p_faults  | over P2P: `zipcoll-comm kill` (rank 1's process exits mid-collective), `zipcoll-comm abort` (rank 1 calls abort(): the others fail within 1 s naming it, the timeout 60 s), `zipcoll-comm resident` (4 ranks x 256 channels: a group of 1536 warps, refused or run right) and Auto's transport with CUDA_VISIBLE_DEVICES=0 in every rank |
# | graph       | `zipcoll-comm graph` over P2P and NET (COMM_RANKS ranks, default 2): all_reduce, all_gather and a ring shift captured into a CUDA graph on the caller's stream, replayed with new inputs between uncaptured calls, compression off, expans and auto |
# | capi_example | capi/examples/all_reduce.c compiled by gcc with -DZCCL_EXAMPLE_CUDA (device buffers, a stream per rank; its 3 ranks are processes it starts, on the GPUs round-robin) against .gpu/bin/libzipcoll.so |
# | premulsum   | `zipcoll-comm premulsum` over P2P (COMM_RANKS ranks, default 2): PreMulSum with the scalar by value and in device memory, every dtype, against the reference bit for bit |
# | dtypes      | `zipcoll-comm check --quick` over P2P (COMM_RANKS ranks, default 2) of the uncoded dtypes (i8 u8 i32 u32 i64 u64 f64) with every op, integer avg included, compression off and auto |
# | int_codecs  | the coded integers (i8, u8, i32, u32): `zipcoll-bench crosscheck` of warp and block frames (INT_SIZES, default 256K,12345), `zipcoll-comm check --quick` over P2P and NET with the ops of INT_OPS (default every op), compression off, expans, expwindow and auto, and `zipcoll-perf` over NET of i32 (N(0, 100^2)) all_reduce, all_gather and sendrecv (INT_PERF_SIZES, default 64 MiB) with off, expans and auto under ZIPCOLL_NET_RATE_LIMIT=INT_NET_LIMIT (default none) |
# | lossy       | `zipcoll-comm lossy` over P2P and NET (COMM_RANKS ranks, default 2; LOSSY_COUNT elements per block, default 100000): every lossy call (on N(0,1) data, and again with a NaN, an infinity and 1e30 put in, whose buckets escape) within its bound and byte-identical to the simulator's; `zipcoll-perf` all_reduce of f32 over NET (LOSSY_PERF_SIZES, default 64 MiB) with off, auto and three lossy policies (abs 0.1, rel 1e-2, QSGD 4 bits: coarse enough for 8-bit levels) for each ZIPCOLL_NET_RATE_LIMIT of LOSSY_NET_LIMITS (default `none 11921M`: none and 12.5 GB/s, 100 Gb/s), and beside it the levels' collective alone (an i8 all_reduce of LOSSY_LEVELS_SIZES, default 16 MiB: the levels of 64 MiB of f32; off and auto) |
# | lossy_ncu   | the quantizer kernels (lossy_stats, quantize, dequantize) under ncu in a 256 MiB f32 lossy all_reduce over P2P (abs 0.1 and QSGD 4 bits): time, DRAM bytes, instructions and fp64-pipe use per launch; beside it `zipcoll-bench codec`'s device memcpy of 256 MiB as the ceiling. Not under MPS=1 (ncu cannot profile MPS clients) |
# | lossy_fixed | a lossy call's cost beside its levels': `zipcoll-perf` all_reduce of f32 at 64 KiB, 1 MiB and 16 MiB, off and lossy (abs 0.1, rel 1e-2), and the small exact u32 all_reduce (4 KiB..1 MiB), over each of LOSSY_FIXED_TRANSPORTS (default `p2p net`) |
# | lossy_ab    | lossy_ncu's kernels for each module side by side: the module the other steps use ("pack") and each carried .gpu-ab/*.cubin.zst (e.g. an earlier commit's, built with the small filter of BENCHMARKS' lossy A/Bs), AB_ROUNDS rounds (default 2) interleaved, device memcpy beside them. Not under MPS=1 |
# | lossy_grads | NCCLZ's Table I on real gradients: `zipcoll inspect --lossy` (each spec of LOSSY_GRADS_SPECS, default rel 1e-4 and 1e-3, QSGD 8 and 4 bits) on every LOSSY_GRADS_EVERY-th frame (default 8: 68 MiB; the simulator codes ~3.5 MB/s) of the fp32 gradients of benches/gpu/make_tensors.py's small GPT (written to /tmp) |
# | p2p_cycles  | over P2P: `zipcoll-comm cycles` (CYCLES, default 1000, init/abort cycles; open files, threads, resident memory and cuMemGetInfo before and after) |
#
# COMM_RANKS=2 runs the comm steps with two ranks (on one GPU: P2P over CUDA IPC within the
# device); COMM_CHECK_ARGS adds arguments to `zipcoll-comm check` (e.g. --quick).
# MPS=1 runs the steps under an MPS control daemon of this script's own (pipe and log
# directories under /tmp, stopped at the end): without it the ranks' processes on one GPU
# time-slice (their kernels never run at once), so a collective's time there is the
# scheduler's, not the kernels'. KEEP_CUBIN=1 copies the compiled module to $OUT (a later
# call may carry it back in ZIPCOLL_CUDA_MODULE).
# | handoff     | benches/gpu/handoff_latency.py: launch, in-kernel hand-off and one-kernel-per-call costs of two processes on one GPU (CuPy kernels, no zipcoll code; run with MPS=1) |
# | comm_bench  | `zipcoll-comm bench` over P2P and NET, NCCL's bench on NVLink and on its socket transport (loopback) |
# | comm_sweep  | `zipcoll-comm bench` over P2P (COMM_SIZES) once per setting of SWEEP: space-separated settings, each comma-separated environment assignments (e.g. `ZIPCOLL_CHANNELS=32,ZIPCOLL_CHANNEL_THREADS=512`) |
# | module_ab   | kernel modules side by side: each .gpu-ab/*.cubin, and each .gpu-ab/*.ptx.gz compiled by ptxas (--verbose, log kept) (e.g. main's and a change's, built with the same ZIPCOLL_KERNEL_FILTER), then `zipcoll-comm bench` over P2P with each module in turn, AB_ROUNDS rounds (default 2) interleaved, for each ZIPCOLL_CHANNEL_THREADS of AB_THREADS (default 256) |
# | host_ab     | host binaries side by side: each .gpu-ab/zipcoll-comm.<name>.gz (e.g. main's and a change's, with the same kernels), `bench` over P2P with ZIPCOLL_PROFILE=1 (each rank's kernel and upload times), AB_ROUNDS rounds (default 2) interleaved |
# | one_gpu_bench | `zipcoll-comm bench` over P2P and NET (COMM_RANKS ranks, default 2; COMM_SIZES), then `zipcoll-bench tcp`: plain loopback TCP with 1, 2 and 8 streams and the NET proxies alone, the NET baseline of the same machine (no NCCL: it needs a GPU per rank) |
# | net_sweep   | the NET proxies' threads x sockets per peer: for each `TxS` of NET_SWEEP (default 2x4 4x2 8x1 4x4 8x2 16x1), `zipcoll-bench tcp --streams 8 --net` (plain TCP with 8 streams and the proxies alone, no GPU) twice; then `zipcoll-comm bench --transport net` (COMM_SIZES, default 64M,1G) for each of NET_COMM_SWEEP (default 2x4 8x1) |
# | perf_net    | `zipcoll-perf` over NET (COMM_RANKS ranks, default 2): all_reduce, all_gather and sendrecv at PERF_NET_SIZES (default `-b 64M -e 64M`), compression off and auto, for each ZIPCOLL_NET_RATE_LIMIT of PERF_NET_LIMITS (default `none 2G`); the wire column is measured there |
# | perf_coded  | `zipcoll-perf` over each transport of CODED_TRANSPORTS (default `p2p net`; COMM_RANKS ranks, default 2): all_reduce, all_gather and sendrecv at CODED_SIZES (default `-b 64M -e 256M -f 4`), compression off, expans and auto in one invocation each, for each ZIPCOLL_NET_RATE_LIMIT of CODED_LIMITS (default `none`; NET only) |
# | calibrate   | `zipcoll calibrate` over NET (COMM_RANKS ranks, default 2) into $OUT/net-calibration.toml, then `zipcoll-perf` over NET (all_reduce, all_gather, sendrecv at AUTO_SIZES, default `-b 4M -e 256M -f 4`; off, auto, expans in one invocation) with the presets and with that calibration; Auto on data that does not compress (`--data random`) |
# | perf        | `zipcoll-perf` over P2P (COMM_RANKS ranks, default 2) for each collective of PERF_COLLS (default all_reduce all_gather reduce_scatter all_to_all sendrecv), sizes PERF_SIZES (default 1M..1G by 4; `-b X -e X` for one), compression PERF_COMPRESSION (default off) |
# | perf_odd    | `zipcoll-perf` over P2P: all_gather, reduce_scatter and all_to_all at 64 MiB and 256 MiB, and at 4 bytes more (counts of 2^k + 1 bf16 per rank: chunks that are not 16-byte aligned), compression off |
# | channel_threads | `zipcoll-comm bench` over P2P (COMM_SIZES, default 1M,64M,1G) with each channel driven by ZIPCOLL_CHANNEL_THREADS of THREADS_SWEEP (default 32 128 256 512; 32 is the one-warp kernel), after `zipcoll-comm check --quick` over P2P with the default threads |
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
STEPS=${*:-example sanitizer crosscheck sanitizer_codec tensors bench inspect}   # a subset may be named
# Each step runs under `timeout ${STEP_TIMEOUT:-240}` seconds.
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
T=/tmp/zipcoll-tensors
status=0
run() { # name, command...: runs it, logs to $OUT/<name>.log, remembers failures
  local name=$1; shift
  echo "=== $name: $*" | tee -a "$OUT/summary.log"
  timeout "${STEP_TIMEOUT:-240}" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  tail -n 40 "$LOGS/$name.log"
  echo "=== $name: exit $rc" | tee -a "$OUT/summary.log"
  [ $rc -eq 0 ] || status=1
}
# zstd from this machine, or the one gpu-pack.sh packed beside the archive
ZSTD=$(command -v zstd || echo .gpu/tools/zstd)
LD_LIBRARY_PATH=.gpu/tools${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$ZSTD" -q -d --long=27 -c .gpu/bin.tar.zst | tar -x -C .gpu \
  || { echo "gpu-run.sh: could not unpack .gpu/bin.tar.zst with $ZSTD" >&2; exit 2; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/summary.log"
# Compile the module once for this machine's GPUs (all cores) instead of a driver JIT in every
# process; every binary loads it through ZIPCOLL_CUDA_MODULE.
# A second invocation in the same session may pass the first one's cubin in ZIPCOLL_CUDA_MODULE.
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
start=$(date +%s)
if [ -z "${ZIPCOLL_CUDA_MODULE:-}" ] && [ -s .gpu/zipcoll.sm_90.cubin.zst ]; then
  # compiled on the build machine (gpu-pack.sh with ZIPCOLL_PACK_CUBIN=1)
  LD_LIBRARY_PATH=.gpu/tools${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$ZSTD" -q -d -f .gpu/zipcoll.sm_90.cubin.zst -o /tmp/zipcoll.sm_90.cubin \
    && export ZIPCOLL_CUDA_MODULE=/tmp/zipcoll.sm_90.cubin
fi
if [ -s "${ZIPCOLL_CUDA_MODULE:-}" ]; then
  echo "reusing $ZIPCOLL_CUDA_MODULE" | tee -a "$OUT/summary.log"
elif "$PTXAS" -arch=sm_90 --split-compile 0 .gpu/bin/zipcoll_kernels.sm_90.ptx -o /tmp/zipcoll.sm_90.cubin; then
  export ZIPCOLL_CUDA_MODULE=/tmp/zipcoll.sm_90.cubin
  echo "ptxas sm_90: $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.log"
else
  echo "ptxas failed: the binaries JIT the embedded PTX" | tee -a "$OUT/summary.log"
fi
[ "${KEEP_CUBIN:-}" = 1 ] && [ -s "${ZIPCOLL_CUDA_MODULE:-}" ] && cp "$ZIPCOLL_CUDA_MODULE" "$OUT/zipcoll.sm_90.cubin"
if [ "${MPS:-}" = 1 ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/zipcoll-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/zipcoll-mps/log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d && echo "MPS daemon started" | tee -a "$OUT/summary.log"
  trap 'echo quit | nvidia-cuda-mps-control' EXIT
fi
# the quantizer kernels (lossy_stats, quantize, dequantize) under ncu in a 256 MiB f32 lossy
# all_reduce over P2P (abs 0.1 and QSGD 4 bits): time, DRAM bytes, instructions, fp64 use
LOSSY_NCU=(ncu --target-processes all -k regex:'lossy_stats|quantize' --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed_pipe_fp64.sum,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
  .gpu/bin/zipcoll-perf all_reduce -d f32 -b 256M -e 256M -n 1 -w 0 -c 0 --ranks "${COMM_RANKS:-2}" --transport p2p
  --compression lossy:error-bound:abs=0.1,lossy:qsgd:bits=4)
for step in $STEPS; do
  case $step in
    example) run example .gpu/bin/reduce_copy --backend cuda ;;
    sanitizer) run sanitizer compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/bin/reduce_copy --backend cuda --large 4096 ;;
    crosscheck) run crosscheck .gpu/bin/zipcoll-bench crosscheck ;;
    sanitizer_codec) run sanitizer_codec compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/bin/zipcoll-bench crosscheck --sizes 70000 ;;
    tensors) mkdir -p $T && run tensors python3 benches/gpu/make_tensors.py $T ;;
    bench)
      python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
      run bench_normal .gpu/bin/zipcoll-bench codec --sizes "${BENCH_SIZES:-1M,16M,256M,1G}" --dtype bf16,f16,f32,f8e4m3 --out "$LOGS/bench_normal.csv"
      run bench_tensors .gpu/bin/zipcoll-bench codec --files $T --out "$LOGS/bench_tensors.csv"
      run nvcomp python3 benches/gpu/nvcomp_baseline.py $T ;;
    bench_block)
      python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
      cuobjdump --dump-resource-usage "${ZIPCOLL_CUDA_MODULE:-/tmp/zipcoll.sm_90.cubin}" 2>&1 \
        | grep -A1 "block_frames" >"$LOGS/resources_block.log"
      run bench_block .gpu/bin/zipcoll-bench codec --files $T --codec raw,expans --unit warp,block \
        --frame-elems "${BLOCK_FRAME_ELEMS:-32768}" --out "$LOGS/bench_block.csv"
      run nvcomp python3 benches/gpu/nvcomp_baseline.py $T ;;
    sanitize_block)
      for tool in memcheck racecheck synccheck; do
        run block_$tool compute-sanitizer --tool $tool --error-exitcode 3 .gpu/bin/zipcoll-bench crosscheck --unit block \
          --codec raw,expans --sizes 70000 --frame-elems 32768
      done ;;
    block_variants)
      for v in .gpu-probe/*.ptx; do
        [ -e "$v" ] || { echo "block_variants: no .gpu-probe/*.ptx carried"; status=1; break; }
        name=$(basename "$v" .ptx)
        "$PTXAS" -arch=sm_90 --verbose "$v" -o "/tmp/$name.cubin" >"$LOGS/ptxas_$name.log" 2>&1 || status=1
        ZIPCOLL_CUDA_MODULE=/tmp/$name.cubin run "variant_$name" .gpu/bin/zipcoll-bench codec --files $T --codec raw,expans \
          --unit block --frame-elems "${BLOCK_FRAME_ELEMS:-32768}" --out "$LOGS/variant_$name.csv"
      done ;;
    crosscheck_block) run crosscheck_block .gpu/bin/zipcoll-bench crosscheck --unit block --codec raw,expans --sizes "${CROSS_SIZES:-1M,12345}" --frame-elems 32768 ;;
    ncu_block)
      mkdir -p $T/ncu && ln -sf $T/normal_bf16.bin $T/ncu/normal_bf16.bin
      run ncu_block ncu --kernel-name regex:'block_frames__bf16' --launch-count 4 --section SpeedOfLight \
        --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis \
        .gpu/bin/zipcoll-bench codec --files $T/ncu --codec raw,expans --unit block --frame-elems 32768 --repeats 1 --warmup 0 ;;
    ncu_source)
      mkdir -p $T/ncu && ln -sf $T/normal_bf16.bin $T/ncu/normal_bf16.bin
      for k in encode_block_frames__bf16__expans decode_block_frames__bf16; do
        run "ncu_source_$k" ncu --kernel-name "zc_$k" --launch-count 1 --section SourceCounters --section WarpStateStats \
          --import-source no -f -o "/tmp/ncu_$k" .gpu/bin/zipcoll-bench codec --files $T/ncu --codec expans --unit block \
          --frame-elems 32768 --repeats 1 --warmup 0
        ncu --import "/tmp/ncu_$k.ncu-rep" --page source --csv --print-source sass >"$LOGS/sass_$k.csv" 2>&1 || status=1
      done ;;
    comm)
      R=${COMM_RANKS:+--ranks $COMM_RANKS}
      run comm_example .gpu/bin/all_reduce --count 3000000 $R
      for t in ${COMM_TRANSPORTS:-p2p net}; do
        rm -rf $T/dump_$t
        run comm_check_$t .gpu/bin/zipcoll-comm check --transport $t --dump $T/dump_$t $R ${COMM_CHECK_ARGS:-}
        [ -z "${COMM_RANKS:-}" ] && run nccl_compare_$t python3 benches/gpu/nccl_collectives.py compare $T/dump_$t
        run comm_kill_$t .gpu/bin/zipcoll-comm kill --transport $t --timeout-ms 10000 $R
      done ;;
    torch_nccl)
      for c in ${TORCH_COMPRESSIONS:-off expans auto}; do
        run "torch_nccl_$c" env LD_PRELOAD="$PWD/.gpu/bin/libnccl.so" ZIPCOLL_COMPRESSION="$c" \
          python3 capi/nccl/tests/torch_drop_in.py --ranks "${COMM_RANKS:-2}"
      done ;;
    device_fns)
      # a CUDA C++ caller of the device-function library: its kernels compiled by nvcc to
      # relocatable code, linked with the library's PTX at run time (cuLink)
      NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
      D=device/fns; B=/tmp/zipcoll-device-fns; mkdir -p $B
      run device_fns_build bash -c "$NVCC -arch=sm_90 -rdc=true -cubin -maxrregcount=128 -I$D/include -o $B/round_trip_kernels.cubin $D/examples/round_trip_kernels.cu && $NVCC -I$D/include -o $B/round_trip $D/examples/round_trip.cu -lcuda"
      run device_fns $B/round_trip "${DEVICE_FNS_PTX:-.gpu/bin/zipcoll_device_fns.ptx}" $B/round_trip_kernels.cubin
      run device_fns_sanitizer compute-sanitizer --tool memcheck --error-exitcode 3 $B/round_trip "${DEVICE_FNS_PTX:-.gpu/bin/zipcoll_device_fns.ptx}" $B/round_trip_kernels.cubin 262144 ;;
    python_gpu)
      # the Python module with torch: its wheel (no GPU code; the module comes through
      # ZIPCOLL_CUDA_MODULE) installed beside python3's packages (torch, numpy: a venv made
      # from python3, itself a venv, would not see them)
      V=/tmp/zipcoll-py
      run python_gpu_install bash -c "python3 -m pip install -q --no-deps --no-index --target $V ${PY_WHEEL_DIR:-.gpu/bin}/zipcoll-*.whl"
      run python_gpu env PYTHONPATH=$V python3 python/tests/gpu_torch.py ;;
    comm_sanitizer)
      run comm_sanitizer compute-sanitizer --target-processes all --tool memcheck --error-exitcode 3 .gpu/bin/all_reduce --count 100000 ${COMM_RANKS:+--ranks $COMM_RANKS} ;;
    race_sync)
      for tool in racecheck synccheck; do
        run comm_$tool compute-sanitizer --target-processes all --tool $tool --error-exitcode 3 .gpu/bin/all_reduce --count 20000 --ranks ${COMM_RANKS:-2}
        run codec_$tool compute-sanitizer --tool $tool --error-exitcode 3 .gpu/bin/zipcoll-bench crosscheck --sizes 5000
      done ;;
    p2p_faults)
      run p2p_kill .gpu/bin/zipcoll-comm kill --transport p2p --timeout-ms 10000 --ranks ${COMM_RANKS:-2}
      run p2p_abort .gpu/bin/zipcoll-comm abort --transport p2p --timeout-ms 60000 --ranks ${COMM_RANKS:-2}
      run p2p_resident env ZIPCOLL_CHANNELS=256 ZIPCOLL_BUFFER_BYTES=64K .gpu/bin/zipcoll-comm resident --transport p2p --ranks 4
      run auto_visible env CUDA_VISIBLE_DEVICES=0 .gpu/bin/zipcoll-comm bench --sizes 1M --iters 2 --ranks 2 ;;
    graph)
      for t in p2p net; do
        run graph_$t .gpu/bin/zipcoll-comm graph --transport $t --ranks ${COMM_RANKS:-2} --replays ${GRAPH_REPLAYS:-20}
      done ;;
    capi_example)
      CUDA=${CUDA_HOME:-/usr/local/cuda}; B=/tmp/zipcoll-capi; mkdir -p $B
      run capi_example_build gcc -std=c11 -Wall -Wextra -Werror -DZCCL_EXAMPLE_CUDA -Icapi/include -I$CUDA/include \
        capi/examples/all_reduce.c -L.gpu/bin -lzipcoll -L$CUDA/lib64 -lcudart -lpthread -o $B/all_reduce
      run capi_example env LD_LIBRARY_PATH="$PWD/.gpu/bin:$CUDA/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" $B/all_reduce ;;
    premulsum) run premulsum .gpu/bin/zipcoll-comm premulsum --transport p2p --ranks ${COMM_RANKS:-2} ;;
    dtypes)
      run dtypes .gpu/bin/zipcoll-comm check --transport p2p --ranks ${COMM_RANKS:-2} --quick \
        --dtype i8,u8,i32,u32,i64,u64,f64 --op sum,prod,min,max,avg --compression off,auto ;;
    int_codecs)
      run int_crosscheck .gpu/bin/zipcoll-bench crosscheck --dtype i8,u8,i32,u32 --unit warp,block --sizes ${INT_SIZES:-256K,12345}
      for t in p2p net; do
        run int_check_$t .gpu/bin/zipcoll-comm check --transport $t --ranks ${COMM_RANKS:-2} --quick \
          --dtype i8,u8,i32,u32 --op ${INT_OPS:-sum,prod,min,max,avg} --compression off,expans,expwindow,auto
      done
      for c in all_reduce all_gather sendrecv; do
        run "int_perf_net_$c" env ZIPCOLL_NET_RATE_LIMIT=${INT_NET_LIMIT:-none} .gpu/bin/zipcoll-perf "$c" -d i32 \
          ${INT_PERF_SIZES:--b 64M -e 64M} -n 5 -w 2 --ranks ${COMM_RANKS:-2} --transport net --compression off,expans,auto
      done ;;
    lossy)
      for t in p2p net; do
        run lossy_check_$t .gpu/bin/zipcoll-comm lossy --transport $t --ranks ${COMM_RANKS:-2} --count ${LOSSY_COUNT:-100000}
      done
      for lim in ${LOSSY_NET_LIMITS:-none 11921M}; do
        run "lossy_perf_net_${lim//./_}" env ZIPCOLL_NET_RATE_LIMIT=$lim .gpu/bin/zipcoll-perf all_reduce -d f32 \
          ${LOSSY_PERF_SIZES:--b 64M -e 64M} -n 5 -w 2 --ranks ${COMM_RANKS:-2} --transport net \
          --compression off,auto,lossy:error-bound:abs=0.1,lossy:error-bound:rel=1e-2,lossy:qsgd:bits=4
        # the levels' collective alone: an i8 all_reduce of as many elements as 64 MiB of f32 (16 MiB)
        run "lossy_levels_net_${lim//./_}" env ZIPCOLL_NET_RATE_LIMIT=$lim .gpu/bin/zipcoll-perf all_reduce -d i8 \
          ${LOSSY_LEVELS_SIZES:--b 16M -e 16M} -n 5 -w 2 --ranks ${COMM_RANKS:-2} --transport net --compression off,auto
      done ;;
    lossy_fixed)
      # what a lossy call costs beside its levels' collective: off and lossy all_reduce of f32
      # at 64 KiB, 1 MiB and 16 MiB, then the small exact u32 all_reduce a lossy call makes first
      for t in ${LOSSY_FIXED_TRANSPORTS:-p2p net}; do
        run lossy_fixed_$t .gpu/bin/zipcoll-perf all_reduce -d f32 -b 64K -e 16M -f 16 -n 10 -w 3 --ranks ${COMM_RANKS:-2} \
          --transport $t --compression off,lossy:error-bound:abs=0.1,lossy:error-bound:rel=1e-2
        run lossy_small_$t .gpu/bin/zipcoll-perf all_reduce -d u32 -b 4K -e 1M -f 4 -n 10 -w 3 --ranks ${COMM_RANKS:-2} \
          --transport $t --compression off
      done ;;
    lossy_ncu)
      [ "${MPS:-}" = 1 ] && { echo "gpu-run.sh: lossy_ncu cannot run under MPS=1 (ncu does not profile MPS clients)" >&2; exit 2; }
      run lossy_memcpy .gpu/bin/zipcoll-bench codec --sizes 256M --dtype f32 --codec raw --unit block
      run lossy_kernels_ncu "${LOSSY_NCU[@]}" ;;
    lossy_ab)
      [ "${MPS:-}" = 1 ] && { echo "gpu-run.sh: lossy_ab cannot run under MPS=1 (ncu does not profile MPS clients)" >&2; exit 2; }
      # the module the other steps use ("pack"), then each carried .gpu-ab/*.cubin.zst
      cp "$ZIPCOLL_CUDA_MODULE" /tmp/ab_pack.cubin && mods=pack
      for z in .gpu-ab/*.cubin.zst; do
        [ -e "$z" ] || continue
        name=$(basename "$z" .cubin.zst)
        LD_LIBRARY_PATH=.gpu/tools${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$ZSTD" -q -d -f "$z" -o "/tmp/ab_$name.cubin" \
          && mods="$mods $name" || status=1
      done
      run lossy_memcpy .gpu/bin/zipcoll-bench codec --sizes 256M --dtype f32 --codec raw --unit block
      for round in $(seq "${AB_ROUNDS:-2}"); do
        for name in $mods; do
          run "lossy_ab_${name}_r$round" env ZIPCOLL_CUDA_MODULE=/tmp/ab_$name.cubin "${LOSSY_NCU[@]}"
        done
      done ;;
    lossy_grads)
      run lossy_tensors python3 benches/gpu/make_tensors.py /tmp/zipcoll-tensors
      # every LOSSY_GRADS_EVERY-th frame of 65536 f32 (inspect's default frame): the layers in proportion
      run lossy_grads_sample python3 -c 'import sys, numpy as np
a = np.fromfile(sys.argv[1], dtype=np.uint8); f = 65536 * 4; k = int(sys.argv[3])
a[: a.size // f * f].reshape(-1, f)[::k].tofile(sys.argv[2])' \
        /tmp/zipcoll-tensors/grads_f32.bin /tmp/zipcoll-tensors/grads_sample_f32.bin ${LOSSY_GRADS_EVERY:-8}
      for spec in ${LOSSY_GRADS_SPECS:-error-bound:rel=1e-4 error-bound:rel=1e-3 qsgd:bits=8 qsgd:bits=4}; do
        run "lossy_grads_${spec//[^A-Za-z0-9]/_}" .gpu/bin/zipcoll inspect /tmp/zipcoll-tensors/grads_sample_f32.bin --dtype f32 --lossy $spec
      done ;;
    p2p_cycles)
      run p2p_cycles .gpu/bin/zipcoll-comm cycles --transport p2p --cycles ${CYCLES:-1000} --timeout-ms 10000 --ranks ${COMM_RANKS:-2} ;;
    gpu_tests)
      for t in .gpu/bin/tests/*; do run "gpu_test_$(basename "$t")" env ZIPCOLL_REQUIRE_GPU=1 "$t"; done ;;
    comm_bench)
      S=${COMM_SIZES:-1M,64M,1G}
      for t in ${COMM_TRANSPORTS:-p2p net}; do
        run comm_bench_$t .gpu/bin/zipcoll-comm bench --transport $t --sizes $S --iters ${COMM_ITERS:-5} ${COMM_RANKS:+--ranks $COMM_RANKS}
        if [ $t = p2p ]; then
          run nccl_bench_nvlink python3 benches/gpu/nccl_collectives.py bench nvlink $S
        else
          NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=4 \
            run nccl_bench_socket python3 benches/gpu/nccl_collectives.py bench socket $S
        fi
      done ;;
    handoff) run handoff python3 benches/gpu/handoff_latency.py ${HANDOFF_ITERS:-200} ;;
    comm_sweep)
      for setting in ${SWEEP:?comm_sweep needs SWEEP}; do
        run "sweep_${setting//[^A-Za-z0-9_]/_}" env ${setting//,/ } .gpu/bin/zipcoll-comm bench --transport p2p \
          --sizes ${COMM_SIZES:-1M,64M,1G} --iters ${COMM_ITERS:-5} --ranks ${COMM_RANKS:-2}
      done ;;
    module_ab)
      mods=""
      for z in .gpu-ab/*.ptx.gz .gpu-ab/*.cubin; do
        [ -e "$z" ] || continue
        case $z in
          *.cubin) name=$(basename "$z" .cubin); cp "$z" "/tmp/ab_$name.cubin"; mods="$mods $name" ;;
          *) name=$(basename "$z" .ptx.gz)
             gunzip -c "$z" >"/tmp/ab_$name.ptx"
             "$PTXAS" -arch=sm_90 --verbose "/tmp/ab_$name.ptx" -o "/tmp/ab_$name.cubin" >"$LOGS/ptxas_ab_$name.log" 2>&1 \
               && mods="$mods $name" || status=1 ;;
        esac
      done
      [ -n "$mods" ] || { echo "module_ab: no .gpu-ab/*.ptx.gz or *.cubin carried"; status=1; }
      for round in $(seq "${AB_ROUNDS:-2}"); do
        for th in ${AB_THREADS:-256}; do
          for name in $mods; do
            run "ab_${name}_t${th}_r$round" env ZIPCOLL_CUDA_MODULE=/tmp/ab_$name.cubin ZIPCOLL_CHANNEL_THREADS=$th \
              .gpu/bin/zipcoll-comm bench --transport p2p --sizes ${COMM_SIZES:-1M,64M,1G} --iters ${COMM_ITERS:-5} \
              --ranks ${COMM_RANKS:-2}
          done
        done
      done ;;
    host_ab)
      bins=""
      for z in .gpu-ab/zipcoll-comm.*.gz; do
        [ -e "$z" ] || continue
        b=/tmp/ab_bin.$(basename "$z" .gz | sed 's/^zipcoll-comm\.//'); gunzip -c "$z" >"$b" && chmod +x "$b" && bins="$bins $b"
      done
      [ -n "$bins" ] || { echo "host_ab: no .gpu-ab/zipcoll-comm.*.gz carried"; status=1; }
      for round in $(seq "${AB_ROUNDS:-2}"); do
        for b in $bins; do
          run "host_ab_${b##*.}_r$round" env ZIPCOLL_PROFILE=1 "$b" bench --transport p2p \
            --sizes ${COMM_SIZES:-4K,1M,64M} --iters ${COMM_ITERS:-20} --ranks ${COMM_RANKS:-2}
        done
      done ;;
    one_gpu_bench)
      for t in p2p net; do
        run "comm_bench_$t" .gpu/bin/zipcoll-comm bench --transport $t --sizes ${COMM_SIZES:-1M,64M,1G} \
          --iters ${COMM_ITERS:-5} --ranks ${COMM_RANKS:-2}
      done
      run tcp_loopback .gpu/bin/zipcoll-bench tcp --streams 1,2,8 --bytes 1G --net ;;
    net_sweep)
      for s in ${NET_SWEEP:-2x4 4x2 8x1 4x4 8x2 16x1}; do
        for round in 1 2; do
          run "net_tcp_${s}_r$round" env ZIPCOLL_NET_NTHREADS=${s%x*} ZIPCOLL_NET_NSOCKS_PERTHREAD=${s#*x} \
            .gpu/bin/zipcoll-bench tcp --streams 8 --bytes 1G --net
        done
      done
      for s in ${NET_COMM_SWEEP:-2x4 8x1}; do
        run "net_comm_$s" env ZIPCOLL_NET_NTHREADS=${s%x*} ZIPCOLL_NET_NSOCKS_PERTHREAD=${s#*x} \
          .gpu/bin/zipcoll-comm bench --transport net --sizes ${COMM_SIZES:-64M,1G} --iters 3 --ranks ${COMM_RANKS:-2}
      done ;;
    perf_net)
      for limit in ${PERF_NET_LIMITS:-none 2G}; do
        for c in all_reduce all_gather sendrecv; do
          for comp in off auto; do
            run "perf_net_${c}_${comp}_$limit" env ZIPCOLL_NET_RATE_LIMIT=$limit .gpu/bin/zipcoll-perf "$c" \
              ${PERF_NET_SIZES:--b 64M -e 64M} --ranks ${COMM_RANKS:-2} --transport net --compression $comp
          done
        done
      done ;;
    perf_coded)
      for t in ${CODED_TRANSPORTS:-p2p net}; do
        limits=none; [ "$t" = net ] && limits=${CODED_LIMITS:-none}
        for limit in $limits; do
          for c in all_reduce all_gather sendrecv; do
            run "coded_${t}_${limit}_${c}" env ZIPCOLL_NET_RATE_LIMIT=$limit .gpu/bin/zipcoll-perf "$c" \
              ${CODED_SIZES:--b 64M -e 256M -f 4} -n 5 -w 2 --ranks ${COMM_RANKS:-2} --transport $t --compression off,expans,auto
          done
        done
      done ;;
    calibrate)
      run calibrate_net .gpu/bin/zipcoll calibrate --transport net --ranks ${COMM_RANKS:-2} --out "$OUT/net-calibration.toml"
      for cal in none calibrated; do
        file=; [ "$cal" = calibrated ] && file=$OUT/net-calibration.toml
        for c in all_reduce all_gather sendrecv; do
          run "auto_${cal}_net_$c" env ZIPCOLL_CALIBRATION=$file .gpu/bin/zipcoll-perf "$c" ${AUTO_SIZES:--b 4M -e 256M -f 4} \
            -n 5 -w 2 --ranks ${COMM_RANKS:-2} --transport net --compression off,auto,expans
        done
      done
      run auto_random_net .gpu/bin/zipcoll-perf all_reduce -b 64M -e 64M -n 5 -w 2 --ranks ${COMM_RANKS:-2} \
        --transport net --compression off,auto --data random ;;
    perf)
      for c in ${PERF_COLLS:-all_reduce all_gather reduce_scatter all_to_all sendrecv}; do
        run "perf_$c" .gpu/bin/zipcoll-perf "$c" ${PERF_SIZES:--b 1M -e 1G -f 4} --ranks ${COMM_RANKS:-2} --transport p2p \
          --compression ${PERF_COMPRESSION:-off}
      done ;;
    perf_odd)
      for c in all_gather reduce_scatter all_to_all; do
        for s in 67108864 67108868 268435456 268435460; do
          run "perf_odd_${c}_$s" .gpu/bin/zipcoll-perf "$c" -b $s -e $s --ranks ${COMM_RANKS:-2} --transport p2p --compression off
        done
      done ;;
    channel_threads)
      run check_block_p2p .gpu/bin/zipcoll-comm check --transport p2p --quick --ranks ${COMM_RANKS:-2}
      for th in ${THREADS_SWEEP:-32 128 256 512}; do
        run "bench_threads_$th" env ZIPCOLL_CHANNEL_THREADS=$th .gpu/bin/zipcoll-comm bench --transport p2p \
          --sizes ${COMM_SIZES:-1M,64M,1G} --iters ${COMM_ITERS:-5} --ranks ${COMM_RANKS:-2}
      done ;;
    inspect)
      for f in normal_bf16:bf16 weights_bf16:bf16 grads_f32:f32 acts_bf16:bf16 weights_f16:f16 weights_f8e4m3:f8e4m3 grads_f8e5m2:f8e5m2; do
        echo "--- ${f%%:*}"; .gpu/bin/zipcoll inspect $T/${f%%:*}.bin --dtype ${f##*:} --gpu
      done >"$LOGS/inspect.log" 2>&1; tail -n 80 "$LOGS/inspect.log" ;;
  esac
done
# The device tool brings back at most 8 files: one archive of all logs.
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$LOGS"
exit $status
