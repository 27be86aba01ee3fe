//! The scatter of an input that arrives in another order than the stored
//! one (`StreamSpec::with_input_order`): every element is placed by the
//! plan's tile map, read through the permuted input layout, with no
//! transposed copy of the input.
//!
//! The input is a sequence of *rows* along its own fastest dimension (the
//! stored dimension `f`); consecutive rows step along its second fastest
//! (the stored dimension `g`). A *block* is a few consecutive rows inside
//! one tile of `g`, cut at the tiles of `f`: each piece lands in one tile,
//! and is copied by the kernel its strides call for:
//!
//! - `f` is the stored fastest: each row's piece is one run (`copy_runs`);
//! - `g` is the stored fastest: the block is a transpose, the rows becoming
//!   runs of the tile (`copy_columns`, in registers where the CPU can);
//! - neither: element by element, strided.
//!
//! Its range is one epoch when the input's slowest dimension is the stored
//! first, else the whole stream it plans over every epoch buffer at once
//! (one slab of the input, `StreamSpec::slab`).

use retile_plan::{StreamPlan, TileMap};

use crate::kernels::{copy_columns, copy_runs, store_fence, RegisterTranspose};
use crate::scatter::Target;

/// Input rows copied together, at most (a multiple of every transpose
/// block height): few enough that the hardware prefetcher tracks them all.
const ROW_BLOCK: usize = 16;
/// Bytes each destination run of a transposed block holds, at least: one
/// whole cache line.
const LINE_BYTES: usize = 64;

/// Where every input byte of a permuted range goes.
#[derive(Debug, Clone)]
pub(crate) struct Permuted {
    /// Bytes per element.
    esize: usize,
    /// Elements of one input row (extent of the input's fastest dimension).
    row_elems: usize,
    /// The input's dimensions but the fastest, slowest first: extent in
    /// the range and the stored dimension it is.
    row_dims: Vec<(usize, usize)>,
    /// The stored dimension of the input's fastest.
    fast: usize,
    /// Where each element goes.
    map: TileMap,
    /// Bytes of one epoch buffer.
    epoch_bytes: usize,
    /// How one-element runs move, when in registers.
    transpose: Option<RegisterTranspose>,
}

/// A block of full rows: the first row of the range and how many.
type Block = (usize, usize);

