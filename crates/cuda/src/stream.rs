//! The CUDA tiler: the tile ring lives on the GPU.
//!
//! Each epoch's input goes host → device on one stream, a generated scatter
//! kernel cuts it into padded tiles on a second, and the tiles go device →
//! host on a third, ordered by events, so that the next epoch arrives while
//! the last one leaves. Large appends from pinned memory are copied
//! straight from the caller's buffer by DMA; the rest are copied by every
//! core into a small ring of pinned parts, each going up as it fills
//! ([`crate::staging`]). Device memory holds two epochs of input and two of
//! tiles, host memory three epochs of tiles (or of compressed chunks),
//! whatever the stream's length.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{
    result as cu, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig,
    PushKernelArg,
};
use retile_gpu::{c_type, Gpu, PinnedBuffer, PinnedMaker};
use retile_halving::Method;
use retile_plan::{
    plan_stream, CodecOn, EncodedChunks, Sink, StreamError, StreamPlan, StreamSpec, Summary,
};
use retile_tiler::{Filler, StreamState};

use crate::compress::{unsupported, EpochCompressor};
use crate::error::{driver, gpu_error};
use crate::halver::DeviceHalver;
use crate::nvcomp::Nvcomp;
use crate::staging::{StagingRing, PARTS, PART_BYTES};

/// Appends from pinned memory at least this large go to the GPU by DMA
/// straight from the caller's memory; the rest (and pageable memory, which
/// the driver would copy through its own small pinned buffer on one
/// thread) goes through the stream's [`StagingRing`].
const DIRECT_BYTES: usize = 1 << 20;

/// Whether `data` lies in page-locked host memory the GPU reaches by DMA.
fn is_pinned(data: &[u8]) -> bool {
    let mut kind = 0u32;
    // SAFETY: the driver writes one CUmemorytype (a u32) into `kind`; for
    // memory it does not know (pageable) it returns an error and writes nothing.
    let known = unsafe {
        cudarc::driver::sys::cuPointerGetAttribute(
            (&mut kind as *mut u32).cast(),
            cudarc::driver::sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            data.as_ptr() as CUdeviceptr,
        )
    };
    known == cudarc::driver::sys::CUresult::CUDA_SUCCESS
        && kind == cudarc::driver::sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32
}

/// The scatter kernel of a plan: one launch cuts `planes` planes of input
/// (at most one epoch) into the epoch's padded tiles, `unit` bytes at a time.
pub struct ScatterKernel {
    source: String,
    unit: usize,
    units_per_epoch: u64,
    epoch_input_bytes: u64,
    epoch_buffer_bytes: u64,
    fill: [u64; 2],
    /// Whether indices are 64-bit (`false`: the plan proved 32 bits suffice).
    wide: bool,
    /// The compiled kernel and its grid, made on the first launch.
    compiled: std::sync::OnceLock<(CudaFunction, u32)>,
}

/// C code decomposing `index` over `extents` (row-major) into variables `prefix{d}`.
fn split(index: &str, extents: &[u64], prefix: &str) -> String {
    let mut code = format!("idx_t {prefix}rest = {index};\n");
    for (d, e) in extents.iter().enumerate().rev() {
        code += &format!("    idx_t {prefix}{d} = {prefix}rest % {e}u; {prefix}rest /= {e}u;\n");
    }
    code
}

