//! Operations that keep the threads and registers of a layout and change
//! how the tile is seen (squeeze, unsqueeze, permute, reshape, flatten),
//! combine layouts (compose, concat) or reduce dimensions away.

use std::ops::Range;

use crate::error::{RegisterError, Result};
use crate::ints::{has_repeats, product, py_list};
use crate::layout::RegisterLayout;

fn operation(message: String) -> RegisterError {
    RegisterError::Operation(message)
}

/// tilus's checks on a list of dimensions: each in `[0, bound)`, no repeats.
fn check_dims(dims: &[i64], bound: usize) -> Result<()> {
    if dims.iter().any(|&d| d < 0 || d >= bound as i64) {
        return Err(operation(format!(
            "Dims must be in range [0, {bound}), got {}",
            py_list(dims)
        )));
    }
    if has_repeats(dims) {
        return Err(operation(format!(
            "Dims must be unique, got {}",
            py_list(dims)
        )));
    }
    Ok(())
}

/// `dims` (checked by [`check_dims`] against `bound`) as a mask over
/// `0..bound`, so that membership costs O(1) however many dims are given.
fn dim_mask(dims: &[i64], bound: usize) -> Vec<bool> {
    let mut mask = vec![false; bound];
    for &d in dims {
        if let Some(slot) = usize::try_from(d).ok().and_then(|d| mask.get_mut(d)) {
            *slot = true;
        }
    }
    mask
}

/// Python's reading of a slice bound `i` on a sequence of length `n`.
fn slice_bound(i: i64, n: usize) -> usize {
    let n = n as i64;
    (if i < 0 { i + n } else { i }).clamp(0, n) as usize
}

