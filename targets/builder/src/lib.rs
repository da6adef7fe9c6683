//! The build driver: turns the kernel crate (`primitives/kernels`) into one PTX module per
//! NVIDIA architecture and one code object per AMD architecture, with the toolchain that
//! `scripts/setup.sh` installs, and runs the vendor tools over the results.
//!
//! | [`GpuArch`]  | rustc target          | `-Ctarget-cpu` | artifact                      |
//! |--------------|-----------------------|----------------|-------------------------------|
//! | `Sm90`       | `nvptx64-nvidia-cuda` | `sm_90`        | `zipcoll_kernels.ptx`         |
//! | `Sm80`       | `nvptx64-nvidia-cuda` | `sm_80`        | `zipcoll_kernels.ptx`         |
//! | `Gfx942`     | `amdgcn-amd-amdhsa`   | `gfx942`       | `zipcoll_kernels.elf`         |
//! | `Gfx950`     | `amdgcn-amd-amdhsa`   | `gfx950`       | `zipcoll_kernels.elf`         |
//!
//! ```no_run
//! let tc = zipcoll_gpu_build::Toolchain::find()?;
//! let ptx = zipcoll_gpu_build::build(&tc, zipcoll_gpu_build::GpuArch::Sm90)?;
//! println!("{}", tc.ptxas_entries(&ptx, "sm_90", &["zc_collective__bf16__sum"])?);
//! # Ok::<(), zipcoll_gpu_build::BuildError>(())
//! ```
//!
//! Which architectures a host build embeds is [`selection`]'s answer: the ones
//! `ZIPCOLL_GPU_ARCHS` names (`sm_90,gfx942`, `all`, `none`), else the GPUs this machine has
//! (none on a machine without a GPU: the simulator needs no GPU code).
//!
//! rustc has no launch-bounds attribute for PTX, so the build adds CUDA's `__launch_bounds__(N,
//! B)`: every entry point named in [`LAUNCH_BOUNDS`] gets `.maxntid N, 1, 1` and `.minnctapersm
//! B` (at most `N` threads per block, at least `B` blocks per multiprocessor), so ptxas budgets
//! registers for it: 65536 / (N x B), 128 for both entries there (with `.maxntid` alone ptxas
//! chose 64 for the block-channel kernel and spilled).
//!
//! Each architecture builds in its own `target/gpu/<arch>` directory, so builds are incremental
//! and never clobber each other. The nested cargo runs with a clean environment (only `PATH`,
//! `HOME` and cargo/rustup locations pass), so a host build script can call [`build`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A GPU architecture zipcoll builds device code for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuArch {
    /// NVIDIA Hopper (H100, H200).
    Sm90,
    /// NVIDIA Ampere (A100).
    Sm80,
    /// AMD CDNA3 (MI300).
    Gfx942,
    /// AMD CDNA4 (MI350).
    Gfx950,
}

impl GpuArch {
    /// Every architecture, in build order.
    pub const ALL: [GpuArch; 4] = [GpuArch::Sm90, GpuArch::Sm80, GpuArch::Gfx942, GpuArch::Gfx950];

    /// The `-Ctarget-cpu` name (`sm_90`, `gfx942`, ...).
    pub fn cpu(self) -> &'static str {
        match self {
            GpuArch::Sm90 => "sm_90",
            GpuArch::Sm80 => "sm_80",
            GpuArch::Gfx942 => "gfx942",
            GpuArch::Gfx950 => "gfx950",
        }
    }
    /// The rustc target triple.
    pub fn triple(self) -> &'static str {
        if self.is_nvidia() {
            "nvptx64-nvidia-cuda"
        } else {
            "amdgcn-amd-amdhsa"
        }
    }
    /// True for the NVIDIA architectures (PTX modules).
    pub fn is_nvidia(self) -> bool {
        matches!(self, GpuArch::Sm90 | GpuArch::Sm80)
    }
    /// The architecture whose `-Ctarget-cpu` name is `name` (`sm_90`, `gfx942`, ...).
    pub fn from_cpu(name: &str) -> Option<GpuArch> {
        GpuArch::ALL.into_iter().find(|a| a.cpu() == name)
    }
    fn artifact_name(self) -> &'static str {
        if self.is_nvidia() {
            "zipcoll_kernels.ptx"
        } else {
            "zipcoll_kernels.elf"
        }
    }
}

