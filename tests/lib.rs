//! Helpers for the cross-crate tests in `tests/tests/`: normalizing generated GPU code so its
//! snapshots change only when the code does.
//!
//! | function                 | input                       | output                                   |
//! |--------------------------|-----------------------------|------------------------------------------|
//! | [`ptx_entries`]          | a PTX module                | (entry name, normalized body) per `.entry`; the rest with one size line per `.func` |
//! | [`ptxas_resources`]      | `ptxas --verbose` output    | one line per entry: registers, spills, smem |
//! | [`amd_kernel_summary`]   | `llvm-readelf --notes`      | target + one line per kernel's resources |

/// Drops what churns without a code change: comments, `.loc`/`.file` lines, blank lines,
/// trailing whitespace, and the hashes that depend on the checkout's path (crate hashes inside
/// mangled Rust symbols, the hash in the names of anonymous constants).
pub fn normalize_ptx_line(line: &str) -> Option<String> {
    let code = line.split("//").next().unwrap_or("").trim_end();
    let t = code.trim_start();
    if t.is_empty() || t.starts_with(".loc") || t.starts_with(".file") {
        None
    } else {
        Some(strip_anon_hashes(&strip_crate_hashes(code)))
    }
}

/// Replaces the hash in LLVM's names of anonymous constants: `anon_$_<32 hex>_$_7` becomes
/// `anon_$_H_$_7`.
pub fn strip_anon_hashes(code: &str) -> String {
    const OPEN: &str = "anon_$_";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at + OPEN.len()]);
        rest = &rest[at + OPEN.len()..];
        let hex = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex > 0 && rest[hex..].starts_with("_$_") {
            out.push('H');
            rest = &rest[hex..];
        }
    }
    out.push_str(rest);
    out
}

