#!/usr/bin/env bash
# One device call: Auto's pipeline cost model (ac7108c) against RAW and forced ExpAns, one
# host binary (zipcoll-perf of main, filtered module), 2 ranks under MPS on one GPU, bf16 N(0,1).
# NET over loopback unlimited and at 500 MB/s; P2P, where Auto must send RAW.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
export CUDA_MPS_PIPE_DIRECTORY=/tmp/zipcoll-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/zipcoll-mps/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY" "$OUT/logs"
nvidia-cuda-mps-control -d && echo "MPS daemon started"
trap 'echo quit | nvidia-cuda-mps-control' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
P=.gpu-probe/zipcoll-perf
START=$(date +%s)
step() { # name, transport, rate limit, coll, comp, perf args...
  local name=$1 tr=$2 limit=$3 coll=$4 comp=$5; shift 5
  if (( $(date +%s) - START > 500 )); then echo "=== $name skipped (time)"; return; fi
  local t0=$(date +%s)
  timeout 120 env ZIPCOLL_CUDA_MODULE=$PWD/.gpu-probe/c.cubin ZIPCOLL_NET_RATE_LIMIT=$limit $P "$coll" "$@" --ranks 2 --transport $tr --compression "$comp" >"$OUT/logs/$name.log" 2>&1
  echo "=== $name exit $? ($(( $(date +%s) - t0 )) s)"; grep -v "^#" "$OUT/logs/$name.log" | grep -v "^$" | tail -3
}
for c in sendrecv all_reduce; do
  for comp in off auto expans; do
    step "net_${c}_$comp" net off $c $comp -b 64M -e 256M -f 4 -n 5 -w 2
  done
done
for comp in off auto; do
  step "net500_all_reduce_$comp" net 500000000 all_reduce $comp -b 64M -e 64M -n 3 -w 1
done
for comp in off auto; do
  step "net_small_sendrecv_$comp" net off sendrecv $comp -b 4M -e 32M -f 2 -n 10 -w 3
done
for comp in off auto; do
  step "net_all_gather_$comp" net off all_gather $comp -b 64M -e 256M -f 4 -n 5 -w 2
done
for comp in off auto; do
  step "p2p_all_reduce_$comp" p2p off all_reduce $comp -b 256M -e 256M -n 10 -w 3
done
for comp in off auto; do
  step "net500_sendrecv_$comp" net 500000000 sendrecv $comp -b 64M -e 64M -n 3 -w 1
done
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$OUT/logs"
