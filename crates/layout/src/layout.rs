//! `Layout`: a function from coordinates to offsets, given by a shape and a
//! congruent stride.
//!
//! A layout is stored flat, as CuTe's static layouts are compiled: its
//! `(extent, stride)` leaves in order, and its nesting as a short string of
//! tokens (the *profile*). Both live inline, so making and copying layouts
//! allocates nothing for layouts of up to 8 leaves.

use std::borrow::Cow;
use std::fmt;

use smallvec::SmallVec;

use crate::error::{add, checked, div_rem, mul, LayoutError, Result};
use crate::int_tuple::IntTuple;

/// Most entries [`Layout::table`] lists: 16 Mi offsets (128 MiB, and some
/// 600 MiB more as a Python list); larger layouts are evaluated where needed.
///
/// ```
/// use retile_layout::{Layout, MAX_TABLE};
/// let l: Layout = "8:1".parse()?;
/// assert_eq!(MAX_TABLE, 1 << 24);
/// let err = l.table(MAX_TABLE + 1).unwrap_err();
/// assert!(err.to_string().contains("more than the limit of 16777216"), "{err}");
/// # Ok::<(), retile_layout::LayoutError>(())
/// ```
pub const MAX_TABLE: i64 = 1 << 24;

/// Leaves of a layout, inline up to 8.
pub(crate) type Modes = SmallVec<[(i64, i64); 6]>;
/// Nesting tokens, inline up to 24.
type Profile = SmallVec<[u8; 16]>;

const OPEN: u8 = b'(';
const CLOSE: u8 = b')';
const LEAF: u8 = b'.';

/// A nesting token of a layout's profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token {
    /// A tuple starts.
    Open,
    /// A tuple ends.
    Close,
    /// An `(extent, stride)` leaf.
    Leaf,
}

/// Appends `items` element by element: for the few items of a layout this
/// beats `extend_from_slice`, whose `memmove` call costs more than the copy.
fn append_slice<A: smallvec::Array>(v: &mut SmallVec<A>, items: &[A::Item])
where
    A::Item: Copy,
{
    v.extend(items.iter().copied());
}

/// Appends the profile of `n >= 1` flat leaves: one leaf is an integer
/// mode, several a flat tuple.
#[inline]
fn push_flat_profile(profile: &mut Profile, n: usize) {
    if n == 1 {
        profile.push(LEAF);
    } else {
        // pushes: `SmallVec::extend` costs more than the few tokens
        profile.push(OPEN);
        for _ in 0..n {
            profile.push(LEAF);
        }
        profile.push(CLOSE);
    }
}

/// Builds a layout token by token, without intermediate layouts.
#[derive(Default)]
pub(crate) struct LayoutBuilder {
    layout: Layout,
}

impl LayoutBuilder {
    /// Starts a tuple.
    pub fn open(&mut self) {
        self.layout.profile.push(OPEN);
    }

    /// Ends a tuple.
    pub fn close(&mut self) {
        self.layout.profile.push(CLOSE);
    }

    /// Appends one mode given by its flat leaves (one leaf: an integer mode;
    /// several: a flat tuple; none: `1:0`).
    pub fn mode(&mut self, leaves: &[(i64, i64)]) {
        match leaves {
            [] => self.layout.modes.push((1, 0)),
            [leaf] => self.layout.modes.push(*leaf),
            _ => append_slice(&mut self.layout.modes, leaves),
        }
        push_flat_profile(&mut self.layout.profile, leaves.len().max(1));
    }

    /// Appends `part` as one item (a mode, or a tuple of modes).
    pub fn push(&mut self, part: &Layout) {
        append_slice(&mut self.layout.modes, &part.modes);
        append_slice(&mut self.layout.profile, &part.profile);
    }

    /// Appends mode `i` of `layout` as one item; false (nothing appended)
    /// when there is no such mode.
    pub fn push_mode(&mut self, layout: &Layout, i: usize) -> bool {
        let Some(item) = layout.items().nth(i) else {
            return false;
        };
        self.push_item(layout, item);
        true
    }

    /// Appends the top-level item `item` of `layout` (found by `items`).
    fn push_item(&mut self, layout: &Layout, item: Item) {
        let (modes, profile) = layout.item_parts(item);
        append_slice(&mut self.layout.modes, modes);
        append_slice(&mut self.layout.profile, profile);
    }

