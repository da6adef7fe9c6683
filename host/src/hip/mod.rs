//! AMD GPUs through the HIP runtime, loaded at run time: safe device, buffer, module and function
//! types over `result` (checked calls) over `sys` (the C function table).
//!
//! | type          | owns                                   | released by          |
//! |---------------|----------------------------------------|----------------------|
//! | [`HipDevice`] | the choice of a GPU and its gfx name    | nothing (a handle)   |
//! | [`HipBuffer`] | one `hipMalloc` allocation              | `hipFree` on drop    |
//! | [`HipModule`] | one loaded code object                  | `hipModuleUnload` on drop |
//! | [`HipFunction`] | one entry point (keeps its module alive) | its module       |
//!
//! Without `libamdhip64.so` every constructor returns
//! [`Error::BackendUnavailable`] with `backend: "hip"`.
//!
//! AMD entry points take two extra leading `u32` parameters, `block_dim` and `grid_dim` (the
//! launch geometry, which the AMD backend reads from its arguments); [`HipDevice::launch`] adds
//! them, so callers pass only the kernel's own parameters.

pub(crate) mod result;
pub(crate) mod sys;

use crate::embedded::{self, AmdArch};
use crate::error::{Error, Result};
use crate::launch::{Buf, Launch, Param};
use crate::registry::{KernelModule, Registry};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use sys::{HipApi, HipFunctionT, HipModuleT};
use zipcoll_primitives::manifest::Vendor;

/// `hipErrorNotFound`: what `hipModuleGetFunction` returns for a symbol the module lacks.
const HIP_ERROR_NOT_FOUND: sys::HipErrorT = 500;

/// One AMD GPU, selected by ordinal. Every operation first makes it the calling thread's
/// current device.
pub struct HipDevice {
    api: &'static HipApi,
    ordinal: c_int,
    arch: String,
}

impl std::fmt::Debug for HipDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HipDevice")
            .field("ordinal", &self.ordinal)
            .field("arch", &self.arch)
            .finish()
    }
}

/// Whether the HIP runtime loads and reports at least one device.
pub fn is_available() -> bool {
    device_count().is_ok_and(|n| n > 0)
}

/// The number of AMD GPUs the HIP runtime sees.
pub fn device_count() -> Result<usize> {
    let api = result::api()?;
    init(api)?;
    result::device_count(api)
}

/// `hipInit`, with a failure reported as the backend being unavailable (no device, no driver).
fn init(api: &HipApi) -> Result<()> {
    result::init(api).map_err(|e| Error::BackendUnavailable {
        backend: "hip",
        reason: e.to_string(),
    })
}

impl HipDevice {
    /// Opens GPU `ordinal`: loads and initialises the runtime, checks the ordinal and reads the
    /// device's gfx name.
    pub fn open(ordinal: usize) -> Result<Self> {
        let api = result::api()?;
        init(api)?;
        let count = result::device_count(api)?;
        if count == 0 {
            return Err(Error::BackendUnavailable {
                backend: "hip",
                reason: "the HIP runtime sees no devices".into(),
            });
        }
        if ordinal >= count {
            return Err(Error::InvalidArgument(format!(
                "HIP device {ordinal} does not exist ({count} devices)"
            )));
        }
        let ordinal = c_int::try_from(ordinal)
            .map_err(|_| Error::InvalidArgument(format!("HIP device ordinal {ordinal} is out of range")))?;
        result::set_device(api, ordinal)?;
        let arch = result::arch_name(api, ordinal)?;
        Ok(Self { api, ordinal, arch })
    }

    /// The device's gfx target name, e.g. `gfx942`.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Makes this device the calling thread's current one.
    fn bind(&self) -> Result<()> {
        result::set_device(self.api, self.ordinal)
    }

