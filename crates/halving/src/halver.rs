//! Planes of one level turned into planes of the next as they arrive, so
//! that a pyramid holds between two levels at most the first plane of a
//! pair (where the planes' dimension is halved), one unit of a plane cut by
//! an append and one batch of child planes, whatever the stream's length.

use retile_plan::{DType, StreamError, StreamSpec};

use crate::reduce::{halve_parents, Halving, Method, Parents};
use crate::units::Units;

/// Child bytes reduced in one batch before they are handed on.
const BATCH_BYTES: usize = 8 << 20;

/// Child bytes a halver [holding batches](Halver::holding_batches) waits
/// for before it hands them on: enough for the next level's tiling to
/// take every thread (it tiles 1 MiB or more in parallel), few enough to
/// be still in the cache when it does.
const HOLD_BYTES: usize = 2 << 20;

/// Turns planes of one level into planes of the next, as they arrive.
///
/// A plane that arrives in pieces is reduced piece by piece, straight from
/// the caller's bytes: every unit of the plane (a row, or the two
/// rows or slices a halved dimension pairs) that a piece holds whole is
/// reduced where it lies, and only a unit cut by the end of a piece is
/// copied, to be completed by the next. When the first dimension is
/// halved, the first plane of each pair is held until the second comes.
/// Child planes are handed on whole, in batches, so that a halver emits
/// exactly what reducing whole planes would, for any split.
///
/// ```
/// use retile_halving::{Halver, Method};
/// use retile_plan::{DType, StreamSpec};
/// let parent = StreamSpec::new(DType::U8, vec![0, 2, 4], vec![1, 2, 4])?;
/// let mut halver = Halver::new(Method::Max, &parent, &[false, true, true])?;
/// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// let mut children = Vec::new();
/// // one plane split anywhere: the child plane comes once the plane is whole
/// halver.push(&[0, 1, 2], &pool, &mut |c| Ok(children.extend_from_slice(c)))?;
/// assert!(children.is_empty());
/// halver.push(&[3, 4, 5, 6, 7], &pool, &mut |c| Ok(children.extend_from_slice(c)))?;
/// assert_eq!(children, [5, 7]);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub struct Halver {
    kernel: Kernel,
    halving: Halving,
    units: Units,
    /// Parent planes per child plane: 2 when the first dimension is halved.
    per_group: usize,
    parent_plane_bytes: usize,
    child_plane_bytes: usize,
    /// Bytes of the current group received so far.
    received: usize,
    /// The first plane of a pair, when the first dimension is halved
    /// (8-byte aligned storage).
    first: Vec<u64>,
    /// A unit of the plane being reduced cut by the end of a piece.
    tail: Vec<u64>,
    tail_len: usize,
    /// Child planes of the current batch, then the rows of the child plane
    /// being made (8-byte aligned storage).
    out: Vec<u64>,
    /// Bytes of whole child planes in `out`.
    out_len: usize,
    /// Bytes of whole child planes that go on at the end of a push (or
    /// once the batch is full, or at a flush): 0 hands every plane on at
    /// once, [`HOLD_BYTES`] when holding batches.
    hand_on_at: usize,
}

