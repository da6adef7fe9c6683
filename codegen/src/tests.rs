//! Expansion snapshots (`cargo insta test -p zipcoll-codegen`, `cargo insta review`) and checks
//! of what snapshots do not show.

use proc_macro2::TokenStream;
use quote::quote;

use crate::expand::expand_filtered;
use crate::support::{CAPABILITY_RULES, PAIR_RULES};

/// The expansion, pretty-printed.
fn expand(attr: TokenStream, item: TokenStream, filter: Option<&str>) -> String {
    let tokens = expand_filtered(attr, item, filter).unwrap_or_else(|e| panic!("expansion failed: {e}"));
    prettyplease::unparse(&syn::parse2(tokens).expect("the expansion parses as a file"))
}

/// The error message of a failing expansion.
fn error(attr: TokenStream, item: TokenStream, filter: Option<&str>) -> String {
    match expand_filtered(attr, item, filter) {
        Ok(tokens) => panic!("expansion succeeded: {tokens}"),
        Err(e) => e.to_string(),
    }
}

fn reduce_copy() -> TokenStream {
    quote! {
        /// Reduces two sources into `dst`.
        pub unsafe fn reduce_copy<W: Warp, T: Elem, O: RedOp>(
            w: W,
            src0: *const T::Bits,
            src1: *const T::Bits,
            dst: *mut T::Bits,
            n: usize,
            nranks: u32,
        ) {
            let op = O::new(nranks);
            let mut i = w.global_idx();
            while i < n {
                let a = op.pre::<T>(unsafe { src0.add(i).read() });
                let b = op.pre::<T>(unsafe { src1.add(i).read() });
                unsafe { dst.add(i).write(op.combine::<T>(a, b)) };
                i += w.global_threads();
            }
        }
    }
}

#[test]
fn reduce_kernel_all_dtypes_ops_vendors() {
    let attr = quote!(
        dtype = [bf16, f16, f32, f8e4m3, f8e5m2],
        op = [sum, prod, min, max, avg],
        vendor = [nvptx, amdgpu]
    );
    insta::assert_snapshot!(expand(attr, reduce_copy(), None));
}

#[test]
fn copy_kernel_shares_entry_points_by_storage_width() {
    let attr = quote!(dtype = [bf16, f16, f32, f8e4m3, f8e5m2], equiv = bits);
    let item = quote! {
        pub fn copy_elems<W: Warp, T: Elem>(w: W, src: *const T::Bits, dst: *mut T::Bits, n: usize) {
            let mut i = w.global_idx();
            while i < n {
                unsafe { dst.add(i).write(src.add(i).read()) };
                i += w.global_threads();
            }
        }
    };
    insta::assert_snapshot!(expand(attr, item, None));
}

#[test]
fn shared_mem_kernel_is_not_built_for_amdgpu() {
    let attr = quote!(dtype = [f32], op = [sum], vendor = [nvptx, amdgpu]);
    let item = quote! {
        pub(crate) unsafe fn block_reduce<W, T, O>(w: W, src: *const T::Bits, dst: *mut <T as Elem>::Bits, nranks: u32)
        where
            W: Warp + SharedMem,
            T: Elem,
            O: RedOp,
        {
            let (smem, _) = w.shared_mem();
            let _ = (smem, src, dst, O::new(nranks));
        }
    };
    insta::assert_snapshot!(expand(attr, item, None));
}

#[test]
fn filtered_expansion_keeps_matching_variants_only() {
    let attr = quote!(
        dtype = [bf16, f16, f32, f8e4m3, f8e5m2],
        op = [sum, prod, min, max, avg]
    );
    insta::assert_snapshot!(expand(attr, reduce_copy(), Some("reduce_copy:bf16:*,*:f32:sum")));
}

#[test]
fn kernel_without_dimensions() {
    let item = quote! {
        pub unsafe fn signal<W: Warp>(w: W, flag: *mut u32) {
            if w.global_idx() == 0 {
                unsafe { flag.write_volatile(1) };
            }
        }
    };
    insta::assert_snapshot!(expand(quote!(vendor = [amdgpu]), item, None));
}

/// A frame encoder: the dtype through `Split` (the codecs' trait), the codec through
/// `SymbolCoder`, an associated type of `Split` in a parameter.
fn encode_frames() -> TokenStream {
    quote! {
        pub unsafe fn encode_frames<W: Warp, T: Split, C: SymbolCoder>(
            w: W,
            input: *const T::Bits,
            words: *const T::Word,
            n: usize,
            out: *mut u8,
        ) {
            let _ = (w, input, words, n, out, C::ID);
        }
    }
}

