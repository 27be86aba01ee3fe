//! Division: the inverse of `compose` on either side.
//!
//! `a.divide(b)` is the `q` with `q.compose(b) == a`; `a.left_divide(d)` is
//! the `q` with `d.compose(q) == a`. Both first split `a`'s modes where `b`'s
//! modes end inside them (only the first mode of each dimension of `b` may
//! do so), then require `b`'s modes to be the innermost (divide) or
//! outermost (left_divide) modes of each dimension and the fastest (divide)
//! or slowest (left_divide) threads and registers of `a`.

use crate::error::{RegisterError, Result};
use crate::layout::RegisterLayout;

/// Which side of the composition the divisor stands on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// `a = q ∘ b`: the divisor is inner.
    Inner,
    /// `a = d ∘ q`: the divisor is outer.
    Outer,
}

/// One mode of the refined dividend: a piece of one of its modes, matched
/// to a divisor mode or kept for the quotient.
struct Piece {
    size: i64,
    matched: Option<usize>,
}

impl RegisterLayout {
    /// The layout `q` with `q.compose(divisor) == self`.
    ///
    /// ```
    /// use retile_register::{local, spatial};
    /// let a = spatial(&[2, 4])?.compose(&local(&[2, 1])?)?;
    /// assert_eq!(a.divide(&local(&[2, 1])?)?, spatial(&[2, 4])?);
    /// assert!(local(&[6])?.divide(&local(&[4])?).is_err());
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn divide(&self, divisor: &RegisterLayout) -> Result<RegisterLayout> {
        quotient(self, divisor, Side::Inner)
    }

    /// The layout `q` with `divisor.compose(q) == self`.
    ///
    /// ```
    /// use retile_register::{local, spatial};
    /// let a = local(&[2, 1])?.compose(&spatial(&[2, 4])?)?;
    /// assert_eq!(a.left_divide(&local(&[2, 1])?)?, spatial(&[2, 4])?);
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn left_divide(&self, divisor: &RegisterLayout) -> Result<RegisterLayout> {
        quotient(self, divisor, Side::Outer)
    }
}

fn quotient(
    layout: &RegisterLayout,
    divisor: &RegisterLayout,
    side: Side,
) -> Result<RegisterLayout> {
    let verb = if side == Side::Inner {
        "divide"
    } else {
        "left-divide"
    };
    let fail = |a: &RegisterLayout| {
        RegisterError::Operation(format!("Cannot {verb} layout {a} by layout {divisor}"))
    };
    if layout.shape.len() < divisor.shape.len() {
        return Err(fail(layout));
    }
    let divisor = &divisor.pad_rank(layout.shape.len())?;
    let fail = |a: &RegisterLayout| {
        RegisterError::Operation(format!("Cannot {verb} layout {a} by layout {divisor}"))
    };

    let mut pieces_of: Vec<Vec<usize>> = vec![Vec::new(); layout.mode_shape.len()];
    let mut pieces: Vec<Piece> = Vec::new();
    for (lg, dg) in layout
        .grouped_modes()
        .into_iter()
        .zip(divisor.grouped_modes())
    {
        let sizes: Vec<(usize, i64)> = lg.map(|m| (m, layout.mode_shape[m])).collect();
        let divs: Vec<(usize, i64)> = dg.map(|m| (m, divisor.mode_shape[m])).collect();
        let group = match side {
            Side::Inner => split_inner(&sizes, &divs),
            Side::Outer => split_outer(&sizes, &divs),
        }
        .ok_or_else(|| fail(layout))?;
        for (mode, piece) in group {
            pieces_of[mode].push(pieces.len());
            pieces.push(piece);
        }
    }
    let expand = |modes: &[i64]| -> Vec<i64> {
        modes
            .iter()
            .flat_map(|&m| {
                if m < 0 {
                    vec![m]
                } else {
                    pieces_of[m as usize].iter().map(|&p| p as i64).collect()
                }
            })
            .collect()
    };
    let sizes: Vec<i64> = pieces.iter().map(|p| p.size).collect();
    let refined = RegisterLayout::raw(
        &layout.shape,
        &sizes,
        &expand(&layout.spatial_modes),
        &expand(&layout.local_modes),
    );

    let mut piece_of_divisor = vec![0; divisor.mode_shape.len()];
    for (i, piece) in pieces.iter().enumerate() {
        if let Some(d) = piece.matched {
            piece_of_divisor[d] = i as i64;
        }
    }
    let spatial = strip(
        &refined.spatial_modes,
        &divisor.spatial_modes,
        &piece_of_divisor,
        side,
    )
    .ok_or_else(|| fail(&refined))?;
    let local = strip(
        &refined.local_modes,
        &divisor.local_modes,
        &piece_of_divisor,
        side,
    )
    .ok_or_else(|| fail(&refined))?;

    let mut new_index = vec![None; pieces.len()];
    let mut mode_shape = Vec::new();
    for (i, piece) in pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| p.matched.is_none())
    {
        new_index[i] = Some(mode_shape.len() as i64);
        mode_shape.push(piece.size);
    }
    let renumber = |modes: &[i64]| -> Option<Vec<i64>> {
        modes
            .iter()
            .map(|&m| {
                if m < 0 {
                    Some(m)
                } else {
                    new_index[m as usize]
                }
            })
            .collect()
    };
    let spatial = renumber(spatial).ok_or_else(|| fail(&refined))?;
    let local = renumber(local).ok_or_else(|| fail(&refined))?;
    let shape: Vec<i64> = layout
        .shape
        .iter()
        .zip(&divisor.shape)
        .map(|(a, b)| a / b)
        .collect();
    RegisterLayout::new(&shape, &mode_shape, &spatial, &local)
}