impl ScatterKernel {
    /// The kernel for `plan` with element `fill`, moving `unit`-byte units
    /// where the layouts allow (the widest of 16, 8, 4, 2, 1 bytes that tiles
    /// and input rows are multiples of).
    ///
    /// ```
    /// use retile_cuda::ScatterKernel;
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::I16, vec![0, 2048, 2048], vec![64, 64, 64]).unwrap()).unwrap();
    /// let k = ScatterKernel::new(&plan, &[0, 0], 16);
    /// assert_eq!(k.unit(), 16);
    /// ```
    pub fn new(plan: &StreamPlan, fill: &[u8], max_unit: usize) -> ScatterKernel {
        let spec = plan.spec();
        let e = spec.dtype().size();
        let (shape, tile) = (spec.shape(), spec.tile());
        let r = tile.len();
        let last = r - 1;
        let fits = |u: usize| {
            u >= e
                && u.is_multiple_of(e)
                && (tile[last] as usize * e).is_multiple_of(u)
                && (r == 1 || (shape[last] as usize * e).is_multiple_of(u))
        };
        let unit = [16usize, 8, 4, 2, 1]
            .into_iter()
            .find(|&u| u <= max_unit.max(e) && fits(u))
            .unwrap_or(e);
        let p = unit / e;
        let tile_elems: u64 = tile.iter().product();
        let tiles_per_epoch = plan.m();
        let units_per_tile = tile_elems / p as u64;
        let units_per_slot = plan.tile_map().slot_elements() / p as u64;
        let units_per_epoch = units_per_tile * tiles_per_epoch;
        let epoch_input_bytes = plan.epoch_elements() * e as u64;
        let mut pattern = [0u8; 16];
        for (i, b) in pattern.iter_mut().enumerate() {
            *b = fill.get(i % e).copied().unwrap_or(0);
        }
        let fill = [
            u64::from_le_bytes(pattern[..8].try_into().unwrap_or([0; 8])),
            u64::from_le_bytes(pattern[8..].try_into().unwrap_or([0; 8])),
        ];
        let limit = (plan.epoch_buffer_bytes() / e as u64).max(plan.epoch_elements());
        let wide = limit >= (1 << 31);
        let source = Self::source(
            plan,
            unit,
            e,
            if wide {
                "unsigned long long"
            } else {
                "unsigned int"
            },
            (units_per_tile, units_per_slot),
        );
        ScatterKernel {
            source,
            unit,
            units_per_epoch,
            epoch_input_bytes,
            epoch_buffer_bytes: plan.epoch_buffer_bytes(),
            fill,
            wide,
            compiled: std::sync::OnceLock::new(),
        }
    }

    /// The kernel's C source; `units` are those of a tile and of a slot.
    /// Thread `u` moves unit `u` of the epoch's tiles back to back (so that
    /// its divisions are by the tile's units, often a power of two) to its
    /// place in the slots; the first threads of a tile also fill the units
    /// past it in its slot.
    fn source(plan: &StreamPlan, unit: usize, e: usize, idx: &str, units: (u64, u64)) -> String {
        let (units_per_tile, units_per_slot) = units;
        let spec = plan.spec();
        let (shape, tile) = (spec.shape(), spec.tile());
        let r = tile.len();
        let p = unit / e;
        let mut intra_extents: Vec<u64> = tile.to_vec();
        intra_extents[r - 1] /= p as u64;
        let counts: Vec<u64> = plan.tile_counts()[1..].to_vec();
        let map = plan.tile_map();
        let mut body = split("intra", &intra_extents, "i");
        body += &format!("    i{} *= {p}u;\n", r - 1);
        body += &split("tile", &counts, "t");
        // global coordinates of dims 1.. and the input offset
        body += &format!(
            "    idx_t plane = (u / {units_per_tile}u / {m}u) * {t0}u + i0;\n",
            m = plan.m().max(1),
            t0 = tile[0]
        );
        body += "    bool ok = true; idx_t src = 0; idx_t run = 0; idx_t edge = 0;\n";
        if r == 1 {
            body += "    src = plane; run = plane; edge = planes;\n";
        } else {
            body += &format!(
                "    ok = plane < planes; src = plane * {}ull;\n",
                map.input_strides(0).0
            );
            for d in (1..r).rev() {
                let (sn, st) = map.input_strides(d);
                body += &format!("    {{ idx_t g = t{}*{}u + i{d}; ok = ok && g < {}u; src += t{} * {st}u + i{d} * {sn}u; }}\n", d - 1, tile[d], shape[d], d - 1);
            }
            body += &format!(
                "    run = t{}*{}u + i{}; edge = {}u;\n",
                r - 2,
                tile[r - 1],
                r - 1,
                shape[r - 1]
            );
        }
        format!(
            r#"typedef {idx} idx_t;
typedef {elem} elem_t;
typedef {vec} vec_t;
#define P {p}
union pack_t {{ vec_t v; elem_t e[P]; unsigned long long q[2]; }};
extern "C" __global__ void __launch_bounds__(256) retile_scatter(const elem_t* __restrict__ in, vec_t* __restrict__ out,
    unsigned long long fill_lo, unsigned long long fill_hi, idx_t planes, idx_t units) {{
  pack_t fill; fill.q[0] = fill_lo; fill.q[1] = fill_hi;
  for (idx_t u = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; u < units; u += (idx_t)gridDim.x * blockDim.x) {{
    idx_t intra = u % {units_per_tile}u; idx_t tile = (u / {units_per_tile}u) % {m}u;
    const idx_t at = tile * {units_per_slot}u + intra;
{pad}    {body}    if (ok && run + P <= edge) {{
      out[at] = *(const vec_t*)(in + src);
    }} else {{
      pack_t o;
      #pragma unroll
      for (int k = 0; k < P; ++k) o.e[k] = (ok && run + k < edge) ? in[src + k] : fill.e[0];
      out[at] = o.v;
    }}
  }}
}}
"#,
            elem = c_type(e),
            vec = c_type(unit),
            m = plan.m().max(1),
            pad = match units_per_slot - units_per_tile {
                0 => String::new(),
                pad => format!("    if (intra < {pad}u) out[at + {units_per_tile}u] = fill.v;\n"),
            },
        )
    }

    /// Bytes per unit the kernel moves.
    ///
    /// ```
    /// use retile_cuda::ScatterKernel;
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 9, 10], vec![2, 3, 5]).unwrap()).unwrap();
    /// assert_eq!(ScatterKernel::new(&plan, &[0], 16).unit(), 1);
    /// ```
    pub fn unit(&self) -> usize {
        self.unit
    }

    /// The CUDA source, with the plan's constants baked in.
    ///
    /// ```
    /// use retile_cuda::ScatterKernel;
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::I16, vec![0, 2048, 2048], vec![64, 64, 64]).unwrap()).unwrap();
    /// assert!(ScatterKernel::new(&plan, &[0, 0], 16).source_text().contains("retile_scatter"));
    /// ```
    pub fn source_text(&self) -> &str {
        &self.source
    }

    /// The kernel compiled for `gpu` and its grid (one block per 256 units,
    /// at most 32 per multiprocessor), looked up once per kernel, not per launch.
    fn compiled(&self, gpu: &Gpu) -> Result<(&CudaFunction, u32), StreamError> {
        if self.compiled.get().is_none() {
            let f = gpu
                .kernel("retile_scatter", &self.source)
                .map_err(gpu_error)?;
            let most = gpu.multiprocessors().map_err(gpu_error)? as u64 * 32;
            let blocks = self.units_per_epoch.div_ceil(256).clamp(1, most) as u32;
            let _ = self.compiled.set((f, blocks));
        }
        let (f, blocks) = self
            .compiled
            .get()
            .ok_or_else(|| StreamError::gpu("the scatter kernel was not compiled"))?;
        Ok((f, *blocks))
    }

    /// Cuts `planes` planes of input at device address `input` into one
    /// epoch of tiles at `output`, on `stream`.
    ///
    /// # Safety
    /// `input` must hold `planes` planes and `output` one epoch buffer, both
    /// valid until the stream has run the kernel.
    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        input: CUdeviceptr,
        output: CUdeviceptr,
        planes: u64,
    ) -> Result<(), StreamError> {
        let (f, blocks) = self.compiled(gpu)?;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(f);
        let (planes32, units32) = (planes as u32, self.units_per_epoch as u32);
        launch
            .arg(&input)
            .arg(&output)
            .arg(&self.fill[0])
            .arg(&self.fill[1]);
        if self.wide {
            launch.arg(&planes).arg(&self.units_per_epoch);
        } else {
            launch.arg(&planes32).arg(&units32);
        }
        // SAFETY: the kernel's arguments match its signature, and the
        // caller guarantees the buffers (this function's `# Safety`).
        unsafe { launch.launch(cfg) }.map_err(driver("launching the scatter kernel"))?;
        Ok(())
    }
}

