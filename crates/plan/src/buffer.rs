//! Host memory for tiles: epoch buffers aligned to huge pages (and so to
//! cache lines, which whole-line non-temporal stores need), and buffers
//! filled with the fill value before any hot path touches them.

use std::alloc::{alloc, dealloc, Layout};
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use rayon::prelude::*;

use crate::error::StreamError;

/// Bytes of a huge page (x86-64 and aarch64 with 4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;
/// Bytes of a cache line.
const LINE: usize = 64;

/// One epoch of tiles in host memory: aligned to a huge page when it spans
/// one (to a cache line otherwise), backed by huge pages where the kernel
/// can, and filled with the fill value when made.
///
/// ```
/// let buffer = retile_plan::EpochBuffer::new(4096, &[7, 0])?;
/// assert_eq!(buffer.len(), 4096);
/// assert_eq!(&buffer[..4], &[7, 0, 7, 0]);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub struct EpochBuffer {
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
}

// SAFETY: an EpochBuffer owns its allocation, like a Vec<u8>.
unsafe impl Send for EpochBuffer {}
// SAFETY: shared references only read the allocation, like a Vec<u8>'s.
unsafe impl Sync for EpochBuffer {}

impl EpochBuffer {
    /// `bytes` bytes of the repeated element `fill`, written now by the
    /// threads of the current pool so that no page fault lands in the hot path.
    ///
    /// ```
    /// use retile_plan::EpochBuffer;
    /// let buffer = EpochBuffer::new(8, &[1, 2])?;
    /// assert_eq!(&buffer[..], &[1, 2, 1, 2, 1, 2, 1, 2]);
    /// assert_eq!(buffer.as_ptr() as usize % 64, 0); // a cache line at least
    /// let err = EpochBuffer::new(usize::MAX, &[0]).err().unwrap();
    /// assert!(err.to_string().contains("cannot allocate an epoch buffer"));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn new(bytes: usize, fill: &[u8]) -> Result<EpochBuffer, StreamError> {
        EpochBuffer::filled_by(bytes, fill, true)
    }

    /// [`EpochBuffer::new`] filled by the calling thread alone: for a
    /// buffer made while the caller holds a lock that another task of its
    /// thread pool may want (a parallel fill lets the thread run such a
    /// task in the meantime, which would then wait for the lock forever).
    ///
    /// ```
    /// let stage = retile_plan::EpochBuffer::new_on_this_thread(8192, &[0])?;
    /// assert!(stage.iter().all(|&b| b == 0));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn new_on_this_thread(bytes: usize, fill: &[u8]) -> Result<EpochBuffer, StreamError> {
        EpochBuffer::filled_by(bytes, fill, false)
    }

    fn filled_by(bytes: usize, fill: &[u8], parallel: bool) -> Result<EpochBuffer, StreamError> {
        let align = if bytes >= HUGE_PAGE { HUGE_PAGE } else { LINE };
        let too_big = || {
            StreamError::Invalid(format!(
                "cannot allocate an epoch buffer of {bytes} bytes; use a smaller first tile extent or narrower planes"
            ))
        };
        let layout = Layout::from_size_align(bytes.max(1), align).map_err(|_| too_big())?;
        // SAFETY: the layout's size is not zero.
        let ptr = NonNull::new(unsafe { alloc(layout) }).ok_or_else(too_big)?;
        advise_huge_pages(ptr, bytes);
        // SAFETY: the allocation holds `bytes` bytes; MaybeUninit needs no initialisation.
        let uninit =
            unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr() as *mut MaybeUninit<u8>, bytes) };
        fill_uninit(uninit, fill, parallel);
        Ok(EpochBuffer {
            ptr,
            len: bytes,
            layout,
        })
    }
}

