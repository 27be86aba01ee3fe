//! Timing kernels with CUDA events, and the permute benchmark.

use super::launch::CompiledPermute;
use retile_gpu::{cuda_error, Gpu};

use crate::error::{CopyError, Result};
use crate::permute::Permute;

/// Median seconds of `work` over `reps` runs after two warm-up runs, timed
/// with CUDA events on `gpu`'s stream.
///
/// The example does not run without a GPU (it is compiled, not run, here).
///
/// ```no_run
/// use retile_copy::{gpu::{time_median, CompiledPermute, Gpu}, Permute};
/// let gpu = Gpu::open()?;
/// let p = Permute::new(&[4096, 4096], &[1, 0], 4)?;
/// let kernel = CompiledPermute::new(&gpu, &p)?;
/// let input = gpu.stream().alloc_zeros::<u8>(4096 * 4096 * 4).unwrap();
/// let mut output = gpu.stream().alloc_zeros::<u8>(4096 * 4096 * 4).unwrap();
/// let seconds = time_median(&gpu, 10, || kernel.launch(&input, &mut output))?;
/// assert!(seconds > 0.0);
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
pub fn time_median(gpu: &Gpu, reps: usize, mut work: impl FnMut() -> Result<()>) -> Result<f64> {
    let stream = gpu.stream();
    for _ in 0..2 {
        work()?;
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = stream
            .record_event(timing)
            .map_err(cuda_error("recording a timing event"))?;
        work()?;
        let end = stream
            .record_event(timing)
            .map_err(cuda_error("recording a timing event"))?;
        end.synchronize()
            .map_err(cuda_error("waiting for a timed run"))?;
        times.push(
            start
                .elapsed_ms(&end)
                .map_err(cuda_error("reading a timing event"))? as f64
                / 1e3,
        );
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// GB/s (bytes read plus bytes written) of permute `p` and of a plain
/// device-to-device copy of the same bytes, measured in the same call.
///
/// ```no_run
/// let gpu = retile_copy::gpu::Gpu::open()?;
/// let p = retile_copy::Permute::new(&[16384, 16384], &[1, 0], 4)?;
/// let (permute, copy) = retile_copy::gpu::bench_permute(&gpu, &p, 20)?;
/// println!("{permute:.0} GB/s, {:.0}% of copy", 100.0 * permute / copy);
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
pub fn bench_permute(gpu: &Gpu, p: &Permute, reps: usize) -> Result<(f64, f64)> {
    let bytes = p.elements() as usize * p.element_bytes;
    let stream = gpu.stream();
    let input = stream
        .alloc_zeros::<u8>(bytes)
        .map_err(cuda_error("allocating the permute's input"))?;
    let mut output = stream
        .alloc_zeros::<u8>(bytes)
        .map_err(cuda_error("allocating the permute's output"))?;
    let kernel = CompiledPermute::new(gpu, p)?;
    let t_permute = time_median(gpu, reps, || kernel.launch(&input, &mut output))?;
    let t_copy = time_median(gpu, reps, || {
        stream
            .memcpy_dtod(&input, &mut output)
            .map_err(cuda_error("copying device to device"))
            .map_err(CopyError::from)
    })?;
    let gbs = |t: f64| 2.0 * bytes as f64 / t / 1e9;
    Ok((gbs(t_permute), gbs(t_copy)))
}