/// Scatters a whole tensor that is already on the GPU into tiles on the
/// GPU, epoch after epoch (the device-resident path without a sink):
/// `output` receives `ceil(planes / tile0)` epoch buffers, byte-identical to
/// the CPU backend's.
///
/// ```no_run
/// use retile_cuda::scatter_device;
/// use retile_plan::{DType, StreamPlan, StreamSpec};
/// let gpu = retile_gpu::Gpu::open().unwrap();
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 4], vec![2, 2]).unwrap()).unwrap();
/// let input = gpu.stream().memcpy_stod(&(0..16u8).collect::<Vec<_>>()).unwrap();
/// let mut tiles = gpu.stream().alloc_zeros::<u8>(16).unwrap();
/// scatter_device(&gpu, &plan, &[0], &input, &mut tiles).unwrap();
/// ```
pub fn scatter_device(
    gpu: &Gpu,
    plan: &StreamPlan,
    fill: &[u8],
    input: &CudaSlice<u8>,
    output: &mut CudaSlice<u8>,
) -> Result<(), StreamError> {
    let kernel = ScatterKernel::new(plan, fill, 16);
    let plane_bytes = kernel.epoch_input_bytes / plan.spec().tile()[0];
    let planes = input.len() as u64 / plane_bytes.max(1);
    let epochs = planes.div_ceil(plan.spec().tile()[0]);
    if (output.len() as u64) < epochs * kernel.epoch_buffer_bytes {
        return Err(StreamError::Invalid(format!(
            "{planes} planes fill {epochs} epochs of {} bytes; the output has {} bytes",
            kernel.epoch_buffer_bytes,
            output.len()
        )));
    }
    let stream = gpu.stream();
    let (src, _read) = input.device_ptr(stream);
    let (dst, _write) = output.device_ptr(stream);
    for epoch in 0..epochs {
        let here = (planes - epoch * plan.spec().tile()[0]).min(plan.spec().tile()[0]);
        // SAFETY: epoch `epoch` reads `here` planes inside `input` and writes
        // one epoch buffer inside `output` (both lengths checked above).
        unsafe {
            kernel.launch(
                gpu,
                stream,
                src + epoch * kernel.epoch_input_bytes,
                dst + epoch * kernel.epoch_buffer_bytes,
                here,
            )?;
        }
    }
    Ok(())
}

