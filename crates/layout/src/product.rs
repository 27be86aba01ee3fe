//! The product family: repeat a layout according to another.

use crate::complement::complement;
use crate::composition::{apply_tiler, composition, composition_into};
use crate::divide::{splice, tile_unzip};
use crate::error::{mul, Result};
use crate::int_tuple::IntTuple;
use crate::layout::{padded, zip, Layout, LayoutBuilder};
use crate::tiler::Tiler;

/// `logical_product(A, T)`: for a layout B,
/// `(A, complement(A, size(A)·cosize(B)) ∘ B)` — mode 0 is A, mode 1 repeats
/// it as B says; a by-mode tiler multiplies mode by mode.
///
/// ```
/// use retile_layout::{logical_product, Layout, Tiler};
/// let a: Layout = "(2,2):(1,2)".parse().unwrap();
/// let b: Tiler = "(2,2):(1,2)".parse().unwrap();
/// assert_eq!(logical_product(&a, &b).unwrap().to_string(), "((2,2),(2,2)):((1,2),(4,8))");
/// ```
pub fn logical_product(a: &Layout, tiler: &Tiler) -> Result<Layout> {
    LayoutBuilder::build(|out| apply_tiler("logical_product", a, tiler, &layout_product, out))
}

/// Appends `(A, complement(A, size(A)·cosize(B)) ∘ B)` to `out`.
fn layout_product(a: &Layout, b: &Layout, out: &mut LayoutBuilder) -> Result<()> {
    let rest = product_rest(a, b)?;
    out.open();
    out.push(a);
    composition_into(&rest, b, out)?;
    out.close();
    Ok(())
}

/// `zipped_product(A, T)`: `((A modes...), (repeat modes...))`.
///
/// ```
/// use retile_layout::{zipped_product, Layout, Tiler};
/// let a: Layout = "(2,5):(5,1)".parse().unwrap();
/// let t: Tiler = "<3:5,4:6>".parse().unwrap();
/// assert_eq!(zipped_product(&a, &t).unwrap().to_string(), "((2,5),(3,4)):((5,1),(10,30))");
/// ```
pub fn zipped_product(a: &Layout, tiler: &Tiler) -> Result<Layout> {
    tile_unzip(&logical_product(a, tiler)?, tiler)
}

/// `tiled_product(A, T)`: `((A modes...), repeat0, repeat1, ...)`.
///
/// ```
/// use retile_layout::{tiled_product, Layout, Tiler};
/// let a: Layout = "(2,5):(5,1)".parse().unwrap();
/// let t: Tiler = "<3:5,4:6>".parse().unwrap();
/// assert_eq!(tiled_product(&a, &t).unwrap().to_string(), "((2,5),3,4):((5,1),10,30)");
/// ```
pub fn tiled_product(a: &Layout, tiler: &Tiler) -> Result<Layout> {
    splice(&zipped_product(a, tiler)?, false)
}

/// `flat_product(A, T)`: `(A modes..., repeat modes...)`.
///
/// ```
/// use retile_layout::{flat_product, Layout, Tiler};
/// let a: Layout = "(2,5):(5,1)".parse().unwrap();
/// let t: Tiler = "<3:5,4:6>".parse().unwrap();
/// assert_eq!(flat_product(&a, &t).unwrap().to_string(), "(2,5,3,4):(5,1,10,30)");
/// ```
pub fn flat_product(a: &Layout, tiler: &Tiler) -> Result<Layout> {
    splice(&zipped_product(a, tiler)?, true)
}

/// `blocked_product(A, B)`: A is the block, B arranges the blocks. As in
/// CuTe, both are padded to rank `R = max(rank A, rank B)` with `1:0` modes,
/// multiplied as 1-D layouts, and the two modes of the product are zipped:
/// `zip(P_0, P_1) = ((a0,b0),(a1,b1),...)`. Modes are not coalesced.
///
/// ```
/// use retile_layout::{blocked_product, Layout};
/// let a: Layout = "4:1".parse().unwrap();
/// let b: Layout = "(2,3):(1,2)".parse().unwrap();
/// assert_eq!(blocked_product(&a, &b).unwrap().to_string(), "((4,2),(1,3)):((1,4),(0,8))");
/// ```
pub fn blocked_product(a: &Layout, b: &Layout) -> Result<Layout> {
    padded_product(a, b, zip)
}

/// `raked_product(A, B)`: like [`blocked_product`] with the zip reversed,
/// `zip(P_1, P_0) = ((b0,a0),(b1,a1),...)`, so that A's elements are
/// interleaved (raked).
///
/// ```
/// use retile_layout::{raked_product, Layout};
/// let a: Layout = "(2,5):(5,1)".parse().unwrap();
/// let b: Layout = "(3,4):(1,3)".parse().unwrap();
/// assert_eq!(raked_product(&a, &b).unwrap().to_string(), "((3,2),(4,5)):((10,5),(30,1))");
/// ```
pub fn raked_product(a: &Layout, b: &Layout) -> Result<Layout> {
    padded_product(a, b, |block, repeat| zip(repeat, block))
}

/// `f(P_0, P_1)` for the two modes of `P = logical_product(append<R>(A),
/// append<R>(B))`, `R = max(rank A, rank B)`: `P_0` is the padded A and
/// `P_1` its repeat, taken as they are made instead of split out of P.
fn padded_product(
    a: &Layout,
    b: &Layout,
    f: impl FnOnce(&Layout, &Layout) -> Result<Layout>,
) -> Result<Layout> {
    let rank = a.rank().max(b.rank());
    let (block, tiler) = (padded(a, rank), padded(b, rank));
    f(&block, &repeat(&block, &tiler)?)
}

/// Mode 1 of `logical_product(A, B)`: `complement(A, size(A)·cosize(B)) ∘ B`.
fn repeat(a: &Layout, b: &Layout) -> Result<Layout> {
    composition(&product_rest(a, b)?, b)
}

/// `complement(A, size(A)·cosize(B))`: where the copies of A go.
fn product_rest(a: &Layout, b: &Layout) -> Result<Layout> {
    let cotarget = mul(a.size()?, b.cosize()?, "a product's cotarget")?;
    complement(a, &IntTuple::Int(cotarget))
}
