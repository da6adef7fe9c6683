//! zipcoll's device-function library: [`zipcoll_device::device_fns`] as `extern "C"` device
//! functions (`.visible .func` in PTX) for CUDA C++ kernels to call, declared in
//! `include/zipcoll_device_fns.h`. Built for `nvptx64-nvidia-cuda` only (a GPU module, like
//! `primitives/kernels`); a caller links the PTX with its own code (cuLink, nvJitLink, or
//! `nvcc -rdc=true` with the PTX compiled by `ptxas -c`).
//!
//! | symbol                        | body                                   |
//! |-------------------------------|----------------------------------------|
//! | `zc_encode_<dtype>`           | [`device_fns::encode`]                 |
//! | `zc_decode_<dtype>`           | [`device_fns::decode`]                 |
//! | `zc_predict_<dtype>`          | [`device_fns::predict`]                |
//! | `zc_max_frame_bytes_<dtype>`  | [`device_fns::max_frame_bytes`]        |
//! | `zc_check_frame`              | [`device_fns::check_frame`]             |
//! | `zc_encode_scratch_bytes`, `zc_decode_scratch_bytes` | [`device_fns::encode_scratch_bytes`], [`device_fns::decode_scratch_bytes`] |
//!
//! `<dtype>` is each of [`zipcoll_device::for_each_device_fn_dtype!`]'s.
#![no_std]

#[cfg(target_arch = "nvptx64")]
mod exports {
    use zipcoll_device::device_fns::{self as f, FrameInfo};
    use zipcoll_device::dtype::Elem;
    use zipcoll_targets::nvptx::NvptxWarp;

    /// The functions of one dtype, each in a module named after the dtype's suffix.
    macro_rules! per_dtype {
        ($([$t:ident, $suffix:ident])*) => {$(
            #[allow(non_snake_case)]
            pub mod $t {
                use super::*;
                use zipcoll_device::dtype::$t as T;
                type Bits = <T as Elem>::Bits;

                /// `zc_encode_<dtype>`: [`f::encode`].
                ///
                /// # Safety
                /// As [`f::encode`].
                #[export_name = concat!("zc_encode_", stringify!($suffix))]
                pub unsafe extern "C" fn encode(
                    input: *const Bits,
                    n: u64,
                    codec: u32,
                    out: *mut u8,
                    out_bytes: u64,
                    scratch: *mut u8,
                    scratch_bytes: u32,
                ) -> i64 {
                    // SAFETY: forwarded to the caller.
                    unsafe { f::encode::<_, T>(NvptxWarp::new(), input, n, codec, out, out_bytes, scratch, scratch_bytes) }
                }

                /// `zc_decode_<dtype>`: [`f::decode`].
                ///
                /// # Safety
                /// As [`f::decode`].
                #[export_name = concat!("zc_decode_", stringify!($suffix))]
                pub unsafe extern "C" fn decode(
                    frame: *const u8,
                    frame_bytes: u64,
                    out: *mut Bits,
                    out_elems: u64,
                    scratch: *mut u8,
                    scratch_bytes: u32,
                ) -> i64 {
                    // SAFETY: forwarded to the caller.
                    unsafe { f::decode::<_, T>(NvptxWarp::new(), frame, frame_bytes, out, out_elems, scratch, scratch_bytes) }
                }

                /// `zc_predict_<dtype>`: [`f::predict`].
                ///
                /// # Safety
                /// As [`f::predict`].
                #[export_name = concat!("zc_predict_", stringify!($suffix))]
                pub unsafe extern "C" fn predict(
                    input: *const Bits,
                    n: u64,
                    frame_elems: u64,
                    sample: *mut u8,
                    bytes: *mut u64,
                ) -> i64 {
                    // SAFETY: forwarded to the caller.
                    unsafe { f::predict::<T>(input, n, frame_elems, sample, bytes) }
                }

                /// `zc_max_frame_bytes_<dtype>`: [`f::max_frame_bytes`].
                #[export_name = concat!("zc_max_frame_bytes_", stringify!($suffix))]
                pub extern "C" fn max_frame_bytes(n: u64) -> u64 {
                    f::max_frame_bytes::<T>(n)
                }
            }
        )*};
    }
    zipcoll_device::for_each_device_fn_dtype!((per_dtype) {});

    /// `zc_check_frame`: [`f::check_frame`].
    ///
    /// # Safety
    /// As [`f::check_frame`].
    #[no_mangle]
    pub unsafe extern "C" fn zc_check_frame(frame: *const u8, frame_bytes: u64, info: *mut FrameInfo) -> i64 {
        // SAFETY: forwarded to the caller.
        unsafe { f::check_frame(frame, frame_bytes, info) }
    }

    /// `zc_encode_scratch_bytes`: [`f::encode_scratch_bytes`] (saturated).
    #[no_mangle]
    pub extern "C" fn zc_encode_scratch_bytes(block_dim: u32) -> u32 {
        u32::try_from(f::encode_scratch_bytes(block_dim)).unwrap_or(u32::MAX)
    }

    /// `zc_decode_scratch_bytes`: [`f::decode_scratch_bytes`] (saturated).
    #[no_mangle]
    pub extern "C" fn zc_decode_scratch_bytes(block_dim: u32) -> u32 {
        u32::try_from(f::decode_scratch_bytes(block_dim)).unwrap_or(u32::MAX)
    }
}
