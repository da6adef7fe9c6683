#!/usr/bin/env bash
# One device call, two module builds with the same host binary (ZIPCOLL_CUDA_MODULE):
#   a = main (ca616e0); c = RAW over NET staged in device memory + odd chunks by aligned pieces.
# NET (loopback, 2 ranks, bf16): RAW a vs c, coded c at smaller slots (ZIPCOLL_BUFFER_BYTES).
# P2P: odd counts (256 MiB and 256 MiB + 4 B) a vs c.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
export CUDA_MPS_PIPE_DIRECTORY=/tmp/zipcoll-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/zipcoll-mps/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY" "$OUT/logs"
nvidia-cuda-mps-control -d && echo "MPS daemon started"
trap 'echo quit | nvidia-cuda-mps-control' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
P=.gpu-probe/zipcoll-perf
step() { # name, module, transport, buffer bytes, coll, comp, perf args...
  local name=$1 mod=$2 tr=$3 buf=$4 coll=$5 comp=$6; shift 6
  local t0=$(date +%s)
  timeout 120 env ZIPCOLL_CUDA_MODULE=$PWD/.gpu-probe/$mod.cubin ZIPCOLL_BUFFER_BYTES=$buf $P "$coll" "$@" --ranks 2 --transport $tr --compression "$comp" >"$OUT/logs/$name.log" 2>&1
  echo "=== $name exit $? ($(( $(date +%s) - t0 )) s)"; grep -v "^#" "$OUT/logs/$name.log" | grep -v "^$" | tail -2
}
for c in all_gather reduce_scatter all_to_all; do
  for s in 268435456 268435460; do
    for m in a c; do
      step "p2p_${m}_${c}_$s" $m p2p 4M $c off -b $s -e $s -n 10 -w 3
    done
  done
done
for c in all_reduce sendrecv all_gather; do
  for m in a c; do
    step "net_${m}_${c}_off" $m net 4M $c off -b 64M -e 256M -f 4 -n 5 -w 2
  done
done
step net_c_all_reduce_expans c net 4M all_reduce expans -b 64M -e 256M -f 4 -n 5 -w 2
step net_c_sendrecv_expans c net 4M sendrecv expans -b 64M -e 256M -f 4 -n 5 -w 2
for buf in 1M 256K; do
  step "net_c_sendrecv_expans_$buf" c net $buf sendrecv expans -b 64M -e 256M -f 4 -n 5 -w 2
  step "net_c_sendrecv_off_$buf" c net $buf sendrecv off -b 64M -e 256M -f 4 -n 5 -w 2
  step "net_c_all_reduce_expans_$buf" c net $buf all_reduce expans -b 64M -e 256M -f 4 -n 5 -w 2
done
step net_a_all_reduce_off_again a net 4M all_reduce off -b 64M -e 256M -f 4 -n 5 -w 2
step net_c_all_reduce_off_again c net 4M all_reduce off -b 64M -e 256M -f 4 -n 5 -w 2
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$OUT/logs"
