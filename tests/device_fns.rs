//! The device-function library's interface as the linker sees it: the `.visible .func`
//! prototypes of its PTX and the `__device__` declarations of its C header, each reduced to
//! names and parameter widths, so a test can say that the two agree; and the stack a call may
//! need, from ptxas's report.
//!
//! | function              | input                          | output                                   |
//! |-----------------------|--------------------------------|------------------------------------------|
//! | [`ptx_functions`]     | a PTX module                   | each `.visible .func`: name, result and parameter bits |
//! | [`header_functions`]  | a C header                     | each `__device__` declaration, the same way |
//! | [`stack_frames`]      | `ptxas --verbose` output       | each function's stack frame bytes        |

/// A function's name, its result's width in bits (`None`: void) and its parameters' widths.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Prototype {
    pub name: String,
    pub result: Option<u32>,
    pub params: Vec<u32>,
}

/// The width of a PTX parameter declaration (`.param .b64 name`): its type's digits.
fn ptx_bits(decl: &str) -> Option<u32> {
    decl.split_whitespace()
        .find(|w| w.starts_with(".b") || w.starts_with(".u") || w.starts_with(".s"))
        .and_then(|t| t[2..].parse().ok())
}

/// Every `.visible .func` of `ptx`, sorted by name.
pub fn ptx_functions(ptx: &str) -> Vec<Prototype> {
    let mut out = Vec::new();
    let mut text = ptx.split(".visible .func").skip(1);
    for rest in text.by_ref() {
        let proto = rest.split('{').next().unwrap_or("");
        let proto: String = proto.lines().map(|l| l.split("//").next().unwrap_or("")).collect();
        let proto = proto.trim();
        // `(.param .b64 func_retval0) name(...)` or `name(...)`
        let (result, rest) = match proto.strip_prefix('(') {
            Some(r) => {
                let (ret, after) = r.split_once(')').unwrap_or(("", r));
                (ptx_bits(ret), after.trim())
            }
            None => (None, proto),
        };
        let (name, params) = rest.split_once('(').unwrap_or((rest, ")"));
        let params = params.trim_end().trim_end_matches(';').trim_end_matches(')');
        out.push(Prototype {
            name: name.trim().to_string(),
            result,
            params: params
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .filter_map(ptx_bits)
                .collect(),
        });
    }
    out.sort();
    out
}

/// The width of a C type of the header: pointers and 64-bit integers 64, 32-bit integers 32.
fn c_bits(ty: &str) -> Option<u32> {
    let ty = ty.trim();
    if ty.contains('*') {
        return Some(64);
    }
    let base = ty.split_whitespace().find(|w| *w != "const")?;
    match base {
        "uint64_t" | "int64_t" => Some(64),
        "uint32_t" | "int32_t" => Some(32),
        "uint16_t" => Some(16),
        "uint8_t" => Some(8),
        _ => None,
    }
}

/// Every `__device__` declaration of `header` (`__device__ RESULT NAME(TYPE NAME, ...);`),
/// sorted by name; a parameter whose type has no known width is `0`.
pub fn header_functions(header: &str) -> Vec<Prototype> {
    let text: String = header
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = Vec::new();
    for decl in text.split("__device__").skip(1) {
        let decl = decl.split(';').next().unwrap_or("");
        let (head, params) = decl.split_once('(').unwrap_or((decl, ")"));
        let mut words: Vec<&str> = head.split_whitespace().collect();
        let name = words.pop().unwrap_or("").to_string();
        let result = words.join(" ");
        let params = params.trim().trim_end_matches(')');
        out.push(Prototype {
            name,
            result: if result == "void" {
                None
            } else {
                c_bits(&result).or(Some(0))
            },
            params: params
                .split(',')
                .filter(|p| !p.trim().is_empty() && p.trim() != "void")
                .map(|p| {
                    // drop the parameter's name: the type is everything before it
                    let p = p.trim();
                    let ty = p
                        .rsplit_once(|c: char| c.is_whitespace() || c == '*')
                        .map_or(p, |(t, _)| t);
                    let ty = if p.contains('*') { "*" } else { ty };
                    c_bits(ty).unwrap_or(0)
                })
                .collect(),
        });
    }
    out.sort();
    out
}

/// Each function's stack frame in bytes from `ptxas --verbose`, in report order.
pub fn stack_frames(report: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut name = None;
    for line in report.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("ptxas info    : Function properties for ") {
            name = Some(rest.to_string());
        } else if let Some((bytes, _)) = line.split_once(" bytes stack frame") {
            if let (Some(n), Ok(bytes)) = (name.take(), bytes.trim().parse()) {
                out.push((n, bytes));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_and_header_prototypes_reduce_to_the_same() {
        let ptx = ".visible .func  (.param .b64 func_retval0) zc_f(\n\t.param .b64 zc_f_param_0, // p\n\t.param .b32 zc_f_param_1\n)\n{\n\tret;\n}\n\
                   .func (.param .b32 r) hidden(\n.param .b64 a\n)\n{\n}\n.visible .func zc_g()\n{\n}\n";
        let header = "#define X 1\n__device__ int64_t zc_f(const uint16_t *input,\n uint32_t codec);\n__device__ void zc_g(void);\n";
        let want = vec![
            Prototype {
                name: "zc_f".into(),
                result: Some(64),
                params: vec![64, 32],
            },
            Prototype {
                name: "zc_g".into(),
                result: None,
                params: vec![],
            },
        ];
        assert_eq!(ptx_functions(ptx), want);
        assert_eq!(header_functions(header), want);
        // a changed width is seen
        assert_ne!(
            header_functions(&header.replace("uint32_t codec", "uint64_t codec")),
            want
        );
    }

    #[test]
    fn stack_frames_per_function() {
        let report = "ptxas info    : Function properties for zc_a\n    1320 bytes stack frame, 20 bytes spill stores, 20 bytes spill loads\n\
                      ptxas info    : Function properties for b\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
        assert_eq!(stack_frames(report), [("zc_a".to_string(), 1320), ("b".to_string(), 0)]);
    }
}
