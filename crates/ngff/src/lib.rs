//! # retile-ngff: OME-Zarr images while streaming
//!
//! Where the pipeline (tiler -> halving -> encoder -> shard writer ->
//! store) is assembled into what a user asked for: [`open_output`] opens a
//! stream whose output is nothing (measuring), one Zarr array, or an
//! OME-Zarr 0.5 image ([`open_ngff`]): a Zarr group whose `zarr.json`
//! carries the NGFF `multiscales` (the [`Axis`] list and every level's
//! scale and translation), with one array per pyramid level under it, each
//! written by a `retile-store` sink as its level's stream runs. The group
//! is written once every level's array exists, so it never names an array
//! that is not there.
//!
//! ```
//! use retile_ngff::{open_output, Output};
//! use retile_plan::{DType, StreamSpec};
//! use retile_pyramid::{Backend, PyramidOptions};
//! // a pyramid measured without writing anything
//! let spec = StreamSpec::new(DType::U8, vec![0, 8, 8], vec![1, 4, 4])?;
//! let output = Output { pyramid: Some(PyramidOptions::default()), ..Default::default() };
//! let mut stream = open_output(spec, &[0], Backend::Cpu { threads: 1 }, &output)?;
//! stream.append(&[1; 64])?;
//! assert_eq!(stream.finish()?.levels.len(), 2);
//! # Ok::<(), retile_plan::StreamError>(())
//! ```

//!
//! Several arrays at once make an [`Acquisition`] (described by
//! [`AcquisitionSettings`]): each array ([`ArrayOptions`]) at its key under
//! one root group, an HCS [`Plate`] of OME-Zarr images among them, all
//! within one memory [`Budget`].

mod acquisition;
mod budget;
mod input_order;
mod keys;
mod metadata;
mod open;
mod options;
mod plate;
mod resume;
mod slabs;

pub use acquisition::{Acquisition, AcquisitionSettings};
pub use budget::Budget;
pub use input_order::{resolve_input_order, DimRef};
pub use keys::{check_key, groups_of};
pub use metadata::{default_axes, Axis, NgffOptions, NGFF_VERSION};
pub use open::{open_ngff, open_output, Output};
pub use options::{backend_named, pyramid_named, ArrayOptions, ResolvedArray};
pub use plate::Plate;
pub use resume::{Continuation, RECORD_VERSION};
pub use slabs::{JobStore, SlabJob};