impl Halver {
    /// Halving planes of `parent` (a level's stream) along `halve` (one
    /// flag per dimension of `parent`). A stream of one dimension has
    /// planes of one element: halving it reduces pairs of elements.
    ///
    /// ```
    /// use retile_halving::{Halver, Method};
    /// use retile_plan::{DType, StreamSpec};
    /// let parent = StreamSpec::new(DType::U8, vec![0], vec![4])?;
    /// let mut halver = Halver::new(Method::Min, &parent, &[true])?;
    /// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// let mut children = Vec::new();
    /// halver.push(&[4, 3, 9, 8], &pool, &mut |c| Ok(children.extend_from_slice(c)))?;
    /// assert_eq!(children, [3, 8]); // the min of each pair
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn new(method: Method, parent: &StreamSpec, halve: &[bool]) -> Result<Halver, StreamError> {
        let (plane, halves) = plane_of(parent, halve)?;
        let halving = Halving::new(&plane, &halves);
        let esize = parent.dtype().size();
        let parent_plane_bytes = halving.parent_elements() * esize;
        let child_plane_bytes = halving.child_elements() * esize;
        let per_group = if halve[0] { 2 } else { 1 };
        let units = Units::new(&plane, &halves, esize);
        Ok(Halver {
            kernel: Kernel {
                method,
                dtype: parent.dtype(),
            },
            halving,
            per_group,
            parent_plane_bytes,
            child_plane_bytes,
            received: 0,
            first: vec![0; ((per_group - 1) * parent_plane_bytes).div_ceil(8)],
            tail: vec![0; units.unit_bytes().div_ceil(8)],
            tail_len: 0,
            units,
            out: Vec::new(),
            out_len: 0,
            hand_on_at: 0,
        })
    }

