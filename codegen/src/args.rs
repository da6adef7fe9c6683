//! Parsing of the attribute's arguments: `dtype = [...]`, `op = [...]`, `codec = [...]`,
//! `vendor = [...]`, `equiv = bits`.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{bracketed, Ident, Token};

use crate::support::{Vendor, CODECS, DTYPES, OPS};

/// A bracketed list of names, each checked against a table.
pub(crate) struct List {
    /// The argument's key (`dtype`, `op`, `codec`, `vendor`), for spans.
    pub key: Ident,
    /// The names as written (known, no duplicates, at least one).
    pub names: Vec<Ident>,
}

impl List {
    /// Whether the list names `ident`.
    pub fn contains(&self, ident: &str) -> bool {
        self.names.iter().any(|n| n == ident)
    }
}

/// The parsed `#[kernel(...)]` arguments.
#[derive(Default)]
pub(crate) struct KernelArgs {
    pub dtype: Option<List>,
    pub op: Option<List>,
    pub codec: Option<List>,
    pub vendor: Option<List>,
    /// The `equiv` key, when `equiv = bits` is given (the only equivalence there is).
    pub equiv_bits: Option<Ident>,
}

impl Parse for KernelArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut args = KernelArgs::default();
        for arg in Punctuated::<Arg, Token![,]>::parse_terminated(input)? {
            match arg {
                Arg::List(list) => {
                    let slot = match list.key.to_string().as_str() {
                        "dtype" => &mut args.dtype,
                        "op" => &mut args.op,
                        "codec" => &mut args.codec,
                        _ => &mut args.vendor,
                    };
                    if slot.is_some() {
                        return Err(syn::Error::new(
                            list.key.span(),
                            format!("`{}` is given twice", list.key),
                        ));
                    }
                    *slot = Some(list);
                }
                Arg::EquivBits(key) => {
                    if args.equiv_bits.is_some() {
                        return Err(syn::Error::new(key.span(), "`equiv` is given twice"));
                    }
                    args.equiv_bits = Some(key);
                }
            }
        }
        Ok(args)
    }
}

enum Arg {
    List(List),
    EquivBits(Ident),
}

impl Parse for Arg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        let known: Vec<&str> = match key.to_string().as_str() {
            "dtype" => DTYPES.iter().map(|d| d.ident).collect(),
            "op" => OPS.iter().map(|o| o.ident).collect(),
            "codec" => CODECS.iter().map(|c| c.ident).collect(),
            "vendor" => Vendor::ALL.iter().map(|v| v.ident()).collect(),
            "equiv" => {
                input.parse::<Token![=]>()?;
                let value: Ident = input.parse()?;
                if value != "bits" {
                    return Err(syn::Error::new(
                        value.span(),
                        format!(
                            "unknown equivalence `{value}`; expected `bits` (the kernel depends only on `T::Bits`)"
                        ),
                    ));
                }
                return Ok(Arg::EquivBits(key));
            }
            _ => {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown argument `{key}`; expected `dtype`, `op`, `codec`, `vendor` or `equiv`"),
                ))
            }
        };
        input.parse::<Token![=]>()?;
        if !input.peek(syn::token::Bracket) {
            return Err(input.error(format!(
                "expected a bracketed list after `{key} =`, e.g. `{key} = [{}]`",
                known.join(", ")
            )));
        }
        let content;
        let brackets = bracketed!(content in input);
        let names = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?;
        if names.is_empty() {
            return Err(syn::Error::new(
                brackets.span.join(),
                format!("`{key}` lists nothing; list at least one of: {}", known.join(", ")),
            ));
        }
        let mut seen: Vec<Ident> = Vec::new();
        for name in names {
            if !known.iter().any(|k| name == k) {
                return Err(syn::Error::new(
                    name.span(),
                    format!("unknown {key} `{name}`; expected one of: {}", known.join(", ")),
                ));
            }
            if seen.contains(&name) {
                return Err(syn::Error::new(name.span(), format!("duplicate {key} `{name}`")));
            }
            seen.push(name);
        }
        Ok(Arg::List(List { key, names: seen }))
    }
}
