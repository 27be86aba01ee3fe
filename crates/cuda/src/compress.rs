//! Compression on the GPU: each epoch's tiles are compressed where the
//! scatter left them, by nvCOMP's batched compressor (every block of the
//! epoch in one call), and laid out as the chunks the store keeps, so that
//! only compressed bytes cross the bus.
//!
//! An epoch goes through two steps. [`EpochCompressor::start`] (on the
//! compute stream, after the scatter) marks the tiles of fill alone,
//! shuffles the blocks (blosc), compresses them, and sends the compressed
//! sizes to the host. [`EpochCompressor::finish`], an epoch later (the
//! sizes have long arrived), lays the chunks out on the host
//! ([`crate::frames`]), has the gather kernel pack them on the GPU and
//! copies exactly their bytes to a host buffer. Scratch memory (shuffled
//! blocks, nvCOMP's output and temporary memory) is shared by the two
//! slots: it is used on the compute stream alone, where the gather of one
//! epoch comes before the compression of the next.

use std::sync::Arc;

use cudarc::driver::sys::{CUdeviceptr, CUevent_flags};
use cudarc::driver::{
    result as cu, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig,
    PushKernelArg,
};
use retile_gpu::{Gpu, PinnedBuffer};
use retile_plan::{DeviceCodec, EncodedChunks, StreamError, StreamPlan};

use crate::codec_kernel::{
    fill_source, fill_word, gather_source, shuffle_source, FILL_KERNEL, GATHER_KERNEL,
    SHUFFLE_KERNEL,
};
use crate::error::{driver, gpu_error};
use crate::frames::{ChunkPlan, Frames};
use crate::nvcomp::{Algorithm, Nvcomp};

/// Threads per block of the codec kernels.
const THREADS: u32 = 256;

/// An epoch compressed and on its way to the host: its index, planes,
/// where each chunk is in the buffer, and the bytes copied.
pub(crate) struct Packed {
    pub index: u64,
    pub planes: u64,
    pub encoded: EncodedChunks,
}

/// One slot's share: the packed chunks on the GPU, the sizes coming back,
/// the copies going up, and the epoch in flight.
struct CompressSlot {
    packed: CudaSlice<u8>,
    /// Block sizes (u64), statuses (i32) and tile flags (u32), from the GPU.
    report: PinnedBuffer,
    /// The gather's copies and literal bytes, to the GPU.
    upload_host: PinnedBuffer,
    upload: CudaSlice<u8>,
    /// nvCOMP's input addresses of this slot's blocks.
    inputs: CudaSlice<u64>,
    /// The sizes have reached `report`.
    sized: CudaEvent,
    /// Around the compression, for its GPU time.
    begun: CudaEvent,
    ended: CudaEvent,
    /// The epoch compressed and not yet packed: index and planes.
    pending: Option<(u64, u64)>,
    /// The slot's tiles.
    tiles: CUdeviceptr,
}

/// The GPU compressor of one stream's epochs.
pub(crate) struct EpochCompressor {
    nvcomp: Arc<Nvcomp>,
    algorithm: Algorithm,
    chunks: ChunkPlan,
    fill: u64,
    kernels: [CudaFunction; 3],
    grid: u32,
    /// Bytes of nvCOMP's output slot per block.
    stride: u64,
    temp: (CudaSlice<u8>, usize),
    shuffled: Option<CudaSlice<u8>>,
    compressed: CudaSlice<u8>,
    sizes: CudaSlice<u64>,
    outputs: CudaSlice<u64>,
    out_sizes: CudaSlice<u64>,
    statuses: CudaSlice<i32>,
    holds: CudaSlice<u32>,
    slots: Vec<CompressSlot>,
    /// GPU time spent compressing (fill check, shuffle, nvCOMP), in seconds.
    pub gpu_seconds: f64,
    /// Tile bytes compressed.
    pub bytes_in: u64,
    /// Bytes of the chunks copied to the host.
    pub bytes_out: u64,
}

/// The device address of `slice`.
fn addr<T>(slice: &CudaSlice<T>, stream: &Arc<CudaStream>) -> CUdeviceptr {
    slice.device_ptr(stream).0
}

