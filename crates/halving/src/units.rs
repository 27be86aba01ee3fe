//! How a parent plane divides into units: the parts a [`crate::Halver`]
//! reduces on their own as pieces of a plane arrive, each from a
//! contiguous range of the parent plane into a contiguous range of the
//! child plane.

use std::ops::Range;

use crate::reduce::Halving;

/// The units of a plane. The plane is seen as slices along one dimension
/// (`along`) of blocks of the dimensions inside it (`inner`): with a halved
/// dimension among the rows (every plane dimension but the last), `along`
/// is the outermost such one, and a unit is the pair of its indices that
/// one child index reduces (the last index alone at an odd extent); with
/// none, `along` counts the rows and a unit is a row. Dimensions outside
/// `along` are not halved, so each slice reduces on its own.
#[derive(Debug, Clone)]
pub(crate) struct Units {
    /// Indices along the unit's dimension in one slice.
    along: usize,
    /// Indices of that dimension in a unit: 2 where it is halved.
    step: usize,
    /// The extents inside it, and which of them are halved.
    inner: Vec<u64>,
    halve_inner: Vec<bool>,
    /// Bytes of one index along it, in the parent and in the child.
    inner_bytes: usize,
    child_inner_bytes: usize,
}

/// A run of whole units reduced in one call: its parent and child byte
/// ranges within their planes, and the halving that reduces it (the run
/// seen as planes of its own, back to back).
pub(crate) struct Run {
    pub(crate) parent: Range<usize>,
    pub(crate) child: Range<usize>,
    pub(crate) halving: Halving,
}

impl Units {
    /// The units of a plane of extents `plane` (at least one) halved along
    /// `halve`, of elements of `esize` bytes.
    pub(crate) fn new(plane: &[u64], halve: &[bool], esize: usize) -> Units {
        let rows = plane.len() - 1;
        let (along, step, inner, halve_inner) = match halve[..rows].iter().position(|&h| h) {
            Some(j) => (plane[j], 2, &plane[j + 1..], &halve[j + 1..]),
            None => (
                plane[..rows].iter().product(),
                1,
                &plane[rows..],
                &halve[rows..],
            ),
        };
        let bytes = |extents: &mut dyn Iterator<Item = u64>| {
            extents.fold(esize, |a, n| a.saturating_mul(n as usize))
        };
        let child = |(&n, &h): (&u64, &bool)| if h { n.div_ceil(2) } else { n };
        Units {
            along: along as usize,
            step,
            inner_bytes: bytes(&mut inner.iter().copied()),
            child_inner_bytes: bytes(&mut inner.iter().zip(halve_inner).map(child)),
            inner: inner.to_vec(),
            halve_inner: halve_inner.to_vec(),
        }
    }

    /// Bytes of the largest unit.
    pub(crate) fn unit_bytes(&self) -> usize {
        self.step.min(self.along).saturating_mul(self.inner_bytes)
    }

    fn slice_bytes(&self) -> usize {
        self.along * self.inner_bytes
    }

    /// The slice holding parent byte `offset`, and the index along the
    /// unit's dimension within it.
    fn locate(&self, offset: usize) -> (usize, usize) {
        let slice = offset / self.slice_bytes();
        (slice, (offset % self.slice_bytes()) / self.inner_bytes)
    }

    /// Parent byte offset of index `index` of slice `slice`.
    fn offset(&self, slice: usize, index: usize) -> usize {
        slice * self.slice_bytes() + index * self.inner_bytes
    }

    /// Where the unit holding parent byte `offset` ends.
    pub(crate) fn unit_end(&self, offset: usize) -> usize {
        let (slice, index) = self.locate(offset);
        let next = (index / self.step + 1) * self.step;
        self.offset(slice, next.min(self.along))
    }

    /// Where the last unit that ends at or before parent byte `offset` ends.
    pub(crate) fn whole_units_end(&self, offset: usize) -> usize {
        let (slice, index) = self.locate(offset);
        self.offset(slice, index / self.step * self.step)
    }