    /// The same halver, handing child planes on only once they are 2 MiB
    /// or more, when a piece ends inside a plane, and at
    /// [`Halver::flush`]: the next level then takes appends large enough
    /// for a pool of many threads to tile in parallel, rather than one
    /// small append per parent plane, which it tiles on one thread. The
    /// memory held is the same (the batch is held either way); child
    /// planes reach the next level up to 2 MiB later.
    ///
    /// ```
    /// use retile_halving::{Halver, Method};
    /// use retile_plan::{DType, StreamSpec};
    /// let parent = StreamSpec::new(DType::U8, vec![0, 2, 4], vec![1, 2, 4])?;
    /// let mut halver = Halver::new(Method::Max, &parent, &[false, true, true])?.holding_batches();
    /// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// let mut children = Vec::new();
    /// halver.push(&[0, 1, 2, 3, 4, 5, 6, 7], &pool, &mut |c| Ok(children.extend_from_slice(c)))?;
    /// assert!(children.is_empty()); // the child plane waits in the batch
    /// halver.flush(&pool, &mut |c| Ok(children.extend_from_slice(c)))?;
    /// assert_eq!(children, [5, 7]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn holding_batches(self) -> Halver {
        Halver {
            hand_on_at: HOLD_BYTES,
            ..self
        }
    }

    /// Bytes the halver holds: the first plane of a pair, a unit cut by a
    /// piece's end and one batch of child planes.
    ///
    /// ```
    /// use retile_halving::{Halver, Method};
    /// use retile_plan::{DType, StreamSpec};
    /// let parent = StreamSpec::new(DType::U8, vec![0, 2, 4], vec![1, 2, 4])?;
    /// let pairs = Halver::new(Method::Mean, &parent, &[true, true, true])?;
    /// let single = Halver::new(Method::Mean, &parent, &[false, true, true])?;
    /// // halving the first dimension holds the first plane (8 bytes) of a pair
    /// assert_eq!(pairs.held_bytes(), single.held_bytes() + 8);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn held_bytes(&self) -> u64 {
        held(
            self.per_group,
            self.parent_plane_bytes,
            self.units.unit_bytes(),
            self.child_plane_bytes,
        )
    }

    /// Bytes a halver of `parent` along `halve` would hold, as
    /// [`Halver::held_bytes`] says, without making one (nor allocating
    /// what it would hold): what a plan counts before anything is made.
    ///
    /// ```
    /// use retile_halving::{Halver, Method};
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U16, vec![0, 64, 64], vec![4, 16, 16])?;
    /// let halve = [false, true, true];
    /// let made = Halver::new(Method::Mean, &spec, &halve)?.held_bytes();
    /// assert_eq!(Halver::held_bytes_of(&spec, &halve), made);
    /// // a plane of 10^12 bytes is counted, not allocated
    /// let huge = StreamSpec::new(DType::U8, vec![0, 1_000_000, 1_000_000], vec![1, 1, 1])?;
    /// assert!(Halver::held_bytes_of(&huge, &[true, true, true]) >= 1_000_000_000_000);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn held_bytes_of(parent: &StreamSpec, halve: &[bool]) -> u64 {
        let Ok((plane, halves)) = plane_of(parent, halve) else {
            return 0;
        };
        let esize = parent.dtype().size() as u64;
        let bytes = |extents: &[u64]| extents.iter().fold(esize, |a, &n| a.saturating_mul(n));
        let child: Vec<u64> = plane
            .iter()
            .zip(&halves)
            .map(|(&n, &h)| if h { n.div_ceil(2) } else { n })
            .collect();
        let first = if halve[0] { bytes(&plane) } else { 0 };
        let unit = Units::new(&plane, &halves, esize as usize).unit_bytes() as u64;
        let batch = (BATCH_BYTES as u64).max(bytes(&child));
        first.saturating_add(unit).saturating_add(batch)
    }

    /// Takes parent bytes (any split) and hands every complete child plane
    /// to `emit`, in batches.
    ///
    /// ```
    /// use retile_halving::{Halver, Method};
    /// use retile_plan::{DType, StreamSpec};
    /// let parent = StreamSpec::new(DType::U8, vec![0, 2, 2], vec![1, 2, 2])?;
    /// let mut halver = Halver::new(Method::Mean, &parent, &[true, true, true])?;
    /// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// let mut children = Vec::new();
    /// // two planes make one child plane of one element: the mean of all 8
    /// halver.push(&[0, 2, 4, 6, 8, 10, 12, 14], &pool, &mut |c| Ok(children.extend_from_slice(c)))?;
    /// assert_eq!(children, [7]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn push(
        &mut self,
        mut data: &[u8],
        pool: &rayon::ThreadPool,
        emit: &mut dyn FnMut(&[u8]) -> Result<(), StreamError>,
    ) -> Result<(), StreamError> {
        if self.parent_plane_bytes == 0 {
            return Ok(());
        }
        let esize = self.kernel.dtype.size();
        while !data.is_empty() {
            let aligned = (data.as_ptr() as usize).is_multiple_of(esize);
            let taken = if self.received == 0 && aligned && data.len() >= self.group_bytes() {
                self.reduce_groups(data, pool, emit)?
            } else if self.received < (self.per_group - 1) * self.parent_plane_bytes {
                self.hold_first(data)
            } else {
                self.take_units(data, aligned, pool, emit)?
            };
            data = &data[taken..];
        }
        // the whole child planes go on once there are enough of them; a
        // child plane in the making starts the batch (see `take_units`),
        // so none is left behind it
        self.emit_if_due(emit)
    }

    /// Reduces the whole groups at the start of `data` into the batch and
    /// hands nothing on, so that it can run on a pool thread beside the
    /// caller's own work (which may wait for its sink), the caller then
    /// pushing the rest; returns the parent bytes taken: 0 where `data`
    /// does not start a group (or is not aligned to its element) or the
    /// batch is full. [`Halver::rewind`] undoes it.
    ///
    /// ```
    /// use retile_halving::{Halver, Method};
    /// use retile_plan::{DType, StreamSpec};
    /// let parent = StreamSpec::new(DType::U8, vec![0, 2, 4], vec![1, 2, 4])?;
    /// let mut halver = Halver::new(Method::Max, &parent, &[false, true, true])?;
    /// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// let planes: Vec<u8> = (0..20).collect(); // two planes and a half
    /// let ahead = halver.reduce_ahead(&planes, &pool)?;
    /// assert_eq!(ahead, 16);
    /// let mut children = Vec::new();
    /// halver.push(&planes[ahead..], &pool, &mut |c| Ok(children.extend_from_slice(c)))?;
    /// assert_eq!(children, [5, 7, 13, 15]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn reduce_ahead(
        &mut self,
        data: &[u8],
        pool: &rayon::ThreadPool,
    ) -> Result<usize, StreamError> {
        let aligned = (data.as_ptr() as usize).is_multiple_of(self.kernel.dtype.size());
        if self.parent_plane_bytes == 0 || self.received != 0 || !aligned {
            return Ok(0);
        }
        let groups = (data.len() / self.group_bytes()).min(self.batch_room());
        let parent = &data[..groups * self.group_bytes()];
        self.reduce_whole(parent, self.per_group, pool)?;
        Ok(parent.len())
    }

    /// Undoes a [`Halver::reduce_ahead`] that took `taken` bytes, with
    /// nothing pushed since: its child planes leave the batch.
    ///
    /// ```
    /// use retile_halving::{Halver, Method};
    /// use retile_plan::{DType, StreamSpec};
    /// let parent = StreamSpec::new(DType::U8, vec![0, 2, 4], vec![1, 2, 4])?;
    /// let mut halver = Halver::new(Method::Max, &parent, &[false, true, true])?;
    /// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// let taken = halver.reduce_ahead(&[9; 8], &pool)?;
    /// halver.rewind(taken); // the caller's stream refused the plane after all
    /// let mut children = Vec::new();
    /// halver.push(&(0..8).collect::<Vec<u8>>(), &pool, &mut |c| Ok(children.extend_from_slice(c)))?;
    /// assert_eq!(children, [5, 7]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn rewind(&mut self, taken: usize) {
        let groups = taken / self.group_bytes().max(1);
        self.out_len = self.out_len.saturating_sub(groups * self.child_plane_bytes);
    }

    /// Hands the batch's whole child planes on if they are
    /// [`Halver::hand_on_at`] bytes or more, or fill the batch.
    fn emit_if_due(
        &mut self,
        emit: &mut dyn FnMut(&[u8]) -> Result<(), StreamError>,
    ) -> Result<(), StreamError> {
        match self.out_len >= self.hand_on_at || self.batch_room() == 0 {
            true => self.emit_batch(emit),
            false => Ok(()),
        }
    }

    /// Whole child planes the batch has room for after those in it.
    fn batch_room(&self) -> usize {
        self.batch_planes()
            .saturating_sub(self.out_len / self.child_plane_bytes.max(1))
    }

    /// At the end of the stream: a single parent plane left over (an odd
    /// count, when the first dimension is halved) becomes the last child
    /// plane; bytes of an incomplete plane are dropped, as the stream drops them.
    ///
    /// ```
    /// use retile_halving::{Halver, Method};
    /// use retile_plan::{DType, StreamSpec};
    /// let parent = StreamSpec::new(DType::U8, vec![0, 2], vec![1, 2])?;
    /// let mut halver = Halver::new(Method::Max, &parent, &[true, true])?;
    /// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// let mut children = Vec::new();
    /// halver.push(&[1, 2, 3, 4, 5, 6], &pool, &mut |c| Ok(children.extend_from_slice(c)))?;
    /// assert_eq!(children, [4]); // the third plane waits for its pair
    /// halver.flush(&pool, &mut |c| Ok(children.extend_from_slice(c)))?;
    /// assert_eq!(children, [4, 6]); // a lone plane becomes the last child
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn flush(
        &mut self,
        pool: &rayon::ThreadPool,
        emit: &mut dyn FnMut(&[u8]) -> Result<(), StreamError>,
    ) -> Result<(), StreamError> {
        let lone = self.per_group == 2 && self.received >= self.parent_plane_bytes;
        self.received = 0;
        self.tail_len = 0;
        if !lone || self.parent_plane_bytes == 0 {
            return self.emit_batch(emit);
        }
        let first = std::mem::take(&mut self.first);
        let parent = &bytemuck::cast_slice(&first)[..self.parent_plane_bytes];
        let result = self.reduce_whole(parent, 1, pool);
        self.first = first;
        result?;
        self.emit_batch(emit)
    }

    fn group_bytes(&self) -> usize {
        self.per_group * self.parent_plane_bytes
    }

    /// Child planes in one batch.
    fn batch_planes(&self) -> usize {
        (BATCH_BYTES / self.child_plane_bytes.max(1)).max(1)
    }

    /// Makes the batch's storage, on first use.
    fn make_batch(&mut self) {
        let bytes = self.batch_planes() * self.child_plane_bytes;
        if self.out.len() * 8 < bytes {
            self.out = vec![0; bytes.div_ceil(8)];
        }
    }

    /// Hands the whole child planes of the batch on.
    fn emit_batch(
        &mut self,
        emit: &mut dyn FnMut(&[u8]) -> Result<(), StreamError>,
    ) -> Result<(), StreamError> {
        if self.out_len == 0 {
            return Ok(());
        }
        let bytes = std::mem::take(&mut self.out_len);
        emit(&bytemuck::cast_slice(&self.out)[..bytes])
    }

    /// Reduces the whole groups at the start of `data` (aligned, at the
    /// start of a group) where they lie, a batch at a time; returns the
    /// bytes taken.
    fn reduce_groups(
        &mut self,
        data: &[u8],
        pool: &rayon::ThreadPool,
        emit: &mut dyn FnMut(&[u8]) -> Result<(), StreamError>,
    ) -> Result<usize, StreamError> {
        self.emit_if_due(emit)?;
        let groups = (data.len() / self.group_bytes()).min(self.batch_room());
        let parent = &data[..groups * self.group_bytes()];
        self.reduce_whole(parent, self.per_group, pool)?;
        self.emit_if_due(emit)?;
        Ok(parent.len())
    }

    /// Reduces whole groups of `per_group` parent planes into the batch,
    /// after its whole child planes.
    fn reduce_whole(
        &mut self,
        parent: &[u8],
        per_group: usize,
        pool: &rayon::ThreadPool,
    ) -> Result<(), StreamError> {
        let groups = parent.len() / (per_group * self.parent_plane_bytes);
        let bytes = groups * self.child_plane_bytes;
        self.make_batch();
        let out = &mut bytemuck::cast_slice_mut(&mut self.out)[self.out_len..self.out_len + bytes];
        let parents = Parents::BackToBack(parent, per_group);
        self.kernel.run(pool, &self.halving, parents, out)?;
        self.out_len += bytes;
        Ok(())
    }

    /// Copies bytes of the first plane of a pair; returns the bytes taken.
    fn hold_first(&mut self, data: &[u8]) -> usize {
        let n = (self.parent_plane_bytes - self.received).min(data.len());
        let first = bytemuck::cast_slice_mut::<u64, u8>(&mut self.first);
        first[self.received..self.received + n].copy_from_slice(&data[..n]);
        self.received += n;
        n
    }

    /// Takes bytes of the plane that completes a group: the units `data`
    /// holds whole are reduced where they lie (when `data` is aligned to
    /// the element), a unit cut by its end is copied; returns the bytes taken.
    fn take_units(
        &mut self,
        data: &[u8],
        aligned: bool,
        pool: &rayon::ThreadPool,
        emit: &mut dyn FnMut(&[u8]) -> Result<(), StreamError>,
    ) -> Result<usize, StreamError> {
        let plane_start = (self.per_group - 1) * self.parent_plane_bytes;
        let at = self.received - plane_start;
        if at == 0 {
            // a new child plane: it starts the batch if this piece does
            // not finish it, so that the whole planes before it can go on
            let full = self.out_len + self.child_plane_bytes
                > self.batch_planes() * self.child_plane_bytes;
            if full || data.len() < self.parent_plane_bytes {
                self.emit_batch(emit)?;
            }
        }
        let unit_start = at - self.tail_len;
        let (taken, span) = if self.tail_len > 0 || !aligned {
            let unit_end = self.units.unit_end(unit_start);
            let n = (unit_end - at).min(data.len());
            let tail = bytemuck::cast_slice_mut::<u64, u8>(&mut self.tail);
            tail[self.tail_len..self.tail_len + n].copy_from_slice(&data[..n]);
            self.tail_len += n;
            let whole = self.tail_len == unit_end - unit_start;
            (n, whole.then_some(unit_end))
        } else {
            let end = self
                .units
                .whole_units_end(at + data.len().min(self.parent_plane_bytes - at));
            match end > at {
                true => (end - at, Some(end)),
                false => {
                    let n = data.len().min(self.units.unit_end(at) - at);
                    let tail = bytemuck::cast_slice_mut::<u64, u8>(&mut self.tail);
                    tail[..n].copy_from_slice(&data[..n]);
                    self.tail_len = n;
                    (n, None)
                }
            }
        };
        if let Some(end) = span {
            let tail = std::mem::take(&mut self.tail);
            let last = match self.tail_len {
                0 => &data[..end - unit_start],
                n => &bytemuck::cast_slice(&tail)[..n],
            };
            let result = self.reduce_span(unit_start, end, last, pool);
            self.tail = tail;
            self.tail_len = 0;
            result?;
        }
        self.received += taken;
        if self.received == self.group_bytes() {
            self.received = 0;
            self.out_len += self.child_plane_bytes;
        }
        Ok(taken)
    }

    /// Reduces the units from byte `start` to byte `end` of the plane that
    /// completes a group (`last` holds them; the first plane of a pair is
    /// held) into the child plane in the making.
    fn reduce_span(
        &mut self,
        start: usize,
        end: usize,
        last: &[u8],
        pool: &rayon::ThreadPool,
    ) -> Result<(), StreamError> {
        self.make_batch();
        let out = &mut bytemuck::cast_slice_mut(&mut self.out)[self.out_len..];
        let first: &[u8] = bytemuck::cast_slice(&self.first);
        for run in self.units.runs(start, end) {
            let parent = &last[run.parent.start - start..run.parent.end - start];
            let planes;
            let parents = match self.per_group {
                2 => {
                    planes = [&first[run.parent.clone()], parent];
                    Parents::Split(&planes)
                }
                _ => Parents::BackToBack(parent, 1),
            };
            let dst = &mut out[run.child];
            self.kernel.run(pool, &run.halving, parents, dst)?;
        }
        Ok(())
    }
}