    /// A device buffer holding a copy of `data`.
    pub fn upload(&self, data: &[u8]) -> Result<HipBuffer<'_>> {
        let buf = self.alloc(data.len())?;
        // SAFETY: `buf` is a live allocation of `data.len()` bytes (or of 1 byte, when empty).
        unsafe { result::memcpy_htod(self.api, buf.ptr, data) }?;
        Ok(buf)
    }

    /// An uninitialised device buffer of `bytes` bytes (at least one byte is allocated).
    pub fn alloc(&self, bytes: usize) -> Result<HipBuffer<'_>> {
        self.bind()?;
        let ptr = result::malloc(self.api, bytes.max(1))?;
        Ok(HipBuffer {
            device: self,
            ptr,
            bytes,
        })
    }

    /// Loads `image` (an AMD code object) onto this device.
    pub fn load_module(&self, image: &[u8]) -> Result<HipModule> {
        self.bind()?;
        // SAFETY: `image` is a readable byte slice; the runtime validates the ELF and rejects a
        // code object for another target with an error.
        let raw = unsafe { result::module_load_data(self.api, image) }?;
        Ok(HipModule { api: self.api, raw })
    }

    /// Launches `f` on `grid_dim` blocks of `block_dim` threads with `args` after the two
    /// leading geometry parameters, then waits for it and reports any launch or kernel error.
    ///
    /// # Safety
    /// `args` are, in order and exact type, the parameters of the kernel `f` after its leading
    /// `block_dim: u32, grid_dim: u32`, and the kernel accesses only memory of the buffers it
    /// is given, within their sizes, for this geometry.
    pub unsafe fn launch(
        &self,
        f: &HipFunction,
        grid_dim: u32,
        block_dim: u32,
        shared_bytes: u32,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        self.bind()?;
        // One 8-byte slot per parameter. The runtime copies each parameter's own size from its
        // slot, so a `u32` sits in the low bytes (this host is little-endian, as are the GPUs).
        let mut values: Vec<u64> = Vec::with_capacity(args.len() + 2);
        values.extend([u64::from(block_dim), u64::from(grid_dim)]);
        for a in args {
            values.push(match a {
                KernelArg::Buffer(b) => {
                    if !std::ptr::eq(b.device, self) {
                        return Err(Error::InvalidArgument(
                            "a kernel argument lives on another HIP device".into(),
                        ));
                    }
                    b.ptr as u64
                }
                KernelArg::U32(x) => u64::from(*x),
                KernelArg::U64(x) => *x,
            });
        }
        let mut params: Vec<*mut c_void> = values.iter_mut().map(|v| (v as *mut u64).cast()).collect();
        // SAFETY: `f` is alive (it holds its module); `params` has one pointer per parameter:
        // the two geometry `u32`s the AMD ABI puts first, then the caller's arguments, whose
        // types the caller guarantees; each pointer targets an 8-byte slot that holds the value
        // in its low bytes (little-endian), alive during the call. Buffers outlive the launch:
        // they are borrowed by `args` and `synchronize` below waits for the kernel.
        unsafe { result::launch(self.api, f.raw, grid_dim, block_dim, shared_bytes, &mut params) }?;
        result::synchronize(self.api)
    }
}

/// A device allocation, freed on drop.
#[derive(Debug)]
pub struct HipBuffer<'d> {
    device: &'d HipDevice,
    ptr: *mut c_void,
    bytes: usize,
}

impl HipBuffer<'_> {
    /// The buffer's contents.
    pub fn download(&self) -> Result<Vec<u8>> {
        self.device.bind()?;
        let mut out = vec![0u8; self.bytes];
        // SAFETY: `ptr` is a live allocation of at least `bytes` bytes.
        unsafe { result::memcpy_dtoh(self.device.api, &mut out, self.ptr) }?;
        Ok(out)
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
}

impl Drop for HipBuffer<'_> {
    fn drop(&mut self) {
        // An error here (a device lost after a kernel fault) has already been reported by the
        // launch or copy that met it; freeing is best effort.
        if self.device.bind().is_ok() {
            // SAFETY: `ptr` came from hipMalloc, is freed only here, and every launch that used
            // it was synchronized before returning.
            let _ = unsafe { result::free(self.device.api, self.ptr) };
        }
    }
}

/// One kernel argument after the AMD geometry parameters.
#[derive(Clone, Copy, Debug)]
pub enum KernelArg<'a> {
    /// A device pointer to the buffer's first byte.
    Buffer(&'a HipBuffer<'a>),
    /// A 32-bit integer.
    U32(u32),
    /// A 64-bit integer (also `usize` on the 64-bit GPU targets).
    U64(u64),
}

/// A loaded code object, unloaded on drop.
#[derive(Debug)]
pub struct HipModule {
    api: &'static HipApi,
    raw: HipModuleT,
}

// SAFETY: a hipModule_t is a process-wide handle; the HIP runtime is thread-safe and this type
// only passes the handle to it (never dereferences it).
unsafe impl Send for HipModule {}
// SAFETY: as for Send: shared use only reads the handle.
unsafe impl Sync for HipModule {}

impl Drop for HipModule {
    fn drop(&mut self) {
        // SAFETY: `raw` came from hipModuleLoadData and is unloaded only here; every
        // `HipFunction` holds an `Arc` of its module, so none outlives it.
        let _ = unsafe { result::module_unload(self.api, self.raw) };
    }
}

