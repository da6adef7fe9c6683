//! Tests of the command-line tools: the `zipcoll` binary on small files written here, and
//! `zipcoll-comm` and `zipcoll-bench` on the simulator (or without a GPU), through what a user
//! sees: stdout, stderr and the exit status (0 ok, 1 check failed, 2 usage, 3 runtime, 141 stdout
//! closed; `src/bin/common`).
//!
//! | test                                   | file                                   | expects                                         |
//! |----------------------------------------|----------------------------------------|-------------------------------------------------|
//! | `bf16_normal_every_codec`              | 256 Ki N(0,1) bf16                     | exit 0, every codec's ratio line, sane ratios, the picks: raw on NVLink, a codec on NET |
//! | `f32_file_one_codec`                   | 64 Ki N(0,1) f32                       | exit 0, only the fixedlen line                  |
//! | `fp8_files`                            | 100 001 fp8 e4m3 and e5m2 (odd count)  | exit 0, ratio lines                             |
//! | `safetensors_two_dtypes`               | BF16 + F32 + I32 tensors               | both float tensors with their dtypes, the I32 one skipped with a note; `--dtype` filters |
//! | `auto_codec_checks_realized_size`      | N(0,1) bf16                            | the NET pick encoded and accepted               |
//! | `errors_exit_nonzero_with_a_message`   | missing file, odd length, unknown codec, unknown dtype, no --dtype, a bad safetensors file | exit != 0 and the message |
//! | `gpu_flag_runs_on_cuda_or_is_a_clear_error` | --gpu                             | with a CUDA GPU: exit 0 on `cuda:0`; without: exit 3 and the message |
//! | `inspect_into_a_closed_pipe_stops_quietly` | stdout a pipe whose reader is gone | exit 141, no panic, nothing on stderr     |
//! | `frame_elems_are_checked_before_any_work` | --frame-elems over a dtype's limit  | exit 2, nothing on stdout; `--help` states the range |
//! | `every_tool_has_version_and_exit_statuses` | --version, --help                   | the tool's name and version; the exit-status table |
//! | `comm_kill_on_sim_sees_the_survivors_error` | `zipcoll-comm kill` on 2 thread ranks | exit 0 only with rank 0's typed error reported in time |
//! | `comm_abort_and_cycles_on_sim_pass`     | `zipcoll-comm abort`, `cycles --cycles 20` on 2 thread ranks | rank 1's abort reported within a second; files and threads unchanged |
//! | `comm_timeout_flag_beats_env_which_beats_default` | `ZIPCOLL_TIMEOUT_MS`, `--timeout-ms` | the kill's limit follows the flag, else the variable |
//! | `comm_usage_errors_name_the_problem`    | --ranks 0, bench --iters 0 / --repeats 0 / --ranks 1 / an overflowing size, bad ZIPCOLL_* values, an empty selection | exit 2 and the message |
//! | `comm_bench_on_sim_reports_each_size`   | `zipcoll-comm bench` on 3 thread ranks, 2 sizes, 1 call x 3 runs | exit 0, one line per size and compression with the host column |
//! | `comm_env_sizes_take_suffixes`          | `ZIPCOLL_BUFFER_BYTES=128K`            | accepted, the check passes                      |
//! | `comm_check_quick_reports_progress`     | `check --quick` narrowed by filters     | the plan line, a progress line per collective, exit 0 |
//! | `bench_codec_usage_is_checked_first`    | `zipcoll-bench codec` with bad values  | exit 2 (usage) before it looks for a GPU        |
//! | `perf_on_sim_sweeps_and_checks`         | `zipcoll-perf` on 3 thread ranks: all_reduce over 2 sizes, reduce to root 2 (f32 max, ExpAns), sendrecv as JSON, CSV at an odd count, random bits under Auto, three compression settings in one sweep, all_gather of a raw bf16 file | exit 0, a row per size (and setting) with nccl-tests' columns and #wrong 0, each setting's time over the first's; bad flags exit 2, a missing file 3 |
//! | `calibrate_on_sim_writes_a_calibration_auto_follows` | `zipcoll calibrate` on 2 thread ranks, then `zipcoll-perf --compression auto` without `ZIPCOLL_CALIBRATION`, with the measured file and with that file's coders set 10^7 times slower than its link; a missing file, bad flags | the file reads back with positive rates; Auto codes with the presets, runs with the measured file, sends RAW with the slow coders; exit 2 naming the variable or flag |
//! | `perf_plots_a_line_per_setting`         | `zipcoll-perf --plot`, with the font found and with `ZIPCOLL_PLOT_FONT` unreadable | exit 0, a 960 x 600 PNG either way; without a font a warning that it has no text |

use safetensors::tensor::TensorView;
use safetensors::Dtype;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use zipcoll_device::dtype::{Bf16, F32Exact, F32, F8E4M3, F8E5M2};

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("zipcoll-cli-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `n` N(0,1) samples (splitmix64 + Box-Muller).
fn normal(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u1, u2) = (next(), next());
            ((-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
        })
        .collect()
}

