//! The data model: shape, modes, spatial and local modes, canonical form.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use crate::error::{RegisterError, Result};
use crate::ints::{has_repeats, product, py_list};

/// A register layout in canonical form (see the crate docs).
///
/// Two layouts with the same mapping have the same canonical form, so `==`
/// compares mappings.
///
/// ```
/// use retile_register::RegisterLayout;
/// let l = RegisterLayout::new(&[4, 6, 5], &[2, 2, 2, 3, 5], &[0, 1], &[2, 3, 4])?;
/// assert_eq!(l.mode_shape(), &[4, 6, 5]);
/// assert_eq!(l.spatial_modes(), &[0]);
/// assert_eq!(l.local_modes(), &[1, 2]);
/// # Ok::<(), retile_register::RegisterError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegisterLayout {
    pub(crate) shape: Vec<i64>,
    pub(crate) mode_shape: Vec<i64>,
    pub(crate) spatial_modes: Vec<i64>,
    pub(crate) local_modes: Vec<i64>,
}

/// Whether a mode indexes threads or registers, and where in that list.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Spatial(usize),
    Local(usize),
}

impl RegisterLayout {
    /// Validates the four attributes and returns the canonical layout
    /// (size-1 modes dropped, modes adjacent in a dimension and in the same
    /// index list merged).
    ///
    /// ```
    /// use retile_register::RegisterLayout;
    /// let l = RegisterLayout::new(&[6], &[2, 3], &[0, 1], &[])?;
    /// assert_eq!(l.mode_shape(), &[6]);
    /// let err = RegisterLayout::new(&[6], &[2, 3], &[0, 0], &[]).unwrap_err();
    /// assert_eq!(err.to_string(), "Thread dims and local dims must be unique");
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn new(
        shape: &[i64],
        mode_shape: &[i64],
        spatial_modes: &[i64],
        local_modes: &[i64],
    ) -> Result<Self> {
        validate(shape, mode_shape, spatial_modes, local_modes)?;
        let raw = RegisterLayout::raw(shape, mode_shape, spatial_modes, local_modes);
        raw.drop_singleton_modes().merge_contiguous_modes()
    }

    /// The attributes as given, not validated nor canonicalized.
    pub(crate) fn raw(
        shape: &[i64],
        mode_shape: &[i64],
        spatial_modes: &[i64],
        local_modes: &[i64],
    ) -> Self {
        RegisterLayout {
            shape: shape.to_vec(),
            mode_shape: mode_shape.to_vec(),
            spatial_modes: spatial_modes.to_vec(),
            local_modes: local_modes.to_vec(),
        }
    }

    /// The same modes over another shape of the same modes' grouping
    /// (size-1 dimensions added or removed, leading dimensions merged).
    pub(crate) fn with_shape(&self, shape: &[i64]) -> Result<Self> {
        validate(
            shape,
            &self.mode_shape,
            &self.spatial_modes,
            &self.local_modes,
        )?;
        Ok(RegisterLayout {
            shape: shape.to_vec(),
            ..self.clone()
        })
    }

    /// The tile's shape.
    ///
    /// ```
    /// assert_eq!(retile_register::spatial(&[2, 3]).unwrap().shape(), &[2, 3]);
    /// ```
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    /// The size of each mode.
    ///
    /// ```
    /// let l = retile_register::local(&[3, 4]).unwrap().compose(&retile_register::spatial(&[2, 3]).unwrap()).unwrap();
    /// assert_eq!(l.mode_shape(), &[3, 2, 4, 3]);
    /// ```
    pub fn mode_shape(&self) -> &[i64] {
        &self.mode_shape
    }

    /// The modes indexing threads, slowest first; `-k` replicates over `k` threads.
    ///
    /// ```
    /// assert_eq!(retile_register::column_spatial(&[2, 3]).unwrap().spatial_modes(), &[1, 0]);
    /// ```
    pub fn spatial_modes(&self) -> &[i64] {
        &self.spatial_modes
    }

    /// The modes indexing each thread's registers, slowest first.
    ///
    /// ```
    /// assert_eq!(retile_register::column_local(&[2, 3]).unwrap().local_modes(), &[1, 0]);
    /// ```
    pub fn local_modes(&self) -> &[i64] {
        &self.local_modes
    }

