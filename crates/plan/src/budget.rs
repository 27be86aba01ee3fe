//! The memory a stream holds, known before anything is made: its epoch
//! buffers, checked against what the machine has available.

use crate::buffer::available_memory;
use crate::error::StreamError;
use crate::plan::{StreamPlan, StreamSpec};

/// Checks a stream's fill value and plans it, refusing a plan whose epoch
/// buffers need more memory than the machine has: everything that can be
/// refused before anything is made.
///
/// ```
/// use retile_plan::{plan_stream, DType, StreamSpec};
/// let spec = StreamSpec::new(DType::U16, vec![0, 64, 64], vec![8, 32, 32])?;
/// assert_eq!(plan_stream(&spec, &[0, 0])?.m(), 4);
/// assert!(plan_stream(&spec, &[0]).is_err()); // a u16 fill has two bytes
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn plan_stream(spec: &StreamSpec, fill: &[u8]) -> Result<StreamPlan, StreamError> {
    let esize = spec.dtype().size();
    if fill.len() != esize {
        return Err(StreamError::Invalid(format!(
            "the fill value has {} bytes; a {} element has {esize}",
            fill.len(),
            spec.dtype()
        )));
    }
    let plan = StreamPlan::new(spec)?;
    check_memory(&plan)?;
    Ok(plan)
}

/// How many epoch buffers a stream of `plan` holds: its spec's count
/// (two by default: one filled while the sink works on the other), or as
/// many as a bounded stream has epochs, if fewer.
///
/// ```
/// use retile_plan::{epoch_buffer_count, DType, StreamPlan, StreamSpec};
/// let one_epoch = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 8], vec![4, 8])?)?;
/// assert_eq!(epoch_buffer_count(&one_epoch), 1);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn epoch_buffer_count(plan: &StreamPlan) -> u64 {
    plan.epoch_buffers()
}

/// Refuses a plan whose epoch buffers need more memory than the machine
/// has available, before anything is made.
fn check_memory(plan: &StreamPlan) -> Result<(), StreamError> {
    let needed = plan
        .epoch_buffer_bytes()
        .saturating_mul(epoch_buffer_count(plan));
    match available_memory() {
        Some(available) if needed > available => Err(StreamError::Invalid(format!(
            "the stream needs {needed} bytes of tile buffers ({} epochs of {} tiles of {} bytes) but this machine has {available} bytes available; use a smaller first tile extent or smaller tiles, or fewer epoch buffers",
            epoch_buffer_count(plan),
            plan.m(),
            plan.slot_bytes()
        ))),
        _ => Ok(()),
    }
}
