#!/usr/bin/env bash
# One device call: coded NET with frames staged in device memory (this session's change).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 ZIPCOLL_CUDA_MODULE=$PWD/.gpu-probe/staged.cubin
export CUDA_MPS_PIPE_DIRECTORY=/tmp/zipcoll-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/zipcoll-mps/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY" "$OUT/logs"
nvidia-cuda-mps-control -d && echo "MPS daemon started"
trap 'echo quit | nvidia-cuda-mps-control' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
P=.gpu-probe/zipcoll-perf
step() { # name, limit, coll, comp, sizes...
  local name=$1 limit=$2 coll=$3 comp=$4; shift 4
  local t0=$(date +%s)
  timeout 150 env ZIPCOLL_NET_RATE_LIMIT=$limit $P "$coll" "$@" -n 5 -w 2 --ranks 2 --transport net --compression "$comp" >"$OUT/logs/$name.log" 2>&1
  echo "=== $name exit $? ($(( $(date +%s) - t0 )) s)"; grep -v "^#" "$OUT/logs/$name.log" | grep -v "^$" | tail -3
}
for c in all_gather sendrecv all_reduce; do
  for comp in off expans auto; do
    step "none_${c}_$comp" none $c $comp -b 64M -e 256M -f 4
  done
done
for c in all_gather sendrecv all_reduce; do
  for comp in off expans auto; do
    step "500M_${c}_$comp" 500M $c $comp -b 64M -e 64M
  done
done
