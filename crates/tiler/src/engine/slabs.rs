//! An input whose slowest dimension is not the stored first, taken in
//! slabs of that dimension ([`StreamSpec::slab`]): each slab is a region of
//! the array that the sink writes on its own ([`Sink::begin_region`]),
//! begun before the slab's first epoch is sent.
//!
//! A slab one element thick whose input goes on along the stored first
//! dimension ([`StreamSpec::slabs_in_epochs`]) streams in epochs, as a
//! stream in stored order does: an epoch is sent as soon as its last byte
//! arrives. Any other slab is held whole, one buffer per epoch filled
//! through the permuted layout, and each epoch is sent once its last byte
//! arrives too: that is during the slab's last pass along its slowest
//! dimension, so the sink starts writing the slab while that pass fills
//! the rest (for `z,t,c,y,x` stored `t,c,z,y,x` in slabs of 4 z, the last
//! quarter of the slab's input sends its epochs one by one).
//!
//! [`StreamSpec::slab`]: retile_plan::StreamSpec::slab
//! [`StreamSpec::slabs_in_epochs`]: retile_plan::StreamSpec::slabs_in_epochs
//! [`Sink::begin_region`]: retile_plan::Sink::begin_region

use std::time::Instant;

use retile_plan::{EpochBuffer, StreamError, StreamPlan};

use super::{Scatter, TileStream, PARALLEL_BYTES};
use crate::permuted::Permuted;

/// The slab being filled.
pub(super) struct Slab {
    plan: StreamPlan,
    how: How,
    /// Input bytes of the slab, and those taken so far.
    bytes: u64,
    taken: u64,
    /// Input bytes of one of its planes (of the stored first dimension).
    plane_bytes: u64,
}

/// How a slab's bytes reach its tiles.
enum How {
    /// Held whole: every epoch's buffer (`None` once sent), filled
    /// through the permuted layout; the epochs before `sent` are sent.
    Whole {
        scatter: Permuted,
        buffers: Vec<Option<EpochBuffer>>,
        sent: u64,
    },
    /// In epochs: the current epoch and its buffer, once begun.
    Epochs {
        scatter: Scatter,
        epoch: u64,
        buffer: Option<EpochBuffer>,
    },
}

impl TileStream {
    /// Takes `src` into the slabs it reaches, sending each epoch to the
    /// sink once it is complete.
    pub(super) fn append_in_slabs(&mut self, mut src: &[u8]) -> Result<(), StreamError> {
        while !src.is_empty() {
            let mut slab = match self.slab.take() {
                Some(slab) => slab,
                None => self.open_slab()?,
            };
            let n = match &slab.how {
                // up to the next epoch's last byte, so that it is sent at
                // once (which lies ahead: the epochs before it are sent)
                How::Whole { sent, .. } => epoch_complete_at(&slab.plan, *sent)
                    .saturating_sub(slab.taken)
                    .clamp(1, src.len() as u64),
                How::Epochs { epoch, .. } => {
                    let end = (epoch * slab.plan.spec().tile()[0] + slab.plan.epoch_planes(*epoch))
                        * slab.plane_bytes;
                    (end - slab.taken).min(src.len() as u64)
                }
            } as usize;
            self.fill_slab(&mut slab, &src[..n])?;
            (self.state.taken, src) = (self.state.taken + n as u64, &src[n..]);
            if slab.taken < slab.bytes {
                self.slab = Some(slab);
            }
        }
        Ok(())
    }

    /// Begins the next slab: its region sent to the sink, and, held whole,
    /// its buffers free (waiting for the sink to give them back).
    fn open_slab(&mut self) -> Result<Slab, StreamError> {
        let spec = self.state.plan.spec().clone();
        let (dim, extent) = spec.input_slab().unwrap_or((0, spec.shape()[0]));
        let frame_bytes = spec.frame_elements()? * spec.dtype().size() as u64;
        let index = self.state.taken / (frame_bytes * extent).max(1);
        let plan = StreamPlan::new(&spec.slab(index)?)?;
        self.state.send_region(plan.clone(), dim, index * extent)?;
        let how = match plan.spec().epochs_in_input_order() {
            true => How::Epochs {
                scatter: Scatter::new(&plan),
                epoch: 0,
                buffer: None,
            },
            false => {
                let mut buffers = Vec::new();
                for epoch in 0..plan.tile_counts()[0] {
                    buffers.push(Some(self.slab_buffer(&plan, epoch)?));
                }
                How::Whole {
                    scatter: Permuted::new(&plan),
                    buffers,
                    sent: 0,
                }
            }
        };
        Ok(Slab {
            bytes: frame_bytes * plan.spec().shape()[dim],
            plane_bytes: plan.spec().plane_elements()? * spec.dtype().size() as u64,
            plan,
            how,
            taken: 0,
        })
    }

