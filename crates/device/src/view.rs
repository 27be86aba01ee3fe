//! Views: the device layout of a host tensor reshaped without moving device
//! memory (unsqueeze, fuse, split).
//!
//! Every device position contributes `coordinate × weight` to the host's
//! row-major linear index: the weights are the strides of the device
//! layout's CuTe form ([`DeviceLayout::to_cute`] with contiguous host
//! strides). A view keeps the linear index, so each position belongs to the
//! new host dimension whose stride range contains its weight; a position
//! that spans several new dimensions is split into one position per
//! dimension (outer first, so memory order is unchanged). The result is
//! accepted only if the fold rule, applied to the new positions, gives back
//! every weight: otherwise no device layout over the same memory expresses
//! the view.

use retile_layout::row_major_strides;

use crate::error::DeviceError;
use crate::layout::DeviceLayout;

/// One device position of the new layout: its extent, new host dimension
/// (`-1` synthetic), linear weight, and whether it came from the old stick
/// dimension's outer positions.
#[derive(Debug, Clone, Copy)]
struct Piece {
    extent: u64,
    dim: i64,
    weight: u64,
    stick_outer: bool,
}

fn invalid<T>(message: String) -> Result<T, DeviceError> {
    Err(DeviceError::Invalid(format!("view: {message}")))
}

impl DeviceLayout {
    /// The layout of the same device memory seen through the host size
    /// `new_host` (same number of elements, row-major order kept).
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let l = DeviceLayout::explicit(&[6, 128], &[2, 6, 64], &[1, 0, 1], DType::F16).unwrap();
    /// let v = l.view(&[2, 3, 128]).unwrap();
    /// assert_eq!((v.device_size(), v.dim_map()), (&[2, 2, 3, 64][..], &[2, 0, 1, 2][..]));
    /// ```
    pub fn view(&self, new_host: &[u64]) -> Result<DeviceLayout, DeviceError> {
        let old_host = self.host_size();
        let elements: u64 = old_host.iter().product();
        let new_elements = new_host.iter().try_fold(1u64, |a, &x| a.checked_mul(x));
        if new_elements != Some(elements)
            || new_host.contains(&0)
            || new_host.len() > crate::layout::MAX_HOST_RANK
        {
            return invalid(format!(
                "{new_host:?} does not have the {elements} elements of {old_host:?}"
            ));
        }
        let old_strides = row_major_strides(old_host);
        let new_strides = row_major_strides(new_host);
        let contiguous: Vec<i64> = old_strides.iter().map(|&s| s as i64).collect();
        let weights: Vec<u64> = self
            .to_cute(&contiguous)?
            .flat_modes()
            .iter()
            .rev()
            .map(|&(_, d)| d as u64)
            .collect();
        let last = self.dim_map().len() - 1;
        let stick = self.host_stick_dim();
        let mut pieces = Vec::new();
        for (j, (&h, &extent)) in self.dim_map().iter().zip(self.device_size()).enumerate() {
            let Ok(h) = usize::try_from(h) else {
                pieces.push(Piece {
                    extent,
                    dim: -1,
                    weight: 0,
                    stick_outer: false,
                });
                continue;
            };
            let weight = weights[j];
            let span_end = old_host[h] * old_strides[h];
            let outermost = self.dim_map()[..j].iter().all(|&m| m != h as i64);
            let mut split =
                split_position(extent, weight, span_end, outermost, new_host, &new_strides)?;
            if j == last && split.len() > 1 {
                return invalid(format!(
                    "splitting stick dimension requires innermost new dimension size >= elems_per_stick ({})",
                    crate::dtype::elems_per_stick(self.dtype())?
                ));
            }
            let from_stick = Some(h) == stick && j != last;
            split.iter_mut().for_each(|p| p.stick_outer = from_stick);
            pieces.extend(split);
        }
        keep_stick_outer_position(&mut pieces, self.is_sparse());
        check_fold(&pieces, new_host.len(), &new_strides)?;
        let device_size: Vec<u64> = pieces.iter().map(|p| p.extent).collect();
        let dim_map: Vec<i64> = pieces.iter().map(|p| p.dim).collect();
        DeviceLayout::explicit(new_host, &device_size, &dim_map, self.dtype())
    }
}

