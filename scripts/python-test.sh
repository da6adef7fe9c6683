#!/usr/bin/env bash
# The Python module's tests: builds python/'s wheel (a debug build: the device crates are
# optimized in dev builds anyway, and it links in seconds) into a venv under target/, installs it
# and runs python/tests with pytest on the simulator. scripts/test.sh runs it in the host job;
# run it alone after editing python/ (`bash scripts/python-test.sh -k round_trip` passes the
# arguments to pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target=$root/$target ;; esac
venv=$target/pyenv
py=${PYTHON:-python3}
# numpy 2.4 needs Python >= 3.11 (Debian 12's python3). Without Debian's python3-venv (no
# ensurepip) the venv gets no pip of its own, and the system's pip installs into it.
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv" 2>/dev/null || { rm -rf "$venv" && "$py" -m venv --without-pip "$venv"; }
fi
pip() {
  if [ -x "$venv/bin/pip" ]; then
    "$venv/bin/pip" -q --disable-pip-version-check "$@"
  else
    "$py" -m pip -q --disable-pip-version-check --python "$venv/bin/python" "$@"
  fi
}
pip install maturin==1.16.0 pytest==9.2.0 numpy==2.4.6
# the CLI whose `inspect` the tests compare with
cargo build --locked --bin zipcoll
wheels=$target/python-wheel
rm -rf "$wheels"
(cd python && "$venv/bin/maturin" build --locked --quiet -i "$venv/bin/python" -o "$wheels")
pip install --force-reinstall --no-deps "$wheels"/zipcoll-*.whl
# from the repository root, so python/zipcoll (no extension inside) cannot shadow the installed package
ZIPCOLL_CLI=$target/debug/zipcoll "$venv/bin/pytest" -q -p no:cacheprovider python/tests "$@"
