//! Helpers for the cross-crate tests in `tests/tests/`: reducing generated GPU code to what its
//! users rely on (entry prototypes, resources per kernel), so its snapshots change when that
//! does and not with every line of a function body.
//!
//! | function                 | input                       | output                                   |
//! |--------------------------|-----------------------------|------------------------------------------|
//! | [`ptx_interface`]        | a PTX module                | its header directives and one prototype per `.entry` |
//! | [`ptxas_resources`]      | `ptxas --verbose` output    | one line per entry: registers, spills, smem |
//! | [`amd_kernel_summary`]   | `llvm-readelf --notes`      | target + one line per kernel's resources |
//!
//! [`device_fns`] does the same for the device-function library (PTX functions, C header).

pub mod device_fns;

/// A PTX module's interface: its header directives (`.version`, `.target`, `.address_size`)
/// and one line per kernel entry, its prototype (`.visible .entry NAME(.param .u64 NAME_param_0,
/// ...)`) with comments and line breaks folded, in module order; what the host links against,
/// without the bodies, which change with every code change.
pub fn ptx_interface(ptx: &str) -> PtxInterface {
    let mut out = PtxInterface::default();
    // the prototype being read, up to its body's `{`
    let mut entry: Option<String> = None;
    for line in ptx.lines() {
        let t = line.split("//").next().unwrap_or("").trim();
        if t.is_empty() {
            continue;
        }
        if let Some(proto) = entry.as_mut() {
            if t == "{" {
                out.entries.push(std::mem::take(proto));
                entry = None;
            } else {
                if !proto.ends_with('(') && !t.starts_with(')') {
                    proto.push(' ');
                }
                proto.push_str(t);
            }
        } else if t.starts_with(".visible .entry ") || t.starts_with(".entry ") {
            entry = Some(t.to_string());
        } else if [".version ", ".target ", ".address_size "]
            .iter()
            .any(|d| t.starts_with(d))
        {
            out.header.push(t.to_string());
        }
    }
    out
}

/// What [`ptx_interface`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxInterface {
    /// The header directives, one per line.
    pub header: Vec<String>,
    /// One prototype per entry, in module order.
    pub entries: Vec<String>,
}

impl PtxInterface {
    /// The entries' names, in module order.
    pub fn names(&self) -> Vec<&str> {
        self.entries
            .iter()
            .map(|p| p.split(".entry ").nth(1).unwrap_or("").split('(').next().unwrap_or(""))
            .collect()
    }
    /// The header and the prototypes, sorted by name: the text of a snapshot.
    pub fn summary(&self) -> String {
        let mut entries = self.entries.clone();
        entries.sort();
        format!("{}\n{}\n", self.header.join("\n"), entries.join("\n"))
    }
}

/// One line per entry from `ptxas --verbose`, sorted by name: `name: Used N registers, used N
/// barriers; stack <= 512 bytes (or > 512 bytes); spills none (or some)`. The stack frame and the
/// spills are reported against a bound, not in bytes: ptxas's byte counts for the big collective
/// kernels were seen to change between two runs over the same PTX (e.g. 9968 and 9984 bytes of
/// stack), while what matters (a kernel spills or has a large frame) does not.
pub fn ptxas_resources(report: &str) -> String {
    let mut lines = Vec::new();
    let mut name = "";
    let mut frame = (0u64, 0u64);
    for line in report.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("ptxas info    : Function properties for ") {
            name = rest;
        } else if line.contains("bytes stack frame") {
            let n: Vec<u64> = line
                .split(',')
                .map(|f| f.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0))
                .collect();
            frame = (n.first().copied().unwrap_or(0), n.iter().skip(1).sum());
        } else if let Some(used) = line.strip_prefix("ptxas info    : Used ") {
            let used: Vec<&str> = used.split(", ").take(2).collect();
            let stack = if frame.0 <= 512 { "<= 512 bytes" } else { "> 512 bytes" };
            let spills = if frame.1 == 0 { "none" } else { "some" };
            lines.push(format!(
                "{name}: Used {}; stack {stack}; spills {spills}\n",
                used.join(", ")
            ));
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
    fn ptx_interface_keeps_header_and_entry_prototypes() {
        let ptx = "//\n// Generated by LLVM\n.version 7.8\n.target sm_90\n.address_size 64\n\t.file 1 \"x.rs\"\n\
                   .visible .entry k2(\n\t.param .u64 k2_param_0, // first\n\t.param .u32 k2_param_1\n)\n{\n\t.loc 1 2 3\n\tret;\n}\n\n\
                   .func (.param .b32 r) helper(\n.param .b64 a\n)\n{\n\tret;\n}\n\
                   .visible .entry k1()\n{\n$L__BB77_1:\n\tbra $L__BB77_1;\n}\n";
        let i = ptx_interface(ptx);
        assert_eq!(i.header, [".version 7.8", ".target sm_90", ".address_size 64"]);
        assert_eq!(
            i.entries,
            [
                ".visible .entry k2(.param .u64 k2_param_0, .param .u32 k2_param_1)",
                ".visible .entry k1()"
            ]
        );
        assert_eq!(i.names(), ["k2", "k1"]);
        assert_eq!(
            i.summary(),
            ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k1()\n\
             .visible .entry k2(.param .u64 k2_param_0, .param .u32 k2_param_1)\n"
        );
    }

    #[test]
    fn ptxas_resources_one_line_per_entry() {
        let report = "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function 'k' for 'sm_90'\n\
                      ptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
                      ptxas info    : Used 12 registers, used 0 barriers, 380 bytes cmem[0]\nptxas info    : Compile time = 1.2 ms\n";
        assert_eq!(
            ptxas_resources(report),
            "k: Used 12 registers, used 0 barriers; stack <= 512 bytes; spills none\n"
        );
        let big = "ptxas info    : Function properties for zc_b\n    9968 bytes stack frame, 248 bytes spill stores, 248 bytes spill loads\n\
                   ptxas info    : Used 255 registers, used 0 barriers, 9968 bytes cumulative stack size\n\
                   ptxas info    : Function properties for zc_a\n    224 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
                   ptxas info    : Used 168 registers, used 1 barriers, 224 bytes cumulative stack size\n";
        assert_eq!(
            ptxas_resources(big),
            "zc_a: Used 168 registers, used 1 barriers; stack <= 512 bytes; spills none\n\
             zc_b: Used 255 registers, used 0 barriers; stack > 512 bytes; spills some\n"
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