/// The reduction a halver runs: its method on its element type.
#[derive(Clone, Copy)]
struct Kernel {
    method: Method,
    dtype: DType,
}

impl Kernel {
    /// [`halve_parents`] on the threads of `pool`.
    fn run(
        self,
        pool: &rayon::ThreadPool,
        halving: &Halving,
        parents: Parents<'_>,
        dst: &mut [u8],
    ) -> Result<(), StreamError> {
        let Kernel { method, dtype } = self;
        pool.install(|| halve_parents(method, dtype, halving, parents, dst))
    }
}

/// The plane of `parent` (every dimension but the first; one element for
/// a stream of one dimension) and which of its dimensions `halve` halves.
fn plane_of(parent: &StreamSpec, halve: &[bool]) -> Result<(Vec<u64>, Vec<bool>), StreamError> {
    let rank = parent.shape().len();
    if halve.len() != rank || rank == 0 {
        return Err(StreamError::Invalid(format!(
            "the halving names {} dimensions but the stream has {rank}",
            halve.len()
        )));
    }
    Ok(match rank {
        1 => (vec![1], vec![false]),
        _ => (parent.shape()[1..].to_vec(), halve[1..].to_vec()),
    })
}

/// Bytes a halver holds: the first plane of a pair, one unit and one batch
/// of child planes.
fn held(
    per_group: usize,
    parent_plane_bytes: usize,
    unit_bytes: usize,
    child_plane_bytes: usize,
) -> u64 {
    let batch = BATCH_BYTES.max(child_plane_bytes);
    ((per_group - 1) * parent_plane_bytes + unit_bytes + batch) as u64
}
