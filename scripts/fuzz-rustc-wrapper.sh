#!/usr/bin/env bash
# RUSTC_WRAPPER for cargo-fuzz builds (scripts/fuzz-campaign.sh, scripts/fuzz-smoke.sh): builds the
# simulator (crates zipcoll_targets and corosensei) without libFuzzer's coverage and comparison
# tracing, still with AddressSanitizer. Its scheduler compares lane states hundreds of times per
# simulated warp operation; those __sanitizer_cov_trace_*cmp* calls took ~28% of decode_bf16's
# time (perf on the fuzzer), and the simulator's coverage is the same for every input, so it
# tells the fuzzer nothing; the device code, the host's parsers and the targets stay
# instrumented. The flags go last: for LLVM's options the last occurrence wins (cargo puts
# RUSTFLAGS after a profile's rustflags, so a profile cannot do this).
rustc=$1
shift
case " $* " in
*" --crate-name zipcoll_targets "* | *" --crate-name corosensei "*)
    exec "$rustc" "$@" \
        -Cllvm-args=-sanitizer-coverage-level=0 \
        -Cllvm-args=-sanitizer-coverage-trace-compares=0 \
        -Cllvm-args=-sanitizer-coverage-inline-8bit-counters=0 \
        -Cllvm-args=-sanitizer-coverage-pc-table=0
    ;;
*) exec "$rustc" "$@" ;;
esac
