//! The primitive layouts: spatial, local, their column-major forms,
//! replication and `auto_local_spatial`.

use retile_layout::gcd;

use crate::error::{RegisterError, Result};
use crate::ints::{has_repeats, product, py_list};
use crate::layout::RegisterLayout;

/// One thread per element, threads numbered row-major.
///
/// ```
/// let l = retile_register::spatial(&[3, 2])?;
/// assert_eq!(l.holders(&[2, 1])?, vec![(5, 0)]);
/// # Ok::<(), retile_register::RegisterError>(())
/// ```
pub fn spatial(shape: &[i64]) -> Result<RegisterLayout> {
    spatial_ranked(shape, None)
}

/// One thread holding every element, registers numbered row-major.
///
/// ```
/// let l = retile_register::local(&[3, 4])?;
/// assert_eq!(l.holders(&[1, 2])?, vec![(0, 6)]);
/// # Ok::<(), retile_register::RegisterError>(())
/// ```
pub fn local(shape: &[i64]) -> Result<RegisterLayout> {
    local_ranked(shape, None)
}

/// `spatial` with an order: dimension `d` has rank `ranks[d]` (0 = slowest).
///
/// ```
/// let l = retile_register::spatial_ranked(&[2, 3], Some(&[1, 0]))?;
/// assert_eq!(l, retile_register::column_spatial(&[2, 3])?);
/// # Ok::<(), retile_register::RegisterError>(())
/// ```
pub fn spatial_ranked(shape: &[i64], ranks: Option<&[i64]>) -> Result<RegisterLayout> {
    RegisterLayout::new(shape, shape, &ranked_modes(shape, ranks)?, &[])
}

/// `local` with an order: dimension `d` has rank `ranks[d]` (0 = slowest).
///
/// ```
/// let l = retile_register::local_ranked(&[2, 3, 4], Some(&[2, 0, 1]))?;
/// assert_eq!(l.local_modes(), &[1, 2, 0]);
/// # Ok::<(), retile_register::RegisterError>(())
/// ```
pub fn local_ranked(shape: &[i64], ranks: Option<&[i64]>) -> Result<RegisterLayout> {
    RegisterLayout::new(shape, shape, &[], &ranked_modes(shape, ranks)?)
}

/// `spatial` with threads numbered column-major.
///
/// ```
/// let l = retile_register::column_spatial(&[2, 3])?;
/// assert_eq!(l.holders(&[1, 0])?, vec![(1, 0)]);
/// # Ok::<(), retile_register::RegisterError>(())
/// ```
pub fn column_spatial(shape: &[i64]) -> Result<RegisterLayout> {
    spatial_ranked(shape, Some(&reversed_ranks(shape.len())))
}

/// `local` with registers numbered column-major.
///
/// ```
/// let l = retile_register::column_local(&[2, 3])?;
/// assert_eq!(l.holders(&[0, 1])?, vec![(0, 2)]);
/// # Ok::<(), retile_register::RegisterError>(())
/// ```
pub fn column_local(shape: &[i64]) -> Result<RegisterLayout> {
    local_ranked(shape, Some(&reversed_ranks(shape.len())))
}

/// Every one of `num_workers` threads holds the whole tile in its registers.
///
/// ```
/// let l = retile_register::replicated(&[2, 3], 4)?;
/// assert_eq!(l.spatial_modes(), &[-4]);
/// assert_eq!(l.holders(&[0, 1])?.len(), 4);
/// # Ok::<(), retile_register::RegisterError>(())
/// ```
pub fn replicated(shape: &[i64], num_workers: i64) -> Result<RegisterLayout> {
    if num_workers < 1 {
        return Err(RegisterError::Operation(format!(
            "num_workers must be positive, got {num_workers}"
        )));
    }
    let local_modes: Vec<i64> = (0..shape.len() as i64).collect();
    RegisterLayout::new(shape, shape, &[-num_workers], &local_modes)
}

/// `local(...).spatial(...)` spreading `num_threads` threads over the
/// fastest dimensions first; threads left over replicate.
///
/// ```
/// let l = retile_register::auto_local_spatial(128, &[16, 64])?;
/// assert_eq!(l.mode_shape(), &[8, 2, 64]);
/// assert_eq!(l.spatial_modes(), &[1, 2]);
/// # Ok::<(), retile_register::RegisterError>(())
/// ```
pub fn auto_local_spatial(num_threads: i64, shape: &[i64]) -> Result<RegisterLayout> {
    let size = product(shape.iter().copied(), "the tile size")?;
    let fits = num_threads >= 1
        && shape.iter().all(|&s| s >= 1)
        && (size % num_threads == 0 || num_threads % size == 0);
    if !fits {
        return Err(RegisterError::Operation(format!(
            "Cannot auto local spatial layout with shape {} and num_threads {num_threads}",
            py_list(shape)
        )));
    }
    let mut local_shape = shape.to_vec();
    let mut spatial_shape = vec![1; shape.len()];
    let mut threads_left = num_threads;
    for d in (0..shape.len()).rev() {
        spatial_shape[d] = gcd(threads_left, local_shape[d]);
        threads_left /= spatial_shape[d];
        local_shape[d] /= spatial_shape[d];
    }
    let layout = local(&local_shape)?.compose(&spatial(&spatial_shape)?)?;
    if threads_left == 1 {
        return Ok(layout);
    }
    let spatial_modes: Vec<i64> = std::iter::once(-threads_left)
        .chain(layout.spatial_modes.iter().copied())
        .collect();
    RegisterLayout::new(
        &layout.shape,
        &layout.mode_shape,
        &spatial_modes,
        &layout.local_modes,
    )
}

fn reversed_ranks(n: usize) -> Vec<i64> {
    (0..n as i64).rev().collect()
}

/// The mode order that gives dimension `d` the rank `ranks[d]`.
fn ranked_modes(shape: &[i64], ranks: Option<&[i64]>) -> Result<Vec<i64>> {
    let n = shape.len();
    let Some(ranks) = ranks else {
        return Ok((0..n as i64).collect());
    };
    if ranks.len() != n {
        return Err(RegisterError::Operation(format!(
            "Shape and ranks must have the same length, got {} vs {}",
            n,
            ranks.len()
        )));
    }
    if has_repeats(ranks) {
        return Err(RegisterError::Operation(format!(
            "Ranks must be unique, got {}",
            py_list(ranks)
        )));
    }
    if ranks.iter().any(|&r| r < 0 || r >= n as i64) {
        return Err(RegisterError::Operation(format!(
            "Ranks must be in range [0, {n}), got {}",
            py_list(ranks)
        )));
    }
    // modes[rank] = the dimension of that rank (ranks are a permutation of 0..n)
    let mut modes = vec![0i64; n];
    for (d, &rank) in ranks.iter().enumerate() {
        modes[rank as usize] = d as i64;
    }
    Ok(modes)
}
