//! The frames of an input that arrives in another order than the stored
//! one (its slowest dimension the stored first), put back in stored order
//! for the halver, which halves stored planes. The tiler reads the input
//! through its permuted layout; only the halver's copy of each frame is
//! reordered, one frame at a time.

use retile_plan::StreamSpec;

/// Frames of a permuted input turned into stored planes.
///
/// ```
/// use retile_plan::{DType, StreamSpec};
/// use retile_pyramid::FrameReorder;
/// // stored (t, y, x) = (1, 2, 3), each frame arriving x-major
/// let spec = StreamSpec::new(DType::U8, vec![0, 2, 3], vec![1, 2, 3])?.with_input_order(vec![0, 2, 1])?;
/// let mut reorder = FrameReorder::new(&spec).unwrap();
/// assert!(reorder.push(&[0, 3, 1]).is_empty()); // half a frame
/// assert_eq!(reorder.push(&[4, 2, 5]), &[0, 1, 2, 3, 4, 5]);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone)]
pub struct FrameReorder {
    esize: usize,
    /// Extents of a frame in input order (the slowest input dimension aside).
    extents: Vec<usize>,
    /// The stored plane's element stride of each of them.
    strides: Vec<usize>,
    frame_bytes: usize,
    /// Bytes of an incomplete frame.
    pending: Vec<u8>,
    /// The last push's stored planes.
    out: Vec<u8>,
}

impl FrameReorder {
    /// The reorder of `spec`'s frames, or `None` when they arrive in stored order.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// use retile_pyramid::FrameReorder;
    /// let stored = StreamSpec::new(DType::U8, vec![0, 2, 3], vec![1, 2, 3])?;
    /// assert!(FrameReorder::new(&stored).is_none());
    /// let permuted = stored.with_input_order(vec![0, 2, 1])?;
    /// assert!(FrameReorder::new(&permuted).is_some());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn new(spec: &StreamSpec) -> Option<FrameReorder> {
        if spec.in_stored_order() || !spec.epochs_in_input_order() {
            return None;
        }
        let plane: Vec<u64> = spec.shape()[1..].to_vec();
        let mut stored = vec![1u64; plane.len()];
        for d in (1..plane.len()).rev() {
            stored[d - 1] = stored[d] * plane[d];
        }
        let order = &spec.input_order()[1..];
        let extents: Vec<usize> = order.iter().map(|&d| plane[d - 1] as usize).collect();
        let esize = spec.dtype().size();
        Some(FrameReorder {
            esize,
            strides: order.iter().map(|&d| stored[d - 1] as usize).collect(),
            frame_bytes: extents.iter().product::<usize>() * esize,
            extents,
            pending: Vec::new(),
            out: Vec::new(),
        })
    }

    /// Bytes a reorder of `spec` holds at most: an incomplete frame, and
    /// the stored planes of one push beyond the input it was given.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// use retile_pyramid::FrameReorder;
    /// let stored = StreamSpec::new(DType::U16, vec![0, 4, 8], vec![1, 4, 8])?;
    /// assert_eq!(FrameReorder::held_bytes_of(&stored), 0);
    /// let permuted = stored.with_input_order(vec![0, 2, 1])?;
    /// assert_eq!(FrameReorder::held_bytes_of(&permuted), 2 * 64); // two frames of 64 bytes
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn held_bytes_of(spec: &StreamSpec) -> u64 {
        FrameReorder::new(spec).map_or(0, |r| 2 * r.frame_bytes as u64)
    }

    /// The stored planes of the frames `data` completes (with the bytes
    /// held from before); the bytes of an incomplete frame are held.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// use retile_pyramid::FrameReorder;
    /// // stored (y, x) = (2, 2), each frame arriving x-major: a transpose
    /// let spec = StreamSpec::new(DType::U8, vec![0, 2, 2], vec![1, 2, 2])?.with_input_order(vec![0, 2, 1])?;
    /// let mut reorder = FrameReorder::new(&spec).unwrap();
    /// // one frame and a byte: the whole frame comes back, the byte is held
    /// assert_eq!(reorder.push(&[1, 3, 2, 4, 5]), &[1, 2, 3, 4]);
    /// assert_eq!(reorder.push(&[7, 6, 8]), &[5, 6, 7, 8]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn push(&mut self, mut data: &[u8]) -> &[u8] {
        self.out.clear();
        if !self.pending.is_empty() {
            let take = (self.frame_bytes - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() < self.frame_bytes {
                return &self.out;
            }
            let frame = std::mem::take(&mut self.pending);
            self.reorder(&frame);
        }
        while data.len() >= self.frame_bytes.max(1) {
            let (frame, rest) = data.split_at(self.frame_bytes);
            self.reorder(frame);
            data = rest;
        }
        self.pending.extend_from_slice(data);
        &self.out
    }

    /// Appends the stored plane of one whole `frame` to `out`.
    fn reorder(&mut self, frame: &[u8]) {
        let es = self.esize;
        let start = self.out.len();
        self.out.resize(start + self.frame_bytes, 0);
        let plane = &mut self.out[start..];
        let mut coords = vec![0; self.extents.len()];
        let mut at = 0;
        for element in frame.chunks_exact(es) {
            plane[at * es..(at + 1) * es].copy_from_slice(element);
            for k in (0..coords.len()).rev() {
                coords[k] += 1;
                at += self.strides[k];
                if coords[k] < self.extents[k] {
                    break;
                }
                at -= self.strides[k] * self.extents[k];
                coords[k] = 0;
            }
        }
    }
}
