//! The support tables: the dtypes, ops, codecs and vendors the attribute knows, which (dtype,
//! op) pairs are built, and which vendors a warp capability rules out. The crate docs show the same rows;
//! a unit test keeps the two in step.

/// A family of dtypes that share the (dtype, op) rules.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// IEEE-style floats, reduced through `f32` (f32 and f64 natively).
    Float,
    /// Two's-complement and unsigned integers.
    Int,
}

/// A dtype the attribute knows.
pub(crate) struct DTypeInfo {
    /// Its name in `dtype = [...]` and in symbols.
    pub ident: &'static str,
    /// Its type under `::zipcoll_device::dtype` and its `DType` variant (the same name).
    pub name: &'static str,
    pub family: Family,
    /// Its storage word: `<T as Elem>::Bits`, which entry points spell out.
    pub word: &'static str,
    /// Its storage-width class: the symbol part that `equiv = bits` uses.
    pub bits: &'static str,
}

/// Every dtype, in `DType` order. Within a storage class, the first one is the class's
/// representative for `equiv = bits`.
#[rustfmt::skip]
pub(crate) const DTYPES: &[DTypeInfo] = &[
    DTypeInfo { ident: "bf16",   name: "Bf16",   word: "u16", bits: "b16", family: Family::Float },
    DTypeInfo { ident: "f16",    name: "F16",    word: "u16", bits: "b16", family: Family::Float },
    DTypeInfo { ident: "f32",    name: "F32",    word: "u32", bits: "b32", family: Family::Float },
    DTypeInfo { ident: "f8e4m3", name: "F8E4M3", word: "u8",  bits: "b8",  family: Family::Float },
    DTypeInfo { ident: "f8e5m2", name: "F8E5M2", word: "u8",  bits: "b8",  family: Family::Float },
    DTypeInfo { ident: "i8",     name: "I8",     word: "u8",  bits: "b8",  family: Family::Int },
    DTypeInfo { ident: "u8",     name: "U8",     word: "u8",  bits: "b8",  family: Family::Int },
    DTypeInfo { ident: "i32",    name: "I32",    word: "u32", bits: "b32", family: Family::Int },
    DTypeInfo { ident: "u32",    name: "U32",    word: "u32", bits: "b32", family: Family::Int },
    DTypeInfo { ident: "i64",    name: "I64",    word: "u64", bits: "b64", family: Family::Int },
    DTypeInfo { ident: "u64",    name: "U64",    word: "u64", bits: "b64", family: Family::Int },
    DTypeInfo { ident: "f64",    name: "F64",    word: "u64", bits: "b64", family: Family::Float },
];

/// A reduction the attribute knows.
pub(crate) struct OpInfo {
    /// Its name in `op = [...]` and in symbols.
    pub ident: &'static str,
    /// Its type under `::zipcoll_device::reduce` and its `ReduceOp` variant (the same name).
    pub name: &'static str,
}

/// Every op, in `ReduceOp` order.
#[rustfmt::skip]
pub(crate) const OPS: &[OpInfo] = &[
    OpInfo { ident: "sum",  name: "Sum" },
    OpInfo { ident: "prod", name: "Prod" },
    OpInfo { ident: "min",  name: "Min" },
    OpInfo { ident: "max",  name: "Max" },
    OpInfo { ident: "avg",  name: "Avg" },
];

/// A symbol coder the attribute knows (the codec dimension; RAW has no coder, so it is no part
/// of it).
pub(crate) struct CodecInfo {
    /// Its name in `codec = [...]` and in symbols.
    pub ident: &'static str,
    /// Its type under `::zipcoll_device::codec` and its `CodecId` variant (the same name).
    pub name: &'static str,
}

/// Every codec with a symbol coder, in `CodecId` order.
#[rustfmt::skip]
pub(crate) const CODECS: &[CodecInfo] = &[
    CodecInfo { ident: "fixedlen",  name: "FixedLen" },
    CodecInfo { ident: "expwindow", name: "ExpWindow" },
    CodecInfo { ident: "expans",    name: "ExpAns" },
    CodecInfo { ident: "huffman",   name: "Huffman" },
];

