#!/usr/bin/env bash
# Builds, on the build machine, the binaries that scripts/gpu-run.sh runs on the GPU machine
# (kernels embedded; needs `bash scripts/setup.sh` first) and packs them, stripped, into
# .gpu/bin.tgz.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --example reduce_copy --bin zipcoll-bench --bin zipcoll
rm -rf .gpu && mkdir -p .gpu/bin
for b in target/release/examples/reduce_copy target/release/zipcoll-bench target/release/zipcoll; do
  strip -o ".gpu/bin/$(basename "$b")" "$b"
done
# One compressed archive (the embedded PTX is text): the device tool carries at most 64 MiB.
tar -C .gpu -czf .gpu/bin.tgz bin && rm -rf .gpu/bin
ls -la .gpu