    /// The layout built.
    pub fn finish(self) -> Layout {
        self.layout
    }

    /// The layout that `fill` appends to a new builder.
    pub fn build(fill: impl FnOnce(&mut LayoutBuilder) -> Result<()>) -> Result<Layout> {
        let mut out = LayoutBuilder::default();
        fill(&mut out)?;
        Ok(out.finish())
    }
}

/// A top-level item of a layout: (first token, end token, first leaf, leaf count).
type Item = (usize, usize, usize, usize);

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
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Layout {
    modes: Modes,
    profile: Profile,
}

/// The index one past the item that starts at `start`.
fn item_end(profile: &[u8], start: usize) -> usize {
    if profile[start] == LEAF {
        return start + 1;
    }
    let mut depth = 0;
    for (k, &t) in profile.iter().enumerate().skip(start) {
        match t {
            OPEN => depth += 1,
            CLOSE => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    profile.len()
}

fn leaf_count(profile: &[u8]) -> usize {
    profile.iter().filter(|&&t| t == LEAF).count()
}

/// The profile of an IntTuple, and its leaves appended to `leaves`.
fn profile_of(t: &IntTuple, profile: &mut Profile, leaves: &mut Vec<i64>) {
    match t {
        IntTuple::Int(v) => {
            profile.push(LEAF);
            leaves.push(*v);
        }
        IntTuple::Tuple(ts) => {
            profile.push(OPEN);
            ts.iter().for_each(|x| profile_of(x, profile, leaves));
            profile.push(CLOSE);
        }
    }
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
            return Err(LayoutError::NotCongruent {
                shape: shape.to_string(),
                stride: stride.to_string(),
            });
        }
        shape.check_positive()?;
        shape.size()?;
        let mut profile = Profile::new();
        let mut extents = Vec::new();
        profile_of(&shape, &mut profile, &mut extents);
        let modes = extents.into_iter().zip(stride.leaves()).collect();
        Ok(Layout { modes, profile })
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
        if extent < 1 {
            return Err(LayoutError::NonPositiveExtent { extent });
        }
        Ok(Layout::from_flat(&[(extent, stride)]))
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
    pub fn from_modes(modes: impl IntoIterator<Item = Layout>) -> Layout {
        let mut out = Layout {
            modes: Modes::new(),
            profile: Profile::new(),
        };
        out.profile.push(OPEN);
        for m in modes {
            append_slice(&mut out.modes, &m.modes);
            append_slice(&mut out.profile, &m.profile);
        }
        out.profile.push(CLOSE);
        out
    }

    /// The rank-2 layout `(first, second)`, built without moving either.
    pub(crate) fn pair(first: &Layout, second: &Layout) -> Layout {
        let mut out = LayoutBuilder::default();
        out.open();
        out.push(first);
        out.push(second);
        out.close();
        out.finish()
    }

    /// A flat layout from `(extent, stride)` pairs: a single pair gives an
    /// integer layout, several a tuple, none the layout `1:0`.
    pub(crate) fn from_flat(modes: &[(i64, i64)]) -> Layout {
        Layout::from_flat_modes(modes.iter().copied().collect())
    }

    /// The nesting tokens, in order.
    pub(crate) fn profile(&self) -> impl Iterator<Item = Token> + '_ {
        self.profile.iter().map(|&t| match t {
            OPEN => Token::Open,
            CLOSE => Token::Close,
            _ => Token::Leaf,
        })
    }

    /// A flat layout owning `modes` (see [`Layout::from_flat`]).
    pub(crate) fn from_flat_modes(modes: Modes) -> Layout {
        let mut layout = Layout {
            modes,
            profile: Profile::new(),
        };
        layout.flat_profile();
        layout
    }

    /// The flat layout of the modes `fill` writes, built in place (large
    /// layouts cost more to move than to compute).
    pub(crate) fn flat_built(fill: impl FnOnce(&mut Modes) -> Result<()>) -> Result<Layout> {
        let mut layout = Layout::default();
        fill(&mut layout.modes)?;
        layout.flat_profile();
        Ok(layout)
    }

    /// Sets the profile of a flat layout of the current modes (none: `1:0`).
    fn flat_profile(&mut self) {
        if self.modes.is_empty() {
            self.modes.push((1, 0));
        }
        push_flat_profile(&mut self.profile, self.modes.len());
    }

    /// The layout is a single integer mode (not a tuple).
    pub(crate) fn is_leaf(&self) -> bool {
        self.profile.as_slice() == [LEAF]
    }

    fn tuple_of(&self, pick: impl Fn(&(i64, i64)) -> i64) -> IntTuple {
        let mut stack: Vec<Vec<IntTuple>> = vec![Vec::new()];
        let mut leaves = self.modes.iter();
        for &t in &self.profile {
            match t {
                OPEN => stack.push(Vec::new()),
                CLOSE => {
                    let done = stack.pop().unwrap_or_default();
                    if let Some(top) = stack.last_mut() {
                        top.push(IntTuple::Tuple(done));
                    }
                }
                _ => {
                    if let (Some(top), Some(m)) = (stack.last_mut(), leaves.next()) {
                        top.push(IntTuple::Int(pick(m)));
                    }
                }
            }
        }
        stack
            .pop()
            .and_then(|mut v| v.pop())
            .unwrap_or(IntTuple::Int(1))
    }

    /// The shape.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "(2,3):(1,2)".parse().unwrap();
    /// assert_eq!(l.shape().to_string(), "(2,3)");
    /// ```
    pub fn shape(&self) -> IntTuple {
        self.tuple_of(|m| m.0)
    }

    /// The stride.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "(2,3):(1,2)".parse().unwrap();
    /// assert_eq!(l.stride().to_string(), "(1,2)");
    /// ```
    pub fn stride(&self) -> IntTuple {
        self.tuple_of(|m| m.1)
    }

    /// Number of coordinates: the product of the shape.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// assert_eq!("(2,3):(1,2)".parse::<Layout>().unwrap().size().unwrap(), 6);
    /// ```
    pub fn size(&self) -> Result<i64> {
        self.modes
            .iter()
            .try_fold(1, |acc, m| mul(acc, m.0, "a size"))
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
        self.modes.iter().try_fold(1, |acc, &(s, d)| {
            let span = mul(s - 1, checked(d.checked_abs(), "cosize")?, "cosize")?;
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
        self.items().count()
    }

    /// Nesting depth of the shape.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// assert_eq!("((2,2),3):((1,4),8)".parse::<Layout>().unwrap().depth(), 2);
    /// ```
    pub fn depth(&self) -> usize {
        let mut depth: usize = 0;
        let mut deepest = 0;
        for &t in &self.profile {
            match t {
                OPEN => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                CLOSE => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        deepest
    }

    /// The top-level items: (first token, end token, first leaf, leaf count).
    fn items(&self) -> impl Iterator<Item = Item> + '_ {
        let leaf = self.is_leaf();
        let mut pos = usize::from(!leaf);
        let mut first_leaf = 0;
        std::iter::from_fn(move || {
            if pos >= self.profile.len() || self.profile[pos] == CLOSE {
                return None;
            }
            let end = item_end(&self.profile, pos);
            let n = leaf_count(&self.profile[pos..end]);
            let item = (pos, end, first_leaf, n);
            pos = if leaf { self.profile.len() } else { end };
            first_leaf += n;
            Some(item)
        })
    }

    fn sub(&self, item: Item) -> Layout {
        let (modes, profile) = self.item_parts(item);
        Layout {
            modes: modes.iter().copied().collect(),
            profile: profile.iter().copied().collect(),
        }
    }

    /// The leaves and the profile tokens of an item found by `items`.
    #[inline]
    fn item_parts(&self, (start, end, leaf, n): Item) -> (&[(i64, i64)], &[u8]) {
        (&self.modes[leaf..leaf + n], &self.profile[start..end])
    }

    /// Mode `i` as a layout; an integer layout is its own mode 0.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "((2,2),3):((1,4),8)".parse().unwrap();
    /// assert_eq!(l.mode(0).unwrap().to_string(), "(2,2):(1,4)");
    /// ```
    pub fn mode(&self, i: usize) -> Result<Layout> {
        match self.items().nth(i) {
            Some(item) => Ok(self.sub(item)),
            None => Err(LayoutError::NoSuchMode {
                index: i,
                rank: self.rank(),
            }),
        }
    }

    /// All top-level modes.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "(2,3):(1,2)".parse().unwrap();
    /// assert_eq!(l.modes().len(), 2);
    /// ```
    pub fn modes(&self) -> Vec<Layout> {
        self.modes_iter().collect()
    }

    /// The top-level modes, one by one, without collecting them.
    pub(crate) fn modes_iter(&self) -> impl Iterator<Item = Layout> + '_ {
        self.items().map(|item| self.sub(item))
    }

    /// Calls `f(i, mode i)` for each top-level mode in order, stopping at
    /// the first error; one scratch layout holds each mode in turn (cheaper
    /// than making, and moving, a layout per mode).
    pub(crate) fn try_for_each_mode(
        &self,
        mut f: impl FnMut(usize, &Layout) -> Result<()>,
    ) -> Result<()> {
        let mut mode = Layout::default();
        for (i, item) in self.items().enumerate() {
            let (modes, profile) = self.item_parts(item);
            mode.modes.clear();
            mode.profile.clear();
            append_slice(&mut mode.modes, modes);
            append_slice(&mut mode.profile, profile);
            f(i, &mode)?;
        }
        Ok(())
    }

    /// The flattened `(extent, stride)` pairs, left to right.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "((2,2),3):((1,4),8)".parse().unwrap();
    /// assert_eq!(l.flat_modes(), [(2, 1), (2, 4), (3, 8)]);
    /// ```
    pub fn flat_modes(&self) -> &[(i64, i64)] {
        &self.modes
    }

    /// The layout with a flat shape and stride (same function).
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "((2,2),3):((1,4),8)".parse().unwrap();
    /// assert_eq!(l.flatten().to_string(), "(2,2,3):(1,4,8)");
    /// ```
    pub fn flatten(&self) -> Layout {
        if self.is_leaf() {
            return self.clone();
        }
        let mut profile = Profile::new();
        profile.push(OPEN);
        profile.extend(std::iter::repeat_n(LEAF, self.modes.len()));
        profile.push(CLOSE);
        Layout {
            modes: self.modes.clone(),
            profile,
        }
    }

    /// `L(i)`: the offset of index `i` (the last mode is not reduced).
    ///
    /// At every level all modes but the last take the index modulo their
    /// size, so the nested split is the flat colexicographic split over the
    /// leaves with only the very last leaf unreduced.
    ///
    /// ```
    /// # use retile_layout::Layout;
    /// let l: Layout = "(2,4):(4,1)".parse().unwrap();
    /// assert_eq!(l.eval(3).unwrap(), 5);
    /// ```
    pub fn eval(&self, index: i64) -> Result<i64> {
        let Some((&(_, last), leading)) = self.modes.split_last() else {
            return Ok(0);
        };
        let mut rest = index;
        let mut offset = 0i64;
        for &(s, d) in leading {
            let (q, r) = if rest >= 0 {
                div_rem(rest, s)
            } else {
                (rest / s, rest % s)
            };
            offset = add(offset, mul(r, d, "an offset")?, "an offset")?;
            rest = q;
        }
        add(offset, mul(rest, last, "an offset")?, "an offset")
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
        coord_to_offset(coord, self)
    }

    /// `L(i)` for `i` in `0..count`; more than [`MAX_TABLE`] entries are
    /// an error, not an allocation that could exhaust the machine.
    ///
    /// ```
    /// # use retile_layout::{Layout, MAX_TABLE};
    /// let l: Layout = "(2,2):(2,1)".parse().unwrap();
    /// assert_eq!(l.table(4).unwrap(), vec![0, 2, 1, 3]);
    /// assert!(l.table(MAX_TABLE + 1).is_err());
    /// ```
    pub fn table(&self, count: i64) -> Result<Vec<i64>> {
        if count > MAX_TABLE {
            return Err(LayoutError::TooLarge {
                what: "the table",
                count,
                limit: MAX_TABLE,
            });
        }
        (0..count).map(|i| self.eval(i)).collect()
    }
}

/// CuTe's `append<R>(layout)`: `layout` padded with `1:0` modes up to rank
/// `rank` (an integer layout becomes mode 0 of a tuple); a layout of rank
/// `rank` or more is returned as it is.
///
/// ```
/// use retile_layout::{append, Layout};
/// let l: Layout = "4:1".parse().unwrap();
/// assert_eq!(append(&l, 3).to_string(), "(4,1,1):(1,0,0)");
/// assert_eq!(append(&l, 1), l);
/// ```
pub fn append(layout: &Layout, rank: usize) -> Layout {
    padded(layout, rank).into_owned()
}

/// [`append`], borrowing `layout` when it needs no padding.
pub(crate) fn padded(layout: &Layout, rank: usize) -> Cow<'_, Layout> {
    let missing = rank.saturating_sub(layout.rank());
    if missing == 0 {
        return Cow::Borrowed(layout);
    }
    let mut out = LayoutBuilder::default();
    out.open();
    layout.items().for_each(|item| out.push_item(layout, item));
    (0..missing).for_each(|_| out.mode(&[]));
    out.close();
    Cow::Owned(out.finish())
}

/// CuTe's `zip(A, B)`: mode `i` of the result is `(A_i, B_i)`, so
/// `((a0,b0),(a1,b1),...)`. As in CuTe, an integer layout A gives the
/// rank-1 `((A,B))` whatever B is; a tuple A needs a tuple B of the same
/// rank (C++'s "Mismatched Ranks"), otherwise the answer is an error.
///
/// ```
/// use retile_layout::{zip, Layout};
/// let a: Layout = "(2,3):(1,2)".parse().unwrap();
/// let b: Layout = "(4,5):(6,24)".parse().unwrap();
/// assert_eq!(zip(&a, &b).unwrap().to_string(), "((2,4),(3,5)):((1,6),(2,24))");
/// let c: Layout = "4:1".parse().unwrap();
/// assert_eq!(zip(&c, &a).unwrap().to_string(), "((4,(2,3))):((1,(1,2)))");
/// assert!(zip(&a, &c).is_err());
/// ```
pub fn zip(a: &Layout, b: &Layout) -> Result<Layout> {
    let mut out = LayoutBuilder::default();
    out.open();
    if a.is_leaf() {
        out.open();
        out.push(a);
        out.push(b);
        out.close();
    } else if b.is_leaf() || a.rank() != b.rank() {
        return Err(LayoutError::RankMismatch {
            op: "zip",
            reason: format!("{a} is a tuple of rank {} but {b} is not", a.rank()),
        });
    } else {
        for (x, y) in a.items().zip(b.items()) {
            out.open();
            out.push_item(a, x);
            out.push_item(b, y);
            out.close();
        }
    }
    out.close();
    Ok(out.finish())
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
    Layout::new(shape.clone(), stride.clone())?.eval_coord(coord)
}

/// A tuple coordinate is matched mode by mode; an integer is an index into
/// the layout below it.
fn coord_to_offset(coord: &IntTuple, layout: &Layout) -> Result<i64> {
    match coord {
        IntTuple::Int(i) => layout.eval(*i),
        IntTuple::Tuple(cs) if !layout.is_leaf() && cs.len() == layout.rank() => cs
            .iter()
            .zip(layout.modes_iter())
            .try_fold(0i64, |acc, (c, m)| {
                add(acc, coord_to_offset(c, &m)?, "an offset")
            }),
        IntTuple::Tuple(_) => Err(LayoutError::BadCoordinate {
            coord: coord.to_string(),
            shape: layout.shape().to_string(),
            reason: "a tuple coordinate needs a tuple shape of the same rank",
        }),
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

impl Layout {
    fn write_part(
        &self,
        f: &mut fmt::Formatter<'_>,
        pick: impl Fn(&(i64, i64)) -> i64,
    ) -> fmt::Result {
        let mut leaves = self.modes.iter();
        let mut previous = OPEN;
        for &t in &self.profile {
            if t != CLOSE && previous != OPEN {
                f.write_str(",")?;
            }
            match t {
                OPEN => f.write_str("(")?,
                CLOSE => f.write_str(")")?,
                _ => write!(f, "{}", leaves.next().map(&pick).unwrap_or(0))?,
            }
            previous = t;
        }
        Ok(())
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_part(f, |m| m.0)?;
        f.write_str(":")?;
        self.write_part(f, |m| m.1)
    }
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Layout({self})")
    }
}