/// Why a GPU build or validation failed.
#[derive(Debug)]
pub enum BuildError {
    /// The toolchain of `scripts/setup.sh` is not installed where it was looked for.
    ToolchainMissing { looked_in: PathBuf },
    /// A tool could not be started.
    Spawn { tool: String, error: std::io::Error },
    /// A tool ran and failed; its output.
    ToolFailed { tool: String, output: String },
    /// `ZIPCOLL_GPU_ARCHS` holds a name that is not an architecture.
    UnknownArch { name: String },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ToolchainMissing { looked_in } => write!(
                f,
                "zipcoll's GPU toolchain is not installed (looked in {}): run `bash scripts/setup.sh`",
                looked_in.display()
            ),
            BuildError::Spawn { tool, error } => write!(f, "cannot run {tool}: {error}"),
            BuildError::ToolFailed { tool, output } => write!(f, "{tool} failed:\n{output}"),
            BuildError::UnknownArch { name } => {
                let known: Vec<_> = GpuArch::ALL.iter().map(|a| a.cpu()).collect();
                write!(
                    f,
                    "{ARCHS_ENV}: `{name}` is not an architecture; use a comma-separated list of {}, or `all` or `none`",
                    known.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// The environment variable that names the architectures a host build embeds.
pub const ARCHS_ENV: &str = "ZIPCOLL_GPU_ARCHS";

/// Why a host build embeds the architectures it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// `ZIPCOLL_GPU_ARCHS` named them.
    Named,
    /// They are the architectures of this machine's GPUs.
    Detected,
}

/// The architectures a host build embeds, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// In [`GpuArch::ALL`]'s order, without repeats; empty: no GPU code.
    pub archs: Vec<GpuArch>,
    pub reason: Reason,
}

/// What a host build embeds: `ZIPCOLL_GPU_ARCHS` when it is set ([`parse_archs`]), else the
/// architectures of the GPUs this machine has ([`detect_archs`]).
pub fn selection() -> Result<Selection, BuildError> {
    match std::env::var(ARCHS_ENV) {
        Ok(list) => Ok(Selection {
            archs: parse_archs(&list)?,
            reason: Reason::Named,
        }),
        Err(_) => Ok(Selection {
            archs: detect_archs(),
            reason: Reason::Detected,
        }),
    }
}

/// A `ZIPCOLL_GPU_ARCHS` value: architectures separated by commas (`sm_90,gfx942`), `all`, or
/// `none` (or empty): the simulator only.
pub fn parse_archs(list: &str) -> Result<Vec<GpuArch>, BuildError> {
    let mut archs = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match name {
            "all" => archs.extend(GpuArch::ALL),
            "none" => {}
            _ => archs.push(GpuArch::from_cpu(name).ok_or_else(|| BuildError::UnknownArch { name: name.into() })?),
        }
    }
    Ok(GpuArch::ALL.into_iter().filter(|a| archs.contains(a)).collect())
}

/// The architectures of this machine's GPUs: NVIDIA's from `nvidia-smi`'s compute capabilities
/// (9.0 and later run the `sm_90` module, 8.x the `sm_80` one), AMD's from the kernel driver's
/// topology (`gfx_target_version` 90402 is gfx942, 90500 gfx950). Empty without a GPU.
pub fn detect_archs() -> Vec<GpuArch> {
    let mut found = Vec::new();
    if let Ok(out) = Command::new("nvidia-smi")
        .args(["--query-gpu=compute_cap", "--format=csv,noheader"])
        .output()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        found.extend(text.lines().filter_map(nvidia_arch));
    }
    if let Ok(nodes) = std::fs::read_dir("/sys/class/kfd/kfd/topology/nodes") {
        for node in nodes.flatten() {
            let props = std::fs::read_to_string(node.path().join("properties")).unwrap_or_default();
            found.extend(props.lines().filter_map(amd_arch));
        }
    }
    GpuArch::ALL.into_iter().filter(|a| found.contains(a)).collect()
}

