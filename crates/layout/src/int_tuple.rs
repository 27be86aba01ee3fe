//! `IntTuple`: an integer or a nested tuple of them — the type of shapes,
//! strides and coordinates.

use std::fmt;

use crate::error::{ceil_div, mul, LayoutError, Result};

/// An integer or a (possibly nested) tuple of `IntTuple`s.
///
/// `(4)` (a rank-1 tuple) is distinct from `4`.
///
/// ```
/// use retile_layout::IntTuple;
/// let t: IntTuple = "(2,(3,4))".parse().unwrap();
/// assert_eq!(t.size().unwrap(), 24);
/// assert_eq!(t.rank(), 2);
/// assert_eq!(t.depth(), 2);
/// assert_eq!(t.to_string(), "(2,(3,4))");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IntTuple {
    /// A single integer.
    Int(i64),
    /// A tuple of `IntTuple`s.
    Tuple(Vec<IntTuple>),
}

impl IntTuple {
    /// Product of all leaves.
    ///
    /// ```
    /// # use retile_layout::IntTuple;
    /// assert_eq!(IntTuple::Tuple(vec![IntTuple::Int(3), IntTuple::Int(5)]).size().unwrap(), 15);
    /// ```
    pub fn size(&self) -> Result<i64> {
        match self {
            IntTuple::Int(v) => Ok(*v),
            IntTuple::Tuple(ts) => ts
                .iter()
                .try_fold(1, |acc, t| mul(acc, t.size()?, "a size")),
        }
    }

    /// Number of top-level modes: 1 for an integer.
    ///
    /// ```
    /// # use retile_layout::IntTuple;
    /// assert_eq!(IntTuple::Int(7).rank(), 1);
    /// ```
    pub fn rank(&self) -> usize {
        match self {
            IntTuple::Int(_) => 1,
            IntTuple::Tuple(ts) => ts.len(),
        }
    }

    /// Nesting depth: 0 for an integer.
    ///
    /// ```
    /// # use retile_layout::IntTuple;
    /// let t: IntTuple = "((1,2),3)".parse().unwrap();
    /// assert_eq!(t.depth(), 2);
    /// ```
    pub fn depth(&self) -> usize {
        match self {
            IntTuple::Int(_) => 0,
            IntTuple::Tuple(ts) => 1 + ts.iter().map(IntTuple::depth).max().unwrap_or(0),
        }
    }

    /// Mode `i`; an integer is its own (only) mode.
    ///
    /// ```
    /// # use retile_layout::IntTuple;
    /// let t: IntTuple = "(2,(3,4))".parse().unwrap();
    /// assert_eq!(t.mode(1).unwrap().to_string(), "(3,4)");
    /// ```
    pub fn mode(&self, i: usize) -> Result<&IntTuple> {
        match self {
            IntTuple::Int(_) if i == 0 => Ok(self),
            IntTuple::Tuple(ts) if i < ts.len() => Ok(&ts[i]),
            _ => Err(LayoutError::NoSuchMode {
                index: i,
                rank: self.rank(),
            }),
        }
    }

    /// All leaves, left to right.
    ///
    /// ```
    /// # use retile_layout::IntTuple;
    /// let t: IntTuple = "(2,(3,4))".parse().unwrap();
    /// assert_eq!(t.leaves(), vec![2, 3, 4]);
    /// ```
    pub fn leaves(&self) -> Vec<i64> {
        let mut out = Vec::new();
        self.push_leaves(&mut out);
        out
    }

    fn push_leaves(&self, out: &mut Vec<i64>) {
        match self {
            IntTuple::Int(v) => out.push(*v),
            IntTuple::Tuple(ts) => ts.iter().for_each(|t| t.push_leaves(out)),
        }
    }

    /// The flattened tuple: an integer stays an integer, a tuple becomes a
    /// tuple of its leaves.
    ///
    /// ```
    /// # use retile_layout::IntTuple;
    /// let t: IntTuple = "(2,(3,4))".parse().unwrap();
    /// assert_eq!(t.flatten().to_string(), "(2,3,4)");
    /// ```
    pub fn flatten(&self) -> IntTuple {
        match self {
            IntTuple::Int(_) => self.clone(),
            IntTuple::Tuple(_) => {
                IntTuple::Tuple(self.leaves().into_iter().map(IntTuple::Int).collect())
            }
        }
    }

