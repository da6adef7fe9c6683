//! Entry-point lookup through the typed manifest: every variant resolves to a symbol of the
//! manifest, lookups are cached, and a missing variant or symbol is `KernelNotBuilt`.

use std::cell::RefCell;
use std::collections::BTreeSet;
use zipcoll_host::registry::{kernel_desc, KernelModule, Registry};
use zipcoll_host::{DType, Error, Kernel, ReduceCopy, ReduceOp, Vendor, WarpAllReduce};

/// A module that exports `symbols` and records every lookup it serves.
struct FakeModule<const V: u8> {
    symbols: BTreeSet<&'static str>,
    lookups: RefCell<Vec<&'static str>>,
}

impl<const V: u8> FakeModule<V> {
    fn exporting(symbols: impl IntoIterator<Item = &'static str>) -> Self {
        Self {
            symbols: symbols.into_iter().collect(),
            lookups: RefCell::new(Vec::new()),
        }
    }
}

const NV: u8 = 0;
const AMD: u8 = 1;

impl<const V: u8> KernelModule for FakeModule<V> {
    type Function = &'static str;
    const VENDOR: Vendor = if V == NV { Vendor::Nvptx } else { Vendor::Amdgpu };

    fn load_function(&self, symbol: &'static str) -> zipcoll_host::Result<Option<&'static str>> {
        self.lookups.borrow_mut().push(symbol);
        Ok(self.symbols.get(symbol).copied())
    }
}

fn symbols<K: Kernel>() -> BTreeSet<&'static str> {
    K::VARIANTS.iter().map(|d| d.symbol).collect()
}

fn every_variant_resolves<K: Kernel, const V: u8>() {
    let registry = Registry::new(FakeModule::<V>::exporting(symbols::<K>()));
    let vendor = <FakeModule<V> as KernelModule>::VENDOR;
    let mut checked = 0;
    for d in K::VARIANTS.iter().filter(|d| d.vendors.contains(&vendor)) {
        let desc = kernel_desc::<K>(d.dtype, d.op, vendor).unwrap();
        assert_eq!((desc.dtype, desc.op), (d.dtype, d.op));
        let f = registry.function::<K>(d.dtype, d.op).unwrap();
        assert_eq!(f, desc.symbol);
        assert!(symbols::<K>().contains(f), "{f} is a manifest symbol of {}", K::NAME);
        checked += 1;
    }
    assert!(checked > 0, "{} has variants for {vendor:?}", K::NAME);
}

#[test]
fn every_manifest_variant_resolves_to_a_manifest_symbol() {
    every_variant_resolves::<ReduceCopy, NV>();
    every_variant_resolves::<ReduceCopy, AMD>();
    every_variant_resolves::<WarpAllReduce, NV>();
    every_variant_resolves::<WarpAllReduce, AMD>();
}

#[test]
fn lookups_are_cached_per_symbol() {
    let registry = Registry::new(FakeModule::<NV>::exporting(symbols::<ReduceCopy>()));
    let (dt, op) = (Some(DType::Bf16), Some(ReduceOp::Sum));
    let Ok(first) = registry.function::<ReduceCopy>(dt, op) else {
        // A developer filter (ZIPCOLL_KERNEL_FILTER) left this variant out of the build.
        return;
    };
    assert_eq!(registry.function::<ReduceCopy>(dt, op).unwrap(), first);
    assert_eq!(registry.function::<ReduceCopy>(dt, op).unwrap(), first);
    assert_eq!(
        *registry.module().lookups.borrow(),
        [first],
        "one module lookup for three calls"
    );
    assert!(format!("{registry:?}").contains(first));
}

#[test]
fn module_without_the_symbol_is_kernel_not_built() {
    let registry = Registry::new(FakeModule::<AMD>::exporting([]));
    let d = WarpAllReduce::VARIANTS
        .iter()
        .find(|d| d.vendors.contains(&Vendor::Amdgpu));
    let Some(d) = d else { return };
    match registry.function::<WarpAllReduce>(d.dtype, d.op) {
        Err(Error::KernelNotBuilt {
            kernel,
            dtype,
            op,
            codec,
            vendor,
        }) => {
            assert_eq!(kernel, WarpAllReduce::NAME);
            assert_eq!((dtype, op, codec, vendor), (d.dtype, d.op, None, Vendor::Amdgpu));
        }
        other => panic!("expected KernelNotBuilt, got {other:?}"),
    }
}

#[test]
fn variant_missing_from_the_manifest_is_kernel_not_built() {
    let registry = Registry::new(FakeModule::<NV>::exporting(symbols::<ReduceCopy>()));
    for (dtype, op) in [(None, None), (Some(DType::F32), None), (None, Some(ReduceOp::Sum))] {
        assert!(matches!(
            registry.function::<ReduceCopy>(dtype, op),
            Err(Error::KernelNotBuilt {
                kernel: "reduce_copy",
                ..
            })
        ));
    }
    assert!(
        registry.module().lookups.borrow().is_empty(),
        "the module is never asked for a variant the manifest lacks"
    );
}