/// Why `codec` cannot run on the GPU for `plan`, if it cannot.
pub(crate) fn unsupported(codec: DeviceCodec, plan: &StreamPlan) -> Option<String> {
    let tile = plan.tile_bytes();
    let slot = plan.slot_bytes();
    if codec == DeviceCodec::Zstd && tile > Nvcomp::max_chunk(Algorithm::Zstd) as u64 {
        return Some(format!(
            "a tile of {tile} bytes is larger than the {} bytes nvCOMP compresses into one zstd frame; use smaller tiles or blosc-zstd",
            Nvcomp::max_chunk(Algorithm::Zstd)
        ));
    }
    if tile > u32::MAX as u64 - 16 {
        return Some(format!(
            "a tile of {tile} bytes is too large for a blosc frame"
        ));
    }
    if !slot.is_multiple_of(4) {
        return Some(format!(
            "tiles {slot} bytes apart do not start on the 4-byte boundaries nvCOMP reads from"
        ));
    }
    None
}

impl EpochCompressor {
    /// A compressor of `plan`'s epochs with `codec`, padding `fill`, for
    /// the two slots' tiles at `tiles`; compiles its kernels and allocates
    /// everything now, so that no epoch pays for it.
    pub fn new(
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        nvcomp: Arc<Nvcomp>,
        codec: DeviceCodec,
        plan: &StreamPlan,
        fill: &[u8],
        tiles: [CUdeviceptr; 2],
    ) -> Result<EpochCompressor, StreamError> {
        let e = plan.spec().dtype().size();
        let chunks = ChunkPlan::new(codec, plan.tile_bytes(), plan.slot_bytes(), plan.m());
        let algorithm = match codec {
            DeviceCodec::BloscLz4 { .. } => Algorithm::Lz4,
            _ => Algorithm::Zstd,
        };
        let nv = |e: String| StreamError::gpu(e);
        let batch = chunks.batch() as usize;
        let sizes = nvcomp
            .batch_sizes(
                algorithm,
                batch,
                chunks.block as usize,
                (chunks.tile_bytes * chunks.tiles) as usize,
                stream.cu_stream() as *mut _,
            )
            .map_err(nv)?;
        let align = sizes.output_align.max(16) as u64;
        let stride = (sizes.max_output as u64).next_multiple_of(align);
        let word = fill_word(&chunks, e);
        let mut pattern = [0u8; 8];
        for (i, b) in pattern.iter_mut().enumerate() {
            *b = fill.get(i % e.max(1)).copied().unwrap_or(0);
        }
        let fill = u64::from_le_bytes(pattern) & (u64::MAX >> (64 - 8 * word as u32));
        let typesize = match codec {
            DeviceCodec::BloscLz4 { typesize } | DeviceCodec::BloscZstd { typesize } => typesize,
            DeviceCodec::Zstd => 1,
        };
        let kernel = |name, source: String| gpu.kernel(name, &source).map_err(gpu_error);
        let kernels = [
            kernel(FILL_KERNEL, fill_source(&chunks, word))?,
            kernel(SHUFFLE_KERNEL, shuffle_source(&chunks, typesize))?,
            kernel(GATHER_KERNEL, gather_source())?,
        ];
        let grid = gpu.multiprocessors().map_err(gpu_error)? * 32;
        let alloc = |n: usize| {
            // SAFETY: each alloc below is written before it is read: scratch by the
            // kernels and nvCOMP, arrays by the copies right after.
            let memory = unsafe { stream.alloc::<u8>(n.max(1)) };
            memory.map_err(driver("allocating GPU compression's memory"))
        };
        if sizes.temp_align > 256 {
            return Err(StreamError::gpu(format!(
                "nvCOMP asks for scratch memory aligned to {} bytes; CUDA's allocations are aligned to 256",
                sizes.temp_align
            )));
        }
        let temp = (alloc(sizes.temp)?, sizes.temp);
        let shuffled = match chunks.shuffles() {
            true => Some(alloc((chunks.slot_bytes * chunks.tiles) as usize)?),
            false => None,
        };
        let compressed = alloc(stride as usize * batch)?;
        let block_sizes: Vec<u64> = (0..batch as u64).map(|b| chunks.block_at(b).1).collect();
        let base = addr(&compressed, stream);
        let output_addrs: Vec<u64> = (0..batch as u64).map(|b| base + b * stride).collect();
        let to_device = |v: &[u64]| {
            stream
                .memcpy_stod(v)
                .map_err(driver("copying GPU compression's tables"))
        };
        let sizes_dev = to_device(&block_sizes)?;
        let outputs = to_device(&output_addrs)?;
        let input_base = |s: usize| match &shuffled {
            Some(buffer) => addr(buffer, stream),
            None => tiles[s],
        };
        let packed_bytes = chunks.packed_bound(stride) as usize;
        let (ops, literals) = chunks.frames_bound();
        let upload_bytes = (ops * 32 + literals) as usize;
        let report_bytes = batch * 12 + chunks.tiles as usize * 4;
        let event = |timing: bool| {
            let flags = timing.then_some(CUevent_flags::CU_EVENT_DEFAULT);
            gpu.context()
                .new_event(flags)
                .map_err(driver("creating a CUDA event"))
        };
        let mut slots = vec![];
        for (s, &tile_base) in tiles.iter().enumerate() {
            let addresses: Vec<u64> = (0..batch as u64)
                .map(|b| input_base(s) + chunks.block_at(b).0)
                .collect();
            if let Some(a) = addresses
                .iter()
                .find(|&&a| a % sizes.input_align as u64 != 0)
            {
                return Err(StreamError::gpu(format!(
                    "a block at {a:#x} is not aligned to the {} bytes nvCOMP reads from",
                    sizes.input_align
                )));
            }
            slots.push(CompressSlot {
                packed: alloc(packed_bytes)?,
                report: PinnedBuffer::new(gpu, report_bytes).map_err(gpu_error)?,
                upload_host: PinnedBuffer::new(gpu, upload_bytes).map_err(gpu_error)?,
                upload: alloc(upload_bytes)?,
                inputs: to_device(&addresses)?,
                sized: event(false)?,
                begun: event(true)?,
                ended: event(true)?,
                pending: None,
                tiles: tile_base,
            });
        }
        // SAFETY: as for the scratch above.
        let statuses = unsafe { stream.alloc::<i32>(batch) }
            .map_err(driver("allocating GPU compression's memory"))?;
        // SAFETY: as above.
        let out_sizes = unsafe { stream.alloc::<u64>(batch) }
            .map_err(driver("allocating GPU compression's memory"))?;
        let holds = stream
            .alloc_zeros::<u32>(chunks.tiles as usize)
            .map_err(driver("allocating GPU compression's memory"))?;
        stream
            .synchronize()
            .map_err(driver("setting up GPU compression"))?;
        let mut compressor = EpochCompressor {
            nvcomp,
            algorithm,
            chunks,
            fill,
            kernels,
            grid,
            stride,
            temp,
            shuffled,
            compressed,
            sizes: sizes_dev,
            outputs,
            out_sizes,
            statuses,
            holds,
            slots,
            gpu_seconds: 0.0,
            bytes_in: 0,
            bytes_out: 0,
        };
        compressor.warm_up(stream)?;
        Ok(compressor)
    }

