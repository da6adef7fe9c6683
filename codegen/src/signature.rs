//! Reading the kernel fn's signature: which generic parameter plays which role, and the value
//! parameters the entry points forward.

use quote::ToTokens;
use syn::visit::Visit;
use syn::{FnArg, GenericParam, Ident, ItemFn, Pat, ReturnType, Type, TypeParamBound, WherePredicate};

/// What a generic type parameter stands for, named by its bound.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Bounded by `Warp`: the vendor's warp type.
    Warp,
    /// Bounded by `Elem` (or its subtrait `Split`): the dtype dimension.
    Elem,
    /// Bounded by `RedOp`: the op dimension.
    RedOp,
    /// Bounded by `SymbolCoder` (a warp's coder) or `BlockCoder` (a block's): the codec
    /// dimension.
    Coder,
}

impl Role {
    const ALL: [Role; 4] = [Role::Warp, Role::Elem, Role::RedOp, Role::Coder];

    /// The trait that names this role.
    pub fn trait_name(self) -> &'static str {
        match self {
            Role::Warp => "Warp",
            Role::Elem => "Elem",
            Role::RedOp => "RedOp",
            Role::Coder => "SymbolCoder",
        }
    }

    /// Every bound that gives a parameter this role: the role's trait, and for the dtype its
    /// subtraits `Split` (the exponent split the codecs need) and `F32Exact` (the floats the
    /// lossy kernels quantize).
    fn bounds(self) -> &'static [&'static str] {
        match self {
            Role::Warp => &["Warp"],
            Role::Elem => &["Elem", "Split", "F32Exact"],
            Role::RedOp => &["RedOp"],
            Role::Coder => &["SymbolCoder", "BlockCoder"],
        }
    }
}

/// A generic type parameter and its role.
pub(crate) struct Generic {
    pub ident: Ident,
    pub role: Role,
    /// The bound that gave it its role (`Split` or `F32Exact` over `Elem` when both are given): the trait
    /// that entry points qualify its associated types with.
    pub bound: &'static str,
}

/// The parts of the kernel fn that the expansion needs.
pub(crate) struct Signature {
    /// The fn's generic type parameters, in declaration order (the turbofish's order).
    pub generics: Vec<Generic>,
    /// The last path segments of every bound on the warp parameter (`Warp`, `SharedMem`, ...).
    pub warp_bounds: Vec<Ident>,
    /// The value parameters after the warp: what an entry point takes and forwards.
    pub params: Vec<(Ident, Type)>,
}

impl Signature {
    /// The parameter with `role`, if the kernel has one.
    pub fn generic(&self, role: Role) -> Option<&Generic> {
        self.generics.iter().find(|g| g.role == role)
    }

    /// The name of the parameter with `role`, if the kernel has one.
    pub fn find(&self, role: Role) -> Option<&Ident> {
        self.generic(role).map(|g| &g.ident)
    }