#[test]
fn codec_kernel_gets_an_entry_point_per_dtype_and_codec() {
    let attr = quote!(
        dtype = [bf16, f8e4m3],
        codec = [fixedlen, expwindow, expans, huffman],
        vendor = [nvptx]
    );
    insta::assert_snapshot!(expand(attr, encode_frames(), None));
}

#[test]
fn codec_kernel_filtered_by_codec() {
    let attr = quote!(dtype = [bf16, f32], codec = [fixedlen, huffman]);
    let out = expand(attr, encode_frames(), Some("encode_frames:*::huffman"));
    let symbols: Vec<&str> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("symbol: \""))
        .collect();
    assert_eq!(
        symbols,
        [
            "zc_encode_frames__bf16__huffman\",",
            "zc_encode_frames__f32__huffman\","
        ]
    );
}

#[test]
fn codec_dimension_errors() {
    let attr = quote!(dtype = [bf16]);
    assert_eq!(
        error(attr, encode_frames(), None),
        "`C: SymbolCoder` makes codec a dimension of this kernel: add `codec = [...]` to `#[kernel]`"
    );
    let attr = quote!(dtype = [bf16], codec = [huffman, huffman]);
    assert_eq!(error(attr, encode_frames(), None), "duplicate codec `huffman`");
    let attr = quote!(dtype = [bf16], codec = [raw]);
    assert_eq!(
        error(attr, encode_frames(), None),
        "unknown codec `raw`; expected one of: fixedlen, expwindow, expans, huffman"
    );
}

#[test]
fn filter_may_leave_nothing() {
    let attr = quote!(dtype = [f32], op = [sum]);
    let out = expand(attr, reduce_copy(), Some("all_gather"));
    assert!(!out.contains("extern \"gpu-kernel\""), "{out}");
    assert!(
        out.contains("const VARIANTS: &'static [::zipcoll_primitives::manifest::KernelDesc] = &[];"),
        "{out}"
    );
}

#[test]
fn blank_filter_filters_nothing() {
    let attr = quote!(dtype = [f32], op = [sum, max]);
    assert_eq!(
        expand(attr.clone(), reduce_copy(), Some(" ")),
        expand(attr, reduce_copy(), None)
    );
}

#[test]
fn bad_filter_is_an_error() {
    let attr = quote!(dtype = [f32], op = [sum]);
    assert_eq!(
        error(attr, reduce_copy(), Some("*:float32:*")),
        "ZIPCOLL_KERNEL_FILTER: pattern `*:float32:*` names unknown dtype `float32`"
    );
}

#[test]
fn signature_errors_are_reported_together() {
    let item = quote! {
        fn k<'a, W: Warp, X>(w: u32, (a, b): (u32, u32)) -> u32 { 0 }
    };
    let errors: Vec<String> = syn::Error::into_iter(expand_filtered(quote!(), item, None).err().unwrap())
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        errors,
        [
            "a kernel returns nothing: GPU entry points have no return value",
            "a kernel takes no lifetime parameters: its entry points could not name them",
            "generic parameter `X` is bounded by none of `Warp`, `Elem` (or `Split`, `F32Exact`), `RedOp`, `SymbolCoder`: \
             the entry points cannot choose a type for it",
            "the first parameter must be the warp, of type `W`",
            "kernel parameters must be plain identifiers (the entry points forward them by name); destructure \
             inside the body",
        ]
    );
}

#[test]
fn crate_docs_show_the_support_table() {
    let docs: Vec<&str> = include_str!("lib.rs")
        .lines()
        .filter(|l| l.starts_with("//!"))
        .collect();
    let has_row = |cells: &[&str]| {
        docs.iter()
            .any(|l| cells.iter().all(|c| l.contains(&format!("| {c} "))))
    };
    for rule in PAIR_RULES {
        let built = if rule.built { "yes" } else { "no" };
        assert!(
            has_row(&[&format!("`{}`", rule.op), built, rule.reason]),
            "no docs row for op {}",
            rule.op
        );
    }
    for rule in CAPABILITY_RULES {
        let capability = format!("`{}`", rule.capability);
        assert!(
            has_row(&[&capability, rule.lacking.ident(), rule.reason]),
            "no docs row for {capability}"
        );
    }
}
