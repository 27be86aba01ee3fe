//! The way pageable input reaches the GPU: a small ring of pinned parts.
//!
//! The driver copies pageable memory to the GPU through a small buffer of
//! its own, on one thread. Instead, the stream copies each part of the
//! input into a pinned part of this ring on every core, and the part goes up
//! by DMA while the next is filled. A part is written again only once its
//! copy has completed. The ring holds a few tens of megabytes, whatever the
//! epoch's size: pinning memory is slow (the OS locks every page), and a
//! process that pins gigabytes before its first frame loses a second.

use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{result as cu, CudaEvent, CudaStream};
use retile_gpu::{Gpu, PinnedBuffer};
use retile_plan::StreamError;

use crate::error::{driver, gpu_error};

/// Bytes of one pinned part: large enough that a copy's fixed cost is
/// small beside its bytes, small enough that the first part goes up soon.
pub(crate) const PART_BYTES: usize = 16 << 20;

/// Parts in the ring: one being filled while the others go up.
pub(crate) const PARTS: usize = 4;

/// Fewest bytes a thread copies into a part at once: a part is cut into
/// one piece per thread of the pool, but none smaller than this.
const PIECE: usize = 256 << 10;

/// One pinned part and the event after its last copy to the GPU.
struct Part {
    buffer: PinnedBuffer,
    sent: CudaEvent,
}

/// A ring of pinned parts that stage bytes bound for consecutive device
/// addresses; see the module's documentation.
pub(crate) struct StagingRing {
    parts: Vec<Part>,
    /// The part being filled.
    current: usize,
    /// Bytes in the current part.
    filled: usize,
    /// Where the current part's first byte goes on the GPU.
    dst: CUdeviceptr,
}

impl StagingRing {
    /// A ring of `parts` parts of `part_bytes` bytes pinned for `gpu`.
    pub(crate) fn new(gpu: &Gpu, parts: usize, part_bytes: usize) -> Result<Self, StreamError> {
        let ctx = gpu.context();
        let parts = (0..parts.max(1))
            .map(|_| {
                Ok(Part {
                    buffer: PinnedBuffer::new(gpu, part_bytes.max(1)).map_err(gpu_error)?,
                    sent: ctx
                        .new_event(None)
                        .map_err(driver("creating a CUDA event"))?,
                })
            })
            .collect::<Result<Vec<_>, StreamError>>()?;
        Ok(StagingRing {
            parts,
            current: 0,
            filled: 0,
            dst: 0,
        })
    }

    /// Stages `src` for device address `dst` and up, sending each part up
    /// on `stream` as it fills; the last part waits for more bytes or for
    /// [`StagingRing::flush`].
    pub(crate) fn push(
        &mut self,
        mut src: &[u8],
        mut dst: CUdeviceptr,
        stream: &Arc<CudaStream>,
    ) -> Result<(), StreamError> {
        if self.filled > 0 && dst != self.dst + self.filled as u64 {
            self.flush(stream)?;
        }
        while !src.is_empty() {
            if self.filled == 0 {
                // the part's last copy up must be done before it is written again
                self.parts[self.current]
                    .sent
                    .synchronize()
                    .map_err(driver("copying staged input to the GPU"))?;
                self.dst = dst;
            }
            let buffer = self.parts[self.current].buffer.as_mut();
            let n = (buffer.len() - self.filled).min(src.len());
            copy_parallel(&mut buffer[self.filled..self.filled + n], &src[..n]);
            self.filled += n;
            (src, dst) = (&src[n..], dst + n as u64);
            if self.filled == buffer.len() {
                self.flush(stream)?;
            }
        }
        Ok(())
    }

    /// Sends the current part's bytes up on `stream`; the bytes are on the
    /// GPU once `stream` has run what it holds now.
    pub(crate) fn flush(&mut self, stream: &Arc<CudaStream>) -> Result<(), StreamError> {
        if self.filled == 0 {
            return Ok(());
        }
        let part = &self.parts[self.current];
        // SAFETY: the part is pinned, owned by the ring, and not written
        // again before `sent`, recorded right after this copy, completes.
        unsafe {
            cu::memcpy_htod_async(
                self.dst,
                &part.buffer.as_ref()[..self.filled],
                stream.cu_stream(),
            )
        }
        .map_err(driver("copying staged input to the GPU"))?;
        part.sent
            .record(stream)
            .map_err(driver("recording an event"))?;
        self.current = (self.current + 1) % self.parts.len();
        self.filled = 0;
        Ok(())
    }
}

/// Copies `src` into `dst` on the threads of the global pool, a few
/// megabytes each: one thread alone copies at a fraction of what the memory
/// and the bus move.
fn copy_parallel(dst: &mut [u8], src: &[u8]) {
    use rayon::prelude::*;
    if src.len() < 2 * PIECE {
        dst.copy_from_slice(src);
        return;
    }
    let part = src.len().div_ceil(rayon::current_num_threads()).max(PIECE);
    dst.par_chunks_mut(part)
        .zip(src.par_chunks(part))
        .for_each(|(d, s)| d.copy_from_slice(s));
}
