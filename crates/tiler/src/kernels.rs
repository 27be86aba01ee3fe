//! The copy kernels of the scatter: strided runs of bytes, and 2-D blocks
//! whose runs are one element wide, transposed in registers.
//!
//! A block is `rows` runs of `width` bytes read from consecutive input rows
//! (`src_stride` apart) for each of `columns` consecutive tile columns, and
//! written, column by column, into consecutive rows of the column's tile
//! (`dst_step` apart per column). With one-element runs the block is a
//! transpose: the copy planner picks a square block per register (K loads
//! of K elements, shuffled, K stores), and each column receives whole
//! 64-byte lines, streamed past the cache when aligned.

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
    // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
    unsafe {
        unsafe fn fixed<const W: usize>(
            dst: *mut u8,
            ds: usize,
            src: *const u8,
            ss: usize,
            rows: usize,
        ) {
            // SAFETY: as in `copy_runs`, whose contract its caller upholds.
            unsafe {
                for g in 0..rows {
                    let v = std::ptr::read_unaligned(src.add(g * ss) as *const [u8; W]);
                    std::ptr::write_unaligned(dst.add(g * ds) as *mut [u8; W], v);
                }
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
}

/// Copies one run, with non-temporal stores where the destination is
/// 16-byte aligned and the run a multiple of 64 bytes (tiles are not read
/// again before the sink takes them, so caching them only costs bandwidth).
///
/// # Safety
/// As [`copy_runs`].
unsafe fn stream_run(dst: *mut u8, src: *const u8, width: usize) {
    // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
    unsafe {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
            if width.is_multiple_of(64) && (dst as usize).is_multiple_of(16) {
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
}

/// Orders the non-temporal stores of this thread before later writes.
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
}

/// The in-register transpose the copy planner chose for tile columns whose
/// runs are one element wide: `units` loads of `units` elements, shuffled
/// in registers, stored as `units` vectors of `units` elements.
///
/// The planner ([`retile_copy::TransposeRequest`]) is asked for one thread
/// moving a square block from row-major to column-major order, with this
/// CPU's widest register as the widest access. The block is planned at its
/// own pitch: x86 loads and stores need no alignment, so the input's row
/// pitch and the tiles' spacing do not limit the vectors (stores bypass the
/// cache only where they are aligned, decided when the block runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RegisterTranspose {
    /// Bytes per element.
    width: usize,
    /// Elements per load and store, and loads and stores per block.
    units: usize,
}

impl RegisterTranspose {
    /// The transpose of `width`-byte elements in this CPU's widest
    /// registers, or `None` where the planner rejects it or no kernel runs
    /// its plan (then runs are copied one by one).
    pub fn plan(width: usize) -> Option<RegisterTranspose> {
        Self::plan_in(register_bits(width)?, width)
    }

    /// [`RegisterTranspose::plan`] for registers of `bits` bits.
    fn plan_in(bits: usize, width: usize) -> Option<RegisterTranspose> {
        let units = bits / 8 / width;
        retile_copy::TransposeRequest::square_in_registers(
            units as i64,
            8 * width as i64,
            bits as i64,
        )
        .then_some(RegisterTranspose { width, units })
    }
}

/// Bits of the widest register that transposes `width`-byte elements here:
/// 512 with AVX-512 (F and BW), 128 (SSE2, every x86-64) otherwise.
fn register_bits(width: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if matches!(width, 1 | 2 | 4 | 8) {
        let wide =
            std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw");
        return Some(if wide { 512 } else { 128 });
    }
    let _ = width;
    None
}

/// Copies a block of `columns` full tile columns of `rows` rows whose runs
/// are `width` bytes: column `c`, row `g` goes from
/// `src + g * src_stride + c * width` to `dst + c * dst_step + g * width`,
/// whole blocks in registers when `transpose` is given.
///
/// # Safety
/// Every run must lie inside its allocation; destinations must not overlap sources.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn copy_columns(
    dst: *mut u8,
    dst_step: usize,
    src: *const u8,
    src_stride: usize,
    rows: usize,
    columns: usize,
    width: usize,
    transpose: Option<RegisterTranspose>,
) {
    // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
    unsafe {
        let (mut done, mut tail) = (0, rows);
        #[cfg(target_arch = "x86_64")]
        if let Some(plan) = transpose {
            (done, tail) =
                simd::transpose_columns(dst, dst_step, src, src_stride, rows, columns, plan);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = transpose;
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
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    use super::RegisterTranspose;

    /// Bytes of a cache line: each column receives whole lines.
    const LINE: usize = 64;
    /// How far ahead along each input row the loads are prefetched (input
    /// rows lie in different pages, across which the hardware does not prefetch).
    const AHEAD: usize = 512;

    /// A SIMD register as the transpose uses it.
    trait Vector: Copy {
        unsafe fn zero() -> Self;
        unsafe fn store(self, p: *mut u8);
        /// A non-temporal store; `p` is aligned to the register's size.
        unsafe fn stream(self, p: *mut u8);
        /// [`Vector::stream`] with `stream`, else [`Vector::store`].
        #[inline(always)]
        unsafe fn put(self, p: *mut u8, stream: bool) {
            // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
            unsafe {
                if stream {
                    self.stream(p)
                } else {
                    self.store(p)
                }
            }
        }
        /// Interleaves the first halves, then the second halves, of `a` and
        /// `b` in units of `W` bytes.
        unsafe fn zip<const W: usize>(a: Self, b: Self) -> (Self, Self);
    }

    impl Vector for __m128i {
        #[inline(always)]
        unsafe fn zero() -> Self {
            // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
            unsafe { _mm_setzero_si128() }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut u8) {
            // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
            unsafe { _mm_storeu_si128(p as *mut __m128i, self) }
        }
        #[inline(always)]
        unsafe fn stream(self, p: *mut u8) {
            // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
            unsafe { _mm_stream_si128(p as *mut __m128i, self) }
        }
        #[inline(always)]
        unsafe fn zip<const W: usize>(a: Self, b: Self) -> (Self, Self) {
            // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
            unsafe {
                match W {
                    1 => (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b)),
                    2 => (_mm_unpacklo_epi16(a, b), _mm_unpackhi_epi16(a, b)),
                    4 => (_mm_unpacklo_epi32(a, b), _mm_unpackhi_epi32(a, b)),
                    _ => (_mm_unpacklo_epi64(a, b), _mm_unpackhi_epi64(a, b)),
                }
            }
        }
    }

    /// A 512-bit register as four 128-bit lanes: its zip interleaves within
    /// each lane, so transposing `n` of them (`n` units per lane) transposes
    /// four `n x n` blocks side by side, one per lane. Used only inside
    /// functions that enable AVX-512 (F, BW).
    #[derive(Clone, Copy)]
    struct Lanes(__m512i);

    impl Vector for Lanes {
        #[inline(always)]
        unsafe fn zero() -> Self {
            // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
            unsafe { Lanes(_mm512_setzero_si512()) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut u8) {
            // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
            unsafe { _mm512_storeu_si512(p as *mut __m512i, self.0) }
        }
        #[inline(always)]
        unsafe fn stream(self, p: *mut u8) {
            // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
            unsafe { _mm512_stream_si512(p as *mut __m512i, self.0) }
        }
        #[inline(always)]
        unsafe fn zip<const W: usize>(a: Self, b: Self) -> (Self, Self) {
            // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
            unsafe {
                let (a, b) = (a.0, b.0);
                let (lo, hi) = match W {
                    1 => (_mm512_unpacklo_epi8(a, b), _mm512_unpackhi_epi8(a, b)),
                    2 => (_mm512_unpacklo_epi16(a, b), _mm512_unpackhi_epi16(a, b)),
                    4 => (_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b)),
                    _ => (_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b)),
                };
                (Lanes(lo), Lanes(hi))
            }
        }
    }

    /// The 128-bit lanes at `rows` side by side in one register.
    #[inline(always)]
    unsafe fn gather_lanes(rows: [*const u8; 4]) -> Lanes {
        // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
        unsafe {
            let lane = |p: *const u8| _mm_loadu_si128(p as *const __m128i);
            let v = _mm512_castsi128_si512(lane(rows[0]));
            let v = _mm512_inserti32x4::<1>(v, lane(rows[1]));
            let v = _mm512_inserti32x4::<2>(v, lane(rows[2]));
            Lanes(_mm512_inserti32x4::<3>(v, lane(rows[3])))
        }
    }

    /// Transposes `K` registers of `K` units of `W` bytes: log2(K) rounds
    /// of zipping register `j` with `j + K/2` (the perfect shuffle).
    #[inline(always)]
    unsafe fn transpose<V: Vector, const K: usize, const W: usize>(regs: &mut [V; K]) {
        // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
        unsafe {
            let mut span = K;
            while span > 1 {
                let mut next = *regs;
                for j in 0..K / 2 {
                    let (lo, hi) = V::zip::<W>(regs[j], regs[j + K / 2]);
                    next[2 * j] = lo;
                    next[2 * j + 1] = hi;
                }
                *regs = next;
                span /= 2;
            }
        }
    }

    /// Transposes `K x K` blocks of `W`-byte units, `K` columns at a time
    /// down all rows, `T` blocks per step so that each column receives one
    /// whole cache line per step; with `stream` the lines bypass the cache
    /// (tiles are not read again before the sink takes them).
    #[inline(always)]
    unsafe fn blocks<const K: usize, const W: usize, const T: usize>(
        dst: *mut u8,
        dst_step: usize,
        src: *const u8,
        src_stride: usize,
        rows: usize,
        columns: usize,
        stream: bool,
    ) {
        // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
        unsafe {
            for c0 in (0..columns).step_by(K) {
                let ahead = c0 * W + AHEAD < columns * W;
                for g0 in (0..rows).step_by(K * T) {
                    let mut regs = [[__m128i::zero(); K]; T];
                    for (t, block) in regs.iter_mut().enumerate() {
                        for (i, reg) in block.iter_mut().enumerate() {
                            let row = src.add((g0 + t * K + i) * src_stride + c0 * W);
                            if ahead {
                                _mm_prefetch::<_MM_HINT_T0>(row.add(AHEAD) as *const i8);
                            }
                            *reg = _mm_loadu_si128(row as *const __m128i);
                        }
                        transpose::<__m128i, K, W>(block);
                    }
                    for j in 0..K {
                        for (t, block) in regs.iter().enumerate() {
                            block[j].put(dst.add((c0 + j) * dst_step + (g0 + t * K) * W), stream);
                        }
                    }
                }
            }
        }
    }

    /// Transposes `K x K` blocks of `W`-byte units (`K` = 64 / `W`, one
    /// line per row and per column) in 512-bit registers, one group of `N`
    /// = `K` / 4 columns at a time: register `k` of group `l` gathers, in
    /// lane `g`, row `gN + k` of columns `lN..lN + N`, and an in-lane
    /// transpose of the group's `N` registers leaves `N` whole columns. No
    /// shuffle needs an index register and a group needs `N` registers, so
    /// nothing spills to the stack (spilled stores would queue behind the
    /// streaming stores to the tiles). The plan's `K` row loads of `K`
    /// units arrive as 16-byte loads, one per lane.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn wide_blocks<const K: usize, const N: usize, const W: usize>(
        dst: *mut u8,
        dst_step: usize,
        src: *const u8,
        src_stride: usize,
        rows: usize,
        columns: usize,
        stream: bool,
    ) {
        // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
        unsafe {
            for c0 in (0..columns).step_by(K) {
                for g0 in (0..rows).step_by(K) {
                    for l in 0..4 {
                        let mut group = [Lanes::zero(); N];
                        for (k, reg) in group.iter_mut().enumerate() {
                            let row =
                                |g: usize| src.add((g0 + g * N + k) * src_stride + c0 * W + l * 16);
                            *reg = gather_lanes([row(0), row(1), row(2), row(3)]);
                        }
                        transpose::<Lanes, N, W>(&mut group);
                        for (m, column) in group.iter().enumerate() {
                            column.put(dst.add((c0 + l * N + m) * dst_step + g0 * W), stream);
                        }
                    }
                }
            }
        }
    }

    /// Transposes the whole blocks of a group as `plan` says; returns how
    /// many columns and rows it covered (the rest is left to the caller).
    /// 512-bit plans exist only where `register_bits` found AVX-512, so
    /// `wide_blocks` runs only on CPUs that have it.
    pub(super) unsafe fn transpose_columns(
        dst: *mut u8,
        dst_step: usize,
        src: *const u8,
        src_stride: usize,
        rows: usize,
        columns: usize,
        plan: RegisterTranspose,
    ) -> (usize, usize) {
        // SAFETY: the caller upholds this function's contract (its `# Safety`, or the trait's).
        unsafe {
            let RegisterTranspose { width, units } = plan;
            let step_rows = LINE / width;
            let (columns, rows) = (columns - columns % units, rows - rows % step_rows);
            let stream = (dst as usize).is_multiple_of(LINE) && dst_step.is_multiple_of(LINE);
            let (d, ds, s, ss, st) = (dst, dst_step, src, src_stride, stream);
            match (width, units) {
                (1, 64) => wide_blocks::<64, 16, 1>(d, ds, s, ss, rows, columns, st),
                (2, 32) => wide_blocks::<32, 8, 2>(d, ds, s, ss, rows, columns, st),
                (4, 16) => wide_blocks::<16, 4, 4>(d, ds, s, ss, rows, columns, st),
                (8, 8) => wide_blocks::<8, 2, 8>(d, ds, s, ss, rows, columns, st),
                (1, 16) => blocks::<16, 1, 4>(d, ds, s, ss, rows, columns, st),
                (2, 8) => blocks::<8, 2, 4>(d, ds, s, ss, rows, columns, st),
                (4, 4) => blocks::<4, 4, 4>(d, ds, s, ss, rows, columns, st),
                (8, 2) => blocks::<2, 8, 4>(d, ds, s, ss, rows, columns, st),
                _ => return (0, rows),
            }
            (columns, rows)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Register widths this CPU can run: SSE always, AVX-512 where present.
    fn register_widths(width: usize) -> Vec<usize> {
        let mut bits = vec![128];
        bits.extend(register_bits(width).filter(|&b| b > 128));
        bits
    }

    /// Copies `columns` tile columns of `rows` rows with the transpose
    /// planned for `bits`-bit registers into a buffer at byte offset
    /// `skew`, and checks every run.
    fn check_columns(bits: usize, width: usize, rows: usize, columns: usize, skew: usize) {
        let (row_bytes, tile_bytes) = (columns * width + 3 * width, 4096 + 64);
        let src: Vec<u8> = (0..rows * row_bytes)
            .map(|i| (i * 131 % 251) as u8)
            .collect();
        let mut dst = retile_plan::EpochBuffer::new(skew + columns * tile_bytes, &[0]).unwrap();
        let plan = RegisterTranspose::plan_in(bits, width);
        #[cfg(target_arch = "x86_64")]
        assert!(
            plan.is_some(),
            "{bits}-bit transposes of {width}-byte runs are planned"
        );
        // SAFETY: every run lies inside `src` and `dst`, which do not overlap.
        unsafe {
            copy_columns(
                dst.as_mut_ptr().add(skew),
                tile_bytes,
                src.as_ptr(),
                row_bytes,
                rows,
                columns,
                width,
                plan,
            );
        }
        store_fence();
        for c in 0..columns {
            for g in 0..rows {
                let from = &src[g * row_bytes + c * width..][..width];
                let to = &dst[skew + c * tile_bytes + g * width..][..width];
                assert_eq!(
                    from, to,
                    "{bits} bits, width {width}, row {g}, column {c}, skew {skew}"
                );
            }
        }
    }

    #[test]
    fn planned_transposes_move_every_run_of_every_width() {
        for width in [1, 2, 4, 8] {
            for bits in register_widths(width) {
                for (rows, columns) in [(0, 5), (7, 0), (64, 32), (64, 64), (70, 45), (128, 100)] {
                    for skew in [0, 2 * width] {
                        check_columns(bits, width, rows, columns, skew);
                    }
                }
            }
        }
    }

    #[test]
    fn the_planner_picks_square_blocks_of_the_widest_register() {
        for width in [1, 2, 4, 8] {
            let plan = RegisterTranspose::plan(width);
            #[cfg(target_arch = "x86_64")]
            {
                let plan = plan.expect("x86-64 transposes 1- to 8-byte runs in registers");
                let wide = std::is_x86_feature_detected!("avx512bw");
                assert_eq!(plan.units * width, if wide { 64 } else { 16 });
            }
            #[cfg(not(target_arch = "x86_64"))]
            assert_eq!(plan, None);
        }
        assert_eq!(RegisterTranspose::plan(3), None);
        assert_eq!(RegisterTranspose::plan(16), None);
    }
}
