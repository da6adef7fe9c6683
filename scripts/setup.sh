#!/usr/bin/env bash
# Installs the GPU toolchain that builds zipcoll's device code to PTX (nvptx64-nvidia-cuda) and to
# AMD code objects (amdgcn-amd-amdhsa), on x86_64 Debian 12 with no GPU, from Debian packages,
# crates.io and PyPI only. Idempotent: a second run checks the stamp and returns at once.
#
# Everything lands in $ZIPCOLL_TOOLCHAIN (default: <repo>/.toolchain, ignored by git):
#   bin/rustc        Debian rustc-web (wrapped so it finds its own librustc_driver)
#   bin/amdgpu-ld    cc-style -> ld.lld shim for amdgcn (Debian's rustc ICEs with its gnu-lld flavor)
#   bin/ptxas        from the PyPI wheel nvidia-cuda-nvcc (validates PTX without a GPU)
#   root/usr/...     that rustc's sysroot, with `core` prebuilt for both GPU targets and
#                    llvm-bitcode-linker (the nvptx linker) built from the matching rust-web-src
#   env              KEY=VALUE lines the build driver reads (RUSTC, PTXAS, LLVM_BIN)
# System packages: llvm-22, lld-22 (apt). Needs root (or sudo) for apt-get only.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
TC=${ZIPCOLL_TOOLCHAIN:-$REPO/.toolchain}
NVCC_WHEEL=${NVCC_WHEEL:-nvidia-cuda-nvcc==13.0.88}
AMD_CPU=gfx942
HOST=x86_64-unknown-linux-gnu
STAMP_VERSION=3
t0=$(date +%s)
step() { echo "=== [setup $(($(date +%s) - t0))s] $*"; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

if [ -f "$TC/stamp" ] && [ "$(cat "$TC/stamp")" = "$STAMP_VERSION" ] && [ -x "$TC/bin/rustc" ] \
   && [ -x "$TC/bin/ptxas" ] && [ -x /usr/lib/llvm-22/bin/llc ]; then
  echo "zipcoll GPU toolchain already installed in $TC:"
  cat "$TC/env"
  exit 0
fi
rm -rf "$TC"
mkdir -p "$TC/bin"
cd "$TC"
# Scratch crates are built outside the repository, which is a cargo workspace of its own.
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

step "1. Debian packages llvm-22 and lld-22 (llvm-link/opt/llc for the nvptx linker, ld.lld for AMD)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends llvm-22 lld-22 >/dev/null
LLVM_BIN=/usr/lib/llvm-22/bin
"$LLVM_BIN/llc" --version | sed -n 2p

step "2. Debian rustc-web with its std and its exact source (dpkg -x into $TC/root; never apt-installed)"
V=$(apt-cache policy rustc-web | awk '/Candidate:/{print $2}')
MM=$(echo "$V" | cut -d. -f1,2)
echo "rustc-web candidate: $V"
mkdir -p debs root
(cd debs && apt-get download -qq "rustc-web=$V" "libstd-rust-web-$MM=$V" "libstd-rust-web-dev=$V" "rust-web-src=$V")
for f in debs/*.deb; do dpkg -x "$f" root; done
rm -rf debs
SRC=$(ls -d root/usr/src/rustc-*)
# Keep only library/ (to build core) and the llvm-bitcode-linker tool from the 342 MB source tree.
find "$SRC" -mindepth 1 -maxdepth 1 ! -name library ! -name src ! -name Cargo.lock -exec rm -rf {} +
find "$SRC/src" -mindepth 1 -maxdepth 1 ! -name tools -exec rm -rf {} +
find "$SRC/src/tools" -mindepth 1 -maxdepth 1 ! -name llvm-bitcode-linker -exec rm -rf {} +
cat >bin/rustc <<EOF
#!/bin/sh
export LD_LIBRARY_PATH="$TC/root/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "$TC/root/usr/bin/rustc" "\$@"
EOF
chmod +x bin/rustc
SYSROOT=$("$TC/bin/rustc" --print sysroot)
BIN=$SYSROOT/lib/rustlib/$HOST/bin
mkdir -p "$BIN/self-contained"
for t in llvm-link opt llc; do ln -sf "$LLVM_BIN/$t" "$BIN/$t"; done
"$TC/bin/rustc" -vV | sed -n '1p;$p'

step "3. llvm-bitcode-linker built from that source tree (crates.io dependencies)"
cp -r "$SYSROOT/lib/rustlib/src/rust/src/tools/llvm-bitcode-linker" "$SCRATCH/lbl-src"
cargo install -q --path "$SCRATCH/lbl-src" --root "$SCRATCH/lbl-inst"
cp "$SCRATCH/lbl-inst/bin/llvm-bitcode-linker" "$BIN/self-contained/"

cat >bin/amdgpu-ld <<'EOF'
#!/usr/bin/env bash
# cc-style linker arguments -> ld.lld arguments, for amdgcn-amd-amdhsa with -Clinker-flavor=gnu-cc.
set -euo pipefail
out=()
for a in "$@"; do
  case "$a" in
    -Wl,*) IFS=, read -ra parts <<< "${a#-Wl,}"; out+=("${parts[@]}") ;;
    -fuse-ld=*|-nodefaultlibs|-nostartfiles|-m64) ;;
    *) out+=("$a") ;;
  esac
done
exec ld.lld-22 "${out[@]}"
EOF
chmod +x bin/amdgpu-ld

step "4. core prebuilt for nvptx64-nvidia-cuda (sm_70 baseline) and amdgcn-amd-amdhsa ($AMD_CPU)"
SEED=$SCRATCH/seed
mkdir -p "$SEED/src"
cat >"$SEED/Cargo.toml" <<'EOF'
[package]
name = "seed"
version = "0.0.0"
edition = "2021"
[lib]
crate-type = ["rlib"]
[profile.release]
opt-level = 3
panic = "abort"
codegen-units = 1
lto = "fat"
EOF
echo '#![no_std]' >"$SEED/src/lib.rs"
for spec in nvptx64-nvidia-cuda:sm_70 amdgcn-amd-amdhsa:$AMD_CPU; do
  tgt=${spec%%:*}
  cpu=${spec#*:}
  (cd "$SEED" && RUSTC="$TC/bin/rustc" RUSTC_BOOTSTRAP=1 cargo build -q --release --target "$tgt" -Zbuild-std=core \
    --config "target.$tgt.rustflags=[\"-Ctarget-cpu=$cpu\"]")
  mkdir -p "$SYSROOT/lib/rustlib/$tgt/lib"
  cp "$SEED"/target/$tgt/release/deps/lib{core,compiler_builtins}-*.rlib "$SYSROOT/lib/rustlib/$tgt/lib/"
done

step "5. ptxas from PyPI ($NVCC_WHEEL)"
python3 -m pip download -q --no-deps -d "$SCRATCH/wheels" "$NVCC_WHEEL"
unzip -q -o -j "$SCRATCH"/wheels/*.whl '*/bin/ptxas' -d bin
chmod +x bin/ptxas
bin/ptxas --version | tail -1

cat >env <<EOF
RUSTC=$TC/bin/rustc
PTXAS=$TC/bin/ptxas
LLVM_BIN=$LLVM_BIN
AMDGPU_LD=$TC/bin/amdgpu-ld
EOF
echo "$STAMP_VERSION" >stamp
step "done: GPU toolchain in $TC ($(du -sh "$TC" | cut -f1)):"
cat env