/// Removes the crate disambiguators of v0-mangled symbols: `Cs<base62>_<len><name>` becomes
/// `Cs_<len><name>`.
pub fn strip_crate_hashes(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("Cs") {
        out.push_str(&rest[..at + 2]);
        rest = &rest[at + 2..];
        let hash_len = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
        let tail = &rest[hash_len..];
        if hash_len > 0 && tail.starts_with('_') && tail[1..].starts_with(|c: char| c.is_ascii_digit()) {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// Splits a PTX module into its entry points: (name, normalized text from `.entry` to the
/// closing brace, branch labels renumbered from 0 in order of appearance), and the rest of
/// the module: its header and globals, normalized, and one line per `.func` (`.func NAME: N
/// lines`), so helper functions are tracked by size without putting every line of them in a
/// snapshot.
pub fn ptx_entries(ptx: &str) -> (Vec<(String, String)>, String) {
    let mut entries = Vec::new();
    let mut rest = String::new();
    // (entry or function, name, body, whether its `{` was seen) of the block being read
    let mut current: Option<(bool, String, String, bool)> = None;
    for line in ptx.lines().filter_map(normalize_ptx_line) {
        let line = line.as_str();
        if current.is_none() {
            if let Some(pos) = line.find(".entry ") {
                let name = line[pos + 7..].split(['(', ' ']).next().unwrap_or("").to_string();
                current = Some((true, name, String::new(), false));
            } else if let Some(pos) = line.find(".func ").filter(|_| !line.trim_end().ends_with(';')) {
                current = Some((false, func_name(&line[pos + 6..]), String::new(), false));
            }
        }
        match current.as_mut() {
            Some((entry, name, body, opened)) => {
                body.push_str(line);
                body.push('\n');
                *opened |= line == "{";
                if !*opened && line.trim_end().ends_with(';') {
                    // a prototype (declaration) spread over lines: it stays in the rest
                    rest.push_str(body);
                    current = None;
                } else if line == "}" {
                    if *entry {
                        entries.push((std::mem::take(name), renumber_labels(body)));
                    } else {
                        rest.push_str(&format!(".func {name}: {} lines\n", body.lines().count()));
                    }
                    current = None;
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

/// The name in a `.func` header after the keyword: past an optional `(return params)` group,
/// up to the parameter list.
fn func_name(header: &str) -> String {
    let h = header.trim_start();
    let h = match h.strip_prefix('(') {
        Some(inner) => inner.split_once(')').map_or("", |(_, after)| after).trim_start(),
        None => h,
    };
    h.split(['(', ' ']).next().unwrap_or("").to_string()
}

/// Renumbers LLVM's branch labels `$L__BB<function>_<block>` as `$L__BB<k>_<block>`, `k`
/// counting the distinct function numbers from 0 in order of appearance: the function number
/// counts every function compiled before, so it changes when unrelated code does.
pub fn renumber_labels(body: &str) -> String {
    const OPEN: &str = "$L__BB";
    let mut seen: Vec<String> = Vec::new();
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at + OPEN.len()]);
        rest = &rest[at + OPEN.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with('_') {
            let n = &rest[..digits];
            let k = seen.iter().position(|s| s == n).unwrap_or_else(|| {
                seen.push(n.to_string());
                seen.len() - 1
            });
            out.push_str(&k.to_string());
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

/// One line per entry from `ptxas --verbose`, sorted by name: `name: Used N registers, ...;
/// N bytes stack frame, N bytes spill stores, N bytes spill loads` (compile times dropped).
pub fn ptxas_resources(report: &str) -> String {
    let mut lines = Vec::new();
    let mut name = "";
    let mut frame = "";
    for line in report.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("ptxas info    : Function properties for ") {
            name = rest;
        } else if line.contains("bytes stack frame") {
            frame = line;
        } else if let Some(used) = line.strip_prefix("ptxas info    : Used ") {
            lines.push(format!("{name}: Used {used}; {frame}\n"));
        }
    }
    // ptxas compiles functions in parallel (`--split-compile`): sort for a stable report
    lines.sort();
    lines.concat()
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
        let field = line
            .strip_prefix("  - ")
            .or_else(|| line.strip_prefix("    "))
            .filter(|f| f.starts_with('.'));
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
            let fields: Vec<String> = KEYS[1..]
                .iter()
                .map(|key| format!("{}={}", &key[1..], get(key)))
                .collect();
            format!("{}: {}", get(".name"), fields.join(" "))
        })
        .collect();
    lines.sort();
    format!("target {target}\n{}\n", lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_hashes_are_stripped_from_mangled_symbols() {
        assert_eq!(
            strip_crate_hashes("[_RINvNtNtCs72CWimvPg0N_14zipcoll_device5codec_param_4];"),
            "[_RINvNtNtCs_14zipcoll_device5codec_param_4];"
        );
        assert_eq!(strip_crate_hashes("mov.b32 %r1, Cs; CsX_y"), "mov.b32 %r1, Cs; CsX_y");
    }

    #[test]
    fn anonymous_constant_hashes_are_stripped() {
        assert_eq!(
            strip_anon_hashes(".global .b8 anon_$_d808560cb2c256fd729b5c44fa2b6901_$_13[27] = {99};"),
            ".global .b8 anon_$_H_$_13[27] = {99};"
        );
        assert_eq!(strip_anon_hashes("anon_$_zz"), "anon_$_zz");
    }

    #[test]
    fn ptx_entries_split_and_drop_churn() {
        let ptx = "//\n// Generated by LLVM\n.version 7.8\n.target sm_90\n\t.file 1 \"x.rs\"\n\
                   .visible .entry k1(\n.param .u64 p\n)\n{\n\t.loc 1 2 3\n\tret; // done\n}\n\n\
                   .visible .entry k2()\n{\n$L__BB77_1:\n\tbra $L__BB77_1;\n}\n\
                   .func (.param .b32 r) helper(\n.param .b64 a\n)\n;\n\
                   .func (.param .b32 r) helper(\n.param .b64 a\n)\n{\n\tret;\n}\n";
        let (entries, rest) = ptx_entries(ptx);
        assert_eq!(
            rest,
            ".version 7.8\n.target sm_90\n.func (.param .b32 r) helper(\n.param .b64 a\n)\n;\n.func helper: 6 lines\n"
        );
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[0],
            (
                "k1".into(),
                ".visible .entry k1(\n.param .u64 p\n)\n{\n\tret;\n}\n".into()
            )
        );
        assert_eq!(
            entries[1],
            (
                "k2".into(),
                ".visible .entry k2()\n{\n$L__BB0_1:\n\tbra $L__BB0_1;\n}\n".into()
            )
        );
    }

    #[test]
    fn ptxas_resources_one_line_per_entry() {
        let report = "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function 'k' for 'sm_90'\n\
                      ptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
                      ptxas info    : Used 12 registers, used 0 barriers, 380 bytes cmem[0]\nptxas info    : Compile time = 1.2 ms\n";
        assert_eq!(
            ptxas_resources(report),
            "k: Used 12 registers, used 0 barriers, 380 bytes cmem[0]; 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        );
    }

    #[test]
    fn amd_summary_keeps_kernel_fields_only() {
        let notes = "amdhsa.kernels:\n  - .agpr_count:     0\n    .args:\n      - .name: a\n        .size: 8\n\
                     \x20   .name:           k\n    .sgpr_count:     17\n    .vgpr_count:     18\n    .wavefront_size: 64\n\
                     amdhsa.target:   amdgcn-amd-amdhsa--gfx942\n";
        assert_eq!(
            amd_kernel_summary(notes),
            "target amdgcn-amd-amdhsa--gfx942\nk: sgpr_count=17 vgpr_count=18 agpr_count=0 sgpr_spill_count=- \
             vgpr_spill_count=- group_segment_fixed_size=- private_segment_fixed_size=- wavefront_size=64\n"
        );
    }
}
