#!/usr/bin/env bash
# A long fuzz campaign: runs each cargo-fuzz target (fuzz/libfuzzer) in turn, at the lowest priority,
# for FUZZ_RUNS executions or FUZZ_SECONDS seconds, whichever ends first, on a scratch copy of
# its checked-in corpus, and writes libFuzzer's log and a summary line per target to OUT:
#
#   OUT/<target>.log   libFuzzer's output (final stats at the end)
#   OUT/summary.tsv    target, executions, seconds, exec/s, crashes (artifacts), exit status
#
#   OUT            where the logs go (required)
#   FUZZ_RUNS      executions per target (default 10000000)
#   FUZZ_SECONDS   seconds per target at most (default 600)
#   FUZZ_TARGETS   targets to run (default: all of `cargo fuzz list`)
#   FUZZ_BIN       prebuilt targets (default: build them, as scripts/fuzz-smoke.sh does)
#   FUZZ_MAX_LEN   -max_len of the simulator targets (default 2048, see max_len below)
#
# A crash leaves its input in OUT/artifacts/<target>/ and the campaign goes on with the next
# target; the exit status is non-zero if any target failed.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the log directory}"
runs=${FUZZ_RUNS:-10000000}
seconds=${FUZZ_SECONDS:-600}
export ZIPCOLL_TOOLCHAIN=/none
# AddressSanitizer's fake stacks (detect_stack_use_after_return) are not freed when a simulated
# lane's coroutine ends: with a launch per input the fuzzer reached libFuzzer's 2 GiB RSS limit
# within 3000 executions. Stack use after return is not reachable from safe Rust; every other
# ASan check stays on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_stack_use_after_return=0} RUSTC_BOOTSTRAP=1
if [ -z "${FUZZ_BIN:-}" ]; then
    # the simulator without coverage instrumentation: see scripts/fuzz-rustc-wrapper.sh
    RUSTC_WRAPPER="$PWD/scripts/fuzz-rustc-wrapper.sh" nice -n 19 cargo fuzz build --fuzz-dir fuzz/libfuzzer
    FUZZ_BIN=fuzz/libfuzzer/target/x86_64-unknown-linux-gnu/release
fi
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
targets=${FUZZ_TARGETS:-$(cargo fuzz list --fuzz-dir fuzz/libfuzzer)}
mkdir -p "$OUT"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf 'target\texecutions\tseconds\texec_per_s\tcrashes\texit\n' >"$OUT/summary.tsv"
failed=0
for t in $targets; do
    mkdir -p "$scratch/$t" "$OUT/artifacts/$t"
    cp -r "fuzz/corpus/$t/." "$scratch/$t/" 2>/dev/null || true
    start=$(date +%s)
    rc=0
    nice -n 19 "$FUZZ_BIN/$t" -runs="$runs" -max_total_time="$seconds" -timeout=10 -max_len="$(max_len "$t")" \
        -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t/" "$scratch/$t" \
        >"$OUT/$t.log" 2>&1 || rc=$?
    took=$(($(date +%s) - start))
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$OUT/$t.log" | grep -o '[0-9]*$' || echo 0)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$OUT/$t.log" | grep -o '[0-9]*$' || echo 0)
    crashes=$(find "$OUT/artifacts/$t" -type f | wc -l)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$execs" "$took" "$rate" "$crashes" "$rc" >>"$OUT/summary.tsv"
    [ "$rc" = 0 ] && [ "$crashes" = 0 ] || failed=1
done
cat "$OUT/summary.tsv"
exit "$failed"