/// Host buffers of tiles: one in each slot's copy out, one at the sink.
const HOST_BUFFERS: usize = 3;

/// Where a stream's setup went: each part's seconds, for the summary.
struct Setup {
    began: Instant,
    last: Instant,
    parts: Vec<(&'static str, f64)>,
}

impl Setup {
    fn new() -> Setup {
        let now = Instant::now();
        Setup {
            began: now,
            last: now,
            parts: Vec::new(),
        }
    }

    /// Ends the part called `name`.
    fn mark(&mut self, name: &'static str) {
        let now = Instant::now();
        self.parts.push((name, (now - self.last).as_secs_f64()));
        self.last = now;
    }

    /// The parts in words.
    fn detail(&self) -> String {
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|(name, secs)| format!("{name} {secs:.2} s"))
            .collect();
        format!(
            "{}; the pinned staging ({} MiB) is made with the first frame, the host buffers meanwhile",
            parts.join(", "),
            (PARTS * PART_BYTES) >> 20
        )
    }
}

/// One of the two pipeline slots: device input and tiles, host tiles, events.
struct Slot {
    input: CudaSlice<u8>,
    tiles: CudaSlice<u8>,
    /// The input copy into `input` is done.
    arrived: CudaEvent,
    /// The kernel has read `input` and written `tiles`.
    scattered: CudaEvent,
    /// `tiles` (or the packed chunks) have reached host memory.
    left: CudaEvent,
    /// The chunks compressed on the GPU are packed.
    packed: CudaEvent,
    /// A host buffer waiting for `left` before it goes to the sink: epoch,
    /// planes, the buffer, and its chunks when the GPU compressed them.
    outgoing: Option<Outgoing>,
}

/// An epoch on its way to the sink: index, planes, buffer, and its chunks
/// when the GPU compressed them.
type Outgoing = (u64, u64, PinnedBuffer, Option<EncodedChunks>);

/// Where a stream's chunks are compressed, and why.
struct Compression {
    compressor: EpochCompressor,
    /// Epochs are compressed on the GPU (else the sink compresses them).
    on_gpu: bool,
    /// `--codec-on auto`: both are measured on the first epoch.
    measure: bool,
    /// What the summary says.
    note: String,
}

/// A stream of row-major data cut into tiles on the GPU; the same contract
/// as `retile_tiler::TileStream`, byte-identical output. When its sink's
/// codec is one nvCOMP writes (`Sink::device_codec`), the tiles are
/// compressed on the GPU too, and only the compressed chunks cross the bus.
pub struct CudaTileStream {
    state: StreamState<PinnedBuffer>,
    gpu: Gpu,
    kernel: ScatterKernel,
    copy_in: Arc<CudaStream>,
    compute: Arc<CudaStream>,
    copy_out: Arc<CudaStream>,
    slots: [Slot; 2],
    /// Pageable input on its way to the slots' device input, made with the
    /// first pageable append (a pyramid's lower levels never need one).
    staging: Option<StagingRing>,
    /// Host buffers the sink gave back.
    host_free: Vec<PinnedBuffer>,
    /// Host buffers still being made, on a thread of their own.
    coming: Option<PinnedMaker>,
    /// Makes the next pyramid level's planes from each shipped epoch.
    halver: Option<DeviceHalver>,
    /// Bytes of an incomplete plane at the end, once the input has ended.
    ended: Option<u64>,
    /// Compression on the GPU, where the sink's codec allows it.
    compression: Option<Compression>,
    /// Where the chunks are compressed and why, for the summary.
    codec_note: Option<String>,
}

