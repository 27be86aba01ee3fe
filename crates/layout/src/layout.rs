//! `Layout`: a function from coordinates to offsets, given by a shape and a
//! congruent stride.

use std::fmt;

use crate::error::{add, mul, LayoutError, Result};
use crate::int_tuple::IntTuple;

/// A CuTe layout `shape:stride`.
///
/// `L(i)` maps an index to an offset: `i` is split into a coordinate
/// colexicographically (the first mode fastest) and the coordinate is dotted
/// with the stride. The outermost (last) mode is never reduced modulo its
/// extent, so a layout extends past its size.
///
/// ```
/// use retile_layout::Layout;
/// let l: Layout = "((2,2),3):((1,4),8)".parse().unwrap();
/// assert_eq!(l.size().unwrap(), 12);
/// assert_eq!(l.eval(5).unwrap(), 9);
/// let l8: Layout = "8:1".parse().unwrap();
/// assert_eq!(l8.eval(9).unwrap(), 9);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: IntTuple,
    stride: IntTuple,
}

impl Layout {
    /// A layout from a shape and a congruent stride; extents must be positive.
    ///
    /// ```
    /// use retile_layout::{IntTuple, Layout};
    /// let l = Layout::new(IntTuple::Int(4), IntTuple::Int(2)).unwrap();
    /// assert_eq!(l.to_string(), "4:2");
    /// assert!(Layout::new(IntTuple::Int(0), IntTuple::Int(1)).is_err());
    /// ```
    pub fn new(shape: IntTuple, stride: IntTuple) -> Result<Layout> {
        if !shape.congruent(&stride) {
            return Err(LayoutError::NotCongruent { shape: shape.to_string(), stride: stride.to_string() });
        }
        shape.check_positive()?;
        shape.size()?;
        Ok(Layout { shape, stride })
    }

    /// The compact column-major layout of a shape (CuTe's `make_layout(shape)`).
    ///
    /// ```
    /// use retile_layout::Layout;
    /// let l = Layout::from_shape("(2,3)".parse().unwrap()).unwrap();
    /// assert_eq!(l.to_string(), "(2,3):(1,2)");
    /// ```
    pub fn from_shape(shape: IntTuple) -> Result<Layout> {
        shape.check_positive()?;
        let stride = shape.compact_col_major()?;
        Layout::new(shape, stride)
    }

    /// A rank-1 layout `extent:stride`.
    ///
    /// ```
    /// use retile_layout::Layout;
    /// assert_eq!(Layout::vector(4, 2).unwrap().to_string(), "4:2");
    /// ```
    pub fn vector(extent: i64, stride: i64) -> Result<Layout> {
        Layout::new(IntTuple::Int(extent), IntTuple::Int(stride))
    }

    /// CuTe's `make_layout(L0, L1, ...)`: a tuple layout whose modes are the
    /// given layouts (a single layout gives a rank-1 tuple).
    ///
    /// ```
    /// use retile_layout::Layout;
    /// let a: Layout = "2:1".parse().unwrap();
    /// let b: Layout = "(3,2):(2,6)".parse().unwrap();
    /// assert_eq!(Layout::from_modes(vec![a, b]).to_string(), "(2,(3,2)):(1,(2,6))");
    /// ```
    pub fn from_modes(modes: Vec<Layout>) -> Layout {
        let (shape, stride) = modes.into_iter().map(|m| (m.shape, m.stride)).unzip();
        Layout { shape: IntTuple::Tuple(shape), stride: IntTuple::Tuple(stride) }
    }

    /// A flat layout from `(extent, stride)` pairs: a single pair gives an
    /// integer layout, several a tuple, none the layout `1:0`.
    pub(crate) fn from_flat(modes: &[(i64, i64)]) -> Layout {
        match modes {
            [] => Layout { shape: IntTuple::Int(1), stride: IntTuple::Int(0) },
            [(s, d)] => Layout { shape: IntTuple::Int(*s), stride: IntTuple::Int(*d) },
            _ => Layout {
                shape: IntTuple::Tuple(modes.iter().map(|m| IntTuple::Int(m.0)).collect()),
                stride: IntTuple::Tuple(modes.iter().map(|m| IntTuple::Int(m.1)).collect()),
            },
        }
    }

    /// The shape.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "(2,3):(1,2)".parse().unwrap();
    /// assert_eq!(l.shape().to_string(), "(2,3)");
    /// ```
    pub fn shape(&self) -> &IntTuple {
        &self.shape
    }