/// The little-endian bytes of `xs` rounded to `T`.
fn bytes_of<T: F32Exact>(xs: &[f32]) -> Vec<u8> {
    use zipcoll_targets::Word;
    let size = T::DTYPE.size_bytes();
    xs.iter()
        .flat_map(|&x| T::from_f32(x).to_bits64().to_le_bytes().into_iter().take(size))
        .collect()
}

/// Runs `zipcoll inspect` with `args`.
fn inspect(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zipcoll"))
        .arg("inspect")
        .args(args)
        .output()
        .expect("run zipcoll")
}

/// stdout and stderr of `out`, for messages.
fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `ratio` of the first line of `stdout` that starts (indented) with `label`.
fn ratio_of(stdout: &str, label: &str) -> Option<f64> {
    stdout
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(label))
        .find_map(|l| l.split("ratio ").nth(1)?.split_whitespace().next()?.parse().ok())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts `out` exited 0 and returns its stdout.
fn success(out: &Output) -> String {
    let (o, e) = text(out);
    assert_eq!(out.status.code(), Some(0), "stdout:\n{o}\nstderr:\n{e}");
    o
}

#[test]
fn bf16_normal_every_codec() {
    let dir = TempDir::new("bf16");
    let file = dir.path("normal.bf16");
    std::fs::write(&file, bytes_of::<Bf16>(&normal(1 << 18, 1))).unwrap();
    let out = success(&inspect(&[s(&file), "--dtype", "bf16", "--frame-elems", "16384"]));
    let entropy = ratio_of(&out, "entropy").expect("entropy line");
    assert!((0.63..0.68).contains(&entropy), "{out}");
    for codec in ["raw", "fixedlen", "expwindow", "expans", "huffman"] {
        let r = ratio_of(&out, codec).unwrap_or_else(|| panic!("no {codec} line:\n{out}"));
        assert!(r >= entropy && r < 1.01, "{codec} ratio {r}:\n{out}");
    }
    assert!(ratio_of(&out, "expans").unwrap() < 0.75, "{out}");
    assert!(ratio_of(&out, "raw").unwrap() > 1.0, "RAW frames carry headers:\n{out}");
    assert_eq!(out.matches("round trip ok").count(), 5, "{out}");
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("nvlink    pick raw")),
        "{out}"
    );
    let net = out
        .lines()
        .find(|l| l.trim_start().starts_with("net"))
        .expect("net line");
    assert!(!net.contains("pick raw"), "{out}");
}

#[test]
fn f32_file_one_codec() {
    let dir = TempDir::new("f32");
    let file = dir.path("grads.f32");
    std::fs::write(&file, bytes_of::<F32>(&normal(1 << 16, 2))).unwrap();
    let out = success(&inspect(&[s(&file), "--dtype", "f32", "--codec", "fixedlen"]));
    let r = ratio_of(&out, "fixedlen").expect("fixedlen line");
    // 24 raw bits + a few exponent bits per 32
    assert!((0.8..1.0).contains(&r), "{out}");
    assert!(ratio_of(&out, "expans").is_none(), "only the codec given:\n{out}");
}

#[test]
fn fp8_files() {
    let dir = TempDir::new("fp8");
    let xs = normal(100_001, 3);
    for (dtype, bytes) in [("f8e4m3", bytes_of::<F8E4M3>(&xs)), ("f8e5m2", bytes_of::<F8E5M2>(&xs))] {
        let file = dir.path(&format!("act.{dtype}"));
        std::fs::write(&file, bytes).unwrap();
        let out = success(&inspect(&[s(&file), "--dtype", dtype, "--codec", "expwindow"]));
        assert!(out.contains(&format!("{dtype}, 100001 elements")), "{out}");
        let r = ratio_of(&out, "expwindow").expect("expwindow line");
        assert!((0.5..1.01).contains(&r), "{out}");
    }
}

#[test]
fn safetensors_two_dtypes() {
    let dir = TempDir::new("st");
    let file = dir.path("model.safetensors");
    let a = bytes_of::<Bf16>(&normal(64 * 1024, 4));
    let b = bytes_of::<F32>(&normal(128 * 256, 5));
    let c = vec![7u8; 4 * 100];
    let tensors = [
        ("layer.a", TensorView::new(Dtype::BF16, vec![64, 1024], &a).unwrap()),
        ("layer.b", TensorView::new(Dtype::F32, vec![128, 256], &b).unwrap()),
        ("steps", TensorView::new(Dtype::I32, vec![100], &c).unwrap()),
    ];
    std::fs::write(&file, safetensors::serialize(tensors, None).unwrap()).unwrap();

    let out = inspect(&[s(&file), "--codec", "expwindow"]);
    let stdout = success(&out);
    let (_, stderr) = text(&out);
    assert!(stdout.contains("tensor layer.a: bf16, 65536 elements"), "{stdout}");
    assert!(stdout.contains("tensor layer.b: f32, 32768 elements"), "{stdout}");
    assert!(stdout.contains("all tensors:"), "{stdout}");
    assert!(stderr.contains("note: skipping steps"), "{stderr}");
    assert_eq!(
        stdout.matches("expwindow ratio").count(),
        3,
        "two tensors and the total:\n{stdout}"
    );

    let out = success(&inspect(&[s(&file), "--codec", "raw", "--dtype", "f32"]));
    assert!(
        out.contains("tensor layer.b") && !out.contains("tensor layer.a"),
        "{out}"
    );
}

