#!/usr/bin/env bash
# Builds every fuzz target (fuzz/libfuzzer, cargo-fuzz + libFuzzer) and runs each briefly on its
# checked-in corpus (fuzz/corpus/<target>, read only: new inputs go to a scratch copy), so a
# crash or a broken target fails the run. Long runs: `cargo +nightly fuzz run <target>`.
#
#   FUZZ_SECONDS   seconds per target (default 10)
#   FUZZ_TARGETS   targets to run (default: all of `cargo fuzz list`)
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain, or the stable one
# with RUSTC_BOOTSTRAP=1 (used when no nightly is installed). The host crate is built without
# its GPU code.
set -euo pipefail
cd "$(dirname "$0")/.."
export ZIPCOLL_TOOLCHAIN=/none
# AddressSanitizer's fake stacks (detect_stack_use_after_return) are not freed when a simulated
# lane's coroutine ends: with a launch per input the fuzzer reached libFuzzer's 2 GiB RSS limit
# within 3000 executions. Stack use after return is not reachable from safe Rust; every other
# ASan check stays on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_stack_use_after_return=0}
seconds=${FUZZ_SECONDS:-10}
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz-smoke: cargo-fuzz is missing: cargo install cargo-fuzz" >&2
    exit 1
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    fuzz=(cargo +nightly fuzz)
else
    export RUSTC_BOOTSTRAP=1
    fuzz=(cargo fuzz)
fi
# the simulator without coverage instrumentation: see scripts/fuzz-rustc-wrapper.sh
RUSTC_WRAPPER="$PWD/scripts/fuzz-rustc-wrapper.sh" "${fuzz[@]}" build --fuzz-dir fuzz/libfuzzer
targets=${FUZZ_TARGETS:-$("${fuzz[@]}" list --fuzz-dir fuzz/libfuzzer)}
# -max_len for the targets that run device code on the simulator (decode_*, roundtrip_*):
# FUZZ_MAX_LEN, default 2048 bytes. Their code repeats per group of 32 split words and per pass
# of the warp, so a frame of a few groups takes every path a long one does; the largest seed
# (an ExpAns frame of 1 KiB of f32, the smallest that ExpAns codes) fits twice. Longer inputs
# only cost time: the simulator runs ~1 us per warp operation, and a 1 KiB frame takes hundreds.
# (Block frames' 8192-word segments are past it: device/tests/block_codec.rs tests those edges.)
# The parsers keep libFuzzer's default (4096 or the largest seed).
max_len() {
    case "$1" in
    decode_* | roundtrip_*) echo "${FUZZ_MAX_LEN:-2048}" ;;
    *) echo 0 ;;
    esac
}
bin=fuzz/libfuzzer/target/x86_64-unknown-linux-gnu/release
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
start=$SECONDS
for t in $targets; do
    mkdir -p "$scratch/$t" "$scratch/artifacts/$t"
    if [ -d "fuzz/corpus/$t" ]; then
        cp -r "fuzz/corpus/$t/." "$scratch/$t/"
    fi
    log="$scratch/$t.log"
    if ! "$bin/$t" -max_total_time="$seconds" -max_len="$(max_len "$t")" -print_final_stats=1 \
        -artifact_prefix="$scratch/artifacts/$t/" "$scratch/$t" >"$log" 2>&1; then
        tail -40 "$log" >&2
        echo "fuzz-smoke: $t FAILED; the input is in fuzz/libfuzzer/artifacts/$t" >&2
        mkdir -p "fuzz/libfuzzer/artifacts/$t"
        cp "$scratch/artifacts/$t/"* "fuzz/libfuzzer/artifacts/$t/" 2>/dev/null || true
        exit 1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz-smoke: $t: $runs executions in ${seconds}s, no crash"
done
echo "fuzz-smoke: every target passed in $((SECONDS - start))s (after the build)"
