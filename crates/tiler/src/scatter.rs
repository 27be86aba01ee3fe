//! Where each input byte of an epoch goes in the epoch's tile buffer, and
//! the copies that put it there: whole runs, never one element at a time
//! with divisions.
//!
//! An epoch's input is a sequence of *rows* (runs along the fastest
//! dimension). A row splits into *segments*, one per tile it crosses; the
//! rows of one *group* (consecutive rows inside the same tile of the
//! second-fastest dimension) land in consecutive rows of the same tiles, so a
//! group is copied tile column by tile column as a small 2-D block — the
//! in-register transpose when the fastest tile extent is tiny.

use retile_plan::{StreamPlan, TileMap};

use crate::kernels::{copy_columns, copy_runs, store_fence, RegisterTranspose};

/// Bytes each tile receives per block of input rows, at least: one whole
/// cache line, so that narrow segments fill the lines they start (and
/// in-register transposes store whole lines), while the block's input rows
/// stay few enough for the prefetchers to follow.
const BLOCK_BYTES: usize = 64;
/// Input rows copied together, at least (a multiple of every transpose
/// block height): few enough that the hardware prefetcher tracks them all.
const ROW_BLOCK: usize = 16;

/// The epoch geometry, in bytes and rows.
#[derive(Debug, Clone)]
pub(crate) struct Geometry {
    /// Bytes per element.
    esize: usize,
    /// Bytes of one input row.
    pub row_bytes: usize,
    /// Bytes of a tile's segment of a row (fastest tile extent × element).
    seg_bytes: usize,
    /// Bytes from one slot's start to the next's.
    pub slot_bytes: usize,
    /// Extent (within an epoch) and tile extent of each row dimension, slowest first.
    row_dims: Vec<(usize, usize)>,
    /// Where each element goes.
    map: TileMap,
    /// How tile columns of one-element segments move, when in registers.
    transpose: Option<RegisterTranspose>,
}

impl Geometry {
    pub fn new(plan: &StreamPlan) -> Geometry {
        let spec = plan.spec();
        let esize = spec.dtype().size();
        let tile: Vec<usize> = spec.tile().iter().map(|&n| n as usize).collect();
        let rank = tile.len();
        let (row_elems, row_dims) = if rank == 1 {
            (tile[0], Vec::new())
        } else {
            let mut dims = vec![(tile[0], tile[0])];
            dims.extend((1..rank - 1).map(|d| (spec.shape()[d] as usize, tile[d])));
            (spec.shape()[rank - 1] as usize, dims)
        };
        let seg_bytes = tile[rank - 1] * esize;
        Geometry {
            esize,
            row_bytes: row_elems * esize,
            seg_bytes,
            slot_bytes: plan.slot_bytes() as usize,
            transpose: RegisterTranspose::plan(seg_bytes),
            row_dims,
            map: plan.tile_map().clone(),
        }
    }

    /// For row `r`: the byte offset of its first segment in the buffer, and
    /// how many rows from `r` on form a group.
    fn row_place(&self, r: usize) -> (usize, usize) {
        let mut rest = r;
        let mut offset = 0;
        let mut group = 1;
        for (d, &(extent, n)) in self.row_dims.iter().enumerate().rev() {
            let x = rest % extent;
            rest /= extent;
            if d == self.row_dims.len() - 1 {
                group = (n - x % n).min(extent - x);
            }
            offset += self.map.place(d, x as u64) as usize;
        }
        (offset * self.esize, group)
    }

