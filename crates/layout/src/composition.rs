//! Functional composition `A ∘ B`: `(A ∘ B)(c) = A(B(c))`.

use crate::coalesce::{by_mode, coalesce_x_into};
use crate::error::{add, ceil_div, checked, div_rem, mul, LayoutError, Result};
use crate::layout::{Layout, LayoutBuilder, Modes, Token};
use crate::tiler::Tiler;

/// Composition of two layouts, `R(c) = A(B(c))` for every coordinate of B;
/// R is compatible with B.
///
/// B is applied mode by mode (right distributivity); each integer mode
/// `s:d` of B takes every `d`-th element of the coalesced A, then the first
/// `s` of those. Both steps must divide A's modes evenly (CuTe's stride and
/// shape divisibility conditions); otherwise the result would be wrong and
/// an error is returned.
///
/// ```
/// use retile_layout::{composition, Layout};
/// let a: Layout = "(6,2):(8,2)".parse().unwrap();
/// let b: Layout = "(4,3):(3,1)".parse().unwrap();
/// assert_eq!(composition(&a, &b).unwrap().to_string(), "((2,2),3):((24,2),8)");
/// ```
pub fn composition(a: &Layout, b: &Layout) -> Result<Layout> {
    LayoutBuilder::build(|out| composition_into(a, b, out))
}

/// Appends `A ∘ B` to `out` as one item.
pub(crate) fn composition_into(a: &Layout, b: &Layout, out: &mut LayoutBuilder) -> Result<()> {
    let mut flat_a = Modes::new();
    coalesce_x_into(a, &mut flat_a)?;
    let mut usage = Usage::new(flat_a.len());
    let mut leaves = b.flat_modes().iter();
    for token in b.profile() {
        match token {
            Token::Open => out.open(),
            Token::Close => out.close(),
            Token::Leaf => {
                let &(s, d) = checked(leaves.next(), "a composition")?;
                compose_mode(&flat_a, s, d, &mut usage, out)?;
            }
        }
    }
    usage.check(&flat_a)
}

/// What the modes of B use of A's coordinates, to check that composing them
/// one by one (right distributivity) is exact.
///
/// Every mode of B is composed with A on its own; the sum of those results
/// equals `A(B(c))` only when adding the modes' offsets never carries from
/// one mode of A into the next and the offsets do not mix signs. CuTe does
/// not check this and silently returns a wrong layout; retile rejects it.
struct Usage {
    /// Per bounded mode of A: the largest coordinate each B mode reaches, summed.
    digits: smallvec::SmallVec<[i64; 8]>,
    positive: bool,
    negative: bool,
}

impl Usage {
    fn new(modes: usize) -> Self {
        Usage {
            digits: smallvec::smallvec![0; modes.saturating_sub(1)],
            positive: false,
            negative: false,
        }
    }

    fn add(&mut self, mode: usize, extent: i64) -> Result<()> {
        self.digits[mode] = add(self.digits[mode], extent - 1, "a composition check")?;
        Ok(())
    }

    fn check(&self, flat_a: &[(i64, i64)]) -> Result<()> {
        if self.positive && self.negative && flat_a.len() > 1 {
            return Err(LayoutError::NotDistributive {
                reason: "the right operand mixes positive and negative strides over a left operand of several modes".into(),
            });
        }
        match self.digits.iter().zip(flat_a).enumerate().find(|(_, (&used, &(s, _)))| used >= s) {
            Some((mode, (&used, &(extent, _)))) => Err(LayoutError::NotDistributive {
                reason: format!(
                    "its modes together reach coordinate {used} of mode {mode} of the coalesced left operand, whose extent is {extent}"
                ),
            }),
            None => Ok(()),
        }
    }
}

