#!/usr/bin/env bash
# Builds, on the build machine, the binaries that scripts/gpu-run.sh runs on the GPU machine
# (kernels embedded; needs `bash scripts/setup.sh` first) and copies them, stripped, to .gpu/.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --example reduce_copy --bin zipcoll-bench --bin zipcoll
mkdir -p .gpu
for b in target/release/examples/reduce_copy target/release/zipcoll-bench target/release/zipcoll; do
  strip -o ".gpu/$(basename "$b")" "$b"
done
ls -la .gpu
