//! The CUDA runtime: GPU 0, its stream, NVRTC compilation with a kernel
//! cache, and page-locked host memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaFunction, CudaStream, DriverError};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};

use crate::error::{GpuError, Result};
use crate::ptx_cache;

/// Maps a CUDA error to a [`GpuError`] that says what retile was doing.
///
/// ```no_run
/// # use retile_gpu::cuda_error;
/// let e = cuda_error("allocating the tile ring")(cudarc::driver::DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY));
/// assert!(e.to_string().contains("allocating the tile ring"));
/// ```
pub fn cuda_error(doing: &str) -> impl Fn(DriverError) -> GpuError + '_ {
    move |e| GpuError::Cuda {
        doing: doing.to_string(),
        name: format!("{e:?}"),
    }
}

/// A GPU, its stream, and the kernels compiled for it so far.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    arch: &'static str,
    kernels: Mutex<HashMap<String, CudaFunction>>,
}

/// The NVRTC architecture name for a compute capability.
fn arch_name(major: i32, minor: i32) -> Option<&'static str> {
    Some(match (major, minor) {
        (7, 0) => "sm_70",
        (7, 5) => "sm_75",
        (8, 0) => "sm_80",
        (8, 6) => "sm_86",
        (8, 9) => "sm_89",
        (9, 0) => "sm_90",
        (10, 0) => "sm_100",
        (12, 0) => "sm_120",
        _ => return None,
    })
}

impl Gpu {
    /// Opens GPU 0, or says why there is none (no driver library, no NVRTC,
    /// no device).
    ///
    /// ```no_run
    /// match retile_gpu::Gpu::open() {
    ///     Ok(gpu) => println!("{}", gpu.name()),
    ///     Err(e) => println!("no GPU: {e}"),
    /// }
    /// ```
    pub fn open() -> Result<Gpu> {
        // SAFETY: only probes whether the shared libraries can be loaded.
        let (driver, nvrtc) = unsafe {
            (
                cudarc::driver::sys::is_culib_present(),
                cudarc::nvrtc::sys::is_culib_present(),
            )
        };
        if !driver {
            return Err(GpuError::Invalid("no CUDA driver found (libcuda.so could not be loaded): this machine has no usable NVIDIA GPU".into()));
        }
        if !nvrtc {
            return Err(GpuError::Invalid(
                "NVRTC (libnvrtc.so) could not be loaded: install the CUDA toolkit or add its lib64 to LD_LIBRARY_PATH".into(),
            ));
        }
        let count = CudaContext::device_count().map_err(cuda_error("counting CUDA devices"))?;
        if count < 1 {
            return Err(GpuError::Invalid("the CUDA driver reports no GPU".into()));
        }
        let ctx = CudaContext::new(0).map_err(cuda_error("opening GPU 0"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(cuda_error("reading the compute capability"))?;
        let arch = arch_name(major, minor).ok_or_else(|| {
            GpuError::Invalid(format!(
                "compute capability {major}.{minor} is not one retile compiles for"
            ))
        })?;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            arch,
            kernels: Mutex::new(HashMap::new()),
        })
    }

    /// The device's name.
    ///
    /// ```no_run
    /// println!("{}", retile_gpu::Gpu::open()?.name());
    /// # Ok::<(), retile_gpu::GpuError>(())
    /// ```
    pub fn name(&self) -> String {
        self.ctx.name().unwrap_or_else(|_| "unknown GPU".into())
    }

    /// The context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream kernels run on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Streaming multiprocessors on the device.
    pub fn multiprocessors(&self) -> Result<u32> {
        let sms = self
            .ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(cuda_error("reading the multiprocessor count"))?;
        Ok(sms.max(1) as u32)
    }

    /// Compiles `source` (once; later calls reuse it, and later processes
    /// the PTX kept on disk, see `RETILE_KERNEL_CACHE`) and returns kernel `name`.
    ///
    /// ```no_run
    /// let gpu = retile_gpu::Gpu::open()?;
    /// let f = gpu.kernel("noop", "extern \"C\" __global__ void noop() {}")?;
    /// # Ok::<(), retile_gpu::GpuError>(())
    /// ```
    pub fn kernel(&self, name: &str, source: &str) -> Result<CudaFunction> {
        let mut cache = self
            .kernels
            .lock()
            .map_err(|_| GpuError::Invalid("the kernel cache was poisoned".into()))?;
        if let Some(f) = cache.get(source) {
            return Ok(f.clone());
        }
        let ptx = match ptx_cache::load(source, self.arch) {
            Some(ptx) => Ptx::from_src(ptx),
            None => {
                let ptx = compile(source, self.arch).map_err(|e| {
                    GpuError::Invalid(format!("NVRTC could not compile kernel {name}: {e}"))
                })?;
                ptx_cache::store(source, self.arch, &ptx.to_src());
                ptx
            }
        };
        let module = self
            .ctx
            .load_module(ptx)
            .map_err(cuda_error("loading a compiled kernel"))?;
        let f = module
            .load_function(name)
            .map_err(cuda_error("finding a compiled kernel"))?;
        cache.insert(source.to_string(), f.clone());
        Ok(f)
    }
}

/// Compiles `source` with NVRTC for `arch` without a GPU (a check that a
/// generated kernel is valid CUDA).
///
/// ```no_run
/// retile_gpu::compile_only("extern \"C\" __global__ void noop() {}", "sm_90")?;
/// # Ok::<(), retile_gpu::GpuError>(())
/// ```
pub fn compile_only(source: &str, arch: &'static str) -> Result<()> {
    // SAFETY: only probes whether the shared library can be loaded.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(GpuError::Invalid(
            "NVRTC (libnvrtc.so) could not be loaded".into(),
        ));
    }
    compile(source, arch).map_err(|e| GpuError::Invalid(format!("NVRTC: {e}")))?;
    Ok(())
}

/// Compiles `source` to PTX for `arch` (C++17); the error carries NVRTC's
/// log and the source.
fn compile(source: &str, arch: &'static str) -> std::result::Result<Ptx, String> {
    let options = CompileOptions {
        arch: Some(arch),
        options: vec!["-std=c++17".into()],
        ..Default::default()
    };
    compile_ptx_with_opts(source, options).map_err(|e| format!("{e:?}\n{source}"))
}
