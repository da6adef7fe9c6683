#!/usr/bin/env bash
# zipcoll's test suite, as CI runs it: installs the GPU toolchain if missing, checks formatting,
# then runs two jobs side by side (each mostly one core):
#
# | job      | what                                                                          |
# |----------|-------------------------------------------------------------------------------|
# | gpu code | zipcoll-tests: the kernel crate built for sm_90, sm_80, gfx942 and gfx950     |
# |          | (a subset of the variants), validated by ptxas and llvm-readelf, under        |
# |          | snapshots (its own target dir)                                                 |
# | host     | clippy over the workspace, the C ABI's libzipcoll.so, the Python module's wheel and pytest (scripts/python-test.sh), |
# |          | then every other crate's tests (device code on the simulator),                |
# |          | among them a smoke run of every fuzz target (fuzz/tests/smoke.rs, stable Rust, ~30 s)   |
#
# Exits non-zero if either fails; prints the GPU-code job's log after the host job.
set -euo pipefail
cd "$(dirname "$0")/.."
# a fresh clone builds everything once: incremental compilation's caches would only cost time
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
t0=$(date +%s)
phase() { echo "=== [test $(($(date +%s) - t0))s] $*"; }
phase "setup"
bash scripts/setup.sh
phase "fmt"
cargo fmt --all -- --check
mkdir -p target
log=target/gpu-code-tests.log
phase "gpu code tests (background, log in $log)"
(
  CARGO_TARGET_DIR=target/gpu-tests cargo test --locked -p zipcoll-tests >"$log" 2>&1
) &
gpu=$!
host=0
phase "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings || host=$?
if [ "$host" = 0 ]; then
  phase "host tests"
  # the C ABI's tests link the cdylibs (libzipcoll.so, the NCCL drop-in libnccl.so), which `cargo test` alone does not build
  cargo build --locked -p zipcoll-capi -p zipcoll-nccl || host=$?
  phase "python module (wheel, pytest)"
  bash scripts/python-test.sh || host=$?
  # every test binary runs, so one run shows every failure
  cargo test --workspace --locked --exclude zipcoll-tests --no-fail-fast || host=$?
fi
phase "waiting for the gpu code tests"
gpu_rc=0
wait "$gpu" || gpu_rc=$?
cat "$log"
phase "done: host tests exit $host, gpu code tests exit $gpu_rc"
[ "$host" = 0 ] && [ "$gpu_rc" = 0 ]
