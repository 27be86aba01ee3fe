//! `retile bench gpu`: the GPU figures of BENCHMARKS.md, each beside the
//! device-to-device copy measured in the same run; `retile bench permute`:
//! one permute of the user's choosing, checked and timed the same way.

use crate::error::CliError;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use retile_copy::gpu::{bench_permute, cuda_error, permute, time_median, Gpu};
use retile_copy::{permute_reference, Permute};
use retile_stream::cuda::{scatter_device, CudaTileStream, PinnedBuffer};
use retile_stream::{DType, NullSink, StreamPlan, StreamSpec};

/// Arguments of `retile bench gpu`.
#[derive(Args)]
pub struct BenchArgs {
    /// Timed repetitions per figure (medians are printed).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Planes of the streaming benchmarks (2048x2048 i16 each).
    #[arg(long, default_value_t = 512)]
    planes: u64,
}

/// Arguments of `retile bench permute`.
#[derive(Args)]
pub struct PermuteArgs {
    /// Input extents, slowest first (e.g. 64,128,128,64).
    #[arg(long, value_delimiter = ',', required = true)]
    shape: Vec<i64>,
    /// Output dimension i is input dimension perm[i] (e.g. 0,3,1,2: NHWC -> NCHW).
    #[arg(long, value_delimiter = ',', required = true)]
    perm: Vec<usize>,
    /// Element type (u8 ... f64; only its size matters).
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// Timed repetitions (the median is printed).
    #[arg(long, default_value_t = 10)]
    reps: usize,
}

/// Tensors up to this many bytes are checked against the CPU reference
/// before they are timed.
const CHECKED_BYTES: usize = 1 << 30;

/// `retile bench permute`: checks the permute against the CPU reference on
/// patterned data, then prints its GB/s beside the device-to-device copy.
pub fn bench_one(args: &PermuteArgs) -> Result<ExitCode, CliError> {
    let dtype: DType = args.dtype.parse()?;
    let p = Permute::new(&args.shape, &args.perm, dtype.size())?;
    let gpu = Gpu::open()?;
    let bytes = p.elements() as usize * p.element_bytes;
    let checked = if bytes <= CHECKED_BYTES {
        let input: Vec<u8> = (0..bytes)
            .map(|i| (i as u64).wrapping_mul(0x9E37_79B9) as u8 ^ (i >> 11) as u8)
            .collect();
        let stream = gpu.stream();
        let d_in = stream.memcpy_stod(&input)?;
        let mut d_out = stream.alloc_zeros::<u8>(bytes)?;
        permute(&gpu, &p, &d_in, &mut d_out)?;
        let got = stream.memcpy_dtov(&d_out)?;
        if got != permute_reference(&p, &input)? {
            return Err(format!("the GPU permute of {p:?} differs from the CPU reference").into());
        }
        "matches the CPU reference"
    } else {
        "not checked (over 1 GiB)"
    };
    let (gbs, copy) = bench_permute(&gpu, &p, args.reps)?;
    println!(
        "retile permute {:?} {} perm {:?} on {}: {checked}; {gbs:.0} GB/s; d2d copy {copy:.0} GB/s; ratio {:.3}",
        args.shape,
        args.dtype,
        args.perm,
        gpu.name(),
        gbs / copy
    );
    Ok(ExitCode::SUCCESS)
}

fn permutes(gpu: &Gpu, reps: usize) -> Result<(), CliError> {
    let cases: [(&str, Vec<i64>, Vec<usize>, usize); 7] = [
        ("transpose 16384^2 f32", vec![16384, 16384], vec![1, 0], 4),
        ("transpose 16384^2 f16", vec![16384, 16384], vec![1, 0], 2),
        (
            "permute 3-D 256x1024x1024 f16 (0,2,1)",
            vec![256, 1024, 1024],
            vec![0, 2, 1],
            2,
        ),
        (
            "permute 3-D 512x512x512 f32 (2,1,0)",
            vec![512, 512, 512],
            vec![2, 1, 0],
            4,
        ),
        (
            "permute 4-D 64x128x128x64 f16 (0,3,1,2)",
            vec![64, 128, 128, 64],
            vec![0, 3, 1, 2],
            2,
        ),
        (
            "permute 4-D 64x64x128x128 f32 (0,2,3,1)",
            vec![64, 64, 128, 128],
            vec![0, 2, 3, 1],
            4,
        ),
        (
            "permute 4-D 64x128x128x128 u8 (3,2,1,0)",
            vec![64, 128, 128, 128],
            vec![3, 2, 1, 0],
            1,
        ),
    ];
    for (name, shape, perm, e) in cases {
        let p = Permute::new(&shape, &perm, e)?;
        let (gbs, copy) = bench_permute(gpu, &p, reps)?;
        println!(
            "retile {name}: {gbs:.0} GB/s; d2d copy {copy:.0} GB/s; ratio {:.3}",
            gbs / copy
        );
    }
    Ok(())
}