impl Permuted {
    /// The scatter of `plan`'s permuted input (rank 2 or more): over one
    /// epoch when its slowest input dimension is the stored first, else
    /// over the whole stream (a slab's plan, in practice).
    pub fn new(plan: &StreamPlan) -> Permuted {
        let spec = plan.spec();
        let order = spec.input_order();
        let rank = order.len();
        let whole = !spec.epochs_in_input_order();
        let row_dims = order[..rank - 1]
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                let extent = match (i, whole) {
                    (0, false) => spec.tile()[d],
                    _ => spec.shape()[d],
                };
                (extent as usize, d)
            })
            .collect();
        let esize = spec.dtype().size();
        Permuted {
            esize,
            row_elems: spec.shape()[order[rank - 1]] as usize,
            row_dims,
            fast: order[rank - 1],
            map: plan.tile_map().clone(),
            epoch_bytes: plan.epoch_buffer_bytes() as usize,
            transpose: RegisterTranspose::plan(esize),
        }
    }

    fn row_bytes(&self) -> usize {
        self.row_elems * self.esize
    }

    /// The buffer element offset (over the epoch buffers laid end to end)
    /// of row `r`'s first element.
    fn row_base(&self, r: usize) -> usize {
        let mut rest = r;
        let mut offset = 0;
        for &(extent, d) in self.row_dims.iter().rev() {
            offset += self.map.place(d, (rest % extent) as u64) as usize;
            rest /= extent;
        }
        offset
    }

    /// The buffer element offset of element `j` of row `r`.
    fn element(&self, r: usize, j: usize) -> usize {
        self.row_base(r) + self.map.place(self.fast, j as u64) as usize
    }

    /// Copies input bytes `[start, start + src.len())` of the range into
    /// `buffers` (one epoch's, or every epoch's in order). `parallel` runs
    /// whole blocks on the current rayon pool.
    pub fn scatter(&self, buffers: &mut [&mut [u8]], start: usize, src: &[u8], parallel: bool) {
        let row_bytes = self.row_bytes();
        let end = start + src.len();
        let mut pos = start;
        if !pos.is_multiple_of(row_bytes) {
            let stop = end.min((pos / row_bytes + 1) * row_bytes);
            self.bytes(buffers, pos, &src[..stop - start]);
            pos = stop;
        }
        let mut blocks: Vec<Block> = Vec::new();
        while pos + row_bytes <= end {
            let r = pos / row_bytes;
            let rows = self.block_rows(r).min((end - pos) / row_bytes);
            blocks.push((r, rows));
            pos += rows * row_bytes;
        }
        let targets: Vec<Target> = buffers
            .iter_mut()
            .map(|b| Target(b.as_mut_ptr(), b.len()))
            .collect();
        let copy = |&(r, rows): &Block| {
            let offset = r * row_bytes - start;
            self.block(&targets, r, rows, &src[offset..offset + rows * row_bytes]);
        };
        if parallel && blocks.len() > 1 {
            use rayon::prelude::*;
            blocks.par_iter().for_each(copy);
        } else {
            blocks.iter().for_each(copy);
        }
        if pos < end {
            self.bytes(buffers, pos, &src[pos - start..]);
        }
    }

    /// Rows from row `r` on that stay in one tile of the second fastest
    /// input dimension, at most a block's worth.
    fn block_rows(&self, r: usize) -> usize {
        let (extent, g) = self.row_dims.last().copied().unwrap_or((1, self.fast));
        let n = self.map.tile_extent(g) as usize;
        let x = r % extent;
        let most = match self.map.buffer_strides(g).0 {
            1 => ROW_BLOCK.max(LINE_BYTES / self.esize),
            _ => ROW_BLOCK,
        };
        (n - x % n).min(extent - x).min(most)
    }

    /// Copies bytes `[pos, pos + src.len())` one by one (a row cut short).
    fn bytes(&self, buffers: &mut [&mut [u8]], pos: usize, src: &[u8]) {
        for (i, &byte) in src.iter().enumerate() {
            let at = pos + i;
            let e = at / self.esize;
            let dst =
                self.element(e / self.row_elems, e % self.row_elems) * self.esize + at % self.esize;
            buffers[dst / self.epoch_bytes][dst % self.epoch_bytes] = byte;
        }
    }

    /// Copies `rows` whole rows from row `r` on (inside one tile of the
    /// second fastest input dimension), tile of `f` by tile of `f`.
    fn block(&self, targets: &[Target], r: usize, rows: usize, src: &[u8]) {
        let es = self.esize;
        let row_bytes = self.row_bytes();
        let g = self.row_dims.last().map_or(0, |&(_, d)| d);
        let step_g = self.map.buffer_strides(g).0 as usize * es;
        let step_f = self.map.buffer_strides(self.fast).0 as usize * es;
        let n_f = self.map.tile_extent(self.fast) as usize;
        let base = self.row_base(r);
        for j0 in (0..self.row_elems).step_by(n_f) {
            let len = n_f.min(self.row_elems - j0);
            let dst = (base + self.map.place(self.fast, j0 as u64) as usize) * es;
            let (buffer, offset) = (dst / self.epoch_bytes, dst % self.epoch_bytes);
            let last = offset + (rows - 1) * step_g + (len - 1) * step_f + es;
            let Target(ptr, size) = targets[buffer];
            assert!(
                last <= size && rows * row_bytes <= src.len(),
                "a block lies inside its buffers"
            );
            // SAFETY: the block was just checked to lie in both buffers, and
            // the blocks of one scatter write disjoint elements of their tiles.
            unsafe {
                let to = ptr.add(offset);
                let from = src.as_ptr().add(j0 * es);
                if step_f == es {
                    copy_runs(to, step_g, from, row_bytes, rows, len * es);
                } else if step_g == es {
                    copy_columns(to, step_f, from, row_bytes, rows, len, es, self.transpose);
                } else {
                    for k in 0..rows {
                        copy_runs(
                            to.add(k * step_g),
                            step_f,
                            from.add(k * row_bytes),
                            es,
                            len,
                            es,
                        );
                    }
                }
            }
        }
        store_fence();
    }
}
