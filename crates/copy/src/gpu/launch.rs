//! Running a permute on the GPU: compiled once, launched as often as needed.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::kernels::permute_kernel;
use retile_gpu::{cuda_error, Gpu};

use crate::error::{CopyError, Result};
use crate::permute::Permute;

/// A permute compiled for one GPU, launched on that GPU's stream as often
/// as needed: the kernel is generated, compiled and looked up once, so a
/// launch costs only the launch.
///
/// ```no_run
/// use retile_copy::{gpu::{CompiledPermute, Gpu}, Permute};
/// let gpu = Gpu::open()?;
/// let p = Permute::new(&[1024, 512], &[1, 0], 4)?;
/// let kernel = CompiledPermute::new(&gpu, &p)?;
/// let input = gpu.stream().memcpy_stod(&vec![0u8; 1024 * 512 * 4]).unwrap();
/// let mut output = gpu.stream().alloc_zeros::<u8>(1024 * 512 * 4).unwrap();
/// for _ in 0..3 {
///     kernel.launch(&input, &mut output)?;
/// }
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
pub struct CompiledPermute {
    stream: Arc<CudaStream>,
    function: CudaFunction,
    config: LaunchConfig,
    bytes: usize,
}

impl CompiledPermute {
    /// Generates and compiles the kernel of permute `p` for `gpu`.
    ///
    /// The example does not run without a GPU (it is compiled, not run, here).
    ///
    /// ```no_run
    /// use retile_copy::{gpu::{CompiledPermute, Gpu}, Permute};
    /// let gpu = Gpu::open()?;
    /// let p = Permute::new(&[64, 32], &[1, 0], 4)?;
    /// let kernel = CompiledPermute::new(&gpu, &p)?;
    /// let input = gpu.stream().alloc_zeros::<u8>(64 * 32 * 4).unwrap();
    /// let mut output = gpu.stream().alloc_zeros::<u8>(64 * 32 * 4).unwrap();
    /// assert!(kernel.launch(&input, &mut output).is_ok());
    /// # Ok::<(), retile_copy::CopyError>(())
    /// ```
    pub fn new(gpu: &Gpu, p: &Permute) -> Result<CompiledPermute> {
        let kernel = permute_kernel(p, gpu.multiprocessors()?);
        Ok(CompiledPermute {
            stream: gpu.stream().clone(),
            function: gpu.kernel(kernel.name, &kernel.source)?,
            config: LaunchConfig {
                grid_dim: (kernel.blocks, 1, 1),
                block_dim: (kernel.threads, 1, 1),
                shared_mem_bytes: 0,
            },
            bytes: p.elements() as usize * p.element_bytes,
        })
    }

    /// Runs the permute from `input` to `output` (each at least the
    /// permute's bytes), asynchronously on its GPU's stream.
    ///
    /// The example does not run without a GPU (it is compiled, not run, here).
    ///
    /// ```no_run
    /// use retile_copy::{gpu::{CompiledPermute, Gpu}, Permute};
    /// let gpu = Gpu::open()?;
    /// let kernel = CompiledPermute::new(&gpu, &Permute::new(&[64, 32], &[1, 0], 4)?)?;
    /// let input = gpu.stream().memcpy_stod(&vec![1u8; 64 * 32 * 4]).unwrap();
    /// let mut output = gpu.stream().alloc_zeros::<u8>(64 * 32 * 4).unwrap();
    /// kernel.launch(&input, &mut output)?;
    /// assert!(gpu.stream().memcpy_dtov(&output).unwrap().iter().all(|&b| b == 1));
    /// // a buffer smaller than the permute's 8192 bytes is refused
    /// let mut small = gpu.stream().alloc_zeros::<u8>(16).unwrap();
    /// let err = kernel.launch(&input, &mut small).unwrap_err();
    /// assert!(err.to_string().contains("moves 8192 bytes"), "{err}");
    /// # Ok::<(), retile_copy::CopyError>(())
    /// ```
    pub fn launch(&self, input: &CudaSlice<u8>, output: &mut CudaSlice<u8>) -> Result<()> {
        if input.len() < self.bytes || output.len() < self.bytes {
            return Err(CopyError::Invalid(format!(
                "the permute moves {} bytes; input has {}, output {}",
                self.bytes,
                input.len(),
                output.len()
            )));
        }
        let mut launch = self.stream.launch_builder(&self.function);
        launch.arg(input).arg(output);
        // SAFETY: the kernel reads `bytes` bytes of `input` and writes `bytes`
        // bytes of `output`, both checked above; its arguments match its signature.
        unsafe { launch.launch(self.config) }
            .map_err(cuda_error("launching the permute kernel"))?;
        Ok(())
    }
}

/// Runs permute `p` from `input` to `output` (both `p.elements()` elements
/// of `p.element_bytes` bytes, on `gpu`), asynchronously on its stream; for
/// repeated permutes, [`CompiledPermute`] skips the kernel lookup.
///
/// ```no_run
/// use retile_copy::{gpu::{permute, Gpu}, Permute};
/// let gpu = Gpu::open()?;
/// let p = Permute::new(&[1024, 512], &[1, 0], 4)?;
/// let input = gpu.stream().memcpy_stod(&vec![0u8; 1024 * 512 * 4]).unwrap();
/// let mut output = gpu.stream().alloc_zeros::<u8>(1024 * 512 * 4).unwrap();
/// permute(&gpu, &p, &input, &mut output)?;
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
pub fn permute(
    gpu: &Gpu,
    p: &Permute,
    input: &CudaSlice<u8>,
    output: &mut CudaSlice<u8>,
) -> Result<()> {
    CompiledPermute::new(gpu, p)?.launch(input, output)
}