fn scatter(gpu: &Gpu, planes: u64, reps: usize) -> Result<(), CliError> {
    let spec = StreamSpec::new(DType::I16, vec![planes, 2048, 2048], vec![64, 64, 64])?;
    let plan = StreamPlan::new(&spec)?;
    let bytes = (planes * 2048 * 2048 * 2) as usize;
    let stream = gpu.stream();
    let input = stream.alloc_zeros::<u8>(bytes)?;
    let tiles = planes.div_ceil(64) * plan.epoch_buffer_bytes();
    let mut output = stream.alloc_zeros::<u8>(tiles as usize)?;
    let t = time_median(gpu, reps, || {
        scatter_device(gpu, &plan, &[0, 0], &input, &mut output)
            .map_err(|e| retile_copy::CopyError::Invalid(e.to_string()))
    })?;
    let c = time_median(gpu, reps, || {
        stream
            .memcpy_dtod(&input, &mut output)
            .map_err(cuda_error("copying device to device"))
            .map_err(retile_copy::CopyError::from)
    })?;
    let (gbs, copy) = (2.0 * bytes as f64 / t / 1e9, 2.0 * bytes as f64 / c / 1e9);
    println!(
        "retile device-resident scatter {planes}x2048x2048 i16 into 64^3 tiles: {gbs:.0} GB/s; d2d copy {copy:.0} GB/s; ratio {:.3}",
        gbs / copy
    );
    Ok(())
}

/// Times the pinned input is streamed through one stream.
const PASSES: usize = 8;

fn pinned_stream(gpu: &Gpu, planes: u64) -> Result<(), CliError> {
    let spec = StreamSpec::new(DType::I16, vec![0, 2048, 2048], vec![64, 64, 64])?;
    let plane = 2048 * 2048 * 2usize;
    let epoch = 64 * plane;
    let mut host = PinnedBuffer::new(gpu, planes as usize * plane)?;
    for (i, b) in host.as_mut().iter_mut().enumerate().step_by(4096) {
        *b = i as u8;
    }
    let mut device = gpu.stream().alloc_zeros::<u8>(epoch)?;
    let h2d = time_median(gpu, 5, || {
        gpu.stream()
            .memcpy_htod(&host.as_ref()[..epoch], &mut device)
            .map_err(cuda_error("copying host to device"))
            .map_err(retile_copy::CopyError::from)
    })?;
    let h2d_gbs = epoch as f64 / h2d / 1e9;
    let duplex_gbs = duplex(gpu, &mut host, epoch, 1)?;
    let sustained_gbs = duplex(gpu, &mut host, epoch, 16)?;
    let mut best = (0.0f64, 0.0f64);
    for _ in 0..2 {
        let created = Instant::now();
        let mut s = CudaTileStream::new(spec.clone(), &[0, 0], Box::new(NullSink))?;
        let started = Instant::now();
        for _pass in 0..PASSES {
            s.append(host.as_ref())?;
        }
        let summary = s.finish()?;
        let bytes = summary.bytes as f64;
        let elapsed = started.elapsed().as_secs_f64();
        drop(s);
        let steady = bytes / elapsed / 1e9;
        if steady > best.0 {
            best = (steady, bytes / created.elapsed().as_secs_f64() / 1e9);
        }
    }
    println!(
        "retile pinned host -> tiles -> pinned host, {PASSES} x {planes}x2048x2048 i16, 64^3 tiles: {:.1} GB/s of input ({:.1} GB/s with setup and teardown); pinned h2d {h2d_gbs:.1} GB/s alone, {duplex_gbs:.1} GB/s each way while d2h runs (one epoch each way), {sustained_gbs:.1} GB/s sustained (16 back to back); ratio {:.3} ({:.3} of the one-epoch duplex figure, {:.3} of the sustained one)",
        best.0,
        best.1,
        best.0 / h2d_gbs,
        best.0 / duplex_gbs,
        best.0 / sustained_gbs
    );
    Ok(())
}

/// GB/s each way of epochs copied host -> device while as many go device ->
/// host on a second stream: the link's ceiling for a stream whose tiles come
/// back while the next input arrives. `rounds` pairs go back to back (one
/// pair is a burst; many, the sustained rate a long stream meets); the best
/// of five tries.
fn duplex(
    gpu: &Gpu,
    host: &mut PinnedBuffer,
    epoch: usize,
    rounds: usize,
) -> Result<f64, CliError> {
    use cudarc::driver::{result as cu, DevicePtr};
    let ctx = gpu.context();
    let (up, down) = (ctx.new_stream()?, ctx.new_stream()?);
    let d_up = gpu.stream().alloc_zeros::<u8>(epoch)?;
    let d_down = gpu.stream().alloc_zeros::<u8>(epoch)?;
    gpu.stream().synchronize()?;
    let (src, rest) = host.as_mut().split_at_mut(epoch);
    let dst = &mut rest[..epoch];
    let mut best = f64::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        let (p_up, _a) = d_up.device_ptr(&up);
        let (p_down, _b) = d_down.device_ptr(&down);
        for _ in 0..rounds {
            // SAFETY: both host ranges are pinned and outlive the copies, which are awaited below.
            unsafe {
                cu::memcpy_htod_async(p_up, &src[..], up.cu_stream())?;
                cu::memcpy_dtoh_async(&mut dst[..], p_down, down.cu_stream())?;
            }
        }
        up.synchronize()?;
        down.synchronize()?;
        best = best.min(started.elapsed().as_secs_f64());
    }
    Ok((rounds * epoch) as f64 / best / 1e9)
}

/// `retile bench gpu`.
pub fn bench(args: &BenchArgs) -> Result<ExitCode, CliError> {
    let gpu = Gpu::open()?;
    println!("retile bench gpu on {}", gpu.name());
    permutes(&gpu, args.reps)?;
    scatter(&gpu, args.planes, args.reps)?;
    pinned_stream(&gpu, args.planes)?;
    Ok(ExitCode::SUCCESS)
}