impl EpochBuffer {
    /// Writes the repeated element `fill` over the whole buffer again, on
    /// the current pool's threads: a buffer reused for tiles whose padding
    /// lies elsewhere.
    ///
    /// ```
    /// let mut buffer = retile_plan::EpochBuffer::new(64, &[0])?;
    /// buffer[..3].copy_from_slice(&[1, 2, 3]);
    /// buffer.refill(&[9]);
    /// assert!(buffer.iter().all(|&b| b == 9));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn refill(&mut self, fill: &[u8]) {
        // SAFETY: the allocation holds `len` initialised bytes, owned by
        // self; writing them through MaybeUninit leaves them initialised.
        let uninit = unsafe {
            std::slice::from_raw_parts_mut(self.ptr.as_ptr() as *mut MaybeUninit<u8>, self.len)
        };
        fill_uninit(uninit, fill, true);
    }

    /// A buffer of no bytes that owns no allocation.
    ///
    /// ```
    /// let buffer = retile_plan::EpochBuffer::empty();
    /// assert!(buffer.is_empty());
    /// assert_eq!(&buffer[..], &[] as &[u8]);
    /// ```
    pub fn empty() -> EpochBuffer {
        EpochBuffer {
            ptr: NonNull::dangling(),
            len: 0,
            layout: Layout::new::<()>(),
        }
    }
}

impl Deref for EpochBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the allocation holds `len` initialised bytes, owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for EpochBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl AsRef<[u8]> for EpochBuffer {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Drop for EpochBuffer {
    fn drop(&mut self) {
        if self.layout.size() > 0 {
            // SAFETY: allocated in `new` with this layout (`empty` allocates nothing).
            unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
        }
    }
}

/// `bytes` bytes of the repeated element `fill` (whose length divides
/// `bytes`), written now by the threads of the current pool.
///
/// ```
/// assert_eq!(retile_plan::filled(4, &[1, 2]), vec![1, 2, 1, 2]);
/// ```
pub fn filled(bytes: usize, fill: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes);
    fill_uninit(&mut out.spare_capacity_mut()[..bytes], fill, true);
    // SAFETY: the first `bytes` bytes were just initialised.
    unsafe { out.set_len(bytes) };
    out
}

/// Writes the repeated element `fill` over `out` (whose length it divides),
/// a megabyte per task, on the current pool's threads or (`parallel`
/// false) on this one.
fn fill_uninit(out: &mut [MaybeUninit<u8>], fill: &[u8], parallel: bool) {
    let element = fill.len().max(1);
    let uniform = fill.iter().all(|&b| b == fill[0]);
    let part_bytes = (1 << 20) / element * element;
    let write = |part: &mut [MaybeUninit<u8>]| {
        if uniform {
            part.iter_mut().for_each(|b| {
                b.write(fill[0]);
            });
        } else {
            part.iter_mut()
                .zip(fill.iter().cycle())
                .for_each(|(b, &v)| {
                    b.write(v);
                });
        }
    };
    match parallel {
        true => out.par_chunks_mut(part_bytes).for_each(write),
        false => out.chunks_mut(part_bytes).for_each(write),
    }
}

/// Bytes of memory the machine has available for new allocations
/// (`MemAvailable` of `/proc/meminfo`); `None` where it cannot tell.
///
/// ```
/// if let Some(bytes) = retile_plan::available_memory() {
///     assert!(bytes > 0);
/// }
/// ```
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Asks the kernel to back the (untouched) `bytes` at `ptr` with huge
/// pages: fewer TLB misses when tiles far apart are written in turn. Advice
/// only: where the kernel declines, the buffer works the same, slower.
fn advise_huge_pages(ptr: NonNull<u8>, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = ptr.as_ptr() as usize;
        let first = start.next_multiple_of(PAGE);
        let end = (start + bytes) / PAGE * PAGE;
        if end > first {
            // SAFETY: the range lies inside the allocation, and
            // MADV_HUGEPAGE changes no contents (the pages are untouched).
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_buffer_is_aligned_and_filled() {
        for (bytes, fill) in [
            (0, vec![7u8]),
            (10, vec![1, 2]),
            (3 << 20, vec![9, 8, 7, 6]),
        ] {
            let buf = EpochBuffer::new(bytes, &fill).unwrap();
            assert_eq!(buf.len(), bytes);
            assert_eq!(buf.as_ptr() as usize % LINE, 0);
            assert!(buf.chunks(fill.len()).all(|e| e == &fill[..]));
        }
        let big = EpochBuffer::new(HUGE_PAGE, &[0]).unwrap();
        assert_eq!(big.as_ptr() as usize % HUGE_PAGE, 0);
    }

    #[test]
    fn an_impossible_epoch_buffer_is_an_error() {
        let err = EpochBuffer::new(usize::MAX - 10, &[0]).err().unwrap();
        assert!(
            err.to_string().contains("smaller first tile extent"),
            "{err}"
        );
    }
}
