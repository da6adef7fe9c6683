//! Sizes and rates as people write them: the one parser behind every environment variable
//! ([`crate::comm::Config::with_env`]) and command-line flag of the zipcoll tools that takes
//! bytes or bytes per second.
//!
//! | written                                  | bytes                        |
//! |------------------------------------------|------------------------------|
//! | `4096`, `4096B`                          | 4096                         |
//! | `64K`, `64k`, `64KB`, `64KiB`, `64Ki`    | 64 x 2^10                    |
//! | `16M`, `16MB`, `16MiB`, `16Mi`           | 16 x 2^20                    |
//! | `1G`, `1GB`, `1GiB`, `1Gi`               | 2^30                         |
//! | `2T`, `2TB`, `2TiB`, `2Ti`               | 2 x 2^40                     |
//! | `1.5M`                                   | 1 572 864 (a fraction must come to whole bytes) |
//!
//! Every multiplier is a power of 1024, for sizes and rates alike; case does not matter, spaces
//! around the number are ignored. A rate ([`parse_rate_limit`]) is a size per second, with an
//! optional `/s` (`500M`, `500MiB/s`, `2G`), or `off`, `none` or `0` for no limit. Values that do
//! not fit 64 bits are errors, never wrapped.

use thiserror::Error;

/// Why a size or rate could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{text:?} is not a {what}: {why} (e.g. 4096, 64K, 16MiB, 1.5G{per})", per = if *.what == "rate" { ", off" } else { "" })]
pub struct UnitError {
    /// What was parsed.
    pub text: String,
    /// `size` or `rate`.
    pub what: &'static str,
    /// What is wrong with it.
    pub why: &'static str,
}

/// The multipliers, longest spelling first so that `KiB` is not read as `K` + garbage.
const UNITS: [(&str, u32); 16] = [
    ("kib", 10),
    ("mib", 20),
    ("gib", 30),
    ("tib", 40),
    ("ki", 10),
    ("mi", 20),
    ("gi", 30),
    ("ti", 40),
    ("kb", 10),
    ("mb", 20),
    ("gb", 30),
    ("tb", 40),
    ("k", 10),
    ("m", 20),
    ("g", 30),
    ("t", 40),
];

/// Bytes written as in the module table: `64K`, `16MiB`, `1.5G`.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    parse(text, "size")
}

/// A rate limit in bytes per second, as in the module table: `Some(bytes)`, or `None` for no
/// limit (`off`, `none`, `0`).
pub fn parse_rate_limit(text: &str) -> Result<Option<u64>, UnitError> {
    let t = text.trim().to_ascii_lowercase();
    if t == "off" || t == "none" {
        return Ok(None);
    }
    let t = t.strip_suffix("/s").unwrap_or(&t);
    parse_in(text, t, "rate").map(|b| (b > 0).then_some(b))
}

fn parse(text: &str, what: &'static str) -> Result<u64, UnitError> {
    parse_in(text, &text.trim().to_ascii_lowercase(), what)
}

/// `t` (trimmed, lowercase) as bytes; `text` is what the user wrote, for the error.
fn parse_in(text: &str, t: &str, what: &'static str) -> Result<u64, UnitError> {
    let err = |why| UnitError {
        text: text.to_owned(),
        what,
        why,
    };
    let (number, shift) = UNITS
        .iter()
        .find_map(|&(u, shift)| t.strip_suffix(u).map(|n| (n, shift)))
        .unwrap_or_else(|| (t.strip_suffix('b').unwrap_or(t), 0));
    let number = number.trim_end();
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (number, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let well_formed = match fraction {
        None => digits(whole),
        Some(f) => digits(f) && (whole.is_empty() || digits(whole)),
    };
    if !well_formed {
        return Err(err("expected a number with an optional K, M, G or T (powers of 1024)"));
    }
    let fraction = fraction.unwrap_or("");
    // exact: (whole . fraction) x 2^shift in u128, then it must be whole bytes and fit a u64
    let too_large = || err("it does not fit 64 bits");
    let value = |s: &str| match s {
        "" => Some(0u128),
        s => s.parse::<u128>().ok(),
    };
    let scale = 10u128.checked_pow(fraction.len() as u32).ok_or_else(too_large)?;
    let scaled = value(whole)
        .and_then(|w| w.checked_mul(scale))
        .and_then(|w| w.checked_add(value(fraction)?))
        .and_then(|v| v.checked_mul(1u128 << shift))
        .ok_or_else(too_large)?;
    if scaled % scale != 0 {
        return Err(err("it is not a whole number of bytes"));
    }
    u64::try_from(scaled / scale).map_err(|_| too_large())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_multipliers() {
        let size = |s| parse_size(s).ok();
        assert_eq!(size("4096"), Some(4096));
        assert_eq!(size(" 4096B "), Some(4096));
        assert_eq!(size("64K"), Some(64 << 10));
        assert_eq!(size("64kib"), Some(64 << 10));
        assert_eq!(size("1m"), Some(1 << 20));
        assert_eq!(size("16MiB"), Some(16 << 20));
        assert_eq!(size("16Mi"), Some(16 << 20));
        assert_eq!(size("1G"), Some(1 << 30));
        assert_eq!(size("2GB"), Some(2 << 30));
        assert_eq!(size("3T"), Some(3 << 40));
        assert_eq!(size("1.5M"), Some(3 << 19));
        assert_eq!(size(".5K"), Some(512));
        assert_eq!(size("0"), Some(0));
        assert_eq!(size("16383P"), None);
        assert_eq!(size("1Q"), None);
        assert_eq!(size(""), None);
        assert_eq!(size("K"), None);
        assert_eq!(size("-1M"), None);
        assert_eq!(size("1.2.3K"), None);
        assert_eq!(size("1."), None);
    }

    #[test]
    fn overflow_is_an_error_not_a_wrap() {
        assert_eq!(parse_size("16777215T").ok(), Some(16777215 << 40));
        let e = parse_size("17179869184G").unwrap_err();
        assert_eq!(e.why, "it does not fit 64 bits");
        assert!(e.to_string().starts_with("\"17179869184G\" is not a size"), "{e}");
        assert!(parse_size("18446744073709551616").is_err());
        assert_eq!(parse_size("18446744073709551615").ok(), Some(u64::MAX));
        assert!(parse_size("99999999999999999999999999999999999999999").is_err());
        assert!(parse_size("1.00000000000000000000000000000000000000000001K").is_err());
    }

    #[test]
    fn fractions_must_be_whole_bytes() {
        assert_eq!(parse_size("0.3K").unwrap_err().why, "it is not a whole number of bytes");
        assert_eq!(parse_size("0.25K").ok(), Some(256));
    }

    #[test]
    fn rates_are_sizes_per_second_or_off() {
        let rate = |s| parse_rate_limit(s).ok();
        assert_eq!(rate("500M"), Some(Some(500 << 20)));
        assert_eq!(rate("500MiB/s"), Some(Some(500 << 20)));
        assert_eq!(rate("2G"), Some(Some(2 << 30)));
        assert_eq!(rate("1.5g/s"), Some(Some(3 << 29)));
        assert_eq!(rate("off"), Some(None));
        assert_eq!(rate("None"), Some(None));
        assert_eq!(rate("0"), Some(None));
        assert_eq!(rate("fast"), None);
        let e = parse_rate_limit("fast").unwrap_err();
        assert!(
            e.to_string().contains("is not a rate") && e.to_string().contains("off"),
            "{e}"
        );
    }
}