    /// A free buffer for epoch `epoch` of the slab `plan` plans, holding
    /// the fill value wherever its tiles are padded: refilled when the
    /// padding lies elsewhere than in a full slab's inner epochs (a short
    /// last slab, a short last epoch).
    fn slab_buffer(&mut self, plan: &StreamPlan, epoch: u64) -> Result<EpochBuffer, StreamError> {
        let spec = self.state.plan.spec();
        let short_slab = spec
            .input_slab()
            .is_some_and(|(dim, extent)| plan.spec().shape()[dim] != extent);
        let short_epoch = plan.epoch_planes(epoch) < spec.tile()[0];
        let made = self.state.summary.buffer_bytes;
        let mut buffer = match self.state.free_buffer_now(&mut self.spare)? {
            Some(buffer) => buffer,
            // the second slab's buffers, made while the first is written
            None if made < self.state.plan.memory_bytes() => {
                let (plan, fill) = (&self.state.plan, &self.fill);
                let buffer = self.pool.install(|| super::epoch_buffer(plan, fill))?;
                self.state.summary.buffer_bytes += buffer.len() as u64;
                return Ok(buffer);
            }
            None => self.state.free_buffer(&mut self.spare)?,
        };
        if short_slab || short_epoch {
            let fill = &self.fill;
            self.pool.install(|| buffer.refill(fill));
        }
        Ok(buffer)
    }

    /// Puts `src`, the slab's next bytes (inside one epoch, for a slab in
    /// epochs; up to the next epoch's last byte, held whole), in its tiles,
    /// and sends an epoch it completes.
    fn fill_slab(&mut self, slab: &mut Slab, src: &[u8]) -> Result<(), StreamError> {
        let parallel = src.len() >= PARALLEL_BYTES;
        let start = slab.taken;
        match &mut slab.how {
            How::Whole {
                scatter,
                buffers,
                sent,
            } => {
                let started = Instant::now();
                // a sent epoch's bytes are all in: none of `src` goes there
                let mut targets: Vec<&mut [u8]> = buffers
                    .iter_mut()
                    .map(|b| b.as_deref_mut().unwrap_or_default())
                    .collect();
                self.pool
                    .install(|| scatter.scatter(&mut targets, start as usize, src, parallel));
                self.state.summary.scatter_seconds += started.elapsed().as_secs_f64();
                let taken = start + src.len() as u64;
                while (*sent as usize) < buffers.len()
                    && epoch_complete_at(&slab.plan, *sent) <= taken
                {
                    if let Some(buffer) = buffers[*sent as usize].take() {
                        self.state
                            .send(*sent, slab.plan.epoch_planes(*sent), buffer)?;
                        self.count_epoch(&slab.plan);
                    }
                    *sent += 1;
                }
            }
            How::Epochs {
                scatter,
                epoch,
                buffer,
            } => {
                let mut current = match buffer.take() {
                    Some(current) => current,
                    None => self.slab_buffer(&slab.plan, *epoch)?,
                };
                let first = *epoch * slab.plan.spec().tile()[0] * slab.plane_bytes;
                let at = (start - first) as usize;
                let started = Instant::now();
                self.pool
                    .install(|| scatter.epoch(&mut current, at, src, parallel));
                self.state.summary.scatter_seconds += started.elapsed().as_secs_f64();
                let planes = slab.plan.epoch_planes(*epoch);
                match start + src.len() as u64 == first + planes * slab.plane_bytes {
                    true => {
                        self.state.send(*epoch, planes, current)?;
                        self.count_epoch(&slab.plan);
                        *epoch += 1;
                    }
                    false => *buffer = Some(current),
                }
            }
        }
        slab.taken += src.len() as u64;
        Ok(())
    }

    /// Counts an epoch of `plan`'s tiles sent.
    fn count_epoch(&mut self, plan: &StreamPlan) {
        self.state.summary.epochs += 1;
        self.state.summary.tiles += plan.m();
    }
}

/// Input bytes of the slab that `plan` plans, held whole, that complete
/// epoch `epoch`: one element past the epoch's corner farthest in input
/// order, its last index in every dimension (every input stride is
/// positive), placed by the plan's tile map.
fn epoch_complete_at(plan: &StreamPlan, epoch: u64) -> u64 {
    let spec = plan.spec();
    let last = (0..spec.shape().len())
        .map(|d| {
            let x = match d {
                0 => epoch * spec.tile()[0] + plan.epoch_planes(epoch),
                _ => spec.shape()[d],
            }
            .saturating_sub(1);
            let (within, across) = plan.tile_map().input_strides(d);
            let n = spec.tile()[d];
            x % n * within + x / n * across
        })
        .sum::<u64>();
    (last + 1) * spec.dtype().size() as u64
}