    /// Copies input bytes `[start, start + src.len())` of the epoch into `buf`.
    /// `parallel` runs whole groups on the current rayon pool.
    pub fn scatter(&self, buf: &mut [u8], start: usize, src: &[u8], parallel: bool) {
        let end = start + src.len();
        let mut pos = start;
        if !pos.is_multiple_of(self.row_bytes) {
            let stop = end.min((pos / self.row_bytes + 1) * self.row_bytes);
            self.partial_row(buf, pos, &src[..stop - start], stop);
            pos = stop;
        }
        let mut groups = Vec::new();
        while pos + self.row_bytes <= end {
            let r = pos / self.row_bytes;
            let (_, group) = self.row_place(r);
            let rows = group.min((end - pos) / self.row_bytes);
            groups.push((r, rows));
            pos += rows * self.row_bytes;
        }
        let target = Target(buf.as_mut_ptr(), buf.len());
        let copy = |&(r, rows): &(usize, usize)| {
            let offset = r * self.row_bytes - start;
            self.group(
                target,
                r,
                rows,
                &src[offset..offset + rows * self.row_bytes],
            );
        };
        if parallel && groups.len() > 1 {
            use rayon::prelude::*;
            groups.par_iter().for_each(copy);
        } else {
            groups.iter().for_each(copy);
        }
        if pos < end {
            self.partial_row(buf, pos, &src[pos - start..], end);
        }
    }

    /// Copies part of one row, byte-exact: `src` holds input bytes `[pos, stop)`.
    fn partial_row(&self, buf: &mut [u8], pos: usize, src: &[u8], stop: usize) {
        let r = pos / self.row_bytes;
        let (base, _) = self.row_place(r);
        let row_start = r * self.row_bytes;
        let mut at = pos;
        while at < stop {
            let in_row = at - row_start;
            let column = in_row / self.seg_bytes;
            let seg_end = (row_start + (column + 1) * self.seg_bytes)
                .min(row_start + self.row_bytes)
                .min(stop);
            let dst = base + column * self.slot_bytes + in_row % self.seg_bytes;
            buf[dst..dst + seg_end - at].copy_from_slice(&src[at - pos..seg_end - pos]);
            at = seg_end;
        }
    }

    /// Copies `rows` whole rows from row `r` on (a group, or part of one):
    /// the full tile columns as one block, then the ragged last column.
    fn group(&self, target: Target, r: usize, rows: usize, src: &[u8]) {
        let (base, _) = self.row_place(r);
        let full = self.row_bytes / self.seg_bytes;
        let last_width = self.row_bytes % self.seg_bytes;
        let columns = full + usize::from(last_width > 0);
        let dst_end = base
            + (columns - 1) * self.slot_bytes
            + (rows - 1) * self.seg_bytes
            + self.seg_bytes.min(self.row_bytes);
        assert!(
            dst_end <= target.1 && rows * self.row_bytes <= src.len(),
            "a group lies inside its buffers"
        );
        let row_block = ROW_BLOCK.max(BLOCK_BYTES / self.seg_bytes.max(1));
        // SAFETY: the block was just checked to lie in both buffers, and the
        // groups of one scatter write disjoint rows of their tiles.
        unsafe {
            for first in (0..rows).step_by(row_block) {
                let n = row_block.min(rows - first);
                let dst = target.0.add(base + first * self.seg_bytes);
                let from = src.as_ptr().add(first * self.row_bytes);
                copy_columns(
                    dst,
                    self.slot_bytes,
                    from,
                    self.row_bytes,
                    n,
                    full,
                    self.seg_bytes,
                    self.transpose,
                );
                if last_width > 0 {
                    copy_runs(
                        dst.add(full * self.slot_bytes),
                        self.seg_bytes,
                        from.add(full * self.seg_bytes),
                        self.row_bytes,
                        n,
                        last_width,
                    );
                }
            }
        }
        store_fence();
    }
}

/// The epoch buffer, shared by the threads of one scatter; each writes its own rows.
#[derive(Clone, Copy)]
pub(crate) struct Target(pub *mut u8, pub usize);

// SAFETY: a Target is only used inside `scatter`, whose groups write disjoint byte ranges.
unsafe impl Send for Target {}
// SAFETY: as above.
unsafe impl Sync for Target {}
