//! From runtime (`DType`, `ReduceOp`, `CodecId`) values to the concrete types the generic device
//! code is instantiated with: one `match` per enum, so adding a dtype, an op or a codec fails to
//! compile here until it is handled.
//!
//! ```text
//! dispatch!(dtype, op, |T, O| sim::reduce_copy::<W, T, O>(a, b, nranks))
//!   DType::Bf16 x ReduceOp::Sum  ->  { type T = Bf16; type O = Sum; sim::reduce_copy::<W, T, O>(..) }
//!   ... 60 arms
//! dispatch_dtype!(dtype, |T| max_encoded_len::<T>(n))
//! dispatch_coded!(dtype, |T| sim::encode_frames::<W, T>(..))   (i64, u64, f64: Err(InvalidArgument))
//! dispatch_coder!(codec, |C| kernels::encode_frames::<SimWarp<W>, T, C>, raw => kernels::encode_raw_frames::<..>)
//!   CodecId::Huffman  ->  { type C = Huffman; kernels::encode_frames::<SimWarp<W>, T, C> }
//! ```

/// Evaluates `$body` with type aliases `$T` (the [`zipcoll_device::dtype::Elem`] of `$dtype`)
/// and `$O` (the [`zipcoll_device::reduce::RedOp`] of `$op`) in scope, for every pair.
macro_rules! dispatch {
    ($dtype:expr, $op:expr, |$T:ident, $O:ident| $body:expr) => {{
        use zipcoll_device::dtype::{self as dt, DType};
        match $dtype {
            DType::Bf16 => dispatch!(@op dt::Bf16, $op, |$T, $O| $body),
            DType::F16 => dispatch!(@op dt::F16, $op, |$T, $O| $body),
            DType::F32 => dispatch!(@op dt::F32, $op, |$T, $O| $body),
            DType::F8E4M3 => dispatch!(@op dt::F8E4M3, $op, |$T, $O| $body),
            DType::F8E5M2 => dispatch!(@op dt::F8E5M2, $op, |$T, $O| $body),
            DType::F64 => dispatch!(@op dt::F64, $op, |$T, $O| $body),
            DType::I8 => dispatch!(@op dt::I8, $op, |$T, $O| $body),
            DType::U8 => dispatch!(@op dt::U8, $op, |$T, $O| $body),
            DType::I32 => dispatch!(@op dt::I32, $op, |$T, $O| $body),
            DType::U32 => dispatch!(@op dt::U32, $op, |$T, $O| $body),
            DType::I64 => dispatch!(@op dt::I64, $op, |$T, $O| $body),
            DType::U64 => dispatch!(@op dt::U64, $op, |$T, $O| $body),
        }
    }};
    (@op $t:ty, $op:expr, |$T:ident, $O:ident| $body:expr) => {{
        use zipcoll_device::reduce::{self as rd, ReduceOp};
        type $T = $t;
        match $op {
            ReduceOp::Sum => {
                type $O = rd::Sum;
                $body
            }
            ReduceOp::Prod => {
                type $O = rd::Prod;
                $body
            }
            ReduceOp::Min => {
                type $O = rd::Min;
                $body
            }
            ReduceOp::Max => {
                type $O = rd::Max;
                $body
            }
            ReduceOp::Avg => {
                type $O = rd::Avg;
                $body
            }
        }
    }};
}

