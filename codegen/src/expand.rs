//! The expansion: from the attribute and the kernel fn to the fn, its entry points and its
//! manifest.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::ext::IdentExt;
use syn::visit_mut::{self, VisitMut};
use syn::{Ident, Item, ItemFn, PathSegment, Type, TypePath};

use crate::args::KernelArgs;
use crate::filter::{Filter, VariantName, FILTER_ENV};
use crate::signature::{Errors, Role, Signature};
use crate::support::{pair_rule, CodecInfo, DTypeInfo, OpInfo, Vendor, CAPABILITY_RULES, CODECS, DTYPES, OPS};

/// Expands `#[kernel(attr)] item`, with the filter read from `ZIPCOLL_KERNEL_FILTER`.
pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let filter = std::env::var(FILTER_ENV).ok();
    expand_filtered(attr, item, filter.as_deref())
}

/// Expands `#[kernel(attr)] item`, keeping only the variants that `filter` (a
/// `ZIPCOLL_KERNEL_FILTER` value) admits.
pub fn expand_filtered(attr: TokenStream, item: TokenStream, filter: Option<&str>) -> syn::Result<TokenStream> {
    let args: KernelArgs = syn::parse2(attr)?;
    let func = match syn::parse2::<Item>(item)? {
        Item::Fn(func) => func,
        _ => {
            return Err(syn::Error::new(
                Span::call_site(),
                "`#[kernel]` applies to a free `fn` only",
            ))
        }
    };
    let sig = Signature::analyze(&func)?;
    let filter = match filter.map(Filter::parse).transpose() {
        Ok(filter) => filter.flatten(),
        Err(message) => return Err(syn::Error::new(Span::call_site(), format!("{FILTER_ENV}: {message}"))),
    };
    let plan = Plan::new(&args, &func, &sig, filter.as_ref())?;
    Ok(plan.emit())
}

/// One (dtype, op, codec) variant of the kernel and the symbol of the entry point that serves
/// it.
struct Variant {
    dtype: Option<&'static DTypeInfo>,
    op: Option<&'static OpInfo>,
    codec: Option<&'static CodecInfo>,
    symbol: String,
}

/// Everything the expansion emits, decided.
struct Plan<'a> {
    func: &'a ItemFn,
    sig: &'a Signature,
    name: String,
    /// The manifest type's name: the fn's name in CamelCase.
    marker: Ident,
    equiv_bits: bool,
    vendors: Vec<Vendor>,
    /// Why some variants or vendors are not built: lines of the manifest type's docs.
    not_built: Vec<String>,
    /// The manifest's rows, in table order.
    variants: Vec<Variant>,
}

