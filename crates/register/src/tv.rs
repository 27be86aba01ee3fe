//! Conversion to and from CuTe thread-value layouts.
//!
//! A TV layout maps (thread, value) to the element's column-major index in
//! the tile, CuTe's convention; its modes list the fastest first, so the
//! spatial and local modes appear reversed.

use retile_layout::{IntTuple, Layout};

use crate::error::{RegisterError, Result};
use crate::layout::RegisterLayout;

fn overflow() -> RegisterError {
    RegisterError::Overflow("an element stride".into())
}

/// Column-major strides of the tile's dimensions.
fn column_strides(shape: &[i64]) -> Result<Vec<i64>> {
    let mut acc = 1i64;
    shape
        .iter()
        .map(|&s| {
            let stride = acc;
            acc = acc.checked_mul(s).ok_or_else(overflow)?;
            Ok(stride)
        })
        .collect()
}

/// One CuTe mode from `(extent, stride)` leaves, fastest first.
fn mode(leaves: &[(i64, i64)]) -> (IntTuple, IntTuple) {
    match leaves {
        [] => (IntTuple::Int(1), IntTuple::Int(0)),
        [(e, s)] => (IntTuple::Int(*e), IntTuple::Int(*s)),
        _ => (
            IntTuple::Tuple(leaves.iter().map(|l| IntTuple::Int(l.0)).collect()),
            IntTuple::Tuple(leaves.iter().map(|l| IntTuple::Int(l.1)).collect()),
        ),
    }
}

impl RegisterLayout {
    /// The element stride (column-major tile index) of every mode.
    fn mode_strides(&self) -> Result<Vec<i64>> {
        let columns = column_strides(&self.shape)?;
        let mut strides = vec![0; self.mode_shape.len()];
        for (group, column) in self.grouped_modes().into_iter().zip(columns) {
            let mut inner = column;
            for m in group.rev() {
                strides[m] = inner;
                inner = inner.checked_mul(self.mode_shape[m]).ok_or_else(overflow)?;
            }
        }
        Ok(strides)
    }

    /// The CuTe layout `(thread, value) -> column-major element index`;
    /// replicated threads have stride 0.
    ///
    /// ```
    /// let l = retile_register::spatial(&[2, 3])?;
    /// assert_eq!(l.tv_layout()?.to_string(), "((3,2),1):((2,1),0)");
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn tv_layout(&self) -> Result<Layout> {
        let strides = self.mode_strides()?;
        let leaf = |m: i64| {
            if m < 0 {
                (-m, 0)
            } else {
                (self.mode_shape[m as usize], strides[m as usize])
            }
        };
        let threads: Vec<(i64, i64)> = self.spatial_modes.iter().rev().map(|&m| leaf(m)).collect();
        let values: Vec<(i64, i64)> = self.local_modes.iter().rev().map(|&m| leaf(m)).collect();
        let (ts, td) = mode(&threads);
        let (vs, vd) = mode(&values);
        Layout::new(IntTuple::Tuple(vec![ts, vs]), IntTuple::Tuple(vec![td, vd]))
            .map_err(|e| RegisterError::Operation(e.to_string()))
    }

    /// The register layout of a CuTe TV layout over a tile of `shape`, where
    /// one exists: every leaf must cover a contiguous piece of one
    /// dimension's column-major index, and the leaves must tile each
    /// dimension exactly.
    ///
    /// ```
    /// use retile_layout::Layout;
    /// use retile_register::RegisterLayout;
    /// let tv: Layout = "((4,8),(2,2)):((32,1),(16,8))".parse().unwrap();
    /// let l = RegisterLayout::from_tv(&tv, &[16, 8])?;
    /// assert_eq!(l.mode_shape(), &[2, 8, 4, 2]);
    /// assert_eq!(l.tv_layout()?, tv);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn from_tv(tv: &Layout, shape: &[i64]) -> Result<RegisterLayout> {
        if tv.rank() != 2 {
            return Err(RegisterError::Operation(format!(
                "a thread-value layout has rank 2 (threads, values); {tv} has rank {}",
                tv.rank()
            )));
        }
        if let Some(bad) = shape.iter().find(|&&s| s < 1) {
            return Err(RegisterError::Operation(format!(
                "a tile's extents must be positive, got {bad} in {shape:?}"
            )));
        }
        let columns = column_strides(shape)?;
        let mode_leaves = |i: usize| {
            tv.mode(i)
                .map(|m| m.flat_modes().to_vec())
                .map_err(|e| RegisterError::Operation(e.to_string()))
        };
        let (threads, values) = (mode_leaves(0)?, mode_leaves(1)?);
        // per dimension: (offset within the dimension, extent, leaf id)
        let mut pieces: Vec<Vec<(i64, i64, usize)>> = vec![Vec::new(); shape.len()];
        let leaves: Vec<(i64, i64, bool)> = threads
            .iter()
            .map(|&(e, s)| (e, s, true))
            .chain(values.iter().map(|&(e, s)| (e, s, false)))
            .collect();
        for (id, &(extent, stride, is_thread)) in leaves.iter().enumerate() {
            if extent == 1 || (stride == 0 && is_thread) {
                continue;
            }
            let dim = (0..shape.len())
                .rev()
                .find(|&d| stride > 0 && stride % columns[d] == 0 && stride / columns[d] < shape[d])
                .ok_or_else(|| RegisterError::Operation(format!("leaf {extent}:{stride} of {tv} is not a piece of one dimension of a tile of shape {shape:?}")))?;
            pieces[dim].push((stride / columns[dim], extent, id));
        }
        let mut mode_of_leaf = vec![None; leaves.len()];
        let mut mode_shape = Vec::new();
        for (d, dim_pieces) in pieces.iter_mut().enumerate() {
            dim_pieces.sort_unstable();
            let mut covered = 1i64;
            for &(offset, extent, _) in dim_pieces.iter() {
                if offset != covered {
                    return Err(RegisterError::Operation(format!(
                        "{tv} does not tile dimension {d} (size {}) exactly",
                        shape[d]
                    )));
                }
                covered = covered.checked_mul(extent).ok_or_else(overflow)?;
            }
            if covered != shape[d] {
                return Err(RegisterError::Operation(format!(
                    "{tv} does not tile dimension {d} (size {}) exactly",
                    shape[d]
                )));
            }
            for &(_, extent, id) in dim_pieces.iter().rev() {
                mode_of_leaf[id] = Some(mode_shape.len() as i64);
                mode_shape.push(extent);
            }
        }
        let role = |id: usize| -> Option<i64> {
            let (extent, _, is_thread) = leaves[id];
            match mode_of_leaf[id] {
                Some(m) => Some(m),
                None if is_thread && extent > 1 => Some(-extent),
                None => None,
            }
        };
        let spatial: Vec<i64> = (0..threads.len()).rev().filter_map(role).collect();
        let local: Vec<i64> = (threads.len()..leaves.len())
            .rev()
            .filter_map(role)
            .collect();
        RegisterLayout::new(shape, &mode_shape, &spatial, &local)
    }
}