#[test]
fn auto_codec_checks_realized_size() {
    let dir = TempDir::new("auto");
    let file = dir.path("normal.bf16");
    std::fs::write(&file, bytes_of::<Bf16>(&normal(1 << 17, 6))).unwrap();
    let out = success(&inspect(&[s(&file), "--dtype", "bf16", "--codec", "auto"]));
    let net = out
        .lines()
        .find(|l| l.trim_start().starts_with("net"))
        .expect("net line");
    assert!(net.contains("accepted"), "{out}");
    // raw (the NVLink pick) and the NET pick, nothing else
    assert_eq!(out.matches("round trip ok").count(), 2, "{out}");
}

#[test]
fn lossy_quantizers_report_their_ratios_and_errors() {
    let dir = TempDir::new("lossy");
    let file = dir.path("grads.f32");
    let mut x: Vec<f32> = normal(100_000, 4).iter().map(|v| v * 0.05).collect();
    x[5] = f32::NAN;
    x[7] = f32::NEG_INFINITY;
    x[9] = 1e30;
    std::fs::write(&file, bytes_of::<F32>(&x)).unwrap();
    for (spec, shown, escapes) in [
        ("error-bound:abs=1e-3", "error-bound:abs=0.001", "3 escapes"),
        ("error-bound:rel=1e-4", "error-bound:rel=0.0001", "3 escapes"),
        ("qsgd:bits=8", "qsgd:bits=8,bucket=512,seed=0", "2 escapes"),
    ] {
        let out = success(&inspect(&[s(&file), "--dtype", "f32", "--lossy", spec]));
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with("lossy"))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(line.contains(shown) && line.contains(escapes), "{line}");
        if spec.starts_with("error-bound:abs") {
            assert!(line.ends_with("bound held"), "{line}");
        }
        let quant = ratio_of(&out, "quant").expect("a quant line");
        let huffman = ratio_of(&out, "+huffman").expect("a +huffman line");
        // 8-bit symbols are a quarter of f32; Huffman codes the few busy buckets in fewer bits
        assert!((0.25..0.26).contains(&quant), "{out}");
        assert!(huffman < quant, "{out}");
        assert_eq!(out.matches("symbols round trip ok").count(), 3, "{out}");
    }
    for (bad, message) in [
        ("error-bound:abs=-1", "the bound must be a positive finite number"),
        ("qsgd:bits=9", "bits 9: 2..=8"),
        ("zfp:rate=8", "expected exact, error-bound:abs=EB"),
        ("exact", "exact quantizes nothing"),
    ] {
        fails_with(&inspect(&[s(&file), "--dtype", "f32", "--lossy", bad]), 2, message);
    }
    let both = inspect(&[
        s(&file),
        "--dtype",
        "f32",
        "--lossy",
        "qsgd:bits=4",
        "--codec",
        "expans",
    ]);
    fails_with(&both, 2, "cannot be used with");
}

