//! A pyramid on the GPU: every level a [`CudaTileStream`] whose halver
//! makes its child's planes on the device, driven an epoch at a time from
//! level 0 down, so that only finished tiles cross the bus.

use retile_plan::{StreamError, Summary};

use crate::stream::CudaTileStream;

/// Appends host `data` to level 0 an epoch at a time, each shipped epoch's
/// child planes passed down before the next; returns the bytes taken.
/// Level `k` must halve into level `k + 1`
/// ([`CudaTileStream::attach_halver`]).
///
/// ```no_run
/// use retile_cuda::{append_levels, finish_levels, CudaTileStream};
/// use retile_halving::Method;
/// use retile_plan::{DType, NullSink, StreamSpec};
/// let spec = |n| StreamSpec::new(DType::U8, vec![0, n, n], vec![8, 64, 64]);
/// let mut level0 = CudaTileStream::new(spec(256)?, &[0], Box::new(NullSink))?;
/// let mut level1 = CudaTileStream::new(spec(128)?, &[0], Box::new(NullSink))?;
/// level0.attach_halver(Method::Mean, &[false, true, true])?;
/// let mut levels = [&mut level0, &mut level1];
/// assert_eq!(append_levels(&mut levels, &vec![1; 16 * 256 * 256])?, 16 * 256 * 256);
/// let summaries = finish_levels(&mut levels);
/// assert_eq!(summaries[1].as_ref().unwrap().planes, 16);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn append_levels(
    levels: &mut [&mut CudaTileStream],
    data: &[u8],
) -> Result<usize, StreamError> {
    let mut taken = 0;
    while taken < data.len() {
        let n = (levels[0].bytes_to_epoch_end() as usize).min(data.len() - taken);
        if n == 0 {
            break; // a bounded stream is full: the rest is refused
        }
        let here = levels[0].append(&data[taken..taken + n])?;
        taken += here;
        pass_down(levels, 0)?;
        if here < n {
            break;
        }
    }
    Ok(taken)
}

/// Gives level `k`'s ready child planes to level `k + 1`, and on down.
fn pass_down(levels: &mut [&mut CudaTileStream], k: usize) -> Result<(), StreamError> {
    while k + 1 < levels.len() {
        let (head, tail) = levels.split_at_mut(k + 1);
        if !head[k].pass_ready(tail[0])? {
            return Ok(());
        }
        pass_down(levels, k + 1)?;
    }
    Ok(())
}

/// Ends every level's input in order (its last epoch shipped, its carry
/// halved and passed down), then finishes each; every level's result
/// (see [`append_levels`]).
pub fn finish_levels(levels: &mut [&mut CudaTileStream]) -> Vec<Result<Summary, StreamError>> {
    let mut ended = Vec::with_capacity(levels.len());
    for k in 0..levels.len() {
        let result = levels[k].end_input().and_then(|()| pass_down(levels, k));
        ended.push(result);
    }
    ended
        .into_iter()
        .zip(levels.iter_mut())
        .map(|(ended, level)| {
            let finished = level.finish();
            ended.and(finished)
        })
        .collect()
}