impl<'a> Plan<'a> {
    fn new(args: &KernelArgs, func: &'a ItemFn, sig: &'a Signature, filter: Option<&Filter>) -> syn::Result<Self> {
        let mut errors = Errors::default();
        let dims = [
            (Role::Elem, &args.dtype, "dtype"),
            (Role::RedOp, &args.op, "op"),
            (Role::Coder, &args.codec, "codec"),
        ];
        for (role, list, key) in dims {
            match (sig.generic(role), list) {
                (Some(param), None) => errors.push(
                    &param.ident,
                    format!(
                        "`{}: {}` makes {key} a dimension of this kernel: add `{key} = [...]` to `#[kernel]`",
                        param.ident, param.bound
                    ),
                ),
                (None, Some(list)) => errors.push(
                    &list.key,
                    format!(
                        "`{key}` is given, but no generic parameter is bounded by `{}`",
                        role.trait_name()
                    ),
                ),
                _ => {}
            }
        }
        if let (Some(key), None) = (&args.equiv_bits, sig.find(Role::Elem)) {
            errors.push(
                key,
                "`equiv = bits` merges dtypes, but no generic parameter is bounded by `Elem`",
            );
        }
        errors.finish()?;

        let name = func.sig.ident.unraw().to_string();
        let marker = camel_case(&name);
        if !marker.starts_with(char::is_alphabetic) {
            return Err(syn::Error::new(
                func.sig.ident.span(),
                format!("cannot name a manifest type after `{name}`: give the kernel fn a name with a letter"),
            ));
        }
        if PRELUDE.contains(&marker.as_str()) {
            return Err(syn::Error::new(
                func.sig.ident.span(),
                format!("the manifest type would be `{marker}`, which shadows the prelude's; rename the kernel fn"),
            ));
        }
        let marker = Ident::new(&marker, func.sig.ident.span());
        let mut not_built = Vec::new();
        let mut vendors = Vec::new();
        for vendor in Vendor::ALL {
            if args.vendor.as_ref().is_some_and(|l| !l.contains(vendor.ident())) {
                continue;
            }
            let lacking = CAPABILITY_RULES
                .iter()
                .find(|r| r.lacking == vendor && sig.warp_bounds.iter().any(|b| b == r.capability));
            match lacking {
                Some(rule) => not_built.push(format!("{} (`{}`): {}.", vendor.ident(), rule.capability, rule.reason)),
                None => vendors.push(vendor),
            }
        }
        if vendors.is_empty() {
            let span = sig
                .warp_bounds
                .iter()
                .find(|b| CAPABILITY_RULES.iter().any(|r| *b == r.capability))
                .map_or_else(|| func.sig.ident.span(), Ident::span);
            return Err(syn::Error::new(
                span,
                format!("no listed vendor can run this kernel: {}", not_built.join(" ")),
            ));
        }

        let dtypes: Vec<Option<&'static DTypeInfo>> = match &args.dtype {
            Some(list) => DTYPES.iter().filter(|d| list.contains(d.ident)).map(Some).collect(),
            None => vec![None],
        };
        let ops: Vec<Option<&'static OpInfo>> = match &args.op {
            Some(list) => OPS.iter().filter(|o| list.contains(o.ident)).map(Some).collect(),
            None => vec![None],
        };
        let codecs: Vec<Option<&'static CodecInfo>> = match &args.codec {
            Some(list) => CODECS.iter().filter(|c| list.contains(c.ident)).map(Some).collect(),
            None => vec![None],
        };
        let equiv_bits = args.equiv_bits.is_some();
        let mut variants = Vec::new();
        let mut pruned = 0;
        for &dtype in &dtypes {
            for &op in &ops {
                if let (Some(d), Some(o)) = (dtype, op) {
                    if let Err(reason) = pair_rule(d, o) {
                        not_built.push(format!("{} with {}: {reason}.", d.ident, o.ident));
                        pruned += 1;
                        continue;
                    }
                }
                for &codec in &codecs {
                    let admitted = filter.is_none_or(|f| {
                        f.admits(VariantName {
                            kernel: &name,
                            dtype: dtype.map(|d| d.ident),
                            op: op.map(|o| o.ident),
                            codec: codec.map(|c| c.ident),
                        })
                    });
                    if !admitted {
                        continue;
                    }
                    let mut symbol = format!("zc_{name}");
                    if let Some(d) = dtype {
                        symbol += "__";
                        symbol += if equiv_bits { d.bits } else { d.ident };
                    }
                    if let Some(o) = op {
                        symbol += "__";
                        symbol += o.ident;
                    }
                    if let Some(c) = codec {
                        symbol += "__";
                        symbol += c.ident;
                    }
                    variants.push(Variant {
                        dtype,
                        op,
                        codec,
                        symbol,
                    });
                }
            }
        }
        if pruned == dtypes.len() * ops.len() {
            return Err(syn::Error::new(
                args.dtype.as_ref().map_or_else(Span::call_site, |l| l.key.span()),
                format!(
                    "the support table builds no listed (dtype, op) pair: {}",
                    not_built.join(" ")
                ),
            ));
        }
        Ok(Plan {
            func,
            sig,
            name,
            marker,
            equiv_bits,
            vendors,
            not_built,
            variants,
        })
    }

    /// The kernel fn, its manifest type and its entry points.
    fn emit(&self) -> TokenStream {
        let func = self.func;
        let manifest = self.manifest();
        let entries = self.entry_points().map(|v| {
            let entries = self.vendors.iter().map(|&vendor| self.entry_point(v, vendor));
            quote!(#(#entries)*)
        });
        quote! {
            #func
            #manifest
            // Cargo rebuilds the crate when the filter changes: it tracks `option_env!`, not proc macros.
            const _: ::core::option::Option<&str> = ::core::option_env!(#FILTER_ENV);
            #(#entries)*
        }
    }

    /// The variants that get an entry point: the first of each symbol (under `equiv = bits`, the
    /// first dtype of each storage class).
    fn entry_points(&self) -> impl Iterator<Item = &Variant> {
        self.variants
            .iter()
            .enumerate()
            .filter(|(i, v)| !self.variants[..*i].iter().any(|w| w.symbol == v.symbol))
            .map(|(_, v)| v)
    }

    /// The manifest type: a unit struct implementing `Kernel`.
    fn manifest(&self) -> TokenStream {
        let vis = &self.func.vis;
        let marker = &self.marker;
        let name = &self.name;
        let find = if self.sig.find(Role::Coder).is_some() {
            "find_codec"
        } else {
            "find"
        };
        let mut doc = vec![
            format!(" The manifest of the kernel fn `{name}`: its entry point for each dtype, op, codec and vendor."),
            String::new(),
            format!(" Generated by `#[kernel]`; look entry points up with `{marker}::{find}`."),
        ];
        if !self.not_built.is_empty() {
            doc.extend([String::new(), " Not built:".into()]);
            doc.extend(self.not_built.iter().map(|line| format!(" - {line}")));
        }
        let vendors = self.vendors.iter().map(|v| format_ident!("{}", v.name()));
        let vendors = quote!(&[#(::zipcoll_primitives::manifest::Vendor::#vendors),*]);
        let rows = self.variants.iter().map(|v| {
            let dtype = option(v.dtype.map(|d| {
                let d = format_ident!("{}", d.name);
                quote!(::zipcoll_device::dtype::DType::#d)
            }));
            let op = option(v.op.map(|o| {
                let o = format_ident!("{}", o.name);
                quote!(::zipcoll_device::reduce::ReduceOp::#o)
            }));
            let codec = option(v.codec.map(|c| {
                let c = format_ident!("{}", c.name);
                quote!(::zipcoll_device::codec::CodecId::#c)
            }));
            let symbol = &v.symbol;
            quote! {
                ::zipcoll_primitives::manifest::KernelDesc {
                    dtype: #dtype,
                    op: #op,
                    codec: #codec,
                    vendors: #vendors,
                    symbol: #symbol,
                }
            }
        });
        quote! {
            #(#[doc = #doc])*
            #[derive(Clone, Copy, Debug)]
            #vis struct #marker;
            impl ::zipcoll_primitives::manifest::Kernel for #marker {
                const NAME: &'static str = #name;
                const VARIANTS: &'static [::zipcoll_primitives::manifest::KernelDesc] = &[#(#rows),*];
            }
        }
    }

    /// The entry point of `variant` for `vendor`.
    fn entry_point(&self, variant: &Variant, vendor: Vendor) -> TokenStream {
        let arch = vendor.target_arch();
        let symbol = format_ident!("{}", variant.symbol);
        let kernel = &self.func.sig.ident;
        let (warp, launch_params, new_warp) = match vendor {
            Vendor::Nvptx => (
                quote!(::zipcoll_targets::nvptx::NvptxWarp),
                quote!(),
                quote!(::zipcoll_targets::nvptx::NvptxWarp::new()),
            ),
            Vendor::Amdgpu => (
                quote!(::zipcoll_targets::amdgpu::AmdWarp),
                quote!(zc_block_dim: u32, zc_grid_dim: u32,),
                quote!(::zipcoll_targets::amdgpu::AmdWarp::from_launch(
                    zc_block_dim,
                    zc_grid_dim
                )),
            ),
        };
        // `Plan::new` gives every variant a dtype iff the kernel has an `Elem` parameter, an op
        // iff it has a `RedOp` parameter and a codec iff it has a `SymbolCoder` parameter.
        let bindings = self.sig.generics.iter().filter_map(|generic| {
            let (concrete, role_trait, word) = match generic.role {
                Role::Warp => (warp.clone(), quote!(::zipcoll_targets::Warp), None),
                Role::Elem => {
                    let dtype = variant.dtype?;
                    let (ty, word) = (format_ident!("{}", dtype.name), format_ident!("{}", dtype.word));
                    let bound = format_ident!("{}", generic.bound);
                    (
                        quote!(::zipcoll_device::dtype::#ty),
                        quote!(::zipcoll_device::dtype::#bound),
                        Some(word),
                    )
                }
                Role::RedOp => {
                    let ty = format_ident!("{}", variant.op?.name);
                    (
                        quote!(::zipcoll_device::reduce::#ty),
                        quote!(::zipcoll_device::reduce::RedOp),
                        None,
                    )
                }
                Role::Coder => {
                    let ty = format_ident!("{}", variant.codec?.name);
                    let bound = format_ident!("{}", generic.bound);
                    (
                        quote!(::zipcoll_device::codec::#ty),
                        quote!(::zipcoll_device::codec::#bound),
                        None,
                    )
                }
            };
            Some(Binding {
                generic: generic.ident.clone(),
                concrete,
                role_trait,
                word,
            })
        });
        let mut subst = Subst(bindings.collect());
        let names: Vec<&Ident> = self.sig.params.iter().map(|(name, _)| name).collect();
        let types: Vec<Type> = self
            .sig
            .params
            .iter()
            .map(|(_, ty)| {
                let mut ty = ty.clone();
                subst.visit_type_mut(&mut ty);
                ty
            })
            .collect();
        let turbofish = subst.0.iter().map(|b| &b.concrete);

        let mut doc = format!(" Entry point of the kernel fn `{}` on {}", self.name, vendor.ident());
        if variant.dtype.is_some() || variant.op.is_some() || variant.codec.is_some() {
            let served = self.variants.iter().filter(|v| v.symbol == variant.symbol);
            let dtypes: Vec<&str> = served.filter_map(|v| v.dtype.map(|d| d.ident)).collect();
            let mut dims = Vec::new();
            if let Some(d) = variant.dtype {
                dims.push(if self.equiv_bits {
                    format!("{} (`equiv = bits`: {})", d.bits, dtypes.join(", "))
                } else {
                    d.ident.to_owned()
                });
            }
            dims.extend(variant.op.map(|o| o.ident.to_owned()));
            dims.extend(variant.codec.map(|c| c.ident.to_owned()));
            doc += &format!(" for {}", dims.join(" and "));
        }
        doc += ", generated by `#[kernel]`.";
        let launch = match vendor {
            Vendor::Nvptx => String::new(),
            Vendor::Amdgpu => " the launch's block and grid sizes in `zc_block_dim` and `zc_grid_dim`, then".into(),
        };
        let doc = [
            doc,
            String::new(),
            " # Safety".into(),
            String::new(),
            format!(" Launch it with{launch} the arguments that `{}` requires.", self.name),
        ];
        quote! {
            #[cfg(target_arch = #arch)]
            #(#[doc = #doc])*
            #[unsafe(no_mangle)]
            #[allow(non_snake_case, unused_unsafe, clippy::too_many_arguments)]
            pub unsafe extern "gpu-kernel" fn #symbol(#launch_params #(#names: #types),*) {
                unsafe { #kernel::<#(#turbofish),*>(#new_warp, #(#names),*) }
            }
        }
    }
}

/// A generic parameter and what one entry point puts in its place.
struct Binding {
    generic: Ident,
    concrete: TokenStream,
    /// The trait of its role, for `<Concrete as Trait>::Assoc`.
    role_trait: TokenStream,
    /// For the dtype: its storage word, the normal form of `T::Bits`.
    word: Option<Ident>,
}

/// Replaces the kernel's generic parameters in a parameter type by one entry point's concrete
/// types: `T` becomes `::zipcoll_device::dtype::Bf16`, `T::Bits` and `<T as Elem>::Bits` become
/// the storage word (`u16`), any other `T::Assoc` becomes `<Bf16 as Elem>::Assoc`.
///
/// `T::Bits` is spelled as the word because rustc's `improper_gpu_kernel_arg` lint checks
/// entry-point signatures before normalizing them, and so flags `*const <Bf16 as Elem>::Bits`;
/// the call into the kernel fn checks that the word is `Bf16::Bits`.
struct Subst(Vec<Binding>);

impl Subst {
    fn binding(&self, ty: &Type) -> Option<&Binding> {
        let Type::Path(tp) = ty else { return None };
        let ident = tp.path.get_ident().filter(|_| tp.qself.is_none())?;
        self.0.iter().find(|b| b.generic == *ident)
    }

    /// The replacement of a path type that starts with a generic parameter.
    fn replace(&mut self, tp: &TypePath) -> Option<TokenStream> {
        let is_bits = |rest: &[PathSegment]| matches!(rest, [s] if s.ident == "Bits" && s.arguments.is_none());
        if let Some(qself) = &tp.qself {
            // `<T as Elem>::Bits`; other qualified paths keep their trait, with `T` replaced.
            let binding = self.binding(&qself.ty)?;
            let segments: Vec<PathSegment> = tp.path.segments.iter().cloned().collect();
            let (as_trait, rest) = segments.split_at(qself.position);
            let is_elem = as_trait.last().is_some_and(|s| s.ident == "Elem");
            return binding
                .word
                .as_ref()
                .filter(|_| is_elem && is_bits(rest))
                .map(|w| quote!(#w));
        }
        if tp.path.leading_colon.is_some() {
            return None;
        }
        let head = tp.path.segments.first().filter(|s| s.arguments.is_none())?;
        let binding = self.0.iter().position(|b| b.generic == head.ident)?;
        let mut rest: Vec<PathSegment> = tp.path.segments.iter().skip(1).cloned().collect();
        for segment in &mut rest {
            self.visit_path_segment_mut(segment);
        }
        let Binding {
            concrete,
            role_trait,
            word,
            ..
        } = &self.0[binding];
        Some(match word {
            Some(word) if is_bits(&rest) => quote!(#word),
            _ if rest.is_empty() => concrete.clone(),
            _ => quote!(<#concrete as #role_trait>::#(#rest)::*),
        })
    }
}

impl VisitMut for Subst {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Type::Path(tp) = ty {
            if let Some(replacement) = self.replace(tp) {
                *ty = Type::Verbatim(replacement);
                return;
            }
        }
        visit_mut::visit_type_mut(self, ty);
    }
}

/// `Some(tokens)` or `None`, spelled out for the manifest.
fn option(tokens: Option<TokenStream>) -> TokenStream {
    match tokens {
        Some(t) => quote!(::core::option::Option::Some(#t)),
        None => quote!(::core::option::Option::None),
    }
}

/// Names of the Rust prelude that a manifest type must not shadow in the kernel's module.
const PRELUDE: &[&str] = &[
    "AsMut",
    "AsRef",
    "Box",
    "Clone",
    "Copy",
    "Default",
    "DoubleEndedIterator",
    "Drop",
    "Eq",
    "Err",
    "ExactSizeIterator",
    "Extend",
    "Fn",
    "FnMut",
    "FnOnce",
    "From",
    "FromIterator",
    "Into",
    "IntoIterator",
    "Iterator",
    "None",
    "Ok",
    "Option",
    "Ord",
    "PartialEq",
    "PartialOrd",
    "Result",
    "Send",
    "Sized",
    "Some",
    "String",
    "Sync",
    "ToOwned",
    "ToString",
    "TryFrom",
    "TryInto",
    "Unpin",
    "Vec",
];

/// `reduce_copy` -> `ReduceCopy`.
fn camel_case(snake: &str) -> String {
    snake
        .split('_')
        .flat_map(|word| {
            let mut chars = word.chars();
            chars.next().map(|c| c.to_uppercase().chain(chars))
        })
        .flatten()
        .collect()
}