/// Whether kernels over one dtype family and one op are built, and why.
pub(crate) struct PairRule {
    pub family: Family,
    pub op: &'static str,
    pub built: bool,
    pub reason: &'static str,
}

/// The dtype x op table. A pair with no row is not built.
pub(crate) const PAIR_RULES: &[PairRule] = &[
    PairRule {
        family: Family::Float,
        op: "sum",
        built: true,
        reason: "added in f32 (f64 natively), rounded back to nearest-even, as NCCL does",
    },
    PairRule {
        family: Family::Float,
        op: "prod",
        built: true,
        reason: "multiplied in f32 (f64 natively), rounded back to nearest-even, as NCCL does",
    },
    PairRule {
        family: Family::Float,
        op: "min",
        built: true,
        reason: "compared in f32 (f64 natively; exact for every float dtype), NaN propagates",
    },
    PairRule {
        family: Family::Float,
        op: "max",
        built: true,
        reason: "compared in f32 (f64 natively; exact for every float dtype), NaN propagates",
    },
    PairRule {
        family: Family::Float,
        op: "avg",
        built: true,
        reason: "NCCL's PreMulSum: each input times 1/nranks in f32 (f64 natively), then summed",
    },
    PairRule {
        family: Family::Int,
        op: "sum",
        built: true,
        reason: "wrapping (two's complement), as NCCL does; a descriptor scalar above 1 divides the result toward zero (NCCL's SumPostDiv, the integer average)",
    },
    PairRule {
        family: Family::Int,
        op: "prod",
        built: true,
        reason: "wrapping (two's complement), as NCCL does",
    },
    PairRule {
        family: Family::Int,
        op: "min",
        built: true,
        reason: "compared signed or unsigned as the type",
    },
    PairRule {
        family: Family::Int,
        op: "max",
        built: true,
        reason: "compared signed or unsigned as the type",
    },
    PairRule {
        family: Family::Int,
        op: "avg",
        built: true,
        reason: "NCCL's PreMulSum with an integer scalar, wrapping (an integer average runs the sum kernels, which divide the result: SumPostDiv)",
    },
];

/// Whether `op` is built for `dtype`: `Err(reason)` when the table rules it out.
pub(crate) fn pair_rule(dtype: &DTypeInfo, op: &OpInfo) -> Result<(), &'static str> {
    match PAIR_RULES.iter().find(|r| r.family == dtype.family && r.op == op.ident) {
        Some(rule) if rule.built => Ok(()),
        Some(rule) => Err(rule.reason),
        None => Err("no row of the dtype x op table covers this pair"),
    }
}

/// A GPU vendor, i.e. one code-generation backend of rustc.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vendor {
    Nvptx,
    Amdgpu,
}

impl Vendor {
    /// Every vendor, in entry-point order.
    pub const ALL: [Vendor; 2] = [Vendor::Nvptx, Vendor::Amdgpu];

    /// Its name in `vendor = [...]`.
    pub fn ident(self) -> &'static str {
        match self {
            Vendor::Nvptx => "nvptx",
            Vendor::Amdgpu => "amdgpu",
        }
    }

    /// Its variant of `::zipcoll_primitives::manifest::Vendor`.
    pub fn name(self) -> &'static str {
        match self {
            Vendor::Nvptx => "Nvptx",
            Vendor::Amdgpu => "Amdgpu",
        }
    }

    /// The `target_arch` its entry points are built under.
    pub fn target_arch(self) -> &'static str {
        match self {
            Vendor::Nvptx => "nvptx64",
            Vendor::Amdgpu => "amdgpu",
        }
    }
}

/// A warp capability (a trait bound on the warp parameter) that a vendor's backend lacks.
pub(crate) struct CapabilityRule {
    pub capability: &'static str,
    pub lacking: Vendor,
    pub reason: &'static str,
}

/// Kernels whose warp is bounded by `capability` are not built for `lacking`.
pub(crate) const CAPABILITY_RULES: &[CapabilityRule] = &[CapabilityRule {
    capability: "SharedMem",
    lacking: Vendor::Amdgpu,
    reason: "the AMD backend has no shared memory yet (rustc cannot name a launch-sized LDS buffer)",
}];