impl RegisterLayout {
    /// Replaces each element of `self` by a tile laid out as `inner`: the
    /// shapes multiply per dimension (the shorter rank is padded in front),
    /// `self`'s modes become the outer modes.
    ///
    /// ```
    /// use retile_register::{local, spatial};
    /// let l = local(&[3, 4])?.compose(&spatial(&[2, 3])?)?;
    /// assert_eq!(l.shape(), &[6, 12]);
    /// assert_eq!(l.spatial_modes(), &[1, 3]);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn compose(&self, inner: &RegisterLayout) -> Result<RegisterLayout> {
        let rank = self.shape.len().max(inner.shape.len());
        let outer = self.pad_rank(rank)?;
        let inner = inner.pad_rank(rank)?;
        let shape = outer
            .shape
            .iter()
            .zip(&inner.shape)
            .map(|(a, b)| {
                a.checked_mul(*b)
                    .ok_or_else(|| RegisterError::Overflow("a composed dimension".into()))
            })
            .collect::<Result<Vec<_>>>()?;
        let (mut outer_map, mut inner_map) = (
            vec![0; outer.mode_shape.len()],
            vec![0; inner.mode_shape.len()],
        );
        let mut mode_shape = Vec::new();
        for (og, ig) in outer.grouped_modes().into_iter().zip(inner.grouped_modes()) {
            for (group, map, layout) in [(og, &mut outer_map, &outer), (ig, &mut inner_map, &inner)]
            {
                for m in group {
                    map[m] = mode_shape.len();
                    mode_shape.push(layout.mode_shape[m]);
                }
            }
        }
        let outer = outer.remap(vec![], |m| Some(outer_map[m]));
        let inner = inner.remap(vec![], |m| Some(inner_map[m]));
        let spatial: Vec<i64> = outer
            .spatial_modes
            .iter()
            .chain(&inner.spatial_modes)
            .copied()
            .collect();
        let local: Vec<i64> = outer
            .local_modes
            .iter()
            .chain(&inner.local_modes)
            .copied()
            .collect();
        RegisterLayout::new(&shape, &mode_shape, &spatial, &local)
    }

    /// The layout with size-1 dimensions added in front up to `rank`.
    pub(crate) fn pad_rank(&self, rank: usize) -> Result<RegisterLayout> {
        let front: Vec<i64> = (0..(rank - self.shape.len()) as i64).collect();
        self.unsqueeze(&front)
    }

    /// The two tiles side by side as one of rank `self.rank + other.rank`;
    /// `other`'s threads and registers are the fastest.
    ///
    /// ```
    /// use retile_register::{local, spatial};
    /// let l = local(&[3, 2])?.concat(&spatial(&[8])?)?;
    /// assert_eq!(l.to_string(), "RegisterLayout(shape=[3, 2, 8], mode_shape=[3, 2, 8], spatial_modes=[2], local_modes=[0, 1])");
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn concat(&self, other: &RegisterLayout) -> Result<RegisterLayout> {
        let offset = self.mode_shape.len() as i64;
        let cat = |a: &[i64], b: &[i64], shift: bool| -> Vec<i64> {
            a.iter()
                .copied()
                .chain(
                    b.iter()
                        .map(|&m| if shift && m >= 0 { m + offset } else { m }),
                )
                .collect()
        };
        RegisterLayout::new(
            &cat(&self.shape, &other.shape, false),
            &cat(&self.mode_shape, &other.mode_shape, false),
            &cat(&self.spatial_modes, &other.spatial_modes, true),
            &cat(&self.local_modes, &other.local_modes, true),
        )
    }

    /// Removes the size-1 dimensions `dims`.
    ///
    /// ```
    /// let l = retile_register::spatial(&[1, 4, 1])?.squeeze(&[0, 2])?;
    /// assert_eq!(l.shape(), &[4]);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn squeeze(&self, dims: &[i64]) -> Result<RegisterLayout> {
        if dims.is_empty() {
            return Ok(self.clone());
        }
        check_dims(dims, self.shape.len())?;
        let squeezed = dim_mask(dims, self.shape.len());
        let sizes: Vec<i64> = dims.iter().map(|&d| self.shape[d as usize]).collect();
        if sizes.iter().any(|&s| s != 1) {
            return Err(operation(format!(
                "Dims must have size 1, got {}",
                py_list(&sizes)
            )));
        }
        let shape: Vec<i64> = self
            .shape
            .iter()
            .enumerate()
            .filter(|(i, _)| !squeezed[*i])
            .map(|(_, &s)| s)
            .collect();
        self.with_shape(&shape)
    }

    /// Inserts size-1 dimensions so that they sit at positions `dims` of the result.
    ///
    /// ```
    /// use retile_register::spatial;
    /// assert_eq!(spatial(&[4])?.unsqueeze(&[1])?, spatial(&[4, 1])?);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn unsqueeze(&self, dims: &[i64]) -> Result<RegisterLayout> {
        if dims.is_empty() {
            return Ok(self.clone());
        }
        let rank = self.shape.len() + dims.len();
        check_dims(dims, rank)?;
        let inserted = dim_mask(dims, rank);
        let mut old = self.shape.iter();
        let shape: Vec<i64> = (0..rank)
            .map(|i| {
                if inserted[i] {
                    1
                } else {
                    old.next().copied().unwrap_or(1)
                }
            })
            .collect();
        self.with_shape(&shape)
    }

    /// Reorders the dimensions: dimension `i` of the result is `dims[i]` of `self`.
    ///
    /// ```
    /// use retile_register::{local, spatial};
    /// let l = spatial(&[2, 3])?.compose(&local(&[2, 2])?)?.permute(&[1, 0])?;
    /// assert_eq!(l.mode_shape(), &[3, 2, 2, 2]);
    /// assert_eq!(l.spatial_modes(), &[2, 0]);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn permute(&self, dims: &[i64]) -> Result<RegisterLayout> {
        if dims.len() != self.shape.len() {
            return Err(operation(format!(
                "Dims must have the same length as the layout shape, got {} vs {}",
                dims.len(),
                self.shape.len()
            )));
        }
        if has_repeats(dims) {
            return Err(operation(format!(
                "Dims must be unique, got {}",
                py_list(dims)
            )));
        }
        check_dims(dims, self.shape.len())?;
        let groups = self.grouped_modes();
        let order: Vec<usize> = dims
            .iter()
            .flat_map(|&d| groups[d as usize].clone())
            .collect();
        let mut map = vec![0; self.mode_shape.len()];
        for (new, &old) in order.iter().enumerate() {
            map[old] = new;
        }
        let shape: Vec<i64> = dims.iter().map(|&d| self.shape[d as usize]).collect();
        let mode_shape: Vec<i64> = order.iter().map(|&m| self.mode_shape[m]).collect();
        let moved = self.remap(vec![], |m| Some(map[m]));
        RegisterLayout::new(
            &shape,
            &mode_shape,
            &moved.spatial_modes,
            &moved.local_modes,
        )
    }

    /// Reduces dimensions `dims` away: their spatial modes become
    /// replication (every thread that held a part of a reduced row holds the
    /// result), their local modes disappear.
    ///
    /// ```
    /// let l = retile_register::spatial(&[3, 4])?.reduce(&[0], false)?;
    /// assert_eq!(l.spatial_modes(), &[-3, 0]);
    /// assert_eq!(l.holders(&[1])?, vec![(1, 0), (5, 0), (9, 0)]);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn reduce(&self, dims: &[i64], keepdims: bool) -> Result<RegisterLayout> {
        if dims.is_empty() {
            return Ok(self.clone());
        }
        check_dims(dims, self.shape.len())?;
        let mask = dim_mask(dims, self.shape.len());
        let reduced = |d: usize| mask[d];
        let groups = self.grouped_modes();
        let mut map = vec![None; self.mode_shape.len()];
        let mut mode_shape = Vec::new();
        for group in groups
            .iter()
            .enumerate()
            .filter(|(d, _)| !reduced(*d))
            .map(|(_, g)| g)
        {
            for m in group.clone() {
                map[m] = Some(mode_shape.len() as i64);
                mode_shape.push(self.mode_shape[m]);
            }
        }
        let spatial: Vec<i64> = self
            .spatial_modes
            .iter()
            .map(|&m| {
                if m < 0 {
                    m
                } else {
                    map[m as usize].unwrap_or(-self.mode_shape[m as usize])
                }
            })
            .collect();
        let local: Vec<i64> = self
            .local_modes
            .iter()
            .filter_map(|&m| map[m as usize])
            .collect();
        let shape: Vec<i64> = self
            .shape
            .iter()
            .enumerate()
            .filter_map(|(d, &s)| match (reduced(d), keepdims) {
                (false, _) => Some(s),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        RegisterLayout::new(&shape, &mode_shape, &spatial, &local)
    }

    /// Reduces to `shape` as broadcasting would: leading dimensions are
    /// dropped, dimensions that become 1 are reduced and kept.
    ///
    /// ```
    /// use retile_register::{local, spatial};
    /// let l = spatial(&[2, 4])?.compose(&local(&[2, 2])?)?.reduce_to(&[8])?;
    /// assert_eq!(l.spatial_modes(), &[-2, 0]);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn reduce_to(&self, shape: &[i64]) -> Result<RegisterLayout> {
        let rank = self.shape.len();
        if shape.len() > rank {
            return Err(operation(format!(
                "cannot reduce a rank-{rank} layout to the rank-{} shape {}",
                shape.len(),
                py_list(shape)
            )));
        }
        let dropped = rank - shape.len();
        let mut kept_ones = Vec::new();
        for (d, &target) in shape.iter().enumerate() {
            let size = self.shape[d + dropped];
            if size != target {
                if target != 1 {
                    return Err(RegisterError::Invalid(
                        "can not broadcast output layout from input shape".into(),
                    ));
                }
                kept_ones.push((d + dropped) as i64);
            }
        }
        let lead: Vec<i64> = (0..dropped as i64).collect();
        self.reduce(&kept_ones, true)?.reduce(&lead, false)
    }

    /// The same threads and registers over another shape of the same size;
    /// modes split where the new dimensions cut them.
    ///
    /// ```
    /// use retile_register::{local, spatial};
    /// let l = spatial(&[6])?.compose(&local(&[4])?)?.reshape(&[2, 12])?;
    /// assert_eq!(l.mode_shape(), &[2, 3, 4]);
    /// assert!(spatial(&[6])?.compose(&local(&[4])?)?.reshape(&[4, 6]).is_err());
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn reshape(&self, shape: &[i64]) -> Result<RegisterLayout> {
        let fail = || {
            operation(format!(
                "Cannot reshape layout {self} to shape {}",
                py_list(shape)
            ))
        };
        if shape.iter().any(|&s| s < 1)
            || product(shape.iter().copied(), "the new shape")? != self.size()?
        {
            return Err(operation(format!(
                "Cannot reshape layout with shape {} to shape {}",
                py_list(&self.shape),
                py_list(shape)
            )));
        }
        let mut left = shape.iter().copied().filter(|&s| s > 1);
        let mut current = left.next();
        let mut pieces: Vec<Range<usize>> = Vec::with_capacity(self.mode_shape.len());
        let mut mode_shape = Vec::new();
        for &size in &self.mode_shape {
            let start = mode_shape.len();
            let mut p = size;
            while p > 1 {
                let q = current.ok_or_else(fail)?;
                if q % p == 0 {
                    mode_shape.push(p);
                    current = if q == p { left.next() } else { Some(q / p) };
                    p = 1;
                } else if p % q == 0 {
                    mode_shape.push(q);
                    current = left.next();
                    p /= q;
                } else {
                    return Err(fail());
                }
            }
            pieces.push(start..mode_shape.len());
        }
        let expand = |modes: &[i64], keep_negative: bool| -> Vec<i64> {
            modes
                .iter()
                .flat_map(|&m| {
                    if m < 0 && keep_negative {
                        vec![m]
                    } else {
                        pieces[m as usize].clone().map(|n| n as i64).collect()
                    }
                })
                .collect()
        };
        RegisterLayout::new(
            shape,
            &mode_shape,
            &expand(&self.spatial_modes, true),
            &expand(&self.local_modes, false),
        )
    }

    /// Merges dimensions `start..end` (Python slice bounds: negative counts
    /// from the end; `end = -1` means the last dimension, excluded, as in tilus).
    ///
    /// ```
    /// let l = retile_register::spatial(&[2, 3, 4])?;
    /// assert_eq!(l.flatten(0, -1)?.shape(), &[6, 4]);
    /// assert_eq!(l.flatten(1, 3)?.shape(), &[2, 12]);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn flatten(&self, start: i64, end: i64) -> Result<RegisterLayout> {
        let n = self.shape.len();
        let end = if end < 0 { end + n as i64 } else { end };
        let (start, end) = (slice_bound(start, n), slice_bound(end, n));
        let merged = product(
            self.shape[start..end.max(start)].iter().copied(),
            "a flattened dimension",
        )?;
        let shape: Vec<i64> = self.shape[..start]
            .iter()
            .copied()
            .chain(std::iter::once(merged))
            .chain(self.shape[end..].iter().copied())
            .collect();
        self.reshape(&shape)
    }
}