    /// The stride.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "(2,3):(1,2)".parse().unwrap();
    /// assert_eq!(l.stride().to_string(), "(1,2)");
    /// ```
    pub fn stride(&self) -> &IntTuple {
        &self.stride
    }

    /// Number of coordinates: the product of the shape.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// assert_eq!("(2,3):(1,2)".parse::<Layout>().unwrap().size().unwrap(), 6);
    /// ```
    pub fn size(&self) -> Result<i64> {
        self.shape.size()
    }

    /// Codomain size, `1 + Σ (s-1)·|d|` over the flattened modes
    /// (CuTe's C++ `cosize`, which uses the magnitude of each stride).
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// assert_eq!("(2,3):(1,2)".parse::<Layout>().unwrap().cosize().unwrap(), 6);
    /// assert_eq!("4:-1".parse::<Layout>().unwrap().cosize().unwrap(), 4);
    /// ```
    pub fn cosize(&self) -> Result<i64> {
        self.flat_modes().iter().try_fold(1, |acc, &(s, d)| {
            let span = mul(s - 1, d.checked_abs().ok_or(LayoutError::Overflow { what: "cosize" })?, "cosize")?;
            add(acc, span, "cosize")
        })
    }

    /// Number of top-level modes.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// assert_eq!("((2,2),3):((1,4),8)".parse::<Layout>().unwrap().rank(), 2);
    /// ```
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    /// Nesting depth of the shape.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// assert_eq!("((2,2),3):((1,4),8)".parse::<Layout>().unwrap().depth(), 2);
    /// ```
    pub fn depth(&self) -> usize {
        self.shape.depth()
    }

    /// Mode `i` as a layout; an integer layout is its own mode 0.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "((2,2),3):((1,4),8)".parse().unwrap();
    /// assert_eq!(l.mode(0).unwrap().to_string(), "(2,2):(1,4)");
    /// ```
    pub fn mode(&self, i: usize) -> Result<Layout> {
        Ok(Layout { shape: self.shape.mode(i)?.clone(), stride: self.stride.mode(i)?.clone() })
    }

    /// All top-level modes.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "(2,3):(1,2)".parse().unwrap();
    /// assert_eq!(l.modes().len(), 2);
    /// ```
    pub fn modes(&self) -> Vec<Layout> {
        self.shape
            .modes()
            .iter()
            .zip(self.stride.modes())
            .map(|(s, d)| Layout { shape: s.clone(), stride: d.clone() })
            .collect()
    }

    /// The flattened `(extent, stride)` pairs, left to right.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "((2,2),3):((1,4),8)".parse().unwrap();
    /// assert_eq!(l.flat_modes(), vec![(2, 1), (2, 4), (3, 8)]);
    /// ```
    pub fn flat_modes(&self) -> Vec<(i64, i64)> {
        self.shape.leaves().into_iter().zip(self.stride.leaves()).collect()
    }

    /// The layout with a flat shape and stride (same function).
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "((2,2),3):((1,4),8)".parse().unwrap();
    /// assert_eq!(l.flatten().to_string(), "(2,2,3):(1,4,8)");
    /// ```
    pub fn flatten(&self) -> Layout {
        Layout { shape: self.shape.flatten(), stride: self.stride.flatten() }
    }

    /// `L(i)`: the offset of index `i` (the last mode is not reduced).
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "(2,4):(4,1)".parse().unwrap();
    /// assert_eq!(l.eval(3).unwrap(), 5);
    /// ```
    pub fn eval(&self, index: i64) -> Result<i64> {
        index_to_offset(index, &self.shape, &self.stride)
    }

    /// `L(c)` for a coordinate: a tuple coordinate is matched mode by mode,
    /// an integer at any level is split over the shape below it.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "((2,(8,8)),2):((2,(4,32)),1)".parse().unwrap();
    /// assert_eq!(l.eval_coord(&"((0,(1,5)),0)".parse().unwrap()).unwrap(), 164);
    /// ```
    pub fn eval_coord(&self, coord: &IntTuple) -> Result<i64> {
        coord_to_offset(coord, &self.shape, &self.stride)
    }

    /// `L(i)` for `i` in `0..count`.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "(2,2):(2,1)".parse().unwrap();
    /// assert_eq!(l.table(4).unwrap(), vec![0, 2, 1, 3]);
    /// ```
    pub fn table(&self, count: i64) -> Result<Vec<i64>> {
        (0..count).map(|i| self.eval(i)).collect()
    }
}

