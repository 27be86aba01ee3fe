//! The copy kernels of the scatter: strided runs of bytes, and 2-D blocks
//! whose runs are one to eight bytes wide, transposed in SSE registers.
//!
//! A block is `rows` runs of `width` bytes read from consecutive input rows
//! (`src_stride` apart) for each of `columns` consecutive tile columns, and
//! written, column by column, into consecutive rows of the column's tile
//! (`dst_step` apart per column). With tiny widths the block is a transpose:
//! `16 / width` rows of 16 bytes are loaded, transposed with unpack
//! instructions, and stored as `16 / width` columns of 16 bytes.

/// Copies `rows` runs of `width` bytes from `src` (stride `src_stride`) to
/// `dst` (stride `dst_stride`).
///
/// # Safety
/// Every run must lie inside its allocation; destinations must not overlap sources.
pub(crate) unsafe fn copy_runs(
    dst: *mut u8,
    dst_stride: usize,
    src: *const u8,
    src_stride: usize,
    rows: usize,
    width: usize,
) {
    unsafe fn fixed<const W: usize>(
        dst: *mut u8,
        ds: usize,
        src: *const u8,
        ss: usize,
        rows: usize,
    ) {
        for g in 0..rows {
            let v = std::ptr::read_unaligned(src.add(g * ss) as *const [u8; W]);
            std::ptr::write_unaligned(dst.add(g * ds) as *mut [u8; W], v);
        }
    }
    match width {
        1 => fixed::<1>(dst, dst_stride, src, src_stride, rows),
        2 => fixed::<2>(dst, dst_stride, src, src_stride, rows),
        4 => fixed::<4>(dst, dst_stride, src, src_stride, rows),
        8 => fixed::<8>(dst, dst_stride, src, src_stride, rows),
        _ if dst_stride == width && src_stride == width => {
            std::ptr::copy_nonoverlapping(src, dst, rows * width)
        }
        _ => {
            for g in 0..rows {
                stream_run(dst.add(g * dst_stride), src.add(g * src_stride), width);
            }
        }
    }
}

/// Copies one run, with non-temporal stores where the destination is
/// 16-byte aligned and the run a multiple of 64 bytes (tiles are not read
/// again before the sink takes them, so caching them only costs bandwidth).
///
/// # Safety
/// As [`copy_runs`].
unsafe fn stream_run(dst: *mut u8, src: *const u8, width: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        if width % 64 == 0 && (dst as usize) % 16 == 0 {
            for k in (0..width).step_by(16) {
                _mm_stream_si128(
                    dst.add(k) as *mut __m128i,
                    _mm_loadu_si128(src.add(k) as *const __m128i),
                );
            }
            return;
        }
    }
    std::ptr::copy_nonoverlapping(src, dst, width);
}

/// Orders the non-temporal stores of this thread before later writes.
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
}

