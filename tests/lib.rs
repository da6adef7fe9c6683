//! Helpers for the cross-crate tests in `tests/tests/`: normalizing generated GPU code so its
//! snapshots change only when the code does.
//!
//! | function                 | input                       | output                                   |
//! |--------------------------|-----------------------------|------------------------------------------|
//! | [`ptx_entries`]          | a PTX module                | (entry name, normalized body) per `.entry` |
//! | [`ptxas_resources`]      | `ptxas --verbose` output    | one line per entry: registers, spills, smem |
//! | [`amd_kernel_summary`]   | `llvm-readelf --notes`      | target + one line per kernel's resources |

/// Drops what churns without a code change: comments, `.loc`/`.file` lines, blank lines and
/// trailing whitespace.
pub fn normalize_ptx_line(line: &str) -> Option<&str> {
    let code = line.split("//").next().unwrap_or("").trim_end();
    let t = code.trim_start();
    if t.is_empty() || t.starts_with(".loc") || t.starts_with(".file") {
        None
    } else {
        Some(code)
    }
}

/// Splits a PTX module into its entry points: (name, normalized text from `.entry` to the
/// closing brace), and the normalized rest of the module (header, globals, `.func`s).
pub fn ptx_entries(ptx: &str) -> (Vec<(String, String)>, String) {
    let mut entries = Vec::new();
    let mut rest = String::new();
    let mut current: Option<(String, String)> = None;
    for line in ptx.lines().filter_map(normalize_ptx_line) {
        if let Some(pos) = line.find(".entry ") {
            let name = line[pos + 7..].split(['(', ' ']).next().unwrap_or("").to_string();
            current = Some((name, String::new()));
        }
        match current.as_mut() {
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
                if line == "}" {
                    entries.push(current.take().expect("inside an entry"));
                }
            }
            None => {
                rest.push_str(line);
                rest.push('\n');
            }
        }
    }
    (entries, rest)
}

/// One line per entry from `ptxas --verbose`: `name: Used N registers, ...; N bytes stack
/// frame, N bytes spill stores, N bytes spill loads` (compile times dropped).
pub fn ptxas_resources(report: &str) -> String {
    let mut out = String::new();
    let mut name = "";
    let mut frame = "";
    for line in report.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("ptxas info    : Function properties for ") {
            name = rest;
        } else if line.contains("bytes stack frame") {
            frame = line;
        } else if let Some(used) = line.strip_prefix("ptxas info    : Used ") {
            out.push_str(&format!("{name}: Used {used}; {frame}\n"));
        }
    }
    out
}

/// The kernel-level resource fields of an AMD code object's metadata notes, one line per
/// kernel, after the `amdhsa.target` line.
pub fn amd_kernel_summary(notes: &str) -> String {
    const KEYS: [&str; 9] = [
        ".name",
        ".sgpr_count",
        ".vgpr_count",
        ".agpr_count",
        ".sgpr_spill_count",
        ".vgpr_spill_count",
        ".group_segment_fixed_size",
        ".private_segment_fixed_size",
        ".wavefront_size",
    ];
    let mut target = String::new();
    let mut kernels: Vec<Vec<(String, String)>> = Vec::new();
    for line in notes.lines() {
        if let Some(t) = line.strip_prefix("amdhsa.target:") {
            target = t.trim().to_string();
        }
        if line.starts_with("  - .") {
            kernels.push(Vec::new());
        }
        // Kernel-level fields sit at indentation 4 (list items of `amdhsa.kernels`).
        let field = line.strip_prefix("  - ").or_else(|| line.strip_prefix("    ")).filter(|f| f.starts_with('.'));
        if let (Some(field), Some(k)) = (field, kernels.last_mut()) {
            if let Some((key, value)) = field.split_once(':') {
                if KEYS.contains(&key) {
                    k.push((key.to_string(), value.trim().to_string()));
                }
            }
        }
    }
    let mut lines: Vec<String> = kernels
        .iter()
        .map(|k| {
            let get = |key: &str| k.iter().find(|(kk, _)| kk == key).map_or("-", |(_, v)| v.as_str());
            let fields: Vec<String> = KEYS[1..].iter().map(|key| format!("{}={}", &key[1..], get(key))).collect();
            format!("{}: {}", get(".name"), fields.join(" "))
        })
        .collect();
    lines.sort();
    format!("target {target}\n{}\n", lines.join("\n"))
}
