//! # retile-draw: layouts you can see
//!
//! SVG drawings of CuTe layouts and swizzled layouts (a grid of cells
//! labelled with their offsets, hierarchical modes ruled off), thread-value
//! and register layouts (cells coloured by thread, labelled `T<t>V<v>`),
//! copy plans (which thread loads and stores which vector), bank
//! conflicts (cells coloured by bank, before and after the suggested
//! swizzle) and stream plans (a frame's tiles, shards, epochs, the order in
//! which tiles retire, and the pyramid's levels).
//!
//! Every drawing is deterministic (the same input gives the same bytes),
//! its text is `<text>` a reader can select, its colours keep apart in
//! grey (eight steps of lightness, and hatchings beyond eight), and every
//! cell carries what it shows as `data-*` attributes (`data-row`,
//! `data-col`, `data-offset`, `data-thread`, ...). Axes longer than
//! [`MAX_SHOWN`] keep their first and last blocks and say what they elide.
//!
//! ```
//! let layout = "((2,2),(2,4)):((1,8),(2,16))".parse()?;
//! let svg = retile_draw::layout_svg(&layout)?;
//! assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
//! assert!(svg.contains(r#"data-row="3" data-col="7" data-offset="59""#));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod banks;
mod copy;
mod error;
mod grid;
mod layout;
mod page;
mod palette;
mod stream;
mod svg;
mod tv;

pub use banks::banks_svg;
pub use copy::copy_svg;
pub use error::{DrawError, Result, MAX_ITEMS};
pub use grid::MAX_SHOWN;
pub use layout::layout_svg;
pub use stream::stream_svg;
pub use tv::{register_svg, tv_svg};
