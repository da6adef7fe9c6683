//! NVIDIA GPUs through the CUDA driver API ([`cudarc`], loaded at run time): one context and one
//! loaded PTX module per device, and checked launches.
//!
//! | step                 | call                                        | failure                        |
//! |----------------------|---------------------------------------------|--------------------------------|
//! | driver present?      | `cudarc::driver::sys::is_culib_present`     | [`Error::BackendUnavailable`]  |
//! | open device          | `CudaContext::new(ordinal)`                 | [`Error::Cuda`]                |
//! | pick PTX             | compute capability: >= 9.0 `Sm90`, >= 8.0 `Sm80` | [`Error::BackendUnavailable`] |
//! | load module          | `cuModuleLoadData` (once per device)        | [`Error::Cuda`], [`Error::KernelsNotBuilt`] |
//! | launch               | `cuLaunchKernel`, `cuStreamSynchronize`, the context's recorded errors | [`Error::Cuda`] |
//!
//! The driver library is probed before any other cudarc call, because cudarc panics when it
//! must load a library that is not there.

use crate::embedded::{self, NvArch};
use crate::error::{Error, Result};
use crate::launch::{Buf, Launch, Param};
use crate::registry::{KernelModule, Registry};
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError, PushKernelArg};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use zipcoll_primitives::manifest::Vendor;

/// [`Error::Cuda`] for a failed `call`, with the driver's error name and text.
pub(crate) fn cuda_error(call: &'static str) -> impl FnOnce(DriverError) -> Error {
    move |e| {
        let name = e
            .error_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{:?}", e.0));
        let text = e
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Error::Cuda {
            call,
            message: format!("{name}: {text}"),
        }
    }
}

/// Whether the CUDA driver library (`libcuda.so`) can be loaded.
fn driver_present() -> bool {
    // SAFETY: is_culib_present only tries to dlopen the driver library by name (running its
    // vendor initializers) and closes it again; it reads no caller state.
    unsafe { sys::is_culib_present() }
}

/// The number of CUDA devices, or why CUDA cannot be used.
pub fn device_count() -> Result<usize> {
    if !driver_present() {
        return Err(Error::BackendUnavailable {
            backend: "cuda",
            reason: "the CUDA driver library is not installed".into(),
        });
    }
    // cuInit fails without a device or with a driver too old for the library: either way CUDA
    // cannot be used.
    let n = CudaContext::device_count().map_err(|e| Error::BackendUnavailable {
        backend: "cuda",
        reason: cuda_error("cuInit/cuDeviceGetCount")(e).to_string(),
    })?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// The device of the CUDA context current on the calling thread (the caller's `cudaSetDevice`
/// or any runtime call makes its device's primary context current), or `None` when no context
/// is current: the GPU NCCL gives a new communicator.
pub fn current_device() -> Result<Option<usize>> {
    device_count()?;
    if cudarc::driver::result::ctx::get_current()
        .map_err(cuda_error("cuCtxGetCurrent"))?
        .is_none()
    {
        return Ok(None);
    }
    let mut dev: sys::CUdevice = 0;
    // SAFETY: the driver is initialized (device_count) and a context is current; cuCtxGetDevice
    // writes that context's device into `dev`, a live local.
    unsafe { sys::cuCtxGetDevice(&mut dev) }
        .result()
        .map_err(cuda_error("cuCtxGetDevice"))?;
    Ok(usize::try_from(dev).ok())
}

/// Whether the CUDA driver loads and reports at least one device.
pub fn is_available() -> bool {
    device_count().is_ok_and(|n| n > 0)
}

/// The PTX architecture for compute capability `major.minor`.
pub fn nv_arch(major: i32, minor: i32) -> Result<NvArch> {
    match major {
        9.. => Ok(NvArch::Sm90),
        8 => Ok(NvArch::Sm80),
        _ => Err(Error::BackendUnavailable {
            backend: "cuda",
            reason: format!("compute capability {major}.{minor} is below 8.0, the oldest zipcoll builds for"),
        }),
    }
}

impl KernelModule for Arc<CudaModule> {
    type Function = CudaFunction;
    const VENDOR: Vendor = Vendor::Nvptx;

    fn load_function(&self, symbol: &'static str) -> Result<Option<CudaFunction>> {
        if symbol.contains('\0') {
            return Ok(None);
        }
        match CudaModule::load_function(self, symbol) {
            Ok(f) => Ok(Some(f)),
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND)) => Ok(None),
            Err(e) => Err(cuda_error("cuModuleGetFunction")(e)),
        }
    }
}

/// The module to load for `arch`: the file `ZIPCOLL_CUDA_MODULE` names when it is set (a
/// `.cubin` compiled ahead of time from this build's PTX, e.g. with `ptxas --split-compile`,
/// which spares every process the driver's JIT of the whole module; any other file is read as
/// PTX), else the embedded cubin (`ZIPCOLL_GPU_CUBIN=1` at build time), else the embedded PTX.
fn module_image(arch: NvArch) -> Result<Ptx> {
    if let Some(path) = std::env::var_os(MODULE_ENV) {
        let path = std::path::PathBuf::from(path);
        let bytes = std::fs::read(&path).map_err(|source| Error::Io {
            what: format!("reading {MODULE_ENV}={}", path.display()),
            source,
        })?;
        if path.extension().is_some_and(|e| e == "cubin") {
            return Ok(Ptx::from_binary(bytes));
        }
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::InvalidArgument(format!(
                "{MODULE_ENV}={} is neither a .cubin nor PTX text",
                path.display()
            ))
        })?;
        return ptx_source(&text);
    }
    if let Some(cubin) = embedded::cubin(arch) {
        return Ok(Ptx::from_binary(cubin.to_vec()));
    }
    ptx_source(embedded::ptx(arch).ok_or_else(Error::kernels_not_built)?)
}