/// The module for a compute capability line of `nvidia-smi` (`9.0`, `8.6`).
fn nvidia_arch(line: &str) -> Option<GpuArch> {
    let major: u32 = line.trim().split('.').next()?.parse().ok()?;
    match major {
        9.. => Some(GpuArch::Sm90),
        8 => Some(GpuArch::Sm80),
        _ => None,
    }
}

/// The code object for a `gfx_target_version` line of the AMD driver's topology.
fn amd_arch(line: &str) -> Option<GpuArch> {
    match line.strip_prefix("gfx_target_version")?.trim() {
        "90402" => Some(GpuArch::Gfx942),
        "90500" => Some(GpuArch::Gfx950),
        _ => None,
    }
}

/// The repository root (this crate lives at `targets/builder`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository holds this crate")
}

/// The tools that `scripts/setup.sh` installed.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// Root of the install (`$ZIPCOLL_TOOLCHAIN`, default `<repo>/.toolchain`).
    pub root: PathBuf,
    /// `ptxas`, from the CUDA wheel.
    pub ptxas: PathBuf,
    /// Directory of the LLVM tools (`llvm-readelf`).
    pub llvm_bin: PathBuf,
}

impl Toolchain {
    /// Finds the install named by `$ZIPCOLL_TOOLCHAIN`, or `<repo>/.toolchain`.
    pub fn find() -> Result<Toolchain, BuildError> {
        let root = std::env::var_os("ZIPCOLL_TOOLCHAIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join(".toolchain"));
        let env = std::fs::read_to_string(root.join("env")).map_err(|_| BuildError::ToolchainMissing {
            looked_in: root.clone(),
        })?;
        let value = |key: &str| {
            env.lines()
                .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
                .map(PathBuf::from)
        };
        match (value("PTXAS"), value("LLVM_BIN")) {
            (Some(ptxas), Some(llvm_bin)) if root.join("bin/rustc").exists() => Ok(Toolchain { root, ptxas, llvm_bin }),
            _ => Err(BuildError::ToolchainMissing { looked_in: root }),
        }
    }

    /// `ptxas --verbose` for `arch` (`sm_90`) over the named entry points of `ptx` and the
    /// device functions they call (`--entry`; ptxas still parses the whole module): its report
    /// (registers, stack, spills per function). Fails if ptxas rejects what it compiles or an
    /// entry is unknown. ptxas's time is mostly the big collective kernels, so a check that
    /// needs each kind of code compiled once, not each variant, takes a fraction of the
    /// module's. On every core (`--split-compile 0`): on the 2-core build machine the sm_90
    /// snapshot test took 168 s against 270 s on one thread, with the same report (BENCHMARKS.md,
    /// "CI's length"). The stack and spill bytes of the collective kernels were seen to differ
    /// between two runs over the same PTX even on one thread, so the snapshot view
    /// (`zipcoll_tests::ptxas_resources`) reports them against a bound.
    pub fn ptxas_entries(&self, ptx: &Path, arch: &str, entries: &[&str]) -> Result<String, BuildError> {
        self.ptxas(ptx, arch, 0, entries).map(|(report, _)| report)
    }

    /// Compiles `ptx` ahead of time for `arch` (`sm_90`) with ptxas on every core
    /// (`--split-compile 0`: the module's collective kernels take minutes on one) and returns
    /// the path of the `.cubin`, beside the PTX. Fails if ptxas rejects the module.
    pub fn cubin(&self, ptx: &Path, arch: &str) -> Result<PathBuf, BuildError> {
        self.ptxas(ptx, arch, 0, &[]).map(|(_, cubin)| cubin)
    }

    /// `ptxas -c --verbose` for `arch` over `ptx`, a library of device functions: its report
    /// (stack frame per function) and the relocatable object it wrote beside the PTX, which
    /// `nvlink` or the driver's linker (cuLink) links with the caller's code.
    pub fn ptxas_relocatable(&self, ptx: &Path, arch: &str) -> Result<(String, PathBuf), BuildError> {
        let object = ptx.with_extension(format!("{arch}.o"));
        let mut cmd = Command::new(&self.ptxas);
        cmd.arg(format!("-arch={arch}"))
            .args(["-c", "--verbose"])
            .arg(ptx)
            .arg("-o")
            .arg(&object);
        run("ptxas -c", cmd).map(|report| (report, object))
    }

    /// ptxas's verbose report and the cubin it wrote, compiling on `threads` threads (0: every
    /// core) the named entries (none named: every entry).
    fn ptxas(&self, ptx: &Path, arch: &str, threads: u32, entries: &[&str]) -> Result<(String, PathBuf), BuildError> {
        let cubin = ptx.with_extension(format!("{arch}.cubin"));
        let mut cmd = Command::new(&self.ptxas);
        cmd.arg(format!("-arch={arch}"))
            .arg("--verbose")
            .args(["--split-compile", &threads.to_string()]);
        if !entries.is_empty() {
            cmd.args(["--entry", &entries.join(",")]);
        }
        cmd.arg(ptx).arg("-o").arg(&cubin);
        run("ptxas", cmd).map(|report| (report, cubin))
    }

    /// `llvm-readelf --notes` over an AMD code object: its kernel metadata.
    pub fn readelf_notes(&self, code_object: &Path) -> Result<String, BuildError> {
        let mut cmd = Command::new(self.llvm_bin.join("llvm-readelf"));
        cmd.arg("--notes").arg(code_object);
        run("llvm-readelf", cmd)
    }
}

/// Runs `cmd`; its stdout and stderr together on success.
fn run(tool: &str, mut cmd: Command) -> Result<String, BuildError> {
    let out = cmd.output().map_err(|error| BuildError::Spawn {
        tool: tool.into(),
        error,
    })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(BuildError::ToolFailed {
            tool: tool.into(),
            output: text,
        })
    }
}

