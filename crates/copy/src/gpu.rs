//! N-dimensional permutes on a CUDA GPU (feature `cuda`): kernels generated
//! from the permute's shape with every extent and stride baked in, compiled
//! at run time with NVRTC, and the CUDA plumbing the streaming tiler shares.
//!
//! Two kernels cover every permute. When the fastest dimension stays the
//! fastest, rows are copied with the widest vector both sides allow (up to
//! 16 bytes). Otherwise a block stages a square tile through shared memory:
//! it loads along the input's contiguous dimension, packs `P` elements per
//! unit (up to 8 bytes, where the copy planner plans one thread's `P x P`
//! transpose as `P` loads and `P` stores), swizzles unit columns by row so that neither the
//! loads nor the column reads conflict on banks, transposes `P x P` units in
//! registers (the in-thread transpose) and stores along the output's
//! contiguous dimension; tiles shrink to extents smaller than 32 units, and
//! where the output's fastest dimension is shorter than a tile, tile rows
//! run on into the output's next dimension (contiguous after it).
//! Index arithmetic is 32-bit when the tensor fits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};

use crate::permute::row_major_strides;
use crate::{CopyError, Permute, Result, TransposeRequest};

/// Maps a CUDA error to a [`CopyError`] that says what retile was doing.
///
/// ```no_run
/// # use retile_copy::gpu::cuda_error;
/// let e = cuda_error("allocating the tile ring")(cudarc::driver::DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY));
/// assert!(e.to_string().contains("allocating the tile ring"));
/// ```
pub fn cuda_error(doing: &str) -> impl Fn(DriverError) -> CopyError + '_ {
    move |e| CopyError::Cuda {
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
    /// match retile_copy::gpu::Gpu::open() {
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
            return Err(CopyError::Invalid("no CUDA driver found (libcuda.so could not be loaded): this machine has no usable NVIDIA GPU".into()));
        }
        if !nvrtc {
            return Err(CopyError::Invalid(
                "NVRTC (libnvrtc.so) could not be loaded: install the CUDA toolkit or add its lib64 to LD_LIBRARY_PATH".into(),
            ));
        }
        let count = CudaContext::device_count().map_err(cuda_error("counting CUDA devices"))?;
        if count < 1 {
            return Err(CopyError::Invalid("the CUDA driver reports no GPU".into()));
        }
        let ctx = CudaContext::new(0).map_err(cuda_error("opening GPU 0"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(cuda_error("reading the compute capability"))?;
        let arch = arch_name(major, minor).ok_or_else(|| {
            CopyError::Invalid(format!(
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
    /// println!("{}", retile_copy::gpu::Gpu::open()?.name());
    /// # Ok::<(), retile_copy::CopyError>(())
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

    /// Compiles `source` (once; later calls reuse it) and returns kernel `name`.
    ///
    /// ```no_run
    /// let gpu = retile_copy::gpu::Gpu::open()?;
    /// let f = gpu.kernel("noop", "extern \"C\" __global__ void noop() {}")?;
    /// # Ok::<(), retile_copy::CopyError>(())
    /// ```
    pub fn kernel(&self, name: &str, source: &str) -> Result<CudaFunction> {
        let mut cache = self
            .kernels
            .lock()
            .map_err(|_| CopyError::Invalid("the kernel cache was poisoned".into()))?;
        if let Some(f) = cache.get(source) {
            return Ok(f.clone());
        }
        let options = CompileOptions {
            arch: Some(self.arch),
            options: vec!["-std=c++17".into()],
            ..Default::default()
        };
        let ptx = compile_ptx_with_opts(source, options).map_err(|e| {
            CopyError::Invalid(format!(
                "NVRTC could not compile kernel {name}: {e:?}\n{source}"
            ))
        })?;
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

/// The CUDA C type that moves `bytes` bytes in one access (16: `uint4`).
///
/// ```
/// assert_eq!(retile_copy::gpu::c_type(8), "unsigned long long");
/// assert_eq!(retile_copy::gpu::c_type(16), "uint4");
/// ```
pub fn c_type(bytes: usize) -> &'static str {
    match bytes {
        1 => "unsigned char",
        2 => "unsigned short",
        4 => "unsigned int",
        8 => "unsigned long long",
        _ => "uint4",
    }
}

/// Drops size-1 dimensions and merges input dimensions that stay adjacent
/// and in order in the output; returns (input shape, permutation).
fn simplify(p: &Permute) -> (Vec<i64>, Vec<usize>) {
    let kept: Vec<usize> = (0..p.shape.len()).filter(|&d| p.shape[d] > 1).collect();
    if kept.is_empty() {
        return (vec![1], vec![0]);
    }
    let rank_of = |d: usize| kept.iter().position(|&k| k == d).unwrap_or(0);
    let mut runs: Vec<Vec<usize>> = Vec::new();
    for r in p
        .perm
        .iter()
        .filter(|&&d| p.shape[d] > 1)
        .map(|&d| rank_of(d))
    {
        match runs.last_mut() {
            Some(run) if run.last() == Some(&(r.wrapping_sub(1))) => run.push(r),
            _ => runs.push(vec![r]),
        }
    }
    let mut by_input: Vec<usize> = (0..runs.len()).collect();
    by_input.sort_by_key(|&i| runs[i][0]);
    let shape = by_input
        .iter()
        .map(|&i| runs[i].iter().map(|&r| p.shape[kept[r]]).product())
        .collect();
    let perm = (0..runs.len())
        .map(|i| by_input.iter().position(|&j| j == i).unwrap_or(0))
        .collect();
    (shape, perm)
}

/// A generated kernel: its name, CUDA source, and launch shape.
pub struct Kernel {
    /// The `extern "C"` entry point.
    pub name: &'static str,
    /// CUDA C++ source with the permute's constants baked in.
    pub source: String,
    /// Blocks to launch (a grid-stride loop covers the rest).
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
}

/// C code that turns `index` (row-major over `extents`) into an offset with
/// `strides`, accumulated into `target`.
fn decompose(index: &str, extents: &[i64], strides: &[i64], target: &str) -> String {
    let mut code = format!("{{ idx_t rest = {index};\n");
    for (e, s) in extents.iter().zip(strides).rev() {
        code += &format!("  {{ idx_t c = rest % {e}; rest /= {e}; {target} += c * {s}; }}\n");
    }
    code + "}\n"
}

/// The kernel for permute `p` (`sms`: multiprocessors, to size the grid).
///
/// ```
/// let p = retile_copy::Permute::new(&[64, 32], &[1, 0], 4).unwrap();
/// let k = retile_copy::gpu::permute_kernel(&p, 132);
/// assert_eq!(k.name, "retile_transpose");
/// ```
pub fn permute_kernel(p: &Permute, sms: u32) -> Kernel {
    let (shape, perm) = simplify(p);
    let e = p.element_bytes;
    let n = shape.len();
    let total: i64 = shape.iter().product();
    let in_strides = row_major_strides(&shape);
    let out_shape: Vec<i64> = perm.iter().map(|&d| shape[d]).collect();
    let out_strides_by_out = row_major_strides(&out_shape);
    let mut os = vec![0i64; n];
    for (i, &d) in perm.iter().enumerate() {
        os[d] = out_strides_by_out[i];
    }
    if n <= 1 || perm[n - 1] == n - 1 {
        rows_kernel(&shape, &perm, e, &in_strides, total, sms)
    } else {
        transpose_kernel(&shape, &perm, e, &in_strides, &os, header(total, e))
    }
}

/// Type definitions: 32-bit indices when every index the kernel forms
/// (below `limit`, plus a grid step past it) fits.
fn header(limit: i64, element_bytes: usize) -> String {
    let idx = if limit <= i32::MAX as i64 {
        "unsigned int"
    } else {
        "unsigned long long"
    };
    format!(
        "typedef {idx} idx_t;\ntypedef {} elem_t;\n",
        c_type(element_bytes)
    )
}

fn rows_kernel(
    shape: &[i64],
    perm: &[usize],
    e: usize,
    in_strides: &[i64],
    total: i64,
    sms: u32,
) -> Kernel {
    let row = shape.last().copied().unwrap_or(1);
    let unit = [16usize, 8, 4, 2, 1]
        .into_iter()
        .find(|&u| u >= e && (row as usize * e).is_multiple_of(u))
        .unwrap_or(e);
    let units_per_row = row as usize * e / unit;
    let units = total as usize * e / unit;
    let header = header(units as i64, e);
    let outer: Vec<usize> = perm[..perm.len().saturating_sub(1)].to_vec();
    let extents: Vec<i64> = outer.iter().map(|&d| shape[d]).collect();
    let strides: Vec<i64> = outer
        .iter()
        .map(|&d| in_strides[d] * e as i64 / unit as i64)
        .collect();
    let source = format!(
        r#"{header}typedef {vec} vec_t;
extern "C" __global__ void __launch_bounds__(256) retile_rows(const vec_t* __restrict__ in, vec_t* __restrict__ out) {{
  const idx_t step = (idx_t)gridDim.x * blockDim.x;
  for (idx_t base = (idx_t)blockIdx.x * blockDim.x * 4 + threadIdx.x; base < {units}ull; base += step * 4) {{
    vec_t v[4];
    #pragma unroll
    for (int k = 0; k < 4; ++k) {{
      idx_t u = base + (idx_t)k * blockDim.x;
      if (u < {units}ull) {{
        idx_t row = u / {units_per_row}; idx_t col = u - row * {units_per_row};
        idx_t src = col;
        {decomp}        v[k] = __ldg(in + src);
      }}
    }}
    #pragma unroll
    for (int k = 0; k < 4; ++k) {{
      idx_t u = base + (idx_t)k * blockDim.x;
      if (u < {units}ull) out[u] = v[k];
    }}
  }}
}}
"#,
        vec = c_type(unit),
        decomp = decompose("row", &extents, &strides, "src"),
    );
    let blocks = (units.div_ceil(256 * 4) as u64).clamp(1, sms as u64 * 16) as u32;
    Kernel {
        name: "retile_rows",
        source,
        blocks,
        threads: 256,
    }
}

/// Whether units of `p` elements of `e` bytes fit the kernel's 8-byte
/// registers and the copy planner transposes a `p x p` block of them in one
/// thread as `p` loads and `p` stores of one unit (the in-thread transpose).
fn in_registers(p: usize, e: usize) -> bool {
    let bits = 8 * (p * e) as i64;
    bits <= 64 && TransposeRequest::square_in_registers(p as i64, 8 * e as i64, bits)
}

/// The most rows a transpose tile has: 32 units of up to 8 elements.
const MAX_TILE_ROWS: i64 = 32 * 8;

fn transpose_kernel(
    shape: &[i64],
    perm: &[usize],
    e: usize,
    in_strides: &[i64],
    os: &[i64],
    header: String,
) -> Kernel {
    let n = shape.len();
    let (b, a) = (n - 1, perm[n - 1]);
    let nb = shape[b];
    // the output holds the dimension just slower than `a` right after it, so
    // when `a` is too short to fill a tile, tile rows run on into it
    let a2 = perm[..n - 1]
        .last()
        .copied()
        .filter(|&d| d != b && shape[a] < MAX_TILE_ROWS);
    let (na, in_row) = match a2 {
        Some(d) => (
            shape[a] * shape[d],
            format!(
                "((ga) % {n}) * {} + ((ga) / {n}) * {}",
                in_strides[a],
                in_strides[d],
                n = shape[a]
            ),
        ),
        None => (shape[a], format!("(ga) * {}", in_strides[a])),
    };
    // P elements per unit: whole units in both extents, and P x P blocks
    // that the copy planner transposes in one thread's registers
    let p = [8usize, 4, 2]
        .into_iter()
        .find(|&p| na % p as i64 == 0 && nb % p as i64 == 0 && in_registers(p, e))
        .unwrap_or(1);
    // units per tile along a and b: up to 32, fewer when the extent is
    // smaller; along a also few enough that the tile fits in 32 KB of shared
    // memory (UA * P rows of UB units of P * e bytes)
    let units = |n: i64| ((n as u64).div_ceil(p as u64)).next_power_of_two().min(32) as i64;
    let ub = units(nb);
    let fit = (32 * 1024 / (p as i64 * ub * (p * e) as i64)).max(1);
    let ua = units(na).min(1 << (63 - fit.leading_zeros()));
    let (ta_len, tb_len) = (ua * p as i64, ub * p as i64);
    let batch: Vec<usize> = (0..n)
        .filter(|&d| d != a && d != b && Some(d) != a2)
        .collect();
    let bx: Vec<i64> = batch.iter().map(|&d| shape[d]).collect();
    let (tiles_a, tiles_b) = ((na + ta_len - 1) / ta_len, (nb + tb_len - 1) / tb_len);
    let tiles = tiles_a * tiles_b * bx.iter().product::<i64>();
    let source = format!(
        r#"{header}typedef {unit} unit_t;
#define P {p}
#define UA {ua}
#define UB {ub}
#define LOADS ((UA * P * UB + 255) / 256)
// the input offset of tile row `ga`
#define IN_ROW(ga) ({in_row})
// tile `bid`'s position along b and a, and its index over the batch dimensions
#define TILE_COORDS(bid) \
  const idx_t tb = (bid) % {tiles_b}, rest = (bid) / {tiles_b}; \
  const idx_t ta = rest % {tiles_a}, bi = rest / {tiles_a};
union pack_t {{ unit_t u; elem_t e[P]; }};
extern "C" __global__ void __launch_bounds__(256) retile_transpose(const elem_t* __restrict__ in, elem_t* __restrict__ out) {{
  __shared__ unit_t tile[UA * P][UB];
  const int c_load = threadIdx.x % UB, u_store = threadIdx.x % UA;
  for (idx_t bid = blockIdx.x; bid < {tiles}ull; bid += gridDim.x) {{
    TILE_COORDS(bid)
    idx_t in_base = 0, out_base = 0;
    {decomp_in}    {decomp_out}    const idx_t a0 = ta * (UA * P), b0 = tb * (UB * P), gb = b0 + (idx_t)c_load * P;
    // every load of the tile in flight at once, then into shared memory
    unit_t v[LOADS];
    #pragma unroll
    for (int i = 0; i < LOADS; ++i) {{
      const int a = threadIdx.x / UB + i * (256 / UB);
      const idx_t ga = a0 + a;
      v[i] = 0;
      if (a < UA * P && ga < {na}ull && gb < {nb}ull) v[i] = __ldg((const unit_t*)(in + in_base + IN_ROW(ga) + gb));
    }}
    #pragma unroll
    for (int i = 0; i < LOADS; ++i) {{
      const int a = threadIdx.x / UB + i * (256 / UB);
      if (a < UA * P) tile[a][c_load ^ ((a / P) % UB)] = v[i];
    }}
    __syncthreads();
    #pragma unroll
    for (int c = threadIdx.x / UA; c < UB; c += 256 / UA) {{
      const int u = u_store;
      pack_t r[P];
      #pragma unroll
      for (int k = 0; k < P; ++k) r[k].u = tile[u * P + k][c ^ (u % UB)];
      #pragma unroll
      for (int j = 0; j < P; ++j) {{
        pack_t o;
        #pragma unroll
        for (int k = 0; k < P; ++k) o.e[k] = r[k].e[j];
        idx_t gb = b0 + (idx_t)c * P + j, ga = a0 + (idx_t)u * P;
        if (gb < {nb}ull && ga < {na}ull) *(unit_t*)(out + out_base + gb * {tb_stride} + ga) = o.u;
      }}
    }}
    __syncthreads();
  }}
}}
"#,
        unit = c_type(p * e),
        tb_stride = os[b],
        decomp_in = decompose(
            "bi",
            &bx,
            &batch.iter().map(|&d| in_strides[d]).collect::<Vec<_>>(),
            "in_base"
        ),
        decomp_out = decompose(
            "bi",
            &bx,
            &batch.iter().map(|&d| os[d]).collect::<Vec<_>>(),
            "out_base"
        ),
    );
    // one block per tile: more blocks than the GPU holds at once balance
    // best (the last wave is short); the grid-stride loop covers grids
    // beyond CUDA's limit
    let blocks = (tiles as u64).clamp(1, i32::MAX as u64) as u32;
    Kernel {
        name: "retile_transpose",
        source,
        blocks,
        threads: 256,
    }
}

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

/// Median seconds of `work` over `reps` runs after two warm-up runs, timed
/// with CUDA events on `gpu`'s stream.
pub fn time_median(gpu: &Gpu, reps: usize, mut work: impl FnMut() -> Result<()>) -> Result<f64> {
    let stream = gpu.stream();
    for _ in 0..2 {
        work()?;
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = stream
            .record_event(timing)
            .map_err(cuda_error("recording a timing event"))?;
        work()?;
        let end = stream
            .record_event(timing)
            .map_err(cuda_error("recording a timing event"))?;
        end.synchronize()
            .map_err(cuda_error("waiting for a timed run"))?;
        times.push(
            start
                .elapsed_ms(&end)
                .map_err(cuda_error("reading a timing event"))? as f64
                / 1e3,
        );
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// GB/s (bytes read plus bytes written) of permute `p` and of a plain
/// device-to-device copy of the same bytes, measured in the same call.
///
/// ```no_run
/// let gpu = retile_copy::gpu::Gpu::open()?;
/// let p = retile_copy::Permute::new(&[16384, 16384], &[1, 0], 4)?;
/// let (permute, copy) = retile_copy::gpu::bench_permute(&gpu, &p, 20)?;
/// println!("{permute:.0} GB/s, {:.0}% of copy", 100.0 * permute / copy);
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
pub fn bench_permute(gpu: &Gpu, p: &Permute, reps: usize) -> Result<(f64, f64)> {
    let bytes = p.elements() as usize * p.element_bytes;
    let stream = gpu.stream();
    let input = stream
        .alloc_zeros::<u8>(bytes)
        .map_err(cuda_error("allocating the permute's input"))?;
    let mut output = stream
        .alloc_zeros::<u8>(bytes)
        .map_err(cuda_error("allocating the permute's output"))?;
    let kernel = CompiledPermute::new(gpu, p)?;
    let t_permute = time_median(gpu, reps, || kernel.launch(&input, &mut output))?;
    let t_copy = time_median(gpu, reps, || {
        stream
            .memcpy_dtod(&input, &mut output)
            .map_err(cuda_error("copying device to device"))
    })?;
    let gbs = |t: f64| 2.0 * bytes as f64 / t / 1e9;
    Ok((gbs(t_permute), gbs(t_copy)))
}

/// Compiles `source` with NVRTC for `arch` without a GPU (a check that a
/// generated kernel is valid CUDA).
///
/// ```no_run
/// let k = retile_copy::gpu::permute_kernel(&retile_copy::Permute::new(&[8, 8], &[1, 0], 2)?, 1);
/// retile_copy::gpu::compile_only(&k.source, "sm_90")?;
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
pub fn compile_only(source: &str, arch: &'static str) -> Result<()> {
    // SAFETY: only probes whether the shared library can be loaded.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(CopyError::Invalid(
            "NVRTC (libnvrtc.so) could not be loaded".into(),
        ));
    }
    let options = CompileOptions {
        arch: Some(arch),
        options: vec!["-std=c++17".into()],
        ..Default::default()
    };
    compile_ptx_with_opts(source, options)
        .map_err(|e| CopyError::Invalid(format!("NVRTC: {e:?}\n{source}")))?;
    Ok(())
}