/// PTX text as a module image (no NUL bytes: the driver reads it as a C string).
fn ptx_source(ptx: &str) -> Result<Ptx> {
    if ptx.contains('\0') {
        return Err(Error::InvalidArgument("the PTX contains a NUL byte".into()));
    }
    Ok(Ptx::from_src(ptx))
}

/// The environment variable naming a module file to load instead of the embedded PTX.
pub const MODULE_ENV: &str = "ZIPCOLL_CUDA_MODULE";

/// One CUDA device with zipcoll's PTX module loaded.
pub struct CudaGpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    arch: NvArch,
    registry: Registry<Arc<CudaModule>>,
}

impl std::fmt::Debug for CudaGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaGpu")
            .field("ordinal", &self.ctx.ordinal())
            .field("arch", &self.arch)
            .finish()
    }
}

impl CudaGpu {
    /// The device `ordinal`, opened and its module loaded on first use, then shared.
    pub fn get(ordinal: usize) -> Result<Arc<Self>> {
        static DEVICES: OnceLock<Mutex<HashMap<usize, Arc<CudaGpu>>>> = OnceLock::new();
        let mut devices = DEVICES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(d) = devices.get(&ordinal) {
            return Ok(Arc::clone(d));
        }
        let d = Arc::new(Self::open(ordinal)?);
        devices.insert(ordinal, Arc::clone(&d));
        Ok(d)
    }

    fn open(ordinal: usize) -> Result<Self> {
        let count = device_count()?;
        if count == 0 {
            return Err(Error::BackendUnavailable {
                backend: "cuda",
                reason: "the CUDA driver sees no devices".into(),
            });
        }
        if ordinal >= count {
            return Err(Error::InvalidArgument(format!(
                "CUDA device {ordinal} does not exist ({count} devices)"
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(cuda_error("cuCtxRetain (CudaContext::new)"))?;
        let (major, minor) = ctx.compute_capability().map_err(cuda_error("cuDeviceGetAttribute"))?;
        let arch = nv_arch(major, minor)?;
        let module = ctx
            .load_module(module_image(arch)?)
            .map_err(cuda_error("cuModuleLoadData"))?;
        let stream = ctx.default_stream();
        Ok(Self {
            ctx,
            stream,
            arch,
            registry: Registry::new(module),
        })
    }

    /// The PTX architecture picked for this device.
    pub fn arch(&self) -> NvArch {
        self.arch
    }

    /// The loaded module's entry points.
    pub fn registry(&self) -> &Registry<Arc<CudaModule>> {
        &self.registry
    }

    /// The device's context (for allocations and events outside this crate, e.g. benchmarks).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every launch of this crate on the device runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Waits for the stream and reports any error it or a kernel met.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(cuda_error("cuStreamSynchronize"))?;
        self.ctx.check_err().map_err(cuda_error("kernel execution"))
    }

    /// Uploads the launch's input buffers, allocates its zeroed output buffers, runs `f`, waits
    /// for it and returns the output buffers' contents, in order.
    ///
    /// # Safety
    /// `launch.params` are, in order and exact type, the parameters of kernel `f`, and with this
    /// geometry the kernel accesses only the buffers it is given, within their sizes.
    pub(crate) unsafe fn run(&self, f: &CudaFunction, launch: &Launch<'_>) -> Result<Vec<Vec<u8>>> {
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let mut slices: Vec<CudaSlice<u8>> = Vec::with_capacity(launch.bufs.len());
        for b in launch.bufs {
            slices.push(match b {
                Buf::In(data) => self.stream.clone_htod(*data).map_err(cuda_error("cuMemcpyHtoD"))?,
                Buf::Out(len) => self.stream.alloc_zeros::<u8>(*len).map_err(cuda_error("cuMemAlloc"))?,
            });
        }
        let scalars: Vec<(u32, u64)> = launch
            .params
            .iter()
            .map(|p| match p {
                Param::U32(x) => (*x, 0),
                Param::U64(x) => (0, *x),
                Param::Buf(_) => (0, 0),
            })
            .collect();
        let mut builder = self.stream.launch_builder(f);
        for (p, (x32, x64)) in launch.params.iter().zip(&scalars) {
            match p {
                Param::Buf(i) => {
                    let s = slices.get(*i).ok_or_else(|| {
                        Error::InvalidArgument(format!("kernel parameter names buffer {i} of {}", launch.bufs.len()))
                    })?;
                    builder.arg(s)
                }
                Param::U32(_) => builder.arg(x32),
                Param::U64(_) => builder.arg(x64),
            };
        }
        let cfg = cudarc::driver::LaunchConfig {
            grid_dim: (launch.grid_dim, 1, 1),
            block_dim: (launch.block_dim, 1, 1),
            shared_mem_bytes: launch.shared_bytes,
        };
        // SAFETY: the caller guarantees the parameter list matches `f` and that the kernel stays
        // within the buffers; every buffer is a live `CudaSlice` kept until after the
        // synchronize below, and each scalar lives in `scalars` until the launch returns.
        unsafe { builder.launch(cfg) }.map_err(cuda_error("cuLaunchKernel"))?;
        self.stream.synchronize().map_err(cuda_error("cuStreamSynchronize"))?;
        self.ctx.check_err().map_err(cuda_error("kernel execution"))?;
        let mut out = Vec::new();
        for (b, s) in launch.bufs.iter().zip(&slices) {
            if let Buf::Out(_) = b {
                out.push(self.stream.clone_dtoh(s).map_err(cuda_error("cuMemcpyDtoH"))?);
            }
        }
        Ok(out)
    }
}