/// Refines one dimension for `divide`: the divisor's modes must be the
/// innermost modes; the outermost of them may end inside a mode.
fn split_inner(sizes: &[(usize, i64)], divs: &[(usize, i64)]) -> Option<Vec<(usize, Piece)>> {
    let kept = sizes.len().checked_sub(divs.len())?;
    let mut out: Vec<(usize, Piece)> = sizes[..kept]
        .iter()
        .map(|&(m, size)| {
            (
                m,
                Piece {
                    size,
                    matched: None,
                },
            )
        })
        .collect();
    for (i, (&(m, p), &(d, q))) in sizes[kept..].iter().zip(divs).enumerate() {
        if p != q {
            if i != 0 || p % q != 0 {
                return None;
            }
            out.push((
                m,
                Piece {
                    size: p / q,
                    matched: None,
                },
            ));
        }
        out.push((
            m,
            Piece {
                size: q,
                matched: Some(d),
            },
        ));
    }
    Some(out)
}

/// Refines one dimension for `left_divide`: the divisor's modes must be the
/// outermost modes; the first of them may take only the top of a mode.
fn split_outer(sizes: &[(usize, i64)], divs: &[(usize, i64)]) -> Option<Vec<(usize, Piece)>> {
    let mut rest: Vec<(usize, i64)> = sizes.to_vec();
    let mut next = 0;
    let mut out = Vec::new();
    for (j, &(d, q)) in divs.iter().enumerate() {
        let (m, p) = *rest.get(next)?;
        if p == q {
            next += 1;
        } else if j == 0 && p % q == 0 {
            rest[next].1 = p / q;
        } else {
            return None;
        }
        out.push((
            m,
            Piece {
                size: q,
                matched: Some(d),
            },
        ));
    }
    out.extend(rest[next..].iter().map(|&(m, size)| {
        (
            m,
            Piece {
                size,
                matched: None,
            },
        )
    }));
    Some(out)
}

/// Removes the divisor's modes from the end (inner) or the front (outer) of
/// one of the dividend's index lists, checking that they are there.
fn strip<'a>(
    modes: &'a [i64],
    divisor_modes: &[i64],
    piece_of_divisor: &[i64],
    side: Side,
) -> Option<&'a [i64]> {
    let keep = modes.len().checked_sub(divisor_modes.len())?;
    let (rest, aligned) = match side {
        Side::Inner => (&modes[..keep], &modes[keep..]),
        Side::Outer => (&modes[divisor_modes.len()..], &modes[..divisor_modes.len()]),
    };
    let matches = aligned
        .iter()
        .zip(divisor_modes)
        .all(|(&a, &d)| match (a < 0, d < 0) {
            (true, true) => a == d,
            (false, false) => piece_of_divisor[d as usize] == a,
            _ => false,
        });
    matches.then_some(rest)
}