impl CudaTileStream {
    /// A stream of `spec` on GPU 0 with element `fill` for padding, writing
    /// to `sink`; says clearly when there is no GPU.
    ///
    /// ```no_run
    /// use retile_cuda::CudaTileStream;
    /// use retile_plan::{DType, MemorySink, StreamSpec};
    /// let spec = StreamSpec::new(DType::U16, vec![0, 512, 512], vec![64, 128, 128]).unwrap();
    /// let sink = MemorySink::new();
    /// let mut stream = CudaTileStream::new(spec, &[0, 0], Box::new(sink.clone())).unwrap();
    /// stream.append(&vec![0u8; 64 * 512 * 512 * 2]).unwrap();
    /// assert_eq!(stream.finish().unwrap().planes, 64);
    /// ```
    pub fn new(
        spec: StreamSpec,
        fill: &[u8],
        sink: Box<dyn Sink>,
    ) -> Result<CudaTileStream, StreamError> {
        let mut setup = Setup::new();
        let gpu = Gpu::open().map_err(gpu_error)?;
        setup.mark("GPU");
        // every option is checked before any buffer is made
        let plan = plan_stream(&spec, fill)?;
        let request = sink.device_codec(&plan);
        let kernel = ScatterKernel::new(&plan, fill, 16);
        // compiled and configured once, now, so that no epoch pays for it
        kernel.compiled(&gpu)?;
        setup.mark("kernels");
        let mut state = StreamState::start(plan, fill, sink)?;
        let ctx = gpu.context().clone();
        // SAFETY: every cross-stream dependency below is ordered by explicit events.
        unsafe { ctx.disable_event_tracking() };
        let new_stream = || ctx.new_stream().map_err(driver("creating a CUDA stream"));
        let (copy_in, compute, copy_out) = (new_stream()?, new_stream()?, new_stream()?);
        let slot = || -> Result<Slot, StreamError> {
            let event = || ctx.new_event(None).map_err(driver("creating a CUDA event"));
            Ok(Slot {
                // SAFETY: device buffers are written before they are read
                // (input by a copy, tiles by the kernel, which writes every byte).
                input: unsafe { compute.alloc::<u8>(kernel.epoch_input_bytes as usize) }
                    .map_err(driver("allocating device input"))?,
                // SAFETY: as for the input.
                tiles: unsafe { compute.alloc::<u8>(kernel.epoch_buffer_bytes as usize) }
                    .map_err(driver("allocating device tiles"))?,
                arrived: event()?,
                scattered: event()?,
                left: event()?,
                packed: event()?,
                outgoing: None,
            })
        };
        let slots = [slot()?, slot()?];
        setup.mark("buffers");
        compute
            .synchronize()
            .map_err(driver("allocating the tile ring"))?;
        let tiles = [0, 1].map(|s| slots[s].tiles.device_ptr(&compute).0);
        let (compression, codec_note) = match request {
            None => (None, None),
            Some((_, CodecOn::Cpu)) => (None, Some("cpu (as asked)".to_string())),
            Some((codec, on)) => {
                let made = match unsupported(codec, &state.plan) {
                    Some(why) => Err(why),
                    None => Nvcomp::load().and_then(|nvcomp| {
                        let described = nvcomp.describe();
                        EpochCompressor::new(
                            &gpu,
                            &compute,
                            nvcomp,
                            codec,
                            &state.plan,
                            fill,
                            tiles,
                        )
                        .map(|c| (c, described))
                        .map_err(|e| e.to_string())
                    }),
                };
                match made {
                    Ok((compressor, described)) => (
                        Some(Compression {
                            compressor,
                            on_gpu: true,
                            measure: on == CodecOn::Auto,
                            note: format!("gpu ({described})"),
                        }),
                        None,
                    ),
                    Err(why) => (None, Some(format!("cpu, since the GPU cannot: {why}"))),
                }
            }
        };
        let host_bytes = match &compression {
            Some(c) => c.compressor.packed_bound().max(kernel.epoch_buffer_bytes),
            None => kernel.epoch_buffer_bytes,
        };
        state.summary.buffer_bytes = HOST_BUFFERS as u64 * host_bytes;
        let coming = Some(PinnedMaker::start(&gpu, HOST_BUFFERS, host_bytes as usize));
        setup.mark("nvCOMP");
        // the stream's time counts from its creation, as the CPU backend's does
        state.started = setup.began;
        state.summary.setup_seconds = setup.began.elapsed().as_secs_f64();
        state.summary.setup_detail = Some(setup.detail());
        Ok(CudaTileStream {
            state,
            gpu,
            kernel,
            copy_in,
            compute,
            copy_out,
            slots,
            staging: None,
            host_free: Vec::new(),
            coming,
            halver: None,
            ended: None,
            compression,
            codec_note,
        })
    }

    /// Makes this stream halve every epoch it ships into the next pyramid
    /// level's planes with `method` along `halve` (every dimension), on the GPU.
    pub fn attach_halver(&mut self, method: Method, halve: &[bool]) -> Result<(), StreamError> {
        self.bind()?;
        let halver = DeviceHalver::new(
            &self.gpu,
            &self.compute,
            method,
            self.state.plan.spec(),
            halve,
        )?;
        self.halver = Some(halver);
        Ok(())
    }

    fn bind(&self) -> Result<(), StreamError> {
        self.gpu
            .context()
            .bind_to_thread()
            .map_err(driver("binding the GPU to this thread"))
    }

    /// Input bytes until the current epoch is complete (and shipped).
    pub(crate) fn bytes_to_epoch_end(&self) -> u64 {
        self.state.bytes_to_epoch_end()
    }

