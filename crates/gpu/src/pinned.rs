//! Page-locked host memory: buffers the GPU copies to and from by DMA, and
//! a thread that makes them while a stream runs (the OS locks every page of
//! them, slowly: a process that pins gigabytes before its first frame loses
//! a second).

use std::alloc::{alloc, dealloc, Layout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use cudarc::driver::{sys, CudaContext};

use crate::error::{GpuError, Result};
use crate::runtime::{cuda_error, Gpu};

/// Host memory the GPU can copy to and from by DMA (page-locked, cached).
///
/// It is an allocation aligned to and backed by huge pages where the kernel
/// allows, written on every core and then registered with the driver
/// (`cuMemHostRegister`). The driver's own allocator (`cuMemHostAlloc`)
/// locks 4 KiB pages one at a time: on the 16-core device host it took
/// 0.18-0.36 s per 512 MiB, registering took 0.01-0.02 s
/// (`bench/pinned_probe.rs`), and the GPU copies to and from both at the
/// same 54 GB/s.
pub struct PinnedBuffer {
    ptr: *mut u8,
    len: usize,
    /// The allocation: `len` bytes rounded up to whole pages (at least
    /// one), aligned to a huge page.
    layout: Layout,
}

// SAFETY: the buffer owns its allocation; nothing else aliases it.
unsafe impl Send for PinnedBuffer {}
// SAFETY: shared references only read the buffer.
unsafe impl Sync for PinnedBuffer {}

/// Bytes of a page, and of a huge page (x86-64 and aarch64 with 4 KiB base pages).
const PAGE: usize = 4096;
const HUGE_PAGE: usize = 2 << 20;

impl PinnedBuffer {
    /// `len` bytes of page-locked host memory of `gpu`'s context, zeroed.
    ///
    /// ```no_run
    /// let gpu = retile_gpu::Gpu::open()?;
    /// let buffer = retile_gpu::PinnedBuffer::new(&gpu, 1 << 20)?;
    /// assert_eq!(buffer.as_ref().len(), 1 << 20);
    /// # Ok::<(), retile_gpu::GpuError>(())
    /// ```
    pub fn new(gpu: &Gpu, len: usize) -> Result<PinnedBuffer> {
        PinnedBuffer::in_context(gpu.context(), len)
    }

    /// `len` bytes of page-locked host memory of context `ctx`, zeroed on
    /// every thread of the global pool; for a thread that makes buffers
    /// while a stream runs, which holds the context but not the [`Gpu`].
    ///
    /// ```no_run
    /// let gpu = retile_gpu::Gpu::open()?;
    /// let ctx = gpu.context().clone();
    /// let made = std::thread::spawn(move || retile_gpu::PinnedBuffer::in_context(&ctx, 1 << 20));
    /// assert_eq!(made.join().unwrap()?.as_ref().len(), 1 << 20);
    /// # Ok::<(), retile_gpu::GpuError>(())
    /// ```
    pub fn in_context(ctx: &Arc<CudaContext>, len: usize) -> Result<PinnedBuffer> {
        use rayon::prelude::*;
        ctx.bind_to_thread()
            .map_err(cuda_error("binding the GPU to this thread"))?;
        let too_big = || {
            GpuError::Invalid(format!(
                "cannot allocate {len} bytes of host memory for the GPU's copies"
            ))
        };
        // whole pages: the driver locks pages, which no other allocation shares
        let size = len
            .max(1)
            .checked_next_multiple_of(PAGE)
            .ok_or_else(too_big)?;
        let layout = Layout::from_size_align(size, HUGE_PAGE).map_err(|_| too_big())?;
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { alloc(layout) };
        if ptr.is_null() {
            return Err(too_big());
        }
        // SAFETY: advice on the allocation just made, whose pages are
        // untouched; it changes no contents, and failing (no THP) is harmless.
        unsafe { libc::madvise(ptr.cast(), layout.size(), libc::MADV_HUGEPAGE) };
        // SAFETY: the allocation holds `layout.size()` writable bytes, owned here.
        let bytes = unsafe { std::slice::from_raw_parts_mut(ptr, layout.size()) };
        // written on every core: the pages exist before the driver locks them
        bytes.par_chunks_mut(4 << 20).for_each(|part| part.fill(0));
        // SAFETY: the range is the allocation, which outlives the
        // registration (`drop` unregisters before it frees).
        let registered =
            unsafe { sys::cuMemHostRegister_v2(ptr.cast(), layout.size(), 0) }.result();
        if let Err(e) = registered {
            // SAFETY: allocated above with `layout`, freed once, never registered.
            unsafe { dealloc(ptr, layout) };
            return Err(cuda_error("locking host memory for the GPU's copies")(e));
        }
        Ok(PinnedBuffer { ptr, len, layout })
    }
}

impl AsRef<[u8]> for PinnedBuffer {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr` owns `len` initialised bytes for the buffer's life.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl AsMut<[u8]> for PinnedBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` was allocated with `layout` and registered by
        // `in_context`; it is unregistered, then freed, once.
        unsafe {
            let _ = sys::cuMemHostUnregister(self.ptr.cast());
            dealloc(self.ptr, self.layout);
        }
    }
}

/// Pinned buffers made one after another on a thread of their own, each
/// handed over as soon as it is made. Dropping the maker stops it after the
/// buffer in hand and waits for its thread, so that no allocation outlives
/// the stream that asked for it.
///
/// ```no_run
/// let gpu = retile_gpu::Gpu::open()?;
/// let mut maker = retile_gpu::PinnedMaker::start(&gpu, 2, 1 << 20);
/// let first = maker.next().expect("two buffers are coming")?;
/// assert_eq!(first.as_ref().len(), 1 << 20);
/// # Ok::<(), retile_gpu::GpuError>(())
/// ```
pub struct PinnedMaker {
    made: Receiver<Result<PinnedBuffer>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PinnedMaker {
    /// Starts making `count` buffers of `len` bytes for `gpu`'s context.
    pub fn start(gpu: &Gpu, count: usize, len: usize) -> PinnedMaker {
        let (send, made) = sync_channel(count);
        let stop = Arc::new(AtomicBool::new(false));
        let (ctx, stopped) = (gpu.context().clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for _ in 0..count {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let buffer = PinnedBuffer::in_context(&ctx, len);
                let failed = buffer.is_err();
                if send.send(buffer).is_err() || failed {
                    return;
                }
            }
        });
        PinnedMaker {
            made,
            stop,
            thread: Some(thread),
        }
    }
}

impl Iterator for PinnedMaker {
    type Item = Result<PinnedBuffer>;

    /// The next buffer, waiting until it is made; `None` once every buffer
    /// has been handed over.
    ///
    /// ```no_run
    /// let gpu = retile_gpu::Gpu::open()?;
    /// let mut maker = retile_gpu::PinnedMaker::start(&gpu, 1, 4096);
    /// assert!(maker.next().is_some());
    /// assert!(maker.next().is_none());
    /// # Ok::<(), retile_gpu::GpuError>(())
    /// ```
    fn next(&mut self) -> Option<Result<PinnedBuffer>> {
        self.made.recv().ok()
    }
}

impl Drop for PinnedMaker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