    /// Compresses slot 0's tiles once and forgets them: nvCOMP loads its
    /// kernels on its first call, which no epoch should pay for (nor a
    /// measurement of `--codec-on auto`).
    fn warm_up(&mut self, stream: &Arc<CudaStream>) -> Result<(), StreamError> {
        self.start(stream, 0, 0, 0)?;
        self.slots[0]
            .sized
            .synchronize()
            .map_err(driver("compressing on the GPU for the first time"))?;
        self.frames(0)?;
        self.slots[0].pending = None;
        self.bytes_in = 0;
        Ok(())
    }

    /// Tile bytes per second the GPU compressed slot `s`'s epoch at
    /// (waiting for it).
    pub fn measure_epoch(&self, s: usize) -> Result<f64, StreamError> {
        let slot = &self.slots[s];
        slot.sized
            .synchronize()
            .map_err(driver("compressing an epoch on the GPU"))?;
        let ms = slot
            .begun
            .elapsed_ms(&slot.ended)
            .map_err(driver("timing the compression"))?;
        let bytes = (self.chunks.tile_bytes * self.chunks.tiles) as f64;
        Ok(bytes / (f64::from(ms) / 1e3).max(1e-9))
    }

    /// Most bytes an epoch's packed chunks take (the host buffers' size).
    pub fn packed_bound(&self) -> u64 {
        self.chunks.packed_bound(self.stride)
    }