    /// Appends `len` bytes at device address `src` once `ready` has
    /// completed (device to device, no host copy), then records `consumed`
    /// on the copy stream: `src` may be reused after it.
    pub(crate) fn append_device(
        &mut self,
        src: CUdeviceptr,
        len: u64,
        ready: &CudaEvent,
        consumed: &CudaEvent,
    ) -> Result<(), StreamError> {
        let take = self.state.accepted(len as usize)? as u64;
        if take < len {
            return Err(StreamError::Invalid(format!(
                "a pyramid level refused {} of its parent's bytes; its shape does not match its parent's",
                len - take
            )));
        }
        self.copy_in
            .wait(ready)
            .map_err(driver("ordering a level's copy after its halving"))?;
        self.in_epochs(len, |stream, at, n| {
            let (s, cursor) = ((stream.state.epoch % 2) as usize, stream.state.cursor);
            if cursor == 0 {
                stream.wait_for_slot(s)?;
            }
            let (base, _guard) = stream.slots[s].input.device_ptr(&stream.copy_in);
            // SAFETY: `n` bytes inside the caller's buffer and inside the slot's input.
            unsafe {
                cu::memcpy_dtod_async(
                    base + cursor,
                    src + at,
                    n as usize,
                    stream.copy_in.cu_stream(),
                )
            }
            .map_err(driver("copying a pyramid level's planes"))
        })?;
        consumed
            .record(&self.copy_in)
            .map_err(driver("recording an event"))
    }

    /// Hands this level's oldest halved planes to `child`; false when none wait.
    pub(crate) fn pass_ready(&mut self, child: &mut CudaTileStream) -> Result<bool, StreamError> {
        let Some(halver) = &mut self.halver else {
            return Ok(false);
        };
        let Some((src, len, ready, consumed)) = halver.take_ready(&self.compute) else {
            return Ok(false);
        };
        child.append_device(src, len, ready, consumed)?;
        Ok(true)
    }

    /// The plan the stream follows.
    pub fn plan(&self) -> &StreamPlan {
        &self.state.plan
    }

    /// Input bytes taken so far.
    pub fn bytes_taken(&self) -> u64 {
        self.state.taken
    }

    /// How many of `len` bytes [`CudaTileStream::append`] takes now: all
    /// of them, or what is left of a bounded stream; an error once the
    /// stream has finished.
    pub fn accepts(&self, len: usize) -> Result<usize, StreamError> {
        self.state.accepted(len)
    }

    /// Appends input (any host memory; large appends from pinned memory go
    /// by DMA without a host copy); returns how many bytes were taken.
    pub fn append(&mut self, data: &[u8]) -> Result<usize, StreamError> {
        if self.ended.is_some() {
            return Err(StreamError::Finished);
        }
        let take = self.state.accepted(data.len())?;
        self.bind()?;
        let direct = take >= DIRECT_BYTES && is_pinned(&data[..take]);
        let parts = self.append_parts(&data[..take], direct);
        // the caller's memory is released on return: every copy straight
        // from it must be done (staged copies are the stream's own)
        if direct {
            self.copy_in
                .synchronize()
                .map_err(driver("copying input to the GPU"))?;
        }
        parts?;
        Ok(take)
    }

    /// Copies `src` epoch by epoch, shipping each full epoch; copies
    /// straight from `src` (`direct`: it is pinned) may still run when this
    /// returns.
    fn append_parts(&mut self, src: &[u8], direct: bool) -> Result<(), StreamError> {
        self.in_epochs(src.len() as u64, |s, at, n| {
            let started = Instant::now();
            s.copy_in_part(&src[at as usize..(at + n) as usize], direct)?;
            s.state.summary.scatter_seconds += started.elapsed().as_secs_f64();
            Ok(())
        })
    }

    /// Puts `part` at the cursor of the current slot's device input: by
    /// DMA straight from the caller's pinned memory (`direct`), or through
    /// the staging ring.
    fn copy_in_part(&mut self, part: &[u8], direct: bool) -> Result<(), StreamError> {
        let (s, cursor) = ((self.state.epoch % 2) as usize, self.state.cursor);
        if cursor == 0 {
            self.wait_for_slot(s)?;
        }
        if !direct {
            let (base, _guard) = self.slots[s].input.device_ptr(&self.copy_in);
            let ring = match &mut self.staging {
                Some(ring) => ring,
                none => none.insert(StagingRing::new(&self.gpu, PARTS, PART_BYTES)?),
            };
            return ring.push(part, base + cursor, &self.copy_in);
        }
        self.flush_staged()?;
        let (base, _guard) = self.slots[s].input.device_ptr(&self.copy_in);
        // SAFETY: `append` awaits the copy before `part` goes back to the caller.
        unsafe { cu::memcpy_htod_async(base + cursor, part, self.copy_in.cu_stream()) }
            .map_err(driver("copying input to the GPU"))?;
        Ok(())
    }

    /// Sends the staged bytes not yet sent up to the GPU.
    fn flush_staged(&mut self) -> Result<(), StreamError> {
        match &mut self.staging {
            Some(ring) => ring.flush(&self.copy_in),
            None => Ok(()),
        }
    }