    /// Same nesting (profile) as `other`.
    ///
    /// ```
    /// # use retile_layout::IntTuple;
    /// let a: IntTuple = "(2,(3,4))".parse().unwrap();
    /// let b: IntTuple = "(1,(0,7))".parse().unwrap();
    /// assert!(a.congruent(&b));
    /// ```
    pub fn congruent(&self, other: &IntTuple) -> bool {
        match (self, other) {
            (IntTuple::Int(_), IntTuple::Int(_)) => true,
            (IntTuple::Tuple(a), IntTuple::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.congruent(y))
            }
            _ => false,
        }
    }

    /// `self` (as a shape) is compatible with `other`: equal sizes, and every
    /// integer of `self` stands for a sub-tuple of `other` of the same size.
    ///
    /// ```
    /// # use retile_layout::IntTuple;
    /// let a: IntTuple = "(4,6)".parse().unwrap();
    /// let b: IntTuple = "((2,2),(3,2))".parse().unwrap();
    /// assert!(a.compatible(&b));
    /// assert!(!b.compatible(&a));
    /// ```
    pub fn compatible(&self, other: &IntTuple) -> bool {
        match (self, other) {
            (IntTuple::Int(a), _) => other.size().is_ok_and(|s| s == *a),
            (IntTuple::Tuple(a), IntTuple::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.compatible(y))
            }
            (IntTuple::Tuple(_), IntTuple::Int(_)) => false,
        }
    }

    /// Exclusive prefix products of the leaves, with `IntTuple`'s nesting:
    /// the compact column-major strides of this shape. A leaf of extent 1
    /// gets stride 0, as CuTe's `compact_col_major` gives it.
    ///
    /// ```
    /// # use retile_layout::IntTuple;
    /// let s: IntTuple = "(2,(3,1),4)".parse().unwrap();
    /// assert_eq!(s.compact_col_major().unwrap().to_string(), "(1,(2,0),6)");
    /// ```
    pub fn compact_col_major(&self) -> Result<IntTuple> {
        let mut current = 1;
        self.compact_from(&mut current)
    }

    fn compact_from(&self, current: &mut i64) -> Result<IntTuple> {
        match self {
            IntTuple::Int(1) => Ok(IntTuple::Int(0)),
            IntTuple::Int(v) => {
                let stride = *current;
                *current = mul(*current, *v, "compact strides")?;
                Ok(IntTuple::Int(stride))
            }
            IntTuple::Tuple(ts) => ts
                .iter()
                .map(|t| t.compact_from(current))
                .collect::<Result<_>>()
                .map(IntTuple::Tuple),
        }
    }

    /// CuTe's `ceil_div` of a shape by an integer, folding left to right:
    /// each mode is divided by what is left of `divisor`, which is in turn
    /// divided by the mode. The result has this tuple's nesting.
    ///
    /// ```
    /// # use retile_layout::IntTuple;
    /// let s: IntTuple = "(3,5)".parse().unwrap();
    /// assert_eq!(s.ceil_div(2).to_string(), "(2,5)");
    /// ```
    pub fn ceil_div(&self, divisor: i64) -> IntTuple {
        let mut rest = divisor;
        self.ceil_div_from(&mut rest)
    }

    fn ceil_div_from(&self, rest: &mut i64) -> IntTuple {
        match self {
            IntTuple::Int(v) => {
                let q = ceil_div(*v, *rest);
                *rest = ceil_div(*rest, *v);
                IntTuple::Int(q)
            }
            IntTuple::Tuple(ts) => {
                IntTuple::Tuple(ts.iter().map(|t| t.ceil_div_from(rest)).collect())
            }
        }
    }

    /// The first leaf for which `f` holds, left to right.
    fn find_leaf(&self, f: &impl Fn(i64) -> bool) -> Option<i64> {
        match self {
            IntTuple::Int(v) => f(*v).then_some(*v),
            IntTuple::Tuple(ts) => ts.iter().find_map(|t| t.find_leaf(f)),
        }
    }

    /// Every leaf is at least 1.
    pub(crate) fn check_positive(&self) -> Result<()> {
        match self.find_leaf(&|v| v < 1) {
            Some(extent) => Err(LayoutError::NonPositiveExtent { extent }),
            None => Ok(()),
        }
    }
}

impl From<i64> for IntTuple {
    fn from(v: i64) -> Self {
        IntTuple::Int(v)
    }
}

/// A flat tuple of the integers.
///
/// ```
/// use retile_layout::IntTuple;
/// assert_eq!(IntTuple::from(&[4i64, 3][..]).to_string(), "(4,3)");
/// ```
impl From<&[i64]> for IntTuple {
    fn from(values: &[i64]) -> Self {
        IntTuple::Tuple(values.iter().map(|&v| IntTuple::Int(v)).collect())
    }
}

impl fmt::Display for IntTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntTuple::Int(v) => write!(f, "{v}"),
            IntTuple::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(")")
            }
        }
    }
}