    /// The child byte offset of the unit starting at parent byte `offset`.
    fn child_offset(&self, offset: usize) -> usize {
        let (slice, index) = self.locate(offset);
        let per_slice = self.along.div_ceil(self.step) * self.child_inner_bytes;
        slice * per_slice + index.div_ceil(self.step) * self.child_inner_bytes
    }

    /// The runs that reduce the whole units from parent byte `start` to
    /// `end` (both where units start or end): whole slices together, the
    /// units of one slice together.
    pub(crate) fn runs(&self, start: usize, end: usize) -> Vec<Run> {
        let mut runs = Vec::new();
        let mut at = start;
        while at < end {
            let slice_start = self.offset(at / self.slice_bytes(), 0);
            let slice_end = slice_start + self.slice_bytes();
            let (stop, along) = match at == slice_start && end >= slice_end {
                // whole slices: planes of the run's halving, back to back
                true => (
                    at + (end - at) / self.slice_bytes() * self.slice_bytes(),
                    self.along,
                ),
                false => {
                    let stop = end.min(slice_end);
                    (stop, (stop - at) / self.inner_bytes)
                }
            };
            let extents: Vec<u64> = std::iter::once(along as u64)
                .chain(self.inner.iter().copied())
                .collect();
            let halves: Vec<bool> = std::iter::once(self.step == 2)
                .chain(self.halve_inner.iter().copied())
                .collect();
            runs.push(Run {
                parent: at..stop,
                child: self.child_offset(at)..self.child_offset(stop),
                halving: Halving::new(&extents, &halves),
            });
            at = stop;
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_pairs_are_the_units_of_a_plane_halved_along_its_rows() {
        // a 5 x 4 plane of u8 halved in both: units are row pairs, the last a row
        let units = Units::new(&[5, 4], &[true, true], 1);
        assert_eq!(units.unit_bytes(), 8);
        let ends: Vec<usize> = [0, 7, 8, 16, 19].map(|o| units.unit_end(o)).to_vec();
        assert_eq!(ends, [8, 8, 16, 20, 20]);
        assert_eq!(
            [7, 8, 15, 19, 20].map(|o| units.whole_units_end(o)),
            [0, 8, 8, 16, 20]
        );
        // two whole row pairs, then the last row on its own: child rows 0-1, 2
        let runs = units.runs(0, 20);
        let spans: Vec<_> = runs
            .iter()
            .map(|r| (r.parent.clone(), r.child.clone()))
            .collect();
        assert_eq!(spans, [(0..20, 0..6)]);
        let runs = units.runs(8, 20);
        assert_eq!(
            (runs[0].parent.clone(), runs[0].child.clone()),
            (8..20, 2..6)
        );
        assert_eq!(runs[0].halving.child(), &[2, 2]);
    }

    #[test]
    fn slices_of_the_outermost_halved_dimension_are_the_units_inside_unhalved_ones() {
        // 3 x 3 x 2 u16 planes, the last two dimensions halved: each of the
        // 3 slices has units of two rows and one row (8, 4 bytes), each
        // making a child row of 2 bytes
        let units = Units::new(&[3, 3, 2], &[false, true, true], 2);
        assert_eq!(units.unit_bytes(), 8);
        assert_eq!([0, 8, 12, 20].map(|o| units.unit_end(o)), [8, 12, 20, 24]);
        // from the second unit of slice 0 to the first of slice 2: a part
        // of a slice, a whole slice, a part of a slice
        let runs = units.runs(8, 32);
        let spans: Vec<_> = runs
            .iter()
            .map(|r| (r.parent.clone(), r.child.clone()))
            .collect();
        assert_eq!(spans, [(8..12, 2..4), (12..24, 4..8), (24..32, 8..10)]);
        // no halved row dimension: units are rows
        let rows = Units::new(&[3, 3, 2], &[false, false, true], 1);
        assert_eq!(
            (rows.unit_bytes(), rows.unit_end(3), rows.whole_units_end(5)),
            (2, 4, 4)
        );
    }
}