/// Builds the kernel crate for `arch` (incrementally) and returns the path of the PTX module
/// or code object.
pub fn build(tc: &Toolchain, arch: GpuArch) -> Result<PathBuf, BuildError> {
    build_in(tc, arch, GpuCrate::Kernels, arch.cpu().into(), None)
}

/// Builds the device-function library (`device/fns`) for an NVIDIA `arch` into
/// `target/gpu/device-fns-<arch>` and returns the path of its PTX (`zipcoll_device_fns.ptx`).
pub fn build_device_fns(tc: &Toolchain, arch: GpuArch) -> Result<PathBuf, BuildError> {
    build_in(
        tc,
        arch,
        GpuCrate::DeviceFns,
        format!("device-fns-{}", arch.cpu()),
        None,
    )
}

/// The GPU crates the driver builds: each its own workspace, built for GPU targets only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GpuCrate {
    /// `primitives/kernels`: the kernel module the host embeds.
    Kernels,
    /// `device/fns`: the device-function library for CUDA C++ callers (NVIDIA only).
    DeviceFns,
}

impl GpuCrate {
    /// The crate's directory in the repository.
    fn dir(self) -> &'static str {
        match self {
            GpuCrate::Kernels => "primitives/kernels",
            GpuCrate::DeviceFns => "device/fns",
        }
    }
    /// The file cargo writes for `arch`.
    fn artifact(self, arch: GpuArch) -> &'static str {
        match self {
            GpuCrate::Kernels => arch.artifact_name(),
            GpuCrate::DeviceFns => "zipcoll_device_fns.ptx",
        }
    }
}