/// The pieces (outer first) of a position of `extent` steps of `weight`.
/// `span_end` is where its old host dimension's linear range ends; the
/// outermost position of a padded dimension may run past it.
fn split_position(
    extent: u64,
    weight: u64,
    span_end: u64,
    outermost: bool,
    new_host: &[u64],
    strides: &[u64],
) -> Result<Vec<Piece>, DeviceError> {
    let mut pieces = Vec::new();
    let (mut z, mut t) = (extent, weight);
    while z > 1 {
        let Some(d) = (0..new_host.len())
            .find(|&d| new_host[d] > 1 && strides[d] <= t && t < strides[d] * new_host[d])
        else {
            return invalid(format!(
                "a device dimension of weight {t} lies outside the new host dimensions"
            ));
        };
        let end = strides[d] * new_host[d];
        if t % strides[d] != 0 {
            return invalid(format!(
                "a device dimension of weight {t} does not align with new host dimension {d}"
            ));
        }
        let padded = outermost && t.saturating_mul(z) > span_end && end == span_end;
        if padded && z == end.div_ceil(t) {
            pieces.push(Piece {
                extent: z,
                dim: d as i64,
                weight: t,
                stick_outer: false,
            });
            break;
        }
        if !end.is_multiple_of(t) {
            return invalid(format!(
                "new host dimension {d} ({}) does not split evenly over a device dimension",
                new_host[d]
            ));
        }
        let room = end / t;
        if z <= room {
            pieces.push(Piece {
                extent: z,
                dim: d as i64,
                weight: t,
                stick_outer: false,
            });
            break;
        }
        if z % room != 0 {
            return invalid(format!(
                "a device dimension of {z} does not split at new host dimension {d} ({})",
                new_host[d]
            ));
        }
        pieces.push(Piece {
            extent: room,
            dim: d as i64,
            weight: t,
            stick_outer: false,
        });
        z /= room;
        t *= room;
    }
    if pieces.is_empty() {
        pieces.push(Piece {
            extent: 1,
            dim: new_dim_of(weight, new_host, strides),
            weight,
            stick_outer: false,
        });
    }
    pieces.reverse();
    Ok(pieces)
}

/// The new dimension of a size-1 position (any: its coordinate is always 0).
fn new_dim_of(weight: u64, new_host: &[u64], strides: &[u64]) -> i64 {
    (0..new_host.len())
        .find(|&d| strides[d] <= weight && weight < strides[d] * new_host[d])
        .unwrap_or(0) as i64
}

/// Keeps the canonical form in which the stick's host dimension also has an
/// outer (stick-count) position: if a split moved all of the old stick
/// dimension's outer positions elsewhere, a size-1 position for the new stick
/// dimension follows them.
fn keep_stick_outer_position(pieces: &mut Vec<Piece>, sparse: bool) {
    let Some(stick) = pieces.last().copied() else {
        return;
    };
    if sparse || pieces.iter().filter(|p| p.dim == stick.dim).count() > 1 {
        return;
    }
    if let Some(at) = pieces.iter().rposition(|p| p.stick_outer) {
        pieces.insert(
            at + 1,
            Piece {
                extent: 1,
                dim: stick.dim,
                weight: stick.weight,
                stick_outer: true,
            },
        );
    }
}

/// The fold rule on the new positions must give back every weight.
fn check_fold(pieces: &[Piece], rank: usize, strides: &[u64]) -> Result<(), DeviceError> {
    let mut running = vec![1u64; rank];
    for p in pieces.iter().rev() {
        let Ok(d) = usize::try_from(p.dim) else {
            continue;
        };
        if p.extent > 1 && running[d] * strides[d] != p.weight {
            return invalid(format!(
                "the device order of host dimension {d}'s parts disagrees with the host order (a fuse of dimensions whose device order differs); no layout over the same device memory expresses it"
            ));
        }
        running[d] = running[d].saturating_mul(p.extent);
    }
    Ok(())
}