/// The offset of index `i` in a (shape, stride): every mode but the last
/// takes `i mod size`, the last takes the quotient whole.
fn index_to_offset(index: i64, shape: &IntTuple, stride: &IntTuple) -> Result<i64> {
    match (shape, stride) {
        (IntTuple::Tuple(ss), IntTuple::Tuple(ds)) => {
            let mut rest = index;
            let mut offset = 0i64;
            for (k, (s, d)) in ss.iter().zip(ds).enumerate() {
                let part = if k + 1 == ss.len() {
                    index_to_offset(rest, s, d)?
                } else {
                    let n = s.size()?;
                    let part = index_to_offset(rest % n, s, d)?;
                    rest /= n;
                    part
                };
                offset = add(offset, part, "an offset")?;
            }
            Ok(offset)
        }
        (_, IntTuple::Int(d)) => mul(index, *d, "an offset"),
        (IntTuple::Int(_), IntTuple::Tuple(_)) => unreachable_congruence(),
    }
}

/// Shape and stride are congruent by construction; a mismatch cannot reach
/// here, but if it did it is reported rather than panicking.
fn unreachable_congruence() -> Result<i64> {
    Err(LayoutError::NotCongruent { shape: "?".into(), stride: "?".into() })
}

/// CuTe's `crd2idx(coord, shape, stride)`: the offset of a coordinate.
///
/// ```
/// use retile_layout::{crd2idx, IntTuple};
/// let shape: IntTuple = "(2,4)".parse().unwrap();
/// let stride: IntTuple = "(4,1)".parse().unwrap();
/// assert_eq!(crd2idx(&"(1,2)".parse().unwrap(), &shape, &stride).unwrap(), 6);
/// assert_eq!(crd2idx(&IntTuple::Int(3), &shape, &stride).unwrap(), 5);
/// ```
pub fn crd2idx(coord: &IntTuple, shape: &IntTuple, stride: &IntTuple) -> Result<i64> {
    Layout::new(shape.clone(), stride.clone())?;
    coord_to_offset(coord, shape, stride)
}

fn coord_to_offset(coord: &IntTuple, shape: &IntTuple, stride: &IntTuple) -> Result<i64> {
    match coord {
        IntTuple::Int(i) => index_to_offset(*i, shape, stride),
        IntTuple::Tuple(cs) => match (shape, stride) {
            (IntTuple::Tuple(ss), IntTuple::Tuple(ds)) if ss.len() == cs.len() => {
                cs.iter().zip(ss.iter().zip(ds)).try_fold(0i64, |acc, (c, (s, d))| {
                    add(acc, coord_to_offset(c, s, d)?, "an offset")
                })
            }
            _ => Err(LayoutError::BadCoordinate {
                coord: coord.to_string(),
                shape: shape.to_string(),
                reason: "a tuple coordinate needs a tuple shape of the same rank",
            }),
        },
    }
}

/// CuTe's `idx2crd(i, shape)`: the coordinate of index `i`, congruent with
/// the shape. The last mode at each level is not reduced, so
/// `idx2crd(9, (2,4)) = (1,4)`.
///
/// ```
/// use retile_layout::idx2crd;
/// let c = idx2crd(165, &"(2,(3,3),1,(5,5))".parse().unwrap()).unwrap();
/// assert_eq!(c.to_string(), "(1,(1,0),0,(4,1))");
/// assert_eq!(idx2crd(9, &"(2,4)".parse().unwrap()).unwrap().to_string(), "(1,4)");
/// ```
pub fn idx2crd(index: i64, shape: &IntTuple) -> Result<IntTuple> {
    shape.check_positive()?;
    shape.size()?;
    split_index(index, shape)
}

fn split_index(index: i64, shape: &IntTuple) -> Result<IntTuple> {
    match shape {
        IntTuple::Int(_) => Ok(IntTuple::Int(index)),
        IntTuple::Tuple(ss) => {
            let mut rest = index;
            let mut out = Vec::with_capacity(ss.len());
            for (k, s) in ss.iter().enumerate() {
                if k + 1 == ss.len() {
                    out.push(split_index(rest, s)?);
                } else {
                    let n = s.size()?;
                    out.push(split_index(rest % n, s)?);
                    rest /= n;
                }
            }
            Ok(IntTuple::Tuple(out))
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.shape, self.stride)
    }
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Layout({self})")
    }
}
