//! The mapping both ways: element → (thread, local) holders, and
//! (thread, local) → element.

use crate::error::{RegisterError, Result};
use crate::ints::{product, py_list};
use crate::layout::RegisterLayout;

/// The most holders, or drawn cells, retile lists for one layout: 65536,
/// as many cells as a CuTe layout's drawing (`retile_layout::MAX_CELLS`),
/// so that a short expression cannot ask for gigabytes of output.
pub(crate) const MAX_LISTED: i64 = 1 << 16;

/// Row-major index of `coords` in `extents`.
fn serialize(coords: &[i64], extents: &[i64]) -> i64 {
    coords
        .iter()
        .zip(extents)
        .fold(0, |acc, (c, e)| acc * e + c)
}

/// Row-major coordinates of `index` in `extents`.
fn deserialize(mut index: i64, extents: &[i64]) -> Vec<i64> {
    let mut coords = vec![0; extents.len()];
    for (c, e) in coords.iter_mut().zip(extents).rev() {
        *c = index % e;
        index /= e;
    }
    coords
}

impl RegisterLayout {
    /// The index of every mode at tile coordinate `coord`.
    fn mode_coords(&self, coord: &[i64]) -> Result<Vec<i64>> {
        let in_range = coord.len() == self.shape.len()
            && coord
                .iter()
                .zip(&self.shape)
                .all(|(c, s)| (0..*s).contains(c));
        if !in_range {
            return Err(RegisterError::Operation(format!(
                "coordinate {} is outside the tile of shape {}",
                py_list(coord),
                py_list(&self.shape)
            )));
        }
        let mut modes = vec![0; self.mode_shape.len()];
        for (group, &c) in self.grouped_modes().into_iter().zip(coord) {
            let coords = deserialize(c, &self.mode_shape[group.clone()]);
            modes[group].copy_from_slice(&coords);
        }
        Ok(modes)
    }

    /// Every `(thread, local)` pair holding the element at `coord`, sorted
    /// by thread (the local index is the same for all).
    ///
    /// ```
    /// let l = retile_register::spatial(&[3, 4])?.reduce(&[0], false)?;
    /// assert_eq!(l.holders(&[2])?, vec![(2, 0), (6, 0), (10, 0)]);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn holders(&self, coord: &[i64]) -> Result<Vec<(i64, i64)>> {
        self.num_threads()?;
        self.local_size()?;
        let modes = self.mode_coords(coord)?;
        let local_coords: Vec<i64> = self
            .local_modes
            .iter()
            .map(|&m| modes[m as usize])
            .collect();
        let local = serialize(&local_coords, &self.local_shape());
        let spatial_shape = self.spatial_shape();
        let copies = product(
            self.spatial_modes.iter().filter(|&&m| m < 0).map(|&m| -m),
            "the replication",
        )?;
        if copies > MAX_LISTED {
            return Err(RegisterError::Operation(format!(
                "the element has {copies} holders, more than retile lists ({MAX_LISTED})"
            )));
        }
        let replicas: Vec<i64> = self
            .spatial_modes
            .iter()
            .filter(|&&m| m < 0)
            .map(|&m| -m)
            .collect();
        let mut threads = Vec::with_capacity(copies as usize);
        for copy in 0..copies {
            let mut replica = deserialize(copy, &replicas).into_iter();
            let coords: Vec<i64> = self
                .spatial_modes
                .iter()
                .map(|&m| {
                    if m < 0 {
                        replica.next().unwrap_or(0)
                    } else {
                        modes[m as usize]
                    }
                })
                .collect();
            threads.push(serialize(&coords, &spatial_shape));
        }
        threads.sort_unstable();
        Ok(threads.into_iter().map(|t| (t, local)).collect())
    }

    /// The tile coordinate held by `thread` at local index `local` (modes
    /// that are neither spatial nor local read as 0).
    ///
    /// ```
    /// use retile_register::{local, spatial};
    /// let c = local(&[2, 1])?.compose(&spatial(&[8, 4])?)?.compose(&local(&[1, 2])?)?;
    /// assert_eq!(c.element(5, 3)?, vec![9, 3]);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn element(&self, thread: i64, local: i64) -> Result<Vec<i64>> {
        let (threads, locals) = (self.num_threads()?, self.local_size()?);
        if !(0..threads).contains(&thread) || !(0..locals).contains(&local) {
            return Err(RegisterError::Operation(format!(
                "(thread {thread}, local {local}) is outside the layout's {threads} threads and {locals} registers"
            )));
        }
        let mut modes = vec![0; self.mode_shape.len()];
        for (&m, c) in self
            .spatial_modes
            .iter()
            .zip(deserialize(thread, &self.spatial_shape()))
        {
            if m >= 0 {
                modes[m as usize] = c;
            }
        }
        for (&m, c) in self
            .local_modes
            .iter()
            .zip(deserialize(local, &self.local_shape()))
        {
            modes[m as usize] = c;
        }
        Ok(self
            .grouped_modes()
            .into_iter()
            .map(|g| serialize(&modes[g.clone()], &self.mode_shape[g]))
            .collect())
    }

    /// The row-major index of tile coordinate `coord`.
    ///
    /// ```
    /// assert_eq!(retile_register::spatial(&[2, 3])?.flat_index(&[1, 2])?, 5);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn flat_index(&self, coord: &[i64]) -> Result<i64> {
        self.size()?;
        self.mode_coords(coord)?;
        Ok(serialize(coord, &self.shape))
    }

    /// The tile coordinate of row-major index `index`.
    ///
    /// ```
    /// assert_eq!(retile_register::spatial(&[2, 3]).unwrap().coord(5), vec![1, 2]);
    /// ```
    pub fn coord(&self, index: i64) -> Vec<i64> {
        deserialize(index, &self.shape)
    }
}
