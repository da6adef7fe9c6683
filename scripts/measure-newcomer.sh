#!/usr/bin/env bash
# Times a newcomer's path on a fresh clone of this repository: the README's first command
# (setup, then the main job) and its test command, each from nothing (no .toolchain, no
# target/). Crates already in cargo's download cache are not downloaded again, and Debian
# packages already installed are not installed again; everything else is as a newcomer has it.
#
#   bash scripts/measure-newcomer.sh [DIR]      # clones into DIR (default: a new temp dir)
#
# Prints one line per step (`=== newcomer: STEP took N s`) and exits non-zero if a step fails.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$(mktemp -d)/zipcoll}
git clone -q "$SRC" "$DIR"
cd "$DIR"
step() {
  local name=$1
  shift
  local start
  start=$(date +%s)
  "$@"
  echo "=== newcomer: $name took $(($(date +%s) - start)) s"
}
step "setup (bash scripts/setup.sh)" bash scripts/setup.sh
step "main job (cargo run --release --example all_reduce)" cargo run --release --example all_reduce
step "test command (bash scripts/test.sh)" bash scripts/test.sh