    /// Waits until slot `s`'s input, from two epochs ago, was copied up and
    /// read by the kernels.
    fn wait_for_slot(&self, s: usize) -> Result<(), StreamError> {
        let slot = &self.slots[s];
        slot.arrived
            .synchronize()
            .map_err(driver("waiting for an earlier copy to the GPU"))?;
        slot.scattered
            .synchronize()
            .map_err(driver("waiting for an earlier scatter"))
    }

    /// Gives slot `s`'s finished tiles (or chunks) to the sink once they
    /// reached the host.
    fn hand_over(&mut self, s: usize) -> Result<(), StreamError> {
        if let Some((index, planes, buffer, encoded)) = self.slots[s].outgoing.take() {
            self.slots[s]
                .left
                .synchronize()
                .map_err(driver("copying tiles to the host"))?;
            self.state.send_encoded(index, planes, buffer, encoded)?;
        }
        Ok(())
    }

    /// Packs slot `s`'s epoch compressed on the GPU, if it holds one, and
    /// starts copying its chunks to a host buffer, handed over later.
    fn pack(&mut self, s: usize) -> Result<(), StreamError> {
        if !self
            .compression
            .as_ref()
            .is_some_and(|c| c.compressor.pending(s))
        {
            return Ok(());
        }
        let mut host = self.host_buffer()?;
        let Some(compression) = &mut self.compression else {
            return Ok(());
        };
        let slot = &mut self.slots[s];
        let packed = compression.compressor.finish(
            &self.compute,
            &self.copy_out,
            s,
            &mut host,
            &slot.packed,
        )?;
        slot.left
            .record(&self.copy_out)
            .map_err(driver("recording an event"))?;
        match packed {
            Some(p) => slot.outgoing = Some((p.index, p.planes, host, Some(p.encoded))),
            None => self.host_free.push(host),
        }
        Ok(())
    }

    /// `--codec-on auto`, on the first epoch (in slot `s`, compressed on
    /// the GPU and not yet packed): measures how fast the sink's writer
    /// threads encode its tiles and how fast the GPU compressed them, and
    /// keeps the faster for the epochs after it.
    fn choose_where_to_compress(&mut self, s: usize, planes: u64) -> Result<(), StreamError> {
        let mut host = self.host_buffer()?;
        let tiles = self.slots[s].tiles.device_ptr(&self.copy_out).0;
        let bytes = self.kernel.epoch_buffer_bytes as usize;
        self.copy_out
            .wait(&self.slots[s].scattered)
            .map_err(driver("ordering the copy out after the scatter"))?;
        // SAFETY: `host` is pinned and holds an epoch buffer; the copy is
        // awaited right below.
        unsafe {
            cu::memcpy_dtoh_async(
                &mut host.as_mut()[..bytes],
                tiles,
                self.copy_out.cu_stream(),
            )
        }
        .map_err(driver("copying tiles to the host"))?;
        self.copy_out
            .synchronize()
            .map_err(driver("copying tiles to the host"))?;
        let (cpu, host) = self.state.encode_rate(self.state.epoch, planes, host)?;
        self.host_free.push(host);
        let Some(c) = &mut self.compression else {
            return Ok(());
        };
        let gpu = c.compressor.measure_epoch(s)?;
        c.measure = false;
        let cpu = cpu.unwrap_or(0.0);
        c.on_gpu = gpu >= cpu;
        c.note = format!(
            "{} (auto: on the first epoch the GPU compressed {:.2} GB/s, the CPU's writer threads {:.2} GB/s; {})",
            if c.on_gpu { "gpu" } else { "cpu" },
            gpu / 1e9,
            cpu / 1e9,
            c.note
        );
        Ok(())
    }

    /// A host buffer for an epoch's tiles: one the sink gave back, the next
    /// one made, or the next the sink gives back (the waits are counted).
    fn host_buffer(&mut self) -> Result<PinnedBuffer, StreamError> {
        if let Some(buffer) = self.state.free_buffer_now(&mut self.host_free)? {
            return Ok(buffer);
        }
        let waited = Instant::now();
        match self.coming.as_mut().map(Iterator::next) {
            Some(Some(made)) => {
                self.state.summary.wait_seconds += waited.elapsed().as_secs_f64();
                return made.map_err(gpu_error);
            }
            // every buffer has been made
            Some(None) => self.coming = None,
            None => {}
        }
        self.state.free_buffer(&mut self.host_free)
    }

    /// Ships the last, incomplete epoch and halves a plane still waiting
    /// for its pair; nothing more may be appended. Idempotent.
    pub(crate) fn end_input(&mut self) -> Result<(), StreamError> {
        if self.ended.is_some() || self.state.finished() {
            return Ok(());
        }
        self.bind()?;
        let shipped = self.ship_last();
        self.ended = Some(*shipped.as_ref().unwrap_or(&0));
        shipped?;
        match &mut self.halver {
            Some(halver) => halver.flush(&self.compute),
            None => Ok(()),
        }
    }