    /// Reads `func`'s signature; every problem found is reported at once.
    pub fn analyze(func: &ItemFn) -> syn::Result<Signature> {
        let mut errors = Errors::default();
        let sig = &func.sig;
        if let Some(asyncness) = sig.asyncness {
            errors.push(asyncness, "a kernel cannot be `async`");
        }
        if let Some(abi) = &sig.abi {
            errors.push(
                abi,
                "a kernel is a plain Rust fn: `#[kernel]` gives the entry points their ABI",
            );
        }
        if let Some(variadic) = &sig.variadic {
            errors.push(variadic, "a kernel cannot be variadic");
        }
        if let ReturnType::Type(_, ty) = &sig.output {
            errors.push(ty, "a kernel returns nothing: GPU entry points have no return value");
        }

        let mut generics: Vec<Generic> = Vec::new();
        let mut warp_bounds = Vec::new();
        for param in &sig.generics.params {
            let tp = match param {
                GenericParam::Type(tp) => tp,
                GenericParam::Lifetime(lt) => {
                    errors.push(
                        lt,
                        "a kernel takes no lifetime parameters: its entry points could not name them",
                    );
                    continue;
                }
                GenericParam::Const(c) => {
                    errors.push(
                        c,
                        "a kernel takes no const parameters: its entry points could not choose them",
                    );
                    continue;
                }
            };
            let bounds = bound_names(func, &tp.ident);
            let roles: Vec<Role> = Role::ALL
                .into_iter()
                .filter(|r| bounds.iter().any(|b| r.bounds().iter().any(|rb| b == rb)))
                .collect();
            let role = match roles.as_slice() {
                [role] => *role,
                [] => {
                    errors.push(
                        &tp.ident,
                        format!(
                            "generic parameter `{}` is bounded by none of `Warp`, `Elem` (or `Split`, `F32Exact`), `RedOp`, \
                             `SymbolCoder`: the entry points cannot choose a type for it",
                            tp.ident
                        ),
                    );
                    continue;
                }
                [a, b, ..] => {
                    errors.push(
                        &tp.ident,
                        format!(
                            "generic parameter `{}` is bounded by both `{}` and `{}`; give each role its own parameter",
                            tp.ident,
                            a.trait_name(),
                            b.trait_name()
                        ),
                    );
                    continue;
                }
            };
            if let Some(first) = generics.iter().find(|g| g.role == role) {
                errors.push(
                    &tp.ident,
                    format!(
                        "`{}` and `{}` are both bounded by `{}`; a kernel has at most one",
                        first.ident,
                        tp.ident,
                        role.trait_name()
                    ),
                );
                continue;
            }
            // The last of the role's bounds that is given: `Split` before `Elem`.
            let bound = role
                .bounds()
                .iter()
                .rev()
                .find(|rb| bounds.iter().any(|b| b == *rb))
                .copied()
                .unwrap_or(role.trait_name());
            if role == Role::Warp {
                warp_bounds = bounds;
            }
            generics.push(Generic {
                ident: tp.ident.clone(),
                role,
                bound,
            });
        }
        let warp = generics.iter().find(|g| g.role == Role::Warp).map(|g| g.ident.clone());
        if warp.is_none() {
            errors.push(
                &sig.ident,
                "a kernel needs a generic parameter bounded by `Warp`, e.g. `fn k<W: Warp>(w: W, ...)`",
            );
        }

        let mut params = Vec::new();
        for (i, arg) in sig.inputs.iter().enumerate() {
            let pt = match arg {
                FnArg::Receiver(receiver) => {
                    errors.push(
                        receiver,
                        "`#[kernel]` needs a free function: `self` parameters are not supported",
                    );
                    continue;
                }
                FnArg::Typed(pt) => pt,
            };
            let ident = match &*pt.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
                pat => {
                    errors.push(
                        pat,
                        "kernel parameters must be plain identifiers (the entry points forward them by name); \
                         destructure inside the body",
                    );
                    continue;
                }
            };
            if i == 0 {
                if let Some(warp) = &warp {
                    if !is_ident_type(&pt.ty, warp) {
                        errors.push(
                            &pt.ty,
                            format!("the first parameter must be the warp, of type `{warp}`"),
                        );
                    }
                }
                continue;
            }
            if ident == "zc_block_dim" || ident == "zc_grid_dim" {
                errors.push(
                    &ident,
                    format!("`{ident}` is reserved for the amdgpu entry point's launch geometry"),
                );
                continue;
            }
            if let Some(impl_trait) = impl_trait_in(&pt.ty) {
                errors.push(
                    impl_trait,
                    "a kernel parameter cannot be `impl Trait`: the entry points name the kernel's generics",
                );
                continue;
            }
            params.push((ident, (*pt.ty).clone()));
        }
        if sig.inputs.is_empty() {
            if let Some(warp) = &warp {
                let mut parens = proc_macro2::TokenStream::new();
                sig.paren_token.surround(&mut parens, |_| ());
                errors.push(
                    parens,
                    format!("a kernel's first parameter must be the warp, e.g. `w: {warp}`"),
                );
            }
        }

        errors.finish()?;
        Ok(Signature {
            generics,
            warp_bounds,
            params,
        })
    }
}

/// Whether `ty` is the bare type parameter `ident`.
fn is_ident_type(ty: &Type, ident: &Ident) -> bool {
    matches!(ty, Type::Path(tp) if tp.qself.is_none() && tp.path.is_ident(ident))
}

/// The first `impl Trait` inside `ty`.
fn impl_trait_in(ty: &Type) -> Option<&syn::TypeImplTrait> {
    struct Find<'ast>(Option<&'ast syn::TypeImplTrait>);
    impl<'ast> Visit<'ast> for Find<'ast> {
        fn visit_type_impl_trait(&mut self, it: &'ast syn::TypeImplTrait) {
            self.0.get_or_insert(it);
        }
    }
    let mut find = Find(None);
    find.visit_type(ty);
    find.0
}

/// The last path segment of every trait bound on `param`, inline or in the where clause.
fn bound_names(func: &ItemFn, param: &Ident) -> Vec<Ident> {
    let generics = &func.sig.generics;
    let inline = generics
        .type_params()
        .filter(|tp| tp.ident == *param)
        .flat_map(|tp| &tp.bounds);
    let in_where = generics
        .where_clause
        .iter()
        .flat_map(|w| &w.predicates)
        .filter_map(|p| match p {
            WherePredicate::Type(pt) if is_ident_type(&pt.bounded_ty, param) => Some(&pt.bounds),
            _ => None,
        })
        .flatten();
    inline
        .chain(in_where)
        .filter_map(|b| match b {
            TypeParamBound::Trait(t) => t.path.segments.last().map(|s| s.ident.clone()),
            _ => None,
        })
        .collect()
}

/// Errors gathered so that one expansion reports them all.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Adds an error spanning `tokens`.
    pub fn push(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        let error = syn::Error::new_spanned(tokens, message);
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// `Err` with every gathered error, if there is one.
    pub fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}
