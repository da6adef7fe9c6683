//! Thin wrappers over [`super::sys`]: one function per HIP call, turning `hipError_t` into
//! [`Error::Hip`] with the call's name and the runtime's message.
//!
//! | wrapper                 | HIP call                      | safe to call?                          |
//! |-------------------------|-------------------------------|----------------------------------------|
//! | [`api`]                 | (loads `libamdhip64.so`)      | yes                                    |
//! | [`init`], [`device_count`], [`set_device`], [`arch_name`], [`synchronize`], [`last_error`] | as named | yes |
//! | [`malloc`]              | `hipMalloc`                   | yes (returns a pointer the caller owns) |
//! | [`free`]                | `hipFree`                     | `unsafe`: the pointer must be live      |
//! | [`memcpy_htod`] / [`memcpy_dtoh`] | `hipMemcpy`         | `unsafe`: the device range must be live |
//! | [`module_load_data`]    | `hipModuleLoadData`           | `unsafe`: the image must be a code object |
//! | [`module_unload`]       | `hipModuleUnload`             | `unsafe`: the module must be live       |
//! | [`module_get_function`] | `hipModuleGetFunction`        | `unsafe`: the module must be live       |
//! | [`launch`]              | `hipModuleLaunchKernel`       | `unsafe`: the arguments must match the kernel |

use super::sys::{self, HipApi, HipErrorT, HipFunctionT, HipModuleT, HIP_SUCCESS};
use crate::error::{Error, Result};
use std::ffi::{c_int, c_void, CStr, CString};
use std::ptr;
use std::sync::OnceLock;

/// The HIP runtime, loaded on first use and kept for the life of the process.
pub(crate) fn api() -> Result<&'static HipApi> {
    static API: OnceLock<std::result::Result<HipApi, String>> = OnceLock::new();
    API.get_or_init(HipApi::load)
        .as_ref()
        .map_err(|reason| Error::BackendUnavailable {
            backend: "hip",
            reason: reason.clone(),
        })
}