    /// Flushes the last epoch, finalises the sink and returns the summary;
    /// the same errors as the CPU backend for input cut short.
    pub fn finish(&mut self) -> Result<Summary, StreamError> {
        if self.state.finished() {
            return Err(StreamError::Finished);
        }
        let mut shipped = self.end_input();
        self.bind()?;
        let partial = self.ended.unwrap_or(0);
        // the epoch still compressed on the GPU is packed and copied out
        for s in [0, 1] {
            if shipped.is_ok() {
                shipped = self.pack(s);
            }
        }
        // the older epoch first: sinks see epochs in order
        let older = usize::from(
            self.slots[1].outgoing.as_ref().map(|o| o.0)
                < self.slots[0].outgoing.as_ref().map(|o| o.0),
        );
        for s in [older, 1 - older] {
            if shipped.is_ok() {
                shipped = self.hand_over(s);
            }
        }
        let (mut summary, returned) = self.state.finish(shipped, partial)?;
        // pinned buffers are freed when the stream is dropped: unpinning is slow
        self.host_free.extend(returned);
        summary.codec_on = match &self.compression {
            Some(c) => Some(format!(
                "{}; the GPU compressed {:.3} GB of tiles into {:.3} GB in {:.3} s of GPU time",
                c.note,
                c.compressor.bytes_in as f64 / 1e9,
                c.compressor.bytes_out as f64 / 1e9,
                c.compressor.gpu_seconds
            )),
            None => self.codec_note.clone(),
        };
        Ok(summary)
    }
}

impl Filler for CudaTileStream {
    type Buffer = PinnedBuffer;

    fn state(&mut self) -> &mut StreamState<PinnedBuffer> {
        &mut self.state
    }

    /// Sends the current epoch through the GPU: input up, scatter, then
    /// tiles down, or compressed on the GPU (packed and sent down when the
    /// next epoch ships).
    fn ship_epoch(&mut self, planes: u64) -> Result<(), StreamError> {
        let s = (self.state.epoch % 2) as usize;
        self.flush_staged()?;
        // the previous epoch's chunks, compressed on the GPU meanwhile, go down
        self.pack(1 - s)?;
        // the tiles of two epochs ago left this slot long ago; the previous
        // epoch's are still on their way and are handed over next time
        self.hand_over(s)?;
        let on_gpu = self.compression.as_ref().is_some_and(|c| c.on_gpu);
        let slot = &mut self.slots[s];
        let (input, _r) = slot.input.device_ptr(&self.copy_in);
        let (tiles, _w) = slot.tiles.device_ptr(&self.compute);
        slot.arrived
            .record(&self.copy_in)
            .map_err(driver("recording an event"))?;
        self.compute
            .wait(&slot.arrived)
            .map_err(driver("ordering the scatter after its input"))?;
        self.compute
            .wait(&slot.left)
            .map_err(driver("ordering the scatter after the last copy out"))?;
        // SAFETY: `input` holds `planes` planes and `tiles` one epoch buffer.
        unsafe {
            self.kernel
                .launch(&self.gpu, &self.compute, input, tiles, planes)?
        };
        if let Some(halver) = &mut self.halver {
            halver.halve_epoch(&self.compute, input, planes)?;
        }
        slot.scattered
            .record(&self.compute)
            .map_err(driver("recording an event"))?;
        drop((_r, _w));
        if on_gpu {
            let epoch = self.state.epoch;
            let Some(c) = &mut self.compression else {
                return Ok(());
            };
            c.compressor.start(&self.compute, s, epoch, planes)?;
            if c.measure {
                self.choose_where_to_compress(s, planes)?;
            }
            return Ok(());
        }
        let mut host = self.host_buffer()?;
        let slot = &mut self.slots[s];
        let (tiles, _w) = slot.tiles.device_ptr(&self.compute);
        self.copy_out
            .wait(&slot.scattered)
            .map_err(driver("ordering the copy out after the scatter"))?;
        let bytes = self.kernel.epoch_buffer_bytes as usize;
        // SAFETY: `host` is pinned and stays in the slot until `left` completes.
        unsafe {
            cu::memcpy_dtoh_async(
                &mut host.as_mut()[..bytes],
                tiles,
                self.copy_out.cu_stream(),
            )
        }
        .map_err(driver("copying tiles to the host"))?;
        slot.left
            .record(&self.copy_out)
            .map_err(driver("recording an event"))?;
        slot.outgoing = Some((self.state.epoch, planes, host, None));
        drop(_w);
        Ok(())
    }
}

impl Drop for CudaTileStream {
    /// Waits for work in flight, so that no buffer is freed under a copy.
    fn drop(&mut self) {
        let _ = self.gpu.context().synchronize();
    }
}