/// Copies a block of `columns` full tile columns of `rows` rows whose runs
/// are `width` bytes: column `c`, row `g` goes from
/// `src + g * src_stride + c * width` to `dst + c * dst_step + g * width`.
///
/// # Safety
/// Every run must lie inside its allocation; destinations must not overlap sources.
pub(crate) unsafe fn copy_columns(
    dst: *mut u8,
    dst_step: usize,
    src: *const u8,
    src_stride: usize,
    rows: usize,
    columns: usize,
    width: usize,
) {
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if matches!(width, 1 | 2 | 4 | 8) {
        done = simd::transpose_columns(dst, dst_step, src, src_stride, rows, columns, width);
    }
    for c in done..columns {
        copy_runs(
            dst.add(c * dst_step),
            width,
            src.add(c * width),
            src_stride,
            rows,
            width,
        );
    }
    for c in 0..done {
        let tail = rows - rows % (16 / width);
        if tail < rows {
            copy_runs(
                dst.add(c * dst_step + tail * width),
                width,
                src.add(tail * src_stride + c * width),
                src_stride,
                rows - tail,
                width,
            );
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// Interleaves the low / high halves of `a` and `b` in units of `W` bytes.
    #[inline(always)]
    unsafe fn unpack<const W: usize>(a: __m128i, b: __m128i) -> (__m128i, __m128i) {
        match W {
            1 => (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b)),
            2 => (_mm_unpacklo_epi16(a, b), _mm_unpackhi_epi16(a, b)),
            4 => (_mm_unpacklo_epi32(a, b), _mm_unpackhi_epi32(a, b)),
            _ => (_mm_unpacklo_epi64(a, b), _mm_unpackhi_epi64(a, b)),
        }
    }

    /// Transposes `K = 16 / W` registers of `K` units: log2(K) rounds of
    /// pairing register `j` with `j + K/2` (the perfect shuffle).
    #[inline(always)]
    unsafe fn transpose<const K: usize, const W: usize>(regs: &mut [__m128i; K]) {
        let mut span = K;
        while span > 1 {
            let mut next = *regs;
            for j in 0..K / 2 {
                let (lo, hi) = unpack::<W>(regs[j], regs[j + K / 2]);
                next[2 * j] = lo;
                next[2 * j + 1] = hi;
            }
            *regs = next;
            span /= 2;
        }
    }

    /// Transposes whole `K x K` blocks of `W`-byte units.
    /// Transposes whole `K x K` blocks of `W`-byte units, `K` columns at a
    /// time down all rows, prefetching the rows two blocks ahead (input rows
    /// usually lie in different pages, across which the hardware does not
    /// prefetch). With `STREAM` the stores bypass the cache: worth it when
    /// the `K` columns' lines fit the write-combining buffers.
    #[inline(always)]
    unsafe fn blocks<const K: usize, const W: usize, const STREAM: bool>(
        dst: *mut u8,
        dst_step: usize,
        src: *const u8,
        src_stride: usize,
        rows: usize,
        columns: usize,
    ) {
        for c0 in (0..columns).step_by(K) {
            for g0 in (0..rows).step_by(K) {
                let mut regs = [_mm_setzero_si128(); K];
                for (i, reg) in regs.iter_mut().enumerate() {
                    let ahead = g0 + 2 * K + i;
                    if ahead < rows {
                        _mm_prefetch::<_MM_HINT_T0>(
                            src.add(ahead * src_stride + c0 * W) as *const i8
                        );
                    }
                    *reg =
                        _mm_loadu_si128(src.add((g0 + i) * src_stride + c0 * W) as *const __m128i);
                }
                transpose::<K, W>(&mut regs);
                for (j, reg) in regs.iter().enumerate() {
                    let at = dst.add((c0 + j) * dst_step + g0 * W) as *mut __m128i;
                    if STREAM {
                        _mm_stream_si128(at, *reg);
                    } else {
                        _mm_storeu_si128(at, *reg);
                    }
                }
            }
        }
    }

    /// Transposes whole `k x k` blocks (`k = 16 / width`); returns how many
    /// columns it covered (rows past the last whole block are left to the caller).
    pub(super) unsafe fn transpose_columns(
        dst: *mut u8,
        dst_step: usize,
        src: *const u8,
        src_stride: usize,
        rows: usize,
        columns: usize,
        width: usize,
    ) -> usize {
        let k = 16 / width;
        let (full_columns, full_rows) = (columns - columns % k, rows - rows % k);
        let aligned = (dst as usize) % 16 == 0 && dst_step % 16 == 0;
        match (width, aligned) {
            (1, _) => {
                blocks::<16, 1, false>(dst, dst_step, src, src_stride, full_rows, full_columns)
            }
            (2, _) => {
                blocks::<8, 2, false>(dst, dst_step, src, src_stride, full_rows, full_columns)
            }
            (4, true) => {
                blocks::<4, 4, true>(dst, dst_step, src, src_stride, full_rows, full_columns)
            }
            (4, false) => {
                blocks::<4, 4, false>(dst, dst_step, src, src_stride, full_rows, full_columns)
            }
            (_, true) => {
                blocks::<2, 8, true>(dst, dst_step, src, src_stride, full_rows, full_columns)
            }
            (_, false) => {
                blocks::<2, 8, false>(dst, dst_step, src, src_stride, full_rows, full_columns)
            }
        }
        full_columns
    }
}