/// The runtime's text for `code`.
fn message(api: &HipApi, code: HipErrorT) -> String {
    // SAFETY: hipGetErrorString accepts any value and returns null or a pointer to a static
    // NUL-terminated string owned by the runtime.
    let s = unsafe { (api.get_error_string)(code) };
    if s.is_null() {
        return format!("HIP error {code}");
    }
    // SAFETY: non-null, NUL-terminated and static (see above).
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// `Ok(())` for `hipSuccess`, else [`Error::Hip`] naming `call`.
fn check(api: &HipApi, call: &'static str, code: HipErrorT) -> Result<()> {
    if code == HIP_SUCCESS {
        Ok(())
    } else {
        Err(Error::Hip {
            call,
            code,
            message: message(api, code),
        })
    }
}

/// `hipInit(0)`.
pub(crate) fn init(api: &HipApi) -> Result<()> {
    // SAFETY: hipInit takes flags by value; 0 is the only defined value.
    check(api, "hipInit", unsafe { (api.init)(0) })
}

/// `hipGetDeviceCount`.
pub(crate) fn device_count(api: &HipApi) -> Result<usize> {
    let mut n: c_int = 0;
    // SAFETY: `n` is a valid, writable int.
    check(api, "hipGetDeviceCount", unsafe { (api.get_device_count)(&mut n) })?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// `hipSetDevice(ordinal)`: makes `ordinal` the calling thread's current device.
pub(crate) fn set_device(api: &HipApi, ordinal: c_int) -> Result<()> {
    // SAFETY: takes an int by value; the runtime validates it.
    check(api, "hipSetDevice", unsafe { (api.set_device)(ordinal) })
}

/// The device's gfx target name without feature flags (`gfx942` from `gfx942:sramecc+:xnack-`).
pub(crate) fn arch_name(api: &HipApi, ordinal: c_int) -> Result<String> {
    let mut buf = Box::new(sys::DevicePropBuf([0; 4096]));
    // SAFETY: `buf` is writable, 8-byte aligned and larger than hipDeviceProp_tR0600.
    check(api, "hipGetDevicePropertiesR0600", unsafe {
        (api.get_device_properties)(&mut *buf, ordinal)
    })?;
    let field = &buf.0[sys::PROP_GCN_ARCH_NAME_OFFSET..sys::PROP_GCN_ARCH_NAME_OFFSET + sys::PROP_GCN_ARCH_NAME_LEN];
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let full = String::from_utf8_lossy(&field[..end]);
    Ok(full.split(':').next().unwrap_or_default().to_owned())
}

/// `hipMalloc(bytes)` on the current device. The caller frees the pointer with [`free`].
pub(crate) fn malloc(api: &HipApi, bytes: usize) -> Result<*mut c_void> {
    let mut p = ptr::null_mut();
    // SAFETY: `p` is a valid, writable pointer slot.
    check(api, "hipMalloc", unsafe { (api.malloc)(&mut p, bytes) })?;
    Ok(p)
}

/// `hipFree(p)`.
///
/// # Safety
/// `p` came from [`malloc`], is not freed yet and no launch still uses it.
pub(crate) unsafe fn free(api: &HipApi, p: *mut c_void) -> Result<()> {
    // SAFETY: forwarded to the caller.
    check(api, "hipFree", unsafe { (api.free)(p) })
}

/// `hipMemcpy(dst, src, src.len(), HostToDevice)`.
///
/// # Safety
/// `dst` is a device allocation with at least `src.len()` bytes.
pub(crate) unsafe fn memcpy_htod(api: &HipApi, dst: *mut c_void, src: &[u8]) -> Result<()> {
    let kind = sys::HIP_MEMCPY_HOST_TO_DEVICE;
    // SAFETY: `src` is readable for its length; `dst` as the caller promises. hipMemcpy is
    // synchronous with respect to the host buffer.
    check(api, "hipMemcpy(HtoD)", unsafe {
        (api.memcpy)(dst, src.as_ptr().cast(), src.len(), kind)
    })
}

/// `hipMemcpy(dst, src, dst.len(), DeviceToHost)`.
///
/// # Safety
/// `src` is a device allocation with at least `dst.len()` bytes.
pub(crate) unsafe fn memcpy_dtoh(api: &HipApi, dst: &mut [u8], src: *const c_void) -> Result<()> {
    let kind = sys::HIP_MEMCPY_DEVICE_TO_HOST;
    // SAFETY: `dst` is writable for its length; `src` as the caller promises. hipMemcpy waits
    // for the copy (and for earlier work on the null stream) before returning.
    check(api, "hipMemcpy(DtoH)", unsafe {
        (api.memcpy)(dst.as_mut_ptr().cast(), src, dst.len(), kind)
    })
}

/// `hipModuleLoadData(image)` on the current device.
///
/// # Safety
/// `image` is a complete AMD code object (an ELF the runtime parses; a truncated or foreign
/// image is rejected with an error, but must still be readable in full).
pub(crate) unsafe fn module_load_data(api: &HipApi, image: &[u8]) -> Result<HipModuleT> {
    let mut m = ptr::null_mut();
    // SAFETY: `m` is a writable slot; `image` as the caller promises, alive during the call
    // (the runtime copies what it keeps).
    check(api, "hipModuleLoadData", unsafe {
        (api.module_load_data)(&mut m, image.as_ptr().cast())
    })?;
    Ok(m)
}

/// `hipModuleUnload(module)`.
///
/// # Safety
/// `module` came from [`module_load_data`], is not unloaded yet, and none of its functions is
/// used afterwards.
pub(crate) unsafe fn module_unload(api: &HipApi, module: HipModuleT) -> Result<()> {
    // SAFETY: forwarded to the caller.
    check(api, "hipModuleUnload", unsafe { (api.module_unload)(module) })
}

/// `hipModuleGetFunction(module, name)`.
///
/// # Safety
/// `module` is a live module from [`module_load_data`].
pub(crate) unsafe fn module_get_function(api: &HipApi, module: HipModuleT, name: &str) -> Result<HipFunctionT> {
    let cname = CString::new(name)
        .map_err(|_| Error::InvalidArgument(format!("kernel symbol {name:?} contains a NUL byte")))?;
    let mut f = ptr::null_mut();
    // SAFETY: `f` is a writable slot, `cname` is NUL-terminated, `module` as the caller promises.
    check(api, "hipModuleGetFunction", unsafe {
        (api.module_get_function)(&mut f, module, cname.as_ptr())
    })?;
    Ok(f)
}

/// `hipModuleLaunchKernel` of `f` on the null stream with a 1-D geometry, then `hipGetLastError`.
///
/// # Safety
/// `f` is a live function of a live module, `params` holds one pointer per kernel parameter, in
/// order, each pointing at a value of that parameter's exact type, and every device pointer
/// among those values stays allocated until the launch completes.
pub(crate) unsafe fn launch(
    api: &HipApi,
    f: HipFunctionT,
    grid_dim: u32,
    block_dim: u32,
    shared_bytes: u32,
    params: &mut [*mut c_void],
) -> Result<()> {
    // SAFETY: forwarded to the caller; `params` outlives the call, which copies the values.
    let code = unsafe {
        (api.module_launch_kernel)(
            f,
            grid_dim,
            1,
            1,
            block_dim,
            1,
            1,
            shared_bytes,
            ptr::null_mut(),
            params.as_mut_ptr(),
            ptr::null_mut(),
        )
    };
    check(api, "hipModuleLaunchKernel", code)?;
    last_error(api)
}

/// `hipGetLastError`: the sticky error of the calling thread's last call, if any.
pub(crate) fn last_error(api: &HipApi) -> Result<()> {
    // SAFETY: takes no arguments.
    check(api, "hipGetLastError", unsafe { (api.get_last_error)() })
}

/// `hipDeviceSynchronize`, then `hipGetLastError`.
pub(crate) fn synchronize(api: &HipApi) -> Result<()> {
    // SAFETY: takes no arguments.
    check(api, "hipDeviceSynchronize", unsafe { (api.device_synchronize)() })?;
    last_error(api)
}