    /// The extent of each spatial entry (a replication `-k` counts `k`).
    ///
    /// ```
    /// let l = retile_register::RegisterLayout::new(&[4], &[4], &[-3, 0], &[]).unwrap();
    /// assert_eq!(l.spatial_shape(), vec![3, 4]);
    /// ```
    pub fn spatial_shape(&self) -> Vec<i64> {
        self.spatial_modes
            .iter()
            .map(|&m| {
                if m < 0 {
                    -m
                } else {
                    self.mode_shape[m as usize]
                }
            })
            .collect()
    }

    /// The extent of each local mode.
    ///
    /// ```
    /// assert_eq!(retile_register::local(&[2, 3]).unwrap().local_shape(), vec![2, 3]);
    /// ```
    pub fn local_shape(&self) -> Vec<i64> {
        self.local_modes
            .iter()
            .map(|&m| self.mode_shape[m as usize])
            .collect()
    }

    /// The number of threads (replication included).
    ///
    /// ```
    /// assert_eq!(retile_register::spatial(&[8, 4]).unwrap().num_threads().unwrap(), 32);
    /// ```
    pub fn num_threads(&self) -> Result<i64> {
        product(self.spatial_shape(), "the number of threads")
    }

    /// The number of registers per thread.
    ///
    /// ```
    /// assert_eq!(retile_register::local(&[2, 3]).unwrap().local_size().unwrap(), 6);
    /// ```
    pub fn local_size(&self) -> Result<i64> {
        product(self.local_shape(), "the number of registers per thread")
    }

    /// The number of elements of the tile.
    ///
    /// ```
    /// assert_eq!(retile_register::spatial(&[2, 3]).unwrap().size().unwrap(), 6);
    /// ```
    pub fn size(&self) -> Result<i64> {
        product(self.shape.iter().copied(), "the tile size")
    }

    /// The modes of each dimension, outermost first.
    ///
    /// ```
    /// let l = retile_register::RegisterLayout::new(&[4, 6], &[2, 2, 3, 2], &[0, 2], &[3, 1]).unwrap();
    /// assert_eq!(l.grouped_modes(), vec![0..2, 2..4]);
    /// ```
    pub fn grouped_modes(&self) -> Vec<Range<usize>> {
        group_modes(&self.shape, &self.mode_shape)
    }

    fn roles(&self) -> HashMap<usize, Role> {
        let spatial = self
            .spatial_modes
            .iter()
            .enumerate()
            .filter(|(_, &m)| m >= 0)
            .map(|(i, &m)| (m as usize, Role::Spatial(i)));
        let local = self
            .local_modes
            .iter()
            .enumerate()
            .map(|(i, &m)| (m as usize, Role::Local(i)));
        spatial.chain(local).collect()
    }

    /// Rewrites mode indices through `map` (`None` drops the mode; negative
    /// spatial entries are kept).
    pub(crate) fn remap(&self, mode_shape: Vec<i64>, map: impl Fn(usize) -> Option<usize>) -> Self {
        let spatial = self
            .spatial_modes
            .iter()
            .filter_map(|&m| {
                if m < 0 {
                    Some(m)
                } else {
                    map(m as usize).map(|n| n as i64)
                }
            })
            .collect();
        let local = self
            .local_modes
            .iter()
            .filter_map(|&m| map(m as usize).map(|n| n as i64))
            .collect();
        RegisterLayout {
            shape: self.shape.clone(),
            mode_shape,
            spatial_modes: spatial,
            local_modes: local,
        }
    }

    fn drop_singleton_modes(self) -> Self {
        let mut index = Vec::with_capacity(self.mode_shape.len());
        let mut next = 0;
        for &size in &self.mode_shape {
            index.push((size != 1).then(|| {
                next += 1;
                next - 1
            }));
        }
        let mode_shape = self
            .mode_shape
            .iter()
            .copied()
            .filter(|&s| s != 1)
            .collect();
        self.remap(mode_shape, |m| index[m])
    }