/// Composition with a tiler: a layout tiler composes as a 1-D function, a
/// by-mode tiler composes mode `i` of A with tiler mode `i` and drops the
/// modes of A that it does not name, `_` leaves a mode as it is.
///
/// ```
/// use retile_layout::{composition_tiler, Layout, Tiler};
/// let a: Layout = "(4,6,8):(1,5,100)".parse().unwrap();
/// let t: Tiler = "<2:2,3:1>".parse().unwrap();
/// assert_eq!(composition_tiler(&a, &t).unwrap().to_string(), "(2,3):(2,5)");
/// ```
pub fn composition_tiler(a: &Layout, tiler: &Tiler) -> Result<Layout> {
    match tiler {
        Tiler::Layout(b) => composition(a, b),
        Tiler::Underscore => Ok(a.clone()),
        Tiler::Modes(ts) => {
            check_tiler_rank("composition", ts.len(), a)?;
            let modes = ts
                .iter()
                .enumerate()
                .map(|(i, t)| composition_tiler(&a.mode(i)?, t))
                .collect::<Result<Vec<_>>>()?;
            Ok(Layout::from_modes(modes))
        }
    }
}

/// A by-mode tiler may not have more modes than the layout.
pub(crate) fn check_tiler_rank(op: &'static str, tiler: usize, a: &Layout) -> Result<()> {
    if tiler > a.rank() {
        return Err(LayoutError::TooManyModes {
            op,
            tiler,
            layout: a.rank(),
        });
    }
    Ok(())
}

/// Applies a tiler by mode, keeping the modes it does not name (the rule of
/// divides and products).
/// The result is appended to `out` as one item; `f(A, B, out)` appends the
/// result for a layout tiler B.
pub(crate) fn apply_tiler(
    op: &'static str,
    a: &Layout,
    tiler: &Tiler,
    f: &impl Fn(&Layout, &Layout, &mut LayoutBuilder) -> Result<()>,
    out: &mut LayoutBuilder,
) -> Result<()> {
    match tiler {
        Tiler::Layout(b) => f(a, b, out),
        Tiler::Underscore => {
            out.push(a);
            Ok(())
        }
        Tiler::Modes(ts) => {
            check_tiler_rank(op, ts.len(), a)?;
            by_mode(a, ts.len(), out, |i, mode, out| {
                apply_tiler(op, mode, &ts[i], f, out)
            })
        }
    }
}

/// Appends `A ∘ (s:d)` for a coalesced, flat A to `out`; records in `usage`
/// which coordinates of A's modes it reaches.
fn compose_mode(
    flat_a: &[(i64, i64)],
    s: i64,
    d: i64,
    usage: &mut Usage,
    out: &mut LayoutBuilder,
) -> Result<()> {
    if d == 0 || s == 1 {
        out.mode(&[(s, if s == 1 { 0 } else { d })]);
        return Ok(());
    }
    usage.positive |= d > 0;
    usage.negative |= d < 0;
    let Some((&(_, last_stride), leading)) = flat_a.split_last() else {
        out.mode(&[(s, 0)]);
        return Ok(());
    };
    if leading.is_empty() {
        out.mode(&[(s, mul(d, last_stride, "a composed stride")?)]);
        return Ok(());
    }
    let mut result = Modes::new();
    let mut rest_shape = s;
    let mut rest_stride = d;
    for (mode, &(curr_shape, curr_stride)) in leading.iter().enumerate() {
        let magnitude = checked(rest_stride.checked_abs(), "a composed stride")?;
        let next_shape = ceil_div(curr_shape, magnitude);
        let divides =
            div_rem(magnitude, curr_shape).1 == 0 || div_rem(curr_shape, magnitude).1 == 0;
        if !divides && (magnitude >= curr_shape || rest_shape > next_shape) {
            return Err(LayoutError::StrideDivisibility {
                mode,
                extent: curr_shape,
                stride: rest_stride,
            });
        }
        let next_stride = ceil_div(magnitude, curr_shape) * rest_stride.signum();
        if next_shape != 1 && rest_shape != 1 {
            let taken = next_shape.min(rest_shape);
            let (quotient, remainder) = div_rem(rest_shape, taken);
            if remainder != 0 {
                return Err(LayoutError::ShapeDivisibility {
                    mode,
                    taken,
                    rest: rest_shape,
                });
            }
            usage.add(mode, mul(taken - 1, magnitude, "a composition check")? + 1)?;
            result.push((taken, mul(rest_stride, curr_stride, "a composed stride")?));
            rest_shape = quotient;
        }
        rest_stride = next_stride;
    }
    if result.is_empty() || rest_shape != 1 {
        result.push((
            rest_shape,
            mul(rest_stride, last_stride, "a composed stride")?,
        ));
    }
    out.mode(&result);
    Ok(())
}