    /// A launch of `blocks` blocks.
    fn config(blocks: u64) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (blocks.clamp(1, 1 << 30) as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Starts compressing epoch `index` (`planes` planes) in slot `s`'s
    /// tiles on `stream`, after whatever `stream` already runs (the scatter).
    pub fn start(
        &mut self,
        stream: &Arc<CudaStream>,
        s: usize,
        index: u64,
        planes: u64,
    ) -> Result<(), StreamError> {
        let c = self.chunks;
        let slot = &self.slots[s];
        let rec = driver("recording an event");
        slot.begun.record(stream).map_err(&rec)?;
        stream
            .memset_zeros(&mut self.holds)
            .map_err(driver("clearing the tile flags"))?;
        let tiles = slot.tiles;
        let holds = addr(&self.holds, stream);
        let count = c.tiles;
        let units = c.tile_bytes * c.tiles;
        let blocks = units.div_ceil(THREADS as u64).min(self.grid as u64);
        let mut launch = stream.launch_builder(&self.kernels[0]);
        launch.arg(&tiles).arg(&holds).arg(&self.fill).arg(&count);
        // SAFETY: the arguments match `retile_fill_check`; `tiles` holds
        // the epoch and `holds` one flag per tile.
        unsafe { launch.launch(Self::config(blocks)) }
            .map_err(driver("launching the fill check"))?;
        if let Some(shuffled) = &self.shuffled {
            let out = addr(shuffled, stream);
            let mut launch = stream.launch_builder(&self.kernels[1]);
            launch.arg(&tiles).arg(&out).arg(&count);
            // SAFETY: the arguments match `retile_shuffle`; both buffers
            // hold an epoch of slots.
            unsafe { launch.launch(Self::config(blocks)) }
                .map_err(driver("launching the byte shuffle"))?;
        }
        let temp = (addr(&self.temp.0, stream), self.temp.1);
        // SAFETY: every array holds the batch's entries, each input block
        // lies in the epoch, each output slot holds nvCOMP's maximum.
        unsafe {
            self.nvcomp.compress(
                self.algorithm,
                addr(&slot.inputs, stream),
                addr(&self.sizes, stream),
                c.block as usize,
                c.batch() as usize,
                temp,
                addr(&self.outputs, stream),
                addr(&self.out_sizes, stream),
                addr(&self.statuses, stream),
                stream.cu_stream() as *mut _,
            )
        }
        .map_err(StreamError::gpu)?;
        slot.ended.record(stream).map_err(&rec)?;
        let batch = c.batch() as usize;
        let report = &mut self.slots[s].report;
        let (sizes, rest) = report.as_mut().split_at_mut(batch * 8);
        let (statuses, holds_host) = rest.split_at_mut(batch * 4);
        let copy = driver("copying the compressed sizes to the host");
        // SAFETY: `report` is pinned, stays in the slot, and is read only
        // after `sized` completes.
        unsafe {
            cu::memcpy_dtoh_async(sizes, addr(&self.out_sizes, stream), stream.cu_stream())
                .map_err(&copy)?;
            cu::memcpy_dtoh_async(statuses, addr(&self.statuses, stream), stream.cu_stream())
                .map_err(&copy)?;
            cu::memcpy_dtoh_async(holds_host, holds, stream.cu_stream()).map_err(&copy)?;
        }
        let slot = &mut self.slots[s];
        slot.sized.record(stream).map_err(&rec)?;
        slot.pending = Some((index, planes));
        self.bytes_in += units;
        Ok(())
    }

    /// Whether slot `s` holds an epoch compressed and not yet packed.
    pub fn pending(&self, s: usize) -> bool {
        self.slots[s].pending.is_some()
    }

    /// Packs slot `s`'s compressed epoch on `compute` and starts copying
    /// its chunks into `host` on `copy_out` (the caller records when that
    /// is done); `None` when the slot holds none.
    pub fn finish(
        &mut self,
        compute: &Arc<CudaStream>,
        copy_out: &Arc<CudaStream>,
        s: usize,
        host: &mut PinnedBuffer,
        packed_event: &CudaEvent,
    ) -> Result<Option<Packed>, StreamError> {
        let Some((index, planes)) = self.slots[s].pending.take() else {
            return Ok(None);
        };
        let slot = &self.slots[s];
        slot.sized
            .synchronize()
            .map_err(driver("compressing an epoch on the GPU"))?;
        let ms = slot
            .begun
            .elapsed_ms(&slot.ended)
            .map_err(driver("timing the compression"))?;
        self.gpu_seconds += f64::from(ms) / 1e3;
        let frames = self.frames(s)?;
        let c = self.chunks;
        let slot = &mut self.slots[s];
        let ops_bytes = frames.ops.len() * 32;
        let upload = slot.upload_host.as_mut();
        for (k, op) in frames.ops.iter().enumerate() {
            let words = [op.source as u64, op.from, op.to, op.len];
            for (w, v) in words.iter().enumerate() {
                upload[k * 32 + w * 8..][..8].copy_from_slice(&v.to_le_bytes());
            }
        }
        upload[ops_bytes..][..frames.literals.len()].copy_from_slice(&frames.literals);
        let used = ops_bytes + frames.literals.len();
        let up = addr(&slot.upload, compute);
        // SAFETY: `upload_host` is pinned and is written again only after
        // this slot's next `sized`, which the compute stream records after
        // this copy.
        unsafe {
            cu::memcpy_htod_async(up, &slot.upload_host.as_ref()[..used], compute.cu_stream())
        }
        .map_err(driver("copying the chunks' layout to the GPU"))?;
        let count = frames.ops.len() as u64;
        let literal = up + ops_bytes as u64;
        let input = match &self.shuffled {
            Some(buffer) => addr(buffer, compute),
            None => slot.tiles,
        };
        let compressed = addr(&self.compressed, compute);
        let packed = addr(&slot.packed, compute);
        if count > 0 {
            let mut launch = compute.launch_builder(&self.kernels[2]);
            launch
                .arg(&up)
                .arg(&count)
                .arg(&literal)
                .arg(&input)
                .arg(&compressed)
                .arg(&slot.tiles)
                .arg(&packed);
            // SAFETY: the arguments match `retile_gather`; every copy lies
            // inside its buffers (`Frames` is made from their sizes).
            unsafe { launch.launch(Self::config(count.min(1 << 16))) }
                .map_err(driver("launching the gather"))?;
        }
        packed_event
            .record(compute)
            .map_err(driver("recording an event"))?;
        copy_out
            .wait(packed_event)
            .map_err(driver("ordering the copy out after the gather"))?;
        if frames.total > 0 {
            let dst = &mut host.as_mut()[..frames.total as usize];
            // SAFETY: `host` is pinned and the caller keeps it until the
            // copy, recorded after this on `copy_out`, completes.
            unsafe { cu::memcpy_dtoh_async(dst, packed, copy_out.cu_stream()) }
                .map_err(driver("copying compressed chunks to the host"))?;
        }
        self.bytes_out += frames.total;
        Ok(Some(Packed {
            index,
            planes,
            encoded: EncodedChunks {
                codec: c.codec,
                chunks: frames.chunks,
            },
        }))
    }

    /// Slot `s`'s chunks laid out from the sizes that came back.
    fn frames(&self, s: usize) -> Result<Frames, StreamError> {
        let c = self.chunks;
        let batch = c.batch() as usize;
        let report = self.slots[s].report.as_ref();
        let word = |at: usize, n: usize| -> u64 {
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(&report[at..at + n]);
            u64::from_le_bytes(w)
        };
        let sizes: Vec<u64> = (0..batch).map(|b| word(b * 8, 8)).collect();
        for b in 0..batch {
            let status = word(batch * 8 + b * 4, 4) as u32 as i32;
            if status != 0 {
                return Err(StreamError::gpu(format!(
                    "nvCOMP could not compress block {b} of an epoch: {}",
                    self.nvcomp.status_text(status)
                )));
            }
        }
        let holds: Vec<bool> = (0..c.tiles as usize)
            .map(|t| word(batch * 12 + t * 4, 4) != 0)
            .collect();
        c.frames(&sizes, &holds, self.stride)
            .map_err(StreamError::gpu)
    }
}
