//! The HIP runtime's C ABI, resolved at run time from `libamdhip64.so` with [`libloading`]: the
//! only place in the crate where HIP is called through raw pointers.
//!
//! | C function                         | field                 | used for                          |
//! |------------------------------------|-----------------------|-----------------------------------|
//! | `hipInit`                          | `init`                | starting the runtime              |
//! | `hipGetDeviceCount`                | `get_device_count`    | enumerating GPUs                  |
//! | `hipSetDevice`                     | `set_device`          | the calling thread's current GPU  |
//! | `hipGetDevicePropertiesR0600`      | `get_device_properties` | the gfx arch name               |
//! | `hipMalloc` / `hipFree`            | `malloc` / `free`     | device buffers                    |
//! | `hipMemcpy`                        | `memcpy`              | host <-> device copies            |
//! | `hipModuleLoadData` / `hipModuleUnload` | `module_load_data` / `module_unload` | code objects |
//! | `hipModuleGetFunction`             | `module_get_function` | kernel entry points               |
//! | `hipModuleLaunchKernel`            | `module_launch_kernel`| launches                          |
//! | `hipDeviceSynchronize`             | `device_synchronize`  | waiting for launches              |
//! | `hipGetLastError`                  | `get_last_error`      | launch errors                     |
//! | `hipGetErrorString`                | `get_error_string`    | error messages                    |
//!
//! Every field is an `unsafe extern "C" fn` with the C prototype of ROCm 6 and later; the safe
//! layer ([`super`]) states, at each call, why the arguments satisfy the C contract.

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `hipError_t`: 0 is `hipSuccess`.
pub(crate) type HipErrorT = c_int;
/// `hipSuccess`.
pub(crate) const HIP_SUCCESS: HipErrorT = 0;
/// `hipModule_t`: an opaque handle.
pub(crate) type HipModuleT = *mut c_void;
/// `hipFunction_t`: an opaque handle.
pub(crate) type HipFunctionT = *mut c_void;
/// `hipStream_t`: an opaque handle; null is the default stream.
pub(crate) type HipStreamT = *mut c_void;
/// `hipMemcpyKind`.
pub(crate) type HipMemcpyKind = c_int;
/// `hipMemcpyHostToDevice`.
pub(crate) const HIP_MEMCPY_HOST_TO_DEVICE: HipMemcpyKind = 1;
/// `hipMemcpyDeviceToHost`.
pub(crate) const HIP_MEMCPY_DEVICE_TO_HOST: HipMemcpyKind = 2;

/// Byte offset of `char gcnArchName[256]` in `hipDeviceProp_tR0600` (ROCm 6 and 7).
pub(crate) const PROP_GCN_ARCH_NAME_OFFSET: usize = 1160;
/// Length of `gcnArchName`.
pub(crate) const PROP_GCN_ARCH_NAME_LEN: usize = 256;

/// Storage for one `hipDeviceProp_tR0600` (1472 bytes in ROCm 6 and 7), with room to spare so a
/// runtime that grew the struct still writes inside it.
#[repr(C, align(8))]
pub(crate) struct DevicePropBuf(pub(crate) [u8; 4096]);

/// The library names tried, in order (the dynamic loader's search path, then ROCm's default
/// install directory).
const LIBRARY_CANDIDATES: &[&str] = &[
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "/opt/rocm/lib/libamdhip64.so",
];