    fn merge_contiguous_modes(self) -> Result<Self> {
        let roles = self.roles();
        let mut runs: Vec<Range<usize>> = Vec::new();
        for (dim, group) in self.grouped_modes().into_iter().enumerate() {
            if group.len() > 1 {
                if let Some(m) = group.clone().find(|m| !roles.contains_key(m)) {
                    return Err(RegisterError::Invalid(format!(
                        "mode {m} is neither spatial nor local, but dimension {dim} is split into several modes; \
                         give every mode of a split dimension a role"
                    )));
                }
            }
            let mut start = group.start;
            for m in group.clone() {
                let continues = m + 1 < group.end && successor(roles.get(&m), roles.get(&(m + 1)));
                if !continues {
                    runs.push(start..m + 1);
                    start = m + 1;
                }
            }
        }
        if runs.iter().all(|r| r.len() == 1) {
            return Ok(self);
        }
        let mut index = vec![None; self.mode_shape.len()];
        for (i, run) in runs.iter().enumerate() {
            index[run.start] = Some(i);
        }
        let mode_shape = runs
            .iter()
            .map(|r| product(self.mode_shape[r.clone()].iter().copied(), "a mode size"))
            .collect::<Result<_>>()?;
        Ok(self.remap(mode_shape, |m| index[m]))
    }
}

/// Whether role `b` directly follows role `a` in the same index list.
fn successor(a: Option<&Role>, b: Option<&Role>) -> bool {
    match (a, b) {
        (Some(Role::Spatial(i)), Some(Role::Spatial(j)))
        | (Some(Role::Local(i)), Some(Role::Local(j))) => i + 1 == *j,
        _ => false,
    }
}

/// The modes of each dimension: consecutive modes whose sizes multiply to the
/// dimension's size (size-1 modes belong to no dimension past the first that
/// can take them). Assumes a validated layout.
pub(crate) fn group_modes(shape: &[i64], mode_shape: &[i64]) -> Vec<Range<usize>> {
    let mut next = 0;
    shape
        .iter()
        .map(|&size| {
            let start = next;
            let mut remaining = size;
            while remaining > 1 && next < mode_shape.len() {
                remaining /= mode_shape[next].max(1);
                next += 1;
            }
            start..next
        })
        .collect()
}

/// tilus's rules for the four attributes, with its messages.
fn validate(
    shape: &[i64],
    mode_shape: &[i64],
    spatial_modes: &[i64],
    local_modes: &[i64],
) -> Result<()> {
    if shape.iter().any(|&s| s < 1) {
        return Err(RegisterError::Invalid(format!(
            "Shape must only be positive integers, got {}",
            py_list(shape)
        )));
    }
    if let Some(m) = mode_shape.iter().find(|&&m| m < 1) {
        return Err(RegisterError::Invalid(format!(
            "Mode sizes must be positive, got {m} in {}",
            py_list(mode_shape)
        )));
    }
    if spatial_modes.contains(&i64::MIN) {
        return Err(RegisterError::Invalid(format!(
            "replication {} does not fit in 64 bits",
            i64::MIN
        )));
    }
    let mut remaining = shape.to_vec();
    for &mode in mode_shape.iter().rev().filter(|&&m| m != 1) {
        while remaining.last() == Some(&1) {
            remaining.pop();
        }
        match remaining.last_mut() {
            Some(last) if *last % mode == 0 => *last /= mode,
            _ => {
                return Err(RegisterError::Invalid(format!(
                    "Mode {mode} does not divide the remaining shape {}",
                    py_list(&remaining)
                )))
            }
        }
    }
    if remaining.iter().any(|&s| s != 1) {
        return Err(RegisterError::Invalid(format!(
            "Modes {} and shape {} do not match",
            py_list(mode_shape),
            py_list(shape)
        )));
    }
    let spatial = spatial_modes
        .iter()
        .filter(|&&m| m >= 0)
        .map(|&m| (m, "Thread"));
    let mut used = Vec::new();
    for (m, kind) in spatial.chain(local_modes.iter().map(|&m| (m, "Local"))) {
        if m < 0 || m as usize >= mode_shape.len() {
            return Err(RegisterError::Invalid(format!(
                "{kind} dim {m} is out of range for modes {}",
                py_list(mode_shape)
            )));
        }
        used.push(m);
    }
    if has_repeats(&used) {
        return Err(RegisterError::Invalid(
            "Thread dims and local dims must be unique".into(),
        ));
    }
    Ok(())
}

impl fmt::Display for RegisterLayout {
    /// tilus's header line: `RegisterLayout(shape=[..], mode_shape=[..], spatial_modes=[..], local_modes=[..])`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RegisterLayout(shape={}, mode_shape={}, spatial_modes={}, local_modes={})",
            py_list(&self.shape),
            py_list(&self.mode_shape),
            py_list(&self.spatial_modes),
            py_list(&self.local_modes)
        )
    }
}
