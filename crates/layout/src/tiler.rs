//! Tilers: what divides and products apply to a layout.

use std::fmt;

use crate::error::Result;
use crate::int_tuple::IntTuple;
use crate::layout::Layout;

/// A tiler: a layout applied as a 1-D function, `_` (leave the mode as it
/// is), or a by-mode tuple `<T0,T1,...>` whose `i`-th entry applies to mode `i`.
///
/// A shape used as a tiler is a by-mode tuple of `n:1` layouts, and an
/// integer `n` is the layout `n:1`.
///
/// ```
/// use retile_layout::Tiler;
/// let t: Tiler = "<2:1,4,_>".parse().unwrap();
/// assert_eq!(t.to_string(), "<2:1,4:1,_>");
/// let s = Tiler::from_shape(&"(2,3)".parse().unwrap()).unwrap();
/// assert_eq!(s.to_string(), "<2:1,3:1>");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tiler {
    /// A layout applied as a function of one index.
    Layout(Layout),
    /// `_`: the mode is left as it is.
    Underscore,
    /// `<T0,T1,...>`: one tiler per mode.
    Modes(Vec<Tiler>),
}

impl Tiler {
    /// The tiler a shape stands for: an integer `n` is `n:1`, a tuple is a
    /// by-mode tiler of its entries.
    ///
    /// ```
    /// use retile_layout::Tiler;
    /// assert_eq!(Tiler::from_shape(&"4".parse().unwrap()).unwrap().to_string(), "4:1");
    /// ```
    pub fn from_shape(shape: &IntTuple) -> Result<Tiler> {
        match shape {
            IntTuple::Int(_) => Ok(Tiler::Layout(Layout::from_shape(shape.clone())?)),
            IntTuple::Tuple(ts) => ts
                .iter()
                .map(Tiler::from_shape)
                .collect::<Result<_>>()
                .map(Tiler::Modes),
        }
    }
}

impl From<Layout> for Tiler {
    fn from(layout: Layout) -> Self {
        Tiler::Layout(layout)
    }
}

impl fmt::Display for Tiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tiler::Layout(l) => write!(f, "{l}"),
            Tiler::Underscore => f.write_str("_"),
            Tiler::Modes(ts) => {
                f.write_str("<")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(">")
            }
        }
    }
}