/// One entry point of a loaded module.
#[derive(Clone, Debug)]
pub struct HipFunction {
    raw: HipFunctionT,
    _module: Arc<HipModule>,
}

// SAFETY: a hipFunction_t is a process-wide handle into its module, which `_module` keeps
// loaded; the runtime is thread-safe.
unsafe impl Send for HipFunction {}
// SAFETY: as for Send.
unsafe impl Sync for HipFunction {}

impl KernelModule for Arc<HipModule> {
    type Function = HipFunction;
    const VENDOR: Vendor = Vendor::Amdgpu;

    fn load_function(&self, symbol: &'static str) -> Result<Option<HipFunction>> {
        // SAFETY: `self.raw` is live for as long as `self` (an Arc of the module) is.
        match unsafe { result::module_get_function(self.api, self.raw, symbol) } {
            Ok(raw) => Ok(Some(HipFunction {
                raw,
                _module: Arc::clone(self),
            })),
            Err(Error::Hip {
                code: HIP_ERROR_NOT_FOUND,
                ..
            }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The code object for a device's gfx name, if zipcoll builds for it.
pub fn amd_arch(gfx: &str) -> Result<AmdArch> {
    match gfx {
        "gfx942" => Ok(AmdArch::Gfx942),
        "gfx950" => Ok(AmdArch::Gfx950),
        other => Err(Error::BackendUnavailable {
            backend: "hip",
            reason: format!("{other} is not a target zipcoll builds for (gfx942, gfx950)"),
        }),
    }
}

/// One AMD GPU with zipcoll's code object loaded.
#[derive(Debug)]
pub struct HipGpu {
    device: HipDevice,
    arch: AmdArch,
    registry: Registry<Arc<HipModule>>,
}

impl HipGpu {
    /// The device `ordinal`, opened and its code object loaded on first use, then shared.
    pub fn get(ordinal: usize) -> Result<Arc<Self>> {
        static GPUS: OnceLock<Mutex<HashMap<usize, Arc<HipGpu>>>> = OnceLock::new();
        let mut gpus = GPUS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(g) = gpus.get(&ordinal) {
            return Ok(Arc::clone(g));
        }
        let device = HipDevice::open(ordinal)?;
        let arch = amd_arch(device.arch())?;
        let image = embedded::amd_code_object(arch).ok_or_else(Error::kernels_not_built)?;
        let module = Arc::new(device.load_module(image)?);
        let g = Arc::new(Self {
            device,
            arch,
            registry: Registry::new(module),
        });
        gpus.insert(ordinal, Arc::clone(&g));
        Ok(g)
    }

    /// The code object picked for this device.
    pub fn arch(&self) -> AmdArch {
        self.arch
    }

    /// The loaded module's entry points.
    pub fn registry(&self) -> &Registry<Arc<HipModule>> {
        &self.registry
    }

    /// Uploads the launch's input buffers, allocates its zeroed output buffers, runs `f` (with
    /// the AMD geometry parameters in front), waits for it and returns the output buffers'
    /// contents, in order.
    ///
    /// # Safety
    /// `launch.params` are, in order and exact type, the parameters of kernel `f` after its
    /// geometry parameters, and with this geometry the kernel accesses only the buffers it is
    /// given, within their sizes.
    pub(crate) unsafe fn run(&self, f: &HipFunction, launch: &Launch<'_>) -> Result<Vec<Vec<u8>>> {
        let mut bufs = Vec::with_capacity(launch.bufs.len());
        for b in launch.bufs {
            bufs.push(match b {
                Buf::In(data) => self.device.upload(data)?,
                Buf::Out(len) => self.device.upload(&vec![0u8; *len])?,
            });
        }
        let mut args = Vec::with_capacity(launch.params.len());
        for p in launch.params {
            args.push(match p {
                Param::Buf(i) => KernelArg::Buffer(bufs.get(*i).ok_or_else(|| {
                    Error::InvalidArgument(format!("kernel parameter names buffer {i} of {}", launch.bufs.len()))
                })?),
                Param::U32(x) => KernelArg::U32(*x),
                Param::U64(x) => KernelArg::U64(*x),
            });
        }
        // SAFETY: forwarded to the caller (parameter types and bounds); the buffers live in
        // `bufs` until after `launch` has synchronized.
        unsafe {
            self.device
                .launch(f, launch.grid_dim, launch.block_dim, launch.shared_bytes, &args)
        }?;
        let mut out = Vec::new();
        for (b, buf) in launch.bufs.iter().zip(&bufs) {
            if let Buf::Out(_) = b {
                out.push(buf.download()?);
            }
        }
        Ok(out)
    }
}
