//! # retile-layout: the CuTe layout algebra
//!
//! A [`Layout`] is a function from coordinates to offsets given by a shape
//! and a stride, `((2,2),3):((1,4),8)`. This crate is the hub of retile: every
//! other layout system converts to it, and every copy is planned with it.
//!
//! The algebra follows CuTe's C++ semantics with every integer treated as
//! static: inputs C++ rejects at compile time (a non-divisible composition,
//! a non-injective complement, a tiler with too many modes) are
//! [`LayoutError`]s here, and all arithmetic is checked `i64`.
//!
//! ```
//! use retile_layout::{composition, complement, logical_divide, IntTuple, Layout, Tiler};
//! let a: Layout = "(4,2,3):(2,1,8)".parse()?;
//! let tile: Tiler = "4:2".parse()?;
//! let divided = logical_divide(&a, &tile)?;
//! assert_eq!(divided.to_string(), "((2,2),(2,3)):((4,1),(2,8))");
//! // Mode 0 of a divide is the composition with the tile.
//! let b: Layout = "4:2".parse()?;
//! assert_eq!(divided.mode(0)?.table(4)?, composition(&a, &b)?.table(4)?);
//! assert_eq!(complement(&b, &IntTuple::Int(24))?.to_string(), "(2,3):(1,8)");
//! # Ok::<(), retile_layout::LayoutError>(())
//! ```

mod coalesce;
mod complement;
mod composition;
mod divide;
mod dtype;
mod error;
mod int_tuple;
mod inverse;
mod layout;
mod notation;
mod product;
mod render;
mod swizzle;
mod tiler;

pub use coalesce::{coalesce, coalesce_profile, filter};
pub use complement::complement;
pub use composition::{composition, composition_tiler};
pub use divide::{flat_divide, logical_divide, tiled_divide, zipped_divide};
pub use dtype::DType;
pub use error::{ceil_div, gcd, row_major_strides, LayoutError, Result};
pub use int_tuple::IntTuple;
pub use inverse::{left_inverse, max_common_layout, max_common_vector, right_inverse};
pub use layout::{append, crd2idx, idx2crd, zip, Layout, MAX_TABLE};
pub use notation::MAX_NESTING;
pub use product::{
    blocked_product, flat_product, logical_product, raked_product, tiled_product, zipped_product,
};
pub use render::{render_composed, render_grid, GridAxes, MAX_CELLS, MAX_GRID_CELLS};
pub use swizzle::{ComposedLayout, Swizzle, MAX_SWIZZLE_BITS};
pub use tiler::Tiler;