/// The HIP runtime's entry points, valid while `_lib` is loaded (as long as this value lives).
pub(crate) struct HipApi {
    pub(crate) init: unsafe extern "C" fn(flags: c_uint) -> HipErrorT,
    pub(crate) get_device_count: unsafe extern "C" fn(count: *mut c_int) -> HipErrorT,
    pub(crate) set_device: unsafe extern "C" fn(device: c_int) -> HipErrorT,
    pub(crate) get_device_properties: unsafe extern "C" fn(prop: *mut DevicePropBuf, device: c_int) -> HipErrorT,
    pub(crate) malloc: unsafe extern "C" fn(ptr: *mut *mut c_void, size: usize) -> HipErrorT,
    pub(crate) free: unsafe extern "C" fn(ptr: *mut c_void) -> HipErrorT,
    pub(crate) memcpy:
        unsafe extern "C" fn(dst: *mut c_void, src: *const c_void, bytes: usize, kind: HipMemcpyKind) -> HipErrorT,
    pub(crate) module_load_data: unsafe extern "C" fn(module: *mut HipModuleT, image: *const c_void) -> HipErrorT,
    pub(crate) module_unload: unsafe extern "C" fn(module: HipModuleT) -> HipErrorT,
    pub(crate) module_get_function:
        unsafe extern "C" fn(function: *mut HipFunctionT, module: HipModuleT, name: *const c_char) -> HipErrorT,
    pub(crate) module_launch_kernel: unsafe extern "C" fn(
        f: HipFunctionT,
        grid_x: c_uint,
        grid_y: c_uint,
        grid_z: c_uint,
        block_x: c_uint,
        block_y: c_uint,
        block_z: c_uint,
        shared_mem_bytes: c_uint,
        stream: HipStreamT,
        kernel_params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> HipErrorT,
    pub(crate) device_synchronize: unsafe extern "C" fn() -> HipErrorT,
    pub(crate) get_last_error: unsafe extern "C" fn() -> HipErrorT,
    pub(crate) get_error_string: unsafe extern "C" fn(error: HipErrorT) -> *const c_char,
    _lib: libloading::Library,
}

/// Resolves `name` in `lib` as a value of type `T` (a function pointer), copied out.
///
/// # Safety
/// `T` is the exact C signature of the symbol `name`, and the pointer is used only while `lib`
/// stays loaded.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T, String> {
    // SAFETY: forwarded to the caller: `T` matches the symbol's type.
    unsafe { lib.get::<T>(name) }
        .map(|s| *s)
        .map_err(|e| format!("symbol {name}: {e}"))
}

impl HipApi {
    /// Loads the HIP runtime and resolves every entry point, or says why it cannot.
    pub(crate) fn load() -> Result<Self, String> {
        let mut tried = Vec::new();
        let lib = LIBRARY_CANDIDATES
            .iter()
            .find_map(|name| {
                // SAFETY: loading libamdhip64 runs its ELF initializers, which only set up the HIP
                // runtime's own state; the library is the vendor's, not user-supplied code.
                match unsafe { libloading::Library::new(*name) } {
                    Ok(lib) => Some(lib),
                    Err(e) => {
                        // libloading keeps dlerror()'s text, which names the file, in the source.
                        match std::error::Error::source(&e) {
                            Some(cause) => tried.push(cause.to_string()),
                            None => tried.push(format!("{name}: {e}")),
                        }
                        None
                    }
                }
            })
            .ok_or_else(|| format!("cannot load the HIP runtime ({})", tried.join("; ")))?;
        // SAFETY (every `symbol` call below): each field's type is the prototype of that
        // function in ROCm 6+'s hip_runtime_api.h (hipError_t is a C int enum, handles are
        // pointers), and the pointers live in the same struct as `lib`, which keeps it loaded.
        unsafe {
            Ok(Self {
                init: symbol(&lib, "hipInit")?,
                get_device_count: symbol(&lib, "hipGetDeviceCount")?,
                set_device: symbol(&lib, "hipSetDevice")?,
                get_device_properties: symbol(&lib, "hipGetDevicePropertiesR0600")?,
                malloc: symbol(&lib, "hipMalloc")?,
                free: symbol(&lib, "hipFree")?,
                memcpy: symbol(&lib, "hipMemcpy")?,
                module_load_data: symbol(&lib, "hipModuleLoadData")?,
                module_unload: symbol(&lib, "hipModuleUnload")?,
                module_get_function: symbol(&lib, "hipModuleGetFunction")?,
                module_launch_kernel: symbol(&lib, "hipModuleLaunchKernel")?,
                device_synchronize: symbol(&lib, "hipDeviceSynchronize")?,
                get_last_error: symbol(&lib, "hipGetLastError")?,
                get_error_string: symbol(&lib, "hipGetErrorString")?,
                _lib: lib,
            })
        }
    }
}

impl std::fmt::Debug for HipApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HipApi(libamdhip64)")
    }
}