/// Evaluates `$body` with the type alias `$T` (the [`zipcoll_device::dtype::Split`] of `$dtype`)
/// in scope, for every dtype.
macro_rules! dispatch_dtype {
    ($dtype:expr, |$T:ident| $body:expr) => {{
        use zipcoll_device::dtype::{self as dt, DType};
        match $dtype {
            DType::Bf16 => dispatch_dtype!(@one dt::Bf16, |$T| $body),
            DType::F16 => dispatch_dtype!(@one dt::F16, |$T| $body),
            DType::F32 => dispatch_dtype!(@one dt::F32, |$T| $body),
            DType::F8E4M3 => dispatch_dtype!(@one dt::F8E4M3, |$T| $body),
            DType::F8E5M2 => dispatch_dtype!(@one dt::F8E5M2, |$T| $body),
            DType::I8 => dispatch_dtype!(@one dt::I8, |$T| $body),
            DType::U8 => dispatch_dtype!(@one dt::U8, |$T| $body),
            DType::I32 => dispatch_dtype!(@one dt::I32, |$T| $body),
            DType::U32 => dispatch_dtype!(@one dt::U32, |$T| $body),
            DType::I64 => dispatch_dtype!(@one dt::I64, |$T| $body),
            DType::U64 => dispatch_dtype!(@one dt::U64, |$T| $body),
            DType::F64 => dispatch_dtype!(@one dt::F64, |$T| $body),
        }
    }};
    (@one $t:ty, |$T:ident| $body:expr) => {{
        type $T = $t;
        $body
    }};
}

/// Evaluates `$body` with the type alias `$T` (the [`zipcoll_device::dtype::Split`] of
/// `$dtype`) in scope, for the dtypes the codecs are built for
/// ([`DType::coded`](zipcoll_device::dtype::DType::coded)); for the others returns
/// `Err(Error::InvalidArgument)` from the enclosing function, which returns `crate::Result`.
macro_rules! dispatch_coded {
    ($dtype:expr, |$T:ident| $body:expr) => {{
        use zipcoll_device::dtype::{self as dt, DType};
        match $dtype {
            DType::Bf16 => dispatch_dtype!(@one dt::Bf16, |$T| $body),
            DType::F16 => dispatch_dtype!(@one dt::F16, |$T| $body),
            DType::F32 => dispatch_dtype!(@one dt::F32, |$T| $body),
            DType::F8E4M3 => dispatch_dtype!(@one dt::F8E4M3, |$T| $body),
            DType::F8E5M2 => dispatch_dtype!(@one dt::F8E5M2, |$T| $body),
            DType::I8 => dispatch_dtype!(@one dt::I8, |$T| $body),
            DType::U8 => dispatch_dtype!(@one dt::U8, |$T| $body),
            DType::I32 => dispatch_dtype!(@one dt::I32, |$T| $body),
            DType::U32 => dispatch_dtype!(@one dt::U32, |$T| $body),
            other => return Err($crate::dispatch::not_coded(other)),
        }
    }};
}

/// The error of a codec call for a dtype no codec is built for.
pub(crate) fn not_coded(dtype: zipcoll_device::dtype::DType) -> crate::error::Error {
    let coded = zipcoll_device::dtype::DType::CODED.map(|d| d.name()).join(", ");
    crate::error::Error::InvalidArgument(format!(
        "no codec is built for {dtype:?} (the codecs take {coded}; the collectives move {dtype:?} uncompressed)"
    ))
}

/// The dispatch from a codec id to its symbol coder (`zipcoll_device`'s one list of codecs).
pub(crate) use zipcoll_device::with_symbol_coder as dispatch_coder;
pub(crate) use {dispatch, dispatch_coded, dispatch_dtype};

/// Element bytes (little-endian) to storage words.
pub(crate) fn words_from_le<B: zipcoll_targets::Word>(bytes: &[u8]) -> Vec<B> {
    let size = std::mem::size_of::<B>();
    bytes
        .chunks_exact(size)
        .map(|c| {
            let mut le = [0u8; 8];
            le[..size].copy_from_slice(c);
            B::from_bits64(u64::from_le_bytes(le))
        })
        .collect()
}

/// Storage words to element bytes (little-endian).
pub(crate) fn words_to_le<B: zipcoll_targets::Word>(words: &[B]) -> Vec<u8> {
    let size = std::mem::size_of::<B>();
    words
        .iter()
        .flat_map(|w| w.to_bits64().to_le_bytes().into_iter().take(size))
        .collect()
}
