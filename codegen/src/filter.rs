//! The developer filter: `ZIPCOLL_KERNEL_FILTER=fn:dtype:op:codec,...` keeps only matching
//! variants.

use crate::support::{CODECS, DTYPES, OPS};

/// The environment variable read at expansion time.
pub(crate) const FILTER_ENV: &str = "ZIPCOLL_KERNEL_FILTER";

/// One `fn:dtype:op:codec` pattern; `*` matches any run of characters.
struct Pattern {
    kernel: String,
    dtype: String,
    op: String,
    codec: String,
}

/// A variant as the filter sees it: the kernel fn's name and the names of its dimensions'
/// values (`None` for a dimension the kernel does not have).
#[derive(Clone, Copy)]
pub(crate) struct VariantName<'a> {
    pub kernel: &'a str,
    pub dtype: Option<&'a str>,
    pub op: Option<&'a str>,
    pub codec: Option<&'a str>,
}

/// A parsed filter: a variant is kept when any pattern matches it.
pub(crate) struct Filter(Vec<Pattern>);

impl Filter {
    /// Parses a filter spec. `None` when it holds no pattern (an empty or blank variable filters
    /// nothing). Parts left out at the end are `*` (`reduce_copy` is `reduce_copy:*:*:*`).
    pub fn parse(spec: &str) -> Result<Option<Filter>, String> {
        let mut patterns = Vec::new();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let parts: Vec<&str> = entry.split(':').map(str::trim).collect();
            if parts.len() > 4 {
                return Err(format!(
                    "pattern `{entry}` has {} parts; expected `fn:dtype:op:codec`",
                    parts.len()
                ));
            }
            let part = |i: usize| parts.get(i).copied().filter(|p| !p.is_empty()).unwrap_or("*");
            let (kernel, dtype, op, codec) = (part(0), part(1), part(2), part(3));
            check_known(entry, "dtype", dtype, DTYPES.iter().map(|d| d.ident))?;
            check_known(entry, "op", op, OPS.iter().map(|o| o.ident))?;
            check_known(entry, "codec", codec, CODECS.iter().map(|c| c.ident))?;
            patterns.push(Pattern {
                kernel: kernel.into(),
                dtype: dtype.into(),
                op: op.into(),
                codec: codec.into(),
            });
        }
        Ok((!patterns.is_empty()).then_some(Filter(patterns)))
    }

    /// Whether the variant `v` is kept. A dimension the kernel does not have matches any
    /// pattern part.
    pub fn admits(&self, v: VariantName<'_>) -> bool {
        self.0.iter().any(|p| {
            glob(&p.kernel, v.kernel)
                && v.dtype.is_none_or(|d| glob(&p.dtype, d))
                && v.op.is_none_or(|o| glob(&p.op, o))
                && v.codec.is_none_or(|c| glob(&p.codec, c))
        })
    }
}

/// A part without `*` must name a known dtype or op, so that a typo fails loudly instead of
/// silently building nothing.
fn check_known<'a>(
    entry: &str,
    what: &str,
    part: &str,
    mut known: impl Iterator<Item = &'a str>,
) -> Result<(), String> {
    if part.contains('*') || known.any(|k| k == part) {
        Ok(())
    } else {
        Err(format!("pattern `{entry}` names unknown {what} `{part}`"))
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and the text position it is currently standing for up to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `admits` of a variant without a codec.
    fn admits(f: &Filter, kernel: &str, dtype: Option<&str>, op: Option<&str>) -> bool {
        f.admits(VariantName {
            kernel,
            dtype,
            op,
            codec: None,
        })
    }

    #[test]
    fn glob_matches_stars_anywhere() {
        assert!(glob("*", ""));
        assert!(glob("*", "reduce_copy"));
        assert!(glob("reduce_*", "reduce_copy"));
        assert!(glob("*_copy", "reduce_copy"));
        assert!(glob("r*c*y", "reduce_copy"));
        assert!(glob("f8*", "f8e4m3"));
        assert!(!glob("f8*", "f16"));
        assert!(!glob("reduce", "reduce_copy"));
        assert!(!glob("reduce_copy_", "reduce_copy"));
        assert!(glob("a*b*c", "aXbYbZc"));
        assert!(!glob("a*b*c", "aXbYbZ"));
    }

    #[test]
    fn filter_keeps_matching_variants() {
        let f = Filter::parse("reduce_copy:bf16:*, *:f32:sum").unwrap().unwrap();
        assert!(admits(&f, "reduce_copy", Some("bf16"), Some("max")));
        assert!(!admits(&f, "reduce_copy", Some("f16"), Some("max")));
        assert!(admits(&f, "all_reduce", Some("f32"), Some("sum")));
        assert!(!admits(&f, "all_reduce", Some("f32"), Some("min")));
        // absent dimensions match any part
        assert!(admits(&f, "copy", Some("f32"), None));
        assert!(!admits(&f, "copy", Some("f16"), None));
    }

    #[test]
    fn missing_parts_are_wildcards() {
        let f = Filter::parse("copy").unwrap().unwrap();
        assert!(admits(&f, "copy", Some("f8e5m2"), Some("avg")));
        assert!(!admits(&f, "reduce_copy", Some("f32"), None));
        let f = Filter::parse("*::avg").unwrap().unwrap();
        assert!(admits(&f, "k", Some("f16"), Some("avg")));
        assert!(!admits(&f, "k", Some("f16"), Some("sum")));
    }

    #[test]
    fn codec_part_matches_codec_variants() {
        let f = Filter::parse("encode_frames:bf16::huffman, *:f32:*:exp*")
            .unwrap()
            .unwrap();
        let v = |kernel, dtype, codec| VariantName {
            kernel,
            dtype: Some(dtype),
            op: None,
            codec: Some(codec),
        };
        assert!(f.admits(v("encode_frames", "bf16", "huffman")));
        assert!(!f.admits(v("encode_frames", "bf16", "fixedlen")));
        assert!(f.admits(v("decode_frames", "f32", "expans")));
        assert!(f.admits(v("encode_frames", "f32", "expwindow")));
        assert!(!f.admits(v("encode_frames", "f32", "huffman")));
        // a kernel without the codec dimension matches any codec part
        assert!(admits(&f, "encode_frames", Some("bf16"), None));
    }

    #[test]
    fn blank_filter_filters_nothing() {
        assert!(Filter::parse("").unwrap().is_none());
        assert!(Filter::parse(" , ,").unwrap().is_none());
    }

    #[test]
    fn bad_patterns_are_reported() {
        let err = |spec| Filter::parse(spec).err().unwrap();
        assert_eq!(
            err("a:b:c:d:e"),
            "pattern `a:b:c:d:e` has 5 parts; expected `fn:dtype:op:codec`"
        );
        assert_eq!(err("*:bf61:*"), "pattern `*:bf61:*` names unknown dtype `bf61`");
        assert_eq!(err("*:*:mean"), "pattern `*:*:mean` names unknown op `mean`");
        assert_eq!(err("*:*:*:zstd"), "pattern `*:*:*:zstd` names unknown codec `zstd`");
    }
}
