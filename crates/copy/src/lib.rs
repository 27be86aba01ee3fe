//! # retile-copy: plan the fastest legal copy between two layouts
//!
//! Given where a tile's data is (a source layout: tile coordinate → offset),
//! where it must go (a destination layout) and who moves it (threads), the
//! planner picks vector widths with the algebra
//! ([`max_common_vector`](retile_layout::max_common_vector) clamped to the
//! widest access and to alignment) and, when the copy transposes, an
//! in-thread transpose: each thread loads short vectors along the source's
//! contiguous dimension, shuffles them in registers
//! (`composition(RS, right_inverse(RL))`) and stores long vectors along the
//! destination's.
//!
//! ```
//! use retile_copy::{TransposePlan, TransposeRequest};
//! let request = TransposeRequest::new(256, 16, 128, "(256,16):(1,256)".parse()?, "(256,16):(16,1)".parse()?);
//! let plan = request.plan()?;
//! assert_eq!(
//!     plan.to_string(),
//!     "TransposePlan(applies=true, load_width=2, loads=8, store_width=8, stores=2, extracts=16)"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod banks;
mod error;
#[cfg(feature = "cuda")]
pub mod gpu;
mod permute;
mod transpose;
mod vector;

pub use banks::{
    AccessPattern, BankAnalysis, BankReport, Banks, Instruction, InstructionConflicts, LaneAccess,
    PlanBanks, Suggestion, MAX_ACCESSES, MAX_SEARCH_BITS,
};
pub use error::{CopyError, Result};
pub use permute::{permute_reference, Permute};
pub use transpose::{Access, Transpose, TransposePlan, TransposeRequest};
pub use vector::vector_width;
