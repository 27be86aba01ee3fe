//! Planes of one level turned into planes of the next as they arrive, so
//! that a pyramid holds at most one group of parent planes and one batch of
//! child planes between two levels, whatever the stream's length.

use retile_plan::{StreamError, StreamSpec};

use crate::reduce::{halve_planes, Halving, Method};

/// Child bytes reduced in one batch before they are handed on.
const BATCH_BYTES: usize = 8 << 20;

/// Turns planes of one level into planes of the next, as they arrive.
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
    method: Method,
    spec: StreamSpec,
    halving: Halving,
    /// Parent planes per child plane: 2 when the first dimension is halved.
    per_group: usize,
    parent_plane_bytes: usize,
    child_plane_bytes: usize,
    /// An incomplete group of parent planes (8-byte aligned storage).
    pending: Vec<u64>,
    pending_len: usize,
    /// Child planes of the current batch (8-byte aligned storage).
    out: Vec<u64>,
}

impl Halver {
    /// Halving planes of `parent` (a level's stream) along `halve`.
    pub fn new(method: Method, parent: &StreamSpec, halve: &[bool]) -> Result<Halver, StreamError> {
        let halving = Halving::new(&parent.shape()[1..], &halve[1..]);
        let esize = parent.dtype().size();
        let parent_plane_bytes = halving.parent_elements() * esize;
        let child_plane_bytes = halving.child_elements() * esize;
        let per_group = if halve[0] { 2 } else { 1 };
        Ok(Halver {
            method,
            spec: parent.clone(),
            halving,
            per_group,
            parent_plane_bytes,
            child_plane_bytes,
            pending: vec![0; (per_group * parent_plane_bytes).div_ceil(8)],
            pending_len: 0,
            out: Vec::new(),
        })
    }

    /// Bytes the halver holds: an incomplete group and one batch.
    pub fn held_bytes(&self) -> u64 {
        held(
            self.per_group,
            self.parent_plane_bytes,
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
    /// assert!(Halver::held_bytes_of(&huge, &halve) >= 1_000_000_000_000);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn held_bytes_of(parent: &StreamSpec, halve: &[bool]) -> u64 {
        let halving = Halving::new(&parent.shape()[1..], &halve[1..]);
        let esize = parent.dtype().size() as u64;
        let elements = |extents: &[u64]| extents.iter().fold(esize, |a, &n| a.saturating_mul(n));
        let per_group = if halve[0] { 2 } else { 1 };
        let group = elements(halving.parent()).saturating_mul(per_group);
        group.saturating_add((BATCH_BYTES as u64).max(elements(halving.child())))
    }

    fn group_bytes(&self) -> usize {
        self.per_group * self.parent_plane_bytes
    }

    /// Takes parent bytes (any split) and hands every complete child plane
    /// to `emit`, in batches.
    pub fn push(
        &mut self,
        mut data: &[u8],
        pool: &rayon::ThreadPool,
        emit: &mut dyn FnMut(&[u8]) -> Result<(), StreamError>,
    ) -> Result<(), StreamError> {
        let group = self.group_bytes();
        let esize = self.spec.dtype().size();
        while !data.is_empty() {
            // whole groups are reduced in place where the input is aligned to
            // the element; the rest goes through the (aligned) pending buffer
            let aligned = (data.as_ptr() as usize).is_multiple_of(esize);
            if self.pending_len > 0 || !aligned || data.len() < group {
                let n = (group - self.pending_len).min(data.len());
                let pending = bytemuck::cast_slice_mut::<u64, u8>(&mut self.pending);
                pending[self.pending_len..self.pending_len + n].copy_from_slice(&data[..n]);
                self.pending_len += n;
                data = &data[n..];
                if self.pending_len == group {
                    self.pending_len = 0;
                    let pending = std::mem::take(&mut self.pending);
                    let result = self.reduce(
                        &bytemuck::cast_slice(&pending)[..group],
                        self.per_group,
                        pool,
                        emit,
                    );
                    self.pending = pending;
                    result?;
                }
                continue;
            }
            let batch = (BATCH_BYTES / self.child_plane_bytes.max(1)).max(1);
            let groups = (data.len() / group).min(batch);
            self.reduce(&data[..groups * group], self.per_group, pool, emit)?;
            data = &data[groups * group..];
        }
        Ok(())
    }

    /// At the end of the stream: a single parent plane left over (an odd
    /// count, when the first dimension is halved) becomes the last child
    /// plane; bytes of an incomplete plane are dropped, as the stream drops them.
    pub fn flush(
        &mut self,
        pool: &rayon::ThreadPool,
        emit: &mut dyn FnMut(&[u8]) -> Result<(), StreamError>,
    ) -> Result<(), StreamError> {
        let whole = self.pending_len / self.parent_plane_bytes.max(1);
        self.pending_len = 0;
        if whole == 0 {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let result = self.reduce(
            &bytemuck::cast_slice(&pending)[..whole * self.parent_plane_bytes],
            whole,
            pool,
            emit,
        );
        self.pending = pending;
        result
    }

    /// Reduces whole groups of `per_group` parent planes and emits the child planes.
    fn reduce(
        &mut self,
        parent: &[u8],
        per_group: usize,
        pool: &rayon::ThreadPool,
        emit: &mut dyn FnMut(&[u8]) -> Result<(), StreamError>,
    ) -> Result<(), StreamError> {
        let groups = parent.len() / (per_group * self.parent_plane_bytes).max(1);
        let bytes = groups * self.child_plane_bytes;
        if self.out.len() * 8 < bytes {
            self.out = vec![0; bytes.div_ceil(8)];
        }
        let out = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut self.out)[..bytes];
        let (method, dtype, halving) = (self.method, self.spec.dtype(), &self.halving);
        pool.install(|| halve_planes(method, dtype, halving, per_group, parent, out))?;
        emit(out)
    }
}

/// Bytes a halver holds: an incomplete group of parent planes and one batch of child planes.
fn held(per_group: usize, parent_plane_bytes: usize, child_plane_bytes: usize) -> u64 {
    let batch = BATCH_BYTES.max(child_plane_bytes);
    (per_group * parent_plane_bytes + batch) as u64
}
