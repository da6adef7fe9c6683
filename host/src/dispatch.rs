//! From runtime (`DType`, `ReduceOp`, `CodecId`) values to the concrete types the generic device
//! code is instantiated with: one `match` per enum, so adding a dtype, an op or a codec fails to
//! compile here until it is handled.
//!
//! ```text
//! dispatch!(dtype, op, |T, O| sim::reduce_copy::<W, T, O>(a, b, nranks))
//!   DType::Bf16 x ReduceOp::Sum  ->  { type T = Bf16; type O = Sum; sim::reduce_copy::<W, T, O>(..) }
//!   ... 25 arms
//! dispatch_dtype!(dtype, |T| max_encoded_len::<T>(n))
//! dispatch_coder!(codec, |C| kernels::encode_frames::<SimWarp<W>, T, C>, raw => kernels::encode_raw_frames::<..>)
//!   CodecId::Huffman  ->  { type C = Huffman; kernels::encode_frames::<SimWarp<W>, T, C> }
//! ```

/// Evaluates `$body` with type aliases `$T` (the [`zipcoll_device::dtype::Elem`] of `$dtype`)
/// and `$O` (the [`zipcoll_device::reduce::RedOp`] of `$op`) in scope.
macro_rules! dispatch {
    ($dtype:expr, $op:expr, |$T:ident, $O:ident| $body:expr) => {{
        use zipcoll_device::dtype::{self as dt, DType};
        match $dtype {
            DType::Bf16 => dispatch!(@op dt::Bf16, $op, |$T, $O| $body),
            DType::F16 => dispatch!(@op dt::F16, $op, |$T, $O| $body),
            DType::F32 => dispatch!(@op dt::F32, $op, |$T, $O| $body),
            DType::F8E4M3 => dispatch!(@op dt::F8E4M3, $op, |$T, $O| $body),
            DType::F8E5M2 => dispatch!(@op dt::F8E5M2, $op, |$T, $O| $body),
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
/// in scope.
macro_rules! dispatch_dtype {
    ($dtype:expr, |$T:ident| $body:expr) => {{
        use zipcoll_device::dtype::{self as dt, DType};
        match $dtype {
            DType::Bf16 => {
                type $T = dt::Bf16;
                $body
            }
            DType::F16 => {
                type $T = dt::F16;
                $body
            }
            DType::F32 => {
                type $T = dt::F32;
                $body
            }
            DType::F8E4M3 => {
                type $T = dt::F8E4M3;
                $body
            }
            DType::F8E5M2 => {
                type $T = dt::F8E5M2;
                $body
            }
        }
    }};
}

/// The dispatch from a codec id to its symbol coder (`zipcoll_device`'s one list of codecs).
pub(crate) use zipcoll_device::with_symbol_coder as dispatch_coder;
pub(crate) use {dispatch, dispatch_dtype};

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