/// Builds the kernel crate for `arch` with only the variants that `filter` (a
/// `ZIPCOLL_KERNEL_FILTER` spec) admits, in a target directory of its own
/// (`target/gpu/<arch>-subset`, so that it and [`build`] never rebuild each other's module);
/// returns the path of the PTX module or code object. For tests that check how a vendor's tools
/// take the code without paying for every variant of the largest kernels.
pub fn build_subset(tc: &Toolchain, arch: GpuArch, filter: &str) -> Result<PathBuf, BuildError> {
    build_in(
        tc,
        arch,
        GpuCrate::Kernels,
        format!("{}-subset", arch.cpu()),
        Some(filter),
    )
}

/// [`build`] into the target directory `target/gpu/<dir>`, with `filter` in place of the
/// caller's `ZIPCOLL_KERNEL_FILTER` when given. NVIDIA's module comes back as
/// `target/gpu/<dir>/zipcoll_kernels.ptx`, cargo's PTX with the launch bounds added, a file
/// cargo never touches: a later build of the same directory (cargo re-links its outputs even
/// when they are fresh) cannot remove or rewrite it under a caller still reading it.
fn build_in(
    tc: &Toolchain,
    arch: GpuArch,
    krate: GpuCrate,
    dir: String,
    filter: Option<&str>,
) -> Result<PathBuf, BuildError> {
    // One build at a time in this process (the GPU-code tests build in parallel, and two of
    // them build sm_90's module); cargo's own lock orders builds of other processes.
    static BUILDS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = BUILDS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let repo = repo_root();
    let target_dir = repo.join("target/gpu").join(dir);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(repo.join(krate.dir())).env_clear();
    for keep in [
        "PATH",
        "HOME",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
        "TMPDIR",
        "ZIPCOLL_TOOLCHAIN",
        "ZIPCOLL_KERNEL_FILTER",
    ] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    if let Some(filter) = filter {
        cmd.env("ZIPCOLL_KERNEL_FILTER", filter);
    }
    let triple = arch.triple();
    let flags_key = format!("CARGO_TARGET_{}_RUSTFLAGS", triple.to_uppercase().replace('-', "_"));
    // Cargo appends these to the kernel crate's configured flags; the later -Ctarget-cpu wins.
    cmd.env(flags_key, format!("-Ctarget-cpu={}", arch.cpu()))
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("RUSTC", tc.root.join("bin/rustc"))
        .args(["build", "--release", "--locked", "--target", triple]);
    run(&format!("cargo build ({})", krate.dir()), cmd)?;
    let artifact = target_dir.join(triple).join("release").join(krate.artifact(arch));
    if !arch.is_nvidia() {
        return Ok(artifact);
    }
    let bounded_path = target_dir.join(krate.artifact(arch));
    let io = |error: std::io::Error| BuildError::Spawn {
        tool: format!("the PTX launch bounds over {}", artifact.display()),
        error,
    };
    let bounded = with_launch_bounds(&std::fs::read_to_string(&artifact).map_err(io)?);
    if std::fs::read_to_string(&bounded_path).ok().as_deref() != Some(bounded.as_str()) {
        replace_file(&bounded_path, &bounded).map_err(io)?;
    }
    Ok(bounded_path)
}

/// Writes `text` to `path` by renaming a file written beside it, so that a process reading
/// `path` meanwhile reads either the old or the new file, never a part of one.
fn replace_file(path: &Path, text: &str) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(format!(".{}.tmp", std::process::id()));
    let partial = path.with_file_name(name);
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, path)
}

/// Entry points (by name prefix), the most threads per block they are launched with, and the
/// blocks per multiprocessor they must fit: PTX's `.maxntid` and `.minnctapersm`, which [`build`]
/// adds. The host launches them within the first (the driver reports it as the function's
/// maximum threads per block).
///
/// | entries | threads | blocks | registers | why |
/// |---------|---------|--------|-----------|-----|
/// | `zc_collective_block__*` | 512 | 1 | 128 | a channel's block of up to 512 threads must launch |
/// | `zc_collective_block_coded__*` | 512 | 1 | 128 | the same, and the block coders were tuned at 128 registers |
/// | `zc_decode_block_frames__*` | 128 | 4 | 128 | at 208 registers (one block per SM) bf16 decode ran at 172 GB/s on an H200, at 128 (`.maxnreg`) 265 GB/s |
/// | `zc_encode_block_frames__*` | 128 | 4 | 128 | the one-pass reading of the input in registers took 242 without a bound; shared memory allows 4 blocks per SM anyway |
pub const LAUNCH_BOUNDS: &[(&str, u32, u32)] = &[
    ("zc_collective_block__", 512, 1),
    ("zc_collective_block_coded__", 512, 1),
    ("zc_decode_block_frames__", 128, 4),
    ("zc_encode_block_frames__", 128, 4),
];