#[test]
fn errors_exit_nonzero_with_a_message() {
    let dir = TempDir::new("err");
    let odd = dir.path("odd.bf16");
    std::fs::write(&odd, [1u8, 2, 3]).unwrap();
    let bad_st = dir.path("bad.safetensors");
    std::fs::write(&bad_st, b"not a safetensors file").unwrap();
    let missing = dir.path("missing.bf16");
    let cases: [(Vec<&str>, &str); 6] = [
        (vec![s(&missing), "--dtype", "bf16"], "cannot read"),
        (vec![s(&odd), "--dtype", "bf16"], "not a whole number of bf16 elements"),
        (
            vec![s(&odd), "--dtype", "f8e4m3", "--codec", "zstd"],
            "unknown codec \"zstd\"",
        ),
        (vec![s(&odd), "--dtype", "bf17"], "unknown dtype \"bf17\""),
        (vec![s(&odd)], "--dtype is required"),
        (vec![s(&bad_st)], "not a valid safetensors file"),
    ];
    for (args, message) in cases {
        let out = inspect(&args);
        let (_, stderr) = text(&out);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

#[test]
fn gpu_flag_runs_on_cuda_or_is_a_clear_error() {
    let dir = TempDir::new("gpu");
    let file = dir.path("x.bf16");
    std::fs::write(&file, bytes_of::<Bf16>(&normal(4096, 7))).unwrap();
    let out = inspect(&[s(&file), "--dtype", "bf16", "--gpu", "--codec", "fixedlen"]);
    if (zipcoll::Backend::Cuda { ordinal: 0 }).prepare().is_ok() {
        assert!(success(&out).contains("on cuda:0"));
    } else {
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(stderr.contains("--gpu needs a usable CUDA GPU"), "{stderr}");
    }
}

#[test]
fn inspect_into_a_closed_pipe_stops_quietly() {
    let dir = TempDir::new("pipe");
    let file = dir.path("x.bf16");
    std::fs::write(&file, bytes_of::<Bf16>(&normal(4096, 8))).unwrap();
    // the reader is gone before the tool writes anything: its first line meets a broken pipe
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_zipcoll"))
        .args(["inspect", s(&file), "--dtype", "bf16"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn frame_elems_are_checked_before_any_work() {
    let dir = TempDir::new("frames");
    let file = dir.path("x.f32");
    std::fs::write(&file, bytes_of::<F32>(&normal(1024, 9))).unwrap();
    let out = inspect(&[s(&file), "--dtype", "f32", "--frame-elems", "300000000"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stdout.is_empty(), "nothing runs before the check:\n{stdout}");
    assert!(
        stderr.contains("--frame-elems 300000000: frames of f32 (<raw>) hold at most 268435456 elements"),
        "{stderr}"
    );
    let help = success(&inspect(&["--help"]));
    assert!(help.contains("268435456 f32 elements"), "{help}");
}

/// Runs `exe` with `args` and the environment variables `env`.
fn tool(exe: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(exe);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run the tool")
}

/// Runs `zipcoll-comm` with `args` and `env` on the simulator's thread ranks.
fn comm(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut all = vec!["--transport", "sim"];
    all.extend_from_slice(args);
    tool(env!("CARGO_BIN_EXE_zipcoll-comm"), &all, env)
}

/// Asserts `out` exited with `code` and its stderr contains `message`.
fn fails_with(out: &Output, code: i32, message: &str) {
    let (o, e) = text(out);
    assert_eq!(out.status.code(), Some(code), "stdout:\n{o}\nstderr:\n{e}");
    assert!(e.contains(message), "wanted {message:?} in:\n{e}");
}

#[test]
fn every_tool_has_version_and_exit_statuses() {
    for (exe, name) in [
        (env!("CARGO_BIN_EXE_zipcoll"), "zipcoll"),
        (env!("CARGO_BIN_EXE_zipcoll-comm"), "zipcoll-comm"),
        (env!("CARGO_BIN_EXE_zipcoll-bench"), "zipcoll-bench"),
        (env!("CARGO_BIN_EXE_zipcoll-perf"), "zipcoll-perf"),
    ] {
        let version = success(&tool(exe, &["--version"], &[]));
        assert_eq!(version.trim(), format!("{name} {}", env!("CARGO_PKG_VERSION")));
        let help = success(&tool(exe, &["--help"], &[]));
        assert!(help.contains("Exit status: 0 ok; 1 a check failed"), "{name}:\n{help}");
    }
    let help = success(&comm(&["check", "--help"], &[]));
    assert!(help.contains("2 usage error") && help.contains("--quick"), "{help}");
}

#[test]
fn comm_kill_on_sim_sees_the_survivors_error() {
    let out = comm(&["kill", "--ranks", "2", "--timeout-ms", "1000"], &[]);
    let stdout = success(&out);
    assert!(stdout.contains("rank 1 stops participating"), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.contains("rank 0 got"))
        .unwrap_or_else(|| panic!("no line of rank 0's outcome:\n{stdout}"));
    assert!(line.contains("got error `") && line.ends_with(": ok"), "{line}");
}

/// `zipcoll-comm abort` and `cycles` on 2 thread ranks: rank 0 reports rank 1's abort well
/// within a second although the timeout is 20 s; 20 init/abort cycles leave the process's
/// files and threads no higher than they were (each rank's line says ok).
#[test]
fn comm_abort_and_cycles_on_sim_pass() {
    let stdout = success(&comm(&["abort", "--ranks", "2", "--timeout-ms", "20000"], &[]));
    let line = stdout
        .lines()
        .find(|l| l.contains("rank 0 got"))
        .unwrap_or_else(|| panic!("no line of rank 0's outcome:\n{stdout}"));
    assert!(
        line.contains("rank 1: its caller aborted") && line.ends_with(": ok"),
        "{line}"
    );
    let stdout = success(&comm(&["cycles", "--ranks", "2", "--cycles", "20"], &[]));
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("cycles: rank")).collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines.iter().all(|l| l.ends_with(": ok")), "{stdout}");
}

/// `zipcoll-comm bench` on 3 thread ranks: every run starts after a barrier of the ranks (a
/// rank that skipped it would hang the others until the timeout), and rank 0 prints one line
/// per size and compression, each with the host's enqueue time.
#[test]
fn comm_bench_on_sim_reports_each_size() {
    let out = comm(
        &[
            "bench",
            "--ranks",
            "3",
            "--sizes",
            "4K,12K",
            "--iters",
            "1",
            "--repeats",
            "3",
            "--timeout-ms",
            "60000",
        ],
        &[("ZIPCOLL_PROFILE", "1")],
    );
    let stdout = success(&out);
    // with the profile on, every rank reports its calls' device times: 3 warm-up calls are
    // left out, the 3 x 1 timed calls kept (none uploads a plan on the simulator)
    let profiles: Vec<&str> = stdout.lines().filter(|l| l.starts_with("profile rank")).collect();
    assert_eq!(profiles.len(), 3 * 4, "{stdout}");
    for rank in 0..3 {
        let mine = profiles
            .iter()
            .filter(|l| l.starts_with(&format!("profile rank {rank} ")));
        assert_eq!(mine.count(), 4, "{stdout}");
    }
    for line in &profiles {
        let timed = if line.starts_with("profile rank 2 ") { 2 } else { 3 };
        assert!(
            line.matches("(0/3)").count() == timed && !line.contains("kernel    0.0 us"),
            "{line}"
        );
    }
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("bench Sim 3 ranks")).collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    for (line, (size, policy)) in lines.iter().zip([
        ("4 KiB", "off"),
        ("4 KiB", "auto"),
        ("12 KiB", "off"),
        ("12 KiB", "auto"),
    ]) {
        assert!(line.contains(&format!("{size} {policy}")), "{line}");
        assert!(line.contains("(host") && line.contains("send/recv"), "{line}");
    }
}

/// The limit the kill line of rank 0 states, in seconds (the timeout + 10 s).
fn kill_limit(out: &Output) -> String {
    let stdout = success(out);
    stdout
        .split("(limit ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .unwrap_or_else(|| panic!("no limit in:\n{stdout}"))
        .to_owned()
}

#[test]
fn comm_timeout_flag_beats_env_which_beats_default() {
    let env_only = comm(&["kill", "--ranks", "2"], &[("ZIPCOLL_TIMEOUT_MS", "2000")]);
    assert_eq!(kill_limit(&env_only), "12");
    let both = comm(
        &["kill", "--ranks", "2", "--timeout-ms", "1000"],
        &[("ZIPCOLL_TIMEOUT_MS", "2000")],
    );
    assert_eq!(kill_limit(&both), "11");
}

/// Arguments, environment variables, and the message the tool must print.
type UsageCase<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

#[test]
fn comm_usage_errors_name_the_problem() {
    let cases: [UsageCase; 14] = [
        (
            &["check", "--ranks", "0"],
            &[],
            "invalid value '0' for '--ranks <RANKS>'",
        ),
        (
            &["bench", "--iters", "0"],
            &[],
            "invalid value '0' for '--iters <ITERS>'",
        ),
        (
            &["bench", "--repeats", "0"],
            &[],
            "invalid value '0' for '--repeats <REPEATS>'",
        ),
        (
            &["bench", "--sizes", "17179869184G"],
            &[],
            "\"17179869184G\" is not a size: it does not fit 64 bits",
        ),
        (
            &["bench", "--ranks", "1", "--sizes", "4K"],
            &[],
            "bench --ranks 1: needs at least 2 ranks (its send/recv goes from rank 0 to rank 1)",
        ),
        (&["kill", "--ranks", "1"], &[], "kill --ranks 1: needs at least 2 ranks"),
        (
            &["abort", "--ranks", "1"],
            &[],
            "--ranks 1: needs at least 2 ranks (rank 1 aborts",
        ),
        (
            &["cycles", "--ranks", "1"],
            &[],
            "--ranks 1: needs at least 2 ranks (rank 1 aborts",
        ),
        (&["cycles", "--ranks", "2", "--cycles", "0"], &[], "0 is not in 1.."),
        (
            &["check", "--quick"],
            &[("ZIPCOLL_TIMEOUT_MS", "0")],
            "ZIPCOLL_TIMEOUT_MS=\"0\": the timeout must be at least 1 ms",
        ),
        (
            &["check", "--quick"],
            &[("ZIPCOLL_CHANNELS", "0")],
            "ZIPCOLL_CHANNELS=\"0\": channels must be in 1..=256",
        ),
        (
            &["check", "--coll", "send_recv", "--ranks", "1"],
            &[],
            "selects no collective with 1 rank(s) (send_recv needs 2)",
        ),
        (
            &["check", "--count", "18446744073709551615"],
            &[],
            "expected a number of elements in 0..=268435456",
        ),
        (&["bench", "--net-rate-limit", "fast"], &[], "\"fast\" is not a rate"),
    ];
    for (args, env, message) in cases {
        fails_with(&comm(args, env), 2, message);
    }
}

#[test]
fn comm_env_sizes_take_suffixes() {
    let args = [
        "check",
        "--ranks",
        "2",
        "--coll",
        "all_gather",
        "--dtype",
        "bf16",
        "--op",
        "sum",
        "--count",
        "1000",
    ];
    let stdout = success(&comm(&args, &[("ZIPCOLL_BUFFER_BYTES", "128K")]));
    assert!(stdout.contains("4 cases per rank x 2 ranks, 0 failed"), "{stdout}");
}

#[test]
fn comm_check_quick_reports_progress() {
    let args = [
        "check",
        "--quick",
        "--ranks",
        "2",
        "--coll",
        "all_reduce_ring,send_recv",
    ];
    let stdout = success(&comm(&args, &[]));
    let mut lines = stdout.lines();
    let plan = lines.next().unwrap_or_default();
    assert!(
        plan.contains("2 ranks: 96 cases per rank (2 collectives x 4 dtype/op x 4 compressions x 3 counts)"),
        "{stdout}"
    );
    let progress: Vec<&str> = lines
        .filter(|l| l.starts_with("check ") && l.contains(" cases, "))
        .collect();
    assert_eq!(progress.len(), 2, "{stdout}");
    assert!(
        progress[0].starts_with("check all_reduce_ring") && progress[0].contains("48/96 cases"),
        "{stdout}"
    );
    assert!(
        progress[1].starts_with("check send_recv_shift") && progress[1].contains("96/96 cases, 0 failed"),
        "{stdout}"
    );
    // the ring all_reduce again and again on the same buffers (the simulator's 16 call slots
    // twice over, and one more)
    assert!(
        stdout.contains("check repeated all_reduce 33 rounds on the same buffers, 0 failed"),
        "{stdout}"
    );
    assert!(stdout.contains("129 cases per rank x 2 ranks, 0 failed"), "{stdout}");
}

#[test]
fn bench_codec_usage_is_checked_first() {
    let bench = env!("CARGO_BIN_EXE_zipcoll-bench");
    let cases: [(&[&str], &str); 4] = [
        (
            &["codec", "--repeats", "0"],
            "invalid value '0' for '--repeats <REPEATS>'",
        ),
        (
            &["codec", "--frame-elems", "0"],
            "expected a number of elements in 1..=1073741824",
        ),
        (
            &["codec", "--dtype", "f32", "--frame-elems", "300000000"],
            "--frame-elems 300000000: frames of f32 hold at most 268435456 elements",
        ),
        (&["crosscheck", "--sizes", "1Q"], "\"1Q\" is not a size"),
    ];
    for (args, message) in cases {
        fails_with(&tool(bench, args, &[]), 2, message);
    }
}

#[test]
fn calibrate_on_sim_writes_a_calibration_auto_follows() {
    let dir = TempDir::new("calibrate");
    let file = dir.path("sim.toml");
    let zipcoll = env!("CARGO_BIN_EXE_zipcoll");
    let stdout = success(&tool(
        zipcoll,
        &[
            "calibrate",
            "--transport",
            "sim",
            "--ranks",
            "2",
            "--sizes",
            "32K,512K",
            "-n",
            "5",
            "--out",
            s(&file),
        ],
        &[],
    ));
    assert!(stdout.contains("transport = \"sim\""), "{stdout}");
    let written = std::fs::read_to_string(&file).unwrap();
    let calibration = zipcoll::comm::calibration::Calibration::parse(&written).unwrap_or_else(|e| panic!("{e}"));
    assert!(calibration.bandwidth_bytes_per_s > 0.0 && calibration.latency_s >= 0.0);
    assert_eq!(
        calibration.codecs.keys().map(String::as_str).collect::<Vec<_>>(),
        ["expans", "expwindow", "fixedlen", "huffman"]
    );
    // Auto's pick at 256 KiB of send/recv: a codec with the presets, RAW with coders far slower
    // than the link. (The measured file is timing-dependent on a loaded machine, so the pick is
    // checked with rates written here; the measured file must load and run.)
    let auto_codec = |env: &[(&str, &str)]| {
        let out = tool(
            env!("CARGO_BIN_EXE_zipcoll-perf"),
            &[
                "sendrecv",
                "-b",
                "256K",
                "-e",
                "256K",
                "--transport",
                "sim",
                "--ranks",
                "2",
                "-n",
                "1",
                "-w",
                "0",
                "--csv",
            ],
            env,
        );
        let stdout = success(&out);
        stdout
            .lines()
            .nth(1)
            .unwrap_or_default()
            .split(',')
            .nth(12)
            .unwrap_or_default()
            .to_owned()
    };
    assert_ne!(auto_codec(&[]), "raw");
    assert!(!auto_codec(&[("ZIPCOLL_CALIBRATION", s(&file))]).is_empty());
    let slow = dir.path("slow-coders.toml");
    let mut slow_coders = calibration.clone();
    slow_coders.bandwidth_bytes_per_s = 1e10;
    for rates in slow_coders.codecs.values_mut() {
        rates.encode_bytes_per_s = 1e3;
        rates.decode_bytes_per_s = 1e3;
    }
    std::fs::write(&slow, slow_coders.to_toml()).unwrap();
    assert_eq!(auto_codec(&[("ZIPCOLL_CALIBRATION", s(&slow))]), "raw");
    fails_with(
        &tool(
            env!("CARGO_BIN_EXE_zipcoll-perf"),
            &["sendrecv", "-b", "4K", "-e", "4K", "--transport", "sim", "--ranks", "2"],
            &[("ZIPCOLL_CALIBRATION", s(&dir.path("missing.toml")))],
        ),
        2,
        "ZIPCOLL_CALIBRATION",
    );
    for (args, message) in [
        (&["calibrate", "--sizes", "64M,4M"][..], "--sizes"),
        (&["calibrate", "--codecs", "raw"][..], "codec name"),
        (&["calibrate", "--transport", "auto"][..], "name the transport"),
    ] {
        fails_with(&tool(zipcoll, args, &[]), 2, message);
    }
}

#[test]
fn perf_plots_a_line_per_setting() {
    let dir = TempDir::new("plot");
    // the width and height in a PNG's header (IHDR, right after the signature)
    let png_size = |path: &Path| {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(bytes[..8], *b"\x89PNG\r\n\x1a\n", "a PNG");
        let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        (be(16), be(20))
    };
    let args = |png: &Path| {
        vec![
            "sendrecv".to_owned(),
            "-b".into(),
            "4K".into(),
            "-e".into(),
            "16K".into(),
            "-f".into(),
            "4".into(),
            "--compression".into(),
            "off,expans".into(),
            "--plot".into(),
            s(png).into(),
            "--transport".into(),
            "sim".into(),
            "--ranks".into(),
            "2".into(),
            "-n".into(),
            "1".into(),
            "-w".into(),
            "0".into(),
        ]
    };
    let exe = env!("CARGO_BIN_EXE_zipcoll-perf");
    let with_font = dir.path("with-font.png");
    let a = args(&with_font);
    success(&tool(exe, &a.iter().map(String::as_str).collect::<Vec<_>>(), &[]));
    assert_eq!(png_size(&with_font), (960, 600));
    let without = dir.path("without-font.png");
    let a = args(&without);
    let out = tool(
        exe,
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        &[("ZIPCOLL_PLOT_FONT", "/nonexistent/font.ttf")],
    );
    success(&out);
    let (_, stderr) = text(&out);
    assert!(stderr.contains("the plot has no text"), "{stderr}");
    assert_eq!(png_size(&without), (960, 600));
}

/// Runs `zipcoll-perf` with `args` on 3 of the simulator's thread ranks, one warm-up call and one
/// timed call per size.
fn perf(args: &[&str]) -> Output {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--transport", "sim", "--ranks", "3", "-n", "1", "-w", "1"]);
    tool(env!("CARGO_BIN_EXE_zipcoll-perf"), &all, &[])
}

#[test]
fn perf_on_sim_sweeps_and_checks() {
    let stdout = success(&perf(&["all_reduce", "-b", "4K", "-e", "16K", "-f", "4"]));
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    for (row, (size, count)) in rows.iter().zip([(4096, 2048), (16384, 8192)]) {
        // size, count, type, redop, root, time, algbw, busbw, #wrong, wire, codec, compression
        assert_eq!(row.len(), 12, "{stdout}");
        assert_eq!((row[0].parse::<u64>(), row[1].parse::<u64>()), (Ok(size), Ok(count)));
        assert_eq!(
            (row[2], row[3], row[4], row[8], row[9], row[11]),
            ("bf16", "sum", "-1", "0", "N/A", "auto"),
            "{stdout}"
        );
        assert!(row[5].parse::<f64>().is_ok_and(|t| t > 0.0), "{stdout}");
    }
    let stdout = success(&perf(&[
        "reduce",
        "-b",
        "6K",
        "-e",
        "6K",
        "-r",
        "2",
        "-d",
        "f32",
        "-o",
        "max",
        "--compression",
        "expans",
    ]));
    let row = stdout.lines().find(|l| !l.starts_with('#')).expect("a row");
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        (cols[1], cols[2], cols[3], cols[4]),
        ("1536", "f32", "max", "2"),
        "{stdout}"
    );
    assert_eq!((cols[8], cols[10]), ("0", "expans"), "{stdout}");
    let stdout = success(&perf(&["sendrecv", "-b", "8K", "-e", "8K", "-c", "1", "--json"]));
    let line = stdout.trim();
    for field in [
        "\"coll\":\"Sendrecv\"",
        "\"ranks\":3",
        "\"size\":8192",
        "\"count\":4096",
        "\"wrong\":0",
        "\"wire\":null",
    ] {
        assert!(line.contains(field), "{field} in {line}");
    }
    // CSV, at an odd count (chunks that are not 16-byte aligned: the RAW fast path by words)
    let stdout = success(&perf(&[
        "all_gather",
        "-b",
        "12006",
        "-e",
        "12006",
        "--csv",
        "--compression",
        "off",
    ]));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(
        lines[0],
        "coll,ranks,size,count,type,redop,root,time_us,algbw_gbps,busbw_gbps,wrong,wire,codec,compression"
    );
    let cols: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(cols.len(), 14, "{stdout}");
    assert_eq!(
        (cols[0], cols[1], cols[2], cols[3], cols[10], cols[11], cols[12], cols[13]),
        ("AllGather", "3", "12006", "2001", "0", "N/A", "raw", "off"),
        "{stdout}"
    );
    // data that does not compress (every bit pattern, NaNs included): bit-exact, and Auto
    // sends it RAW
    let stdout = success(&perf(&[
        "all_reduce",
        "-b",
        "64K",
        "-e",
        "64K",
        "--data",
        "random",
        "--csv",
        "--compression",
        "auto",
    ]));
    let cols: Vec<&str> = stdout.lines().nth(1).unwrap_or_default().split(',').collect();
    assert_eq!((cols[10], cols[12], cols[13]), ("0", "raw", "auto"), "{stdout}");
    // several settings: a row per size and setting, in the order given, then each setting's
    // time over the first's
    let stdout = success(&perf(&[
        "all_reduce",
        "-b",
        "8K",
        "-e",
        "32K",
        "-f",
        "4",
        "--compression",
        "off,expans,auto",
    ]));
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let got: Vec<(&str, &str, &str, &str)> = rows.iter().map(|r| (r[0], r[8], r[10], r[11])).collect();
    assert_eq!(got.len(), 6, "{stdout}");
    assert_eq!(
        got[..4],
        [
            ("8192", "0", "raw", "off"),
            ("8192", "0", "expans", "expans"),
            ("8192", "0", got[2].2, "auto"),
            ("32768", "0", "raw", "off")
        ],
        "{stdout}"
    );
    for setting in ["expans", "auto"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("# time {setting} / off: ")))
            .unwrap_or_else(|| panic!("the {setting} ratios: {stdout}"));
        let ratios: Vec<f64> = line
            .split(": ")
            .nth(1)
            .unwrap_or_default()
            .split(')')
            .filter_map(|r| r.split_whitespace().next()?.parse().ok())
            .collect();
        assert!(ratios.len() == 2 && ratios.iter().all(|r| *r > 0.0), "{line}");
    }
    // the wire ratio over NET (its proxies count the bytes): 1 with compression off, below 1
    // with a codec on N(0,1) bf16 (exponents coded, the rest raw)
    let wire = |compression: &str| {
        let args = [
            "all_reduce",
            "-b",
            "256K",
            "-e",
            "256K",
            "--transport",
            "net",
            "--csv",
            "--compression",
            compression,
        ];
        let stdout = success(&tool(
            env!("CARGO_BIN_EXE_zipcoll-perf"),
            &[&args[..], &["--ranks", "2", "-n", "2", "-w", "0"]].concat(),
            &[],
        ));
        let row = stdout
            .lines()
            .nth(1)
            .unwrap_or_else(|| panic!("a row: {stdout}"))
            .to_owned();
        let cols: Vec<String> = row.split(',').map(str::to_owned).collect();
        assert_eq!(cols[10], "0", "{stdout}");
        cols[11]
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("a wire ratio: {stdout}"))
    };
    assert_eq!(wire("off"), 1.0);
    let coded = wire("expans");
    assert!(coded > 0.5 && coded < 0.9, "ExpAns's wire ratio {coded}");
    fails_with(&perf(&["all_reduce", "--json", "--csv"]), 2, "--csv");
    fails_with(&perf(&["all_reduce", "-f", "1"]), 2, "--stepfactor");
    fails_with(
        &perf(&["reduce", "-b", "4K", "-e", "4K", "-r", "3"]),
        2,
        "--root 3 of 3 ranks",
    );
    fails_with(&perf(&["all_reduce", "-d", "int8"]), 2, "unknown dtype");
    // real data: a raw bf16 file, each rank from its own part of it
    let dir = TempDir::new("perf");
    let file = dir.path("weights.bf16");
    std::fs::write(&file, bytes_of::<Bf16>(&normal(5000, 7))).unwrap();
    let data = format!("file:{}", file.display());
    let stdout = success(&perf(&["all_gather", "-b", "12K", "-e", "12K", "--data", &data]));
    assert!(
        stdout.contains("(raw, 5000 elements of 1 tensor(s): <raw>; 0 skipped)"),
        "{stdout}"
    );
    let row = stdout.lines().find(|l| !l.starts_with('#')).expect("a row");
    assert_eq!(row.split_whitespace().nth(8), Some("0"), "{stdout}");
    fails_with(
        &perf(&["all_reduce", "--data", "file:/nonexistent/x"]),
        3,
        "cannot read",
    );
    fails_with(
        &perf(&["all_reduce", "--data", "weights"]),
        2,
        "expected normal, random or file:PATH",
    );
}
