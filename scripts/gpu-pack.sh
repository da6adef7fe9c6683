#!/usr/bin/env bash
# Builds, on the build machine, the binaries that scripts/gpu-run.sh runs on the GPU machine
# (kernels embedded; needs `bash scripts/setup.sh` first) and packs them, stripped, into
# .gpu/bin.tar.zst (zstd on both machines). The build machine has no GPU, so the architecture is named: sm_90 (H100, H200)
# unless ZIPCOLL_GPU_ARCHS says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
export ZIPCOLL_GPU_ARCHS=${ZIPCOLL_GPU_ARCHS:-sm_90}
cargo build --release --locked --example reduce_copy --example all_reduce --bin zipcoll-bench --bin zipcoll --bin zipcoll-comm --bin zipcoll-perf
# the NCCL drop-in (libnccl.so), for the torch_nccl step; the C ABI (libzipcoll.so), for capi_example
cargo build --release --locked -p zipcoll-nccl -p zipcoll-capi
rm -rf .gpu && mkdir -p .gpu/bin
T=${CARGO_TARGET_DIR:-target}
for b in $T/release/examples/reduce_copy $T/release/examples/all_reduce $T/release/zipcoll-bench $T/release/zipcoll $T/release/zipcoll-comm $T/release/zipcoll-perf $T/release/libnccl.so $T/release/libzipcoll.so; do
  strip -o ".gpu/bin/$(basename "$b")" "$b"
done
# The host's GPU-only tests, run by gpu-run.sh's gpu_tests step with ZIPCOLL_REQUIRE_GPU=1.
mkdir -p .gpu/bin/tests
cargo test --release --locked --no-run -p zipcoll-host --test cuda_mem --test backends --test codec --message-format=json \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"]==["test"]: print(m["executable"])' \
  | while read -r t; do strip -o ".gpu/bin/tests/$(basename "${t%-*}")" "$t"; done
# The sm_90 PTX too: gpu-run.sh compiles it ahead of time (ptxas --split-compile) so that no
# process waits for the driver's JIT of the whole module.
cp target/gpu/sm_90/zipcoll_kernels.ptx .gpu/bin/zipcoll_kernels.sm_90.ptx
# The device-function library's PTX, for the device_fns step (a CUDA C++ caller links it).
(cd device/fns && CARGO_TARGET_DIR=../../target/gpu/device-fns cargo build --release --locked --target nvptx64-nvidia-cuda)
cp target/gpu/device-fns/nvptx64-nvidia-cuda/release/zipcoll_device_fns.ptx .gpu/bin/
# The Python wheel, for the python_gpu step, with no GPU code (the step loads the module through
# ZIPCOLL_CUDA_MODULE): built with the maturin of scripts/python-test.sh's venv, when it is there.
MATURIN=$(realpath -m "$T/pyenv/bin/maturin")
if [ -x "$MATURIN" ]; then
  (cd python && ZIPCOLL_GPU_ARCHS=none "$MATURIN" build --release --locked -o "../.gpu/bin")
else
  echo "gpu-pack.sh: no $MATURIN (run scripts/python-test.sh once): the python_gpu step will have no wheel"
fi
# With ZIPCOLL_PACK_CUBIN=1, the module compiled here too (this machine's ptxas from setup.sh,
# CUDA 13.0: the GPU machine's driver loads its cubins), compressed beside the archive:
# gpu-run.sh then skips its own ptxas, which costs device time (104-394 s per fresh machine;
# 24 min on 2 cores here for 64 MB of PTX, 84 MB of cubin, 4.4 MB compressed).
if [ "${ZIPCOLL_PACK_CUBIN:-}" = 1 ]; then
  .toolchain/bin/ptxas -arch=sm_90 --split-compile 0 .gpu/bin/zipcoll_kernels.sm_90.ptx -o .gpu/zipcoll.sm_90.cubin
  zstd -q -T0 -19 --rm .gpu/zipcoll.sm_90.cubin -o .gpu/zipcoll.sm_90.cubin.zst
fi
# One compressed archive: the device tool carries at most 64 MiB, and every binary embeds the
# same PTX (65 MB at 33200e4: gzip, whose window is 32 KiB, packed the 10 copies into 116 MB).
# zstd's long mode (a 128 MiB window) finds each copy in the one before: 21 MB.
tar -C .gpu -cf - bin | zstd -q -T0 --long=27 -10 -o .gpu/bin.tar.zst && rm -rf .gpu/bin
# The GPU machine may have no zstd (2026-12-06: an Ubuntu image with xz and gzip only): this
# machine's zstd goes along (a static libzstd; it needs libz, liblzma and liblz4, and liblz4
# goes along too).
mkdir -p .gpu/tools
cp "$(command -v zstd)" .gpu/tools/zstd
cp "$(ldd "$(command -v zstd)" | awk '/liblz4/ {print $3}')" .gpu/tools/
ls -la .gpu