/// `ptx` with `.maxntid N, 1, 1` and `.minnctapersm B` after the parameter list of every entry
/// point that [`LAUNCH_BOUNDS`] names (once: a module that has them already is returned
/// unchanged).
pub fn with_launch_bounds(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len() + 64);
    let mut bound: Option<(u32, u32)> = None;
    let mut lines = ptx.lines().peekable();
    while let Some(line) = lines.next() {
        out.push_str(line);
        out.push('\n');
        if let Some(name) = line.trim_start().strip_prefix(".visible .entry ") {
            bound = LAUNCH_BOUNDS
                .iter()
                .find(|(prefix, ..)| name.starts_with(prefix))
                .map(|&(_, n, b)| (n, b));
        }
        // (rustc ends the list with `)`, then a comment naming the entry)
        if let (Some((n, b)), true) = (bound, line.trim_start().starts_with(')')) {
            if !lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with(".maxntid"))
            {
                out.push_str(&format!(".maxntid {n}, 1, 1\n.minnctapersm {b}\n"));
            }
            bound = None;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_bounds_go_after_the_named_entries_parameters_once() {
        let ptx = ".visible .entry zc_collective__bf16__sum(\n\t.param .u64 a\n)\n{\n}\n\
                   .visible .entry zc_collective_block__bf16__sum(\n\t.param .u64 a,\n\t.param .u64 b\n)    // @zc\n{\n}\n";
        let bounded = with_launch_bounds(ptx);
        assert_eq!(
            bounded,
            ".visible .entry zc_collective__bf16__sum(\n\t.param .u64 a\n)\n{\n}\n\
             .visible .entry zc_collective_block__bf16__sum(\n\t.param .u64 a,\n\t.param .u64 b\n)    // @zc\n\
             .maxntid 512, 1, 1\n.minnctapersm 1\n{\n}\n"
        );
        assert_eq!(with_launch_bounds(&bounded), bounded);
    }

    #[test]
    fn arch_lists_parse_in_build_order_without_repeats() {
        assert_eq!(
            parse_archs("gfx942, sm_90,sm_90").unwrap(),
            [GpuArch::Sm90, GpuArch::Gfx942]
        );
        assert_eq!(parse_archs("all").unwrap(), GpuArch::ALL);
        assert_eq!(parse_archs("none").unwrap(), []);
        assert_eq!(parse_archs("").unwrap(), []);
        let err = parse_archs("sm_90,sm_70").unwrap_err().to_string();
        assert!(
            err.contains("ZIPCOLL_GPU_ARCHS: `sm_70`") && err.contains("sm_80"),
            "{err}"
        );
    }

    #[test]
    fn detected_devices_map_to_modules() {
        assert_eq!(nvidia_arch("9.0"), Some(GpuArch::Sm90));
        assert_eq!(nvidia_arch("10.0\n"), Some(GpuArch::Sm90));
        assert_eq!(nvidia_arch("8.6"), Some(GpuArch::Sm80));
        assert_eq!(nvidia_arch("7.5"), None);
        assert_eq!(nvidia_arch("[N/A]"), None);
        assert_eq!(amd_arch("gfx_target_version 90402"), Some(GpuArch::Gfx942));
        assert_eq!(amd_arch("gfx_target_version 90500"), Some(GpuArch::Gfx950));
        assert_eq!(amd_arch("gfx_target_version 0"), None);
        assert_eq!(amd_arch("simd_count 0"), None);
    }
}
