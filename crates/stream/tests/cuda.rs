//! The CUDA backend against the CPU backend (feature `cuda`) on random
//! shapes of rank 1-6, ragged, bounded and unbounded, random append splits,
//! every element size, pageable and pinned input, and the device-resident
//! path. They need a GPU (or NVRTC) and are ignored by default, so a machine
//! without one reports them as not run; run them with `-- --ignored`.
#![cfg(feature = "cuda")]

use retile_copy::gpu::{compile_only, Gpu};
use retile_stream::cuda::{scatter_device, CudaTileStream, PinnedBuffer, ScatterKernel};
use retile_stream::{DType, MemorySink, StreamPlan, StreamSpec, TileStream};

struct Rng(u64);

impl Rng {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound.max(1)
    }
}

fn dtype_of(esize: usize) -> DType {
    match esize {
        1 => DType::U8,
        2 => DType::F16,
        4 => DType::I32,
        _ => DType::F64,
    }
}

/// (spec, planes streamed, element size)
fn cases() -> Vec<(StreamSpec, u64, usize)> {
    let mut rng = Rng(3);
    let mut out = vec![
        (
            StreamSpec::new(DType::I16, vec![0, 64, 96], vec![16, 32, 32]).unwrap(),
            40,
            2,
        ),
        (
            StreamSpec::new(DType::U8, vec![5, 7, 9], vec![2, 3, 4]).unwrap(),
            5,
            1,
        ),
        // ragged tiles of 3 pages in padded slots, moved in 2-byte units
        (
            StreamSpec::new(DType::U8, vec![0, 50, 70], vec![3, 64, 64]).unwrap(),
            7,
            1,
        ),
    ];
    while out.len() < 40 {
        let rank = 1 + rng.next(6) as usize;
        let budget = [64, 12, 7, 4, 3, 3][rank - 1];
        let mut shape: Vec<u64> = (0..rank).map(|_| 1 + rng.next(budget)).collect();
        let tile: Vec<u64> = (0..rank).map(|_| 1 + rng.next(budget)).collect();
        let esize = [1, 2, 4, 8][rng.next(4) as usize];
        let unbounded = rng.next(2) == 0;
        let planes = if unbounded { 1 + rng.next(9) } else { shape[0] };
        if unbounded {
            shape[0] = 0;
        }
        out.push((
            StreamSpec::new(dtype_of(esize), shape, tile).unwrap(),
            planes,
            esize,
        ));
    }
    out
}

fn data_for(spec: &StreamSpec, planes: u64, esize: usize, seed: u64) -> Vec<u8> {
    let plane: u64 = spec.shape()[1..].iter().product();
    (0..(planes * plane) as usize * esize)
        .map(|i| ((i as u64 * 2654435761) ^ seed) as u8)
        .collect()
}

fn compare(cpu: &MemorySink, gpu: &MemorySink, what: &str) {
    assert_eq!(cpu.tile_count(), gpu.tile_count(), "{what}: tile counts");
    assert_eq!(cpu.planes(), gpu.planes(), "{what}: planes");
    assert_eq!(
        cpu.assemble().unwrap(),
        gpu.assemble().unwrap(),
        "{what}: assembled data"
    );
    for key in cpu.tile_keys() {
        assert_eq!(cpu.tile(&key), gpu.tile(&key), "{what}: tile {key:?}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU with its driver and NVRTC: run with --ignored on a GPU machine"]
fn scatter_kernels_compile_with_nvrtc() {
    for (spec, _, esize) in cases() {
        let plan = StreamPlan::new(&spec).unwrap();
        let fill = vec![0xA5; esize];
        for unit in [16, 1] {
            compile_only(
                ScatterKernel::new(&plan, &fill, unit).source_text(),
                "sm_90",
            )
            .unwrap();
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU with its driver and NVRTC: run with --ignored on a GPU machine"]
fn the_cuda_backend_matches_the_cpu_backend() {
    let gpu = Gpu::open().expect("a GPU: this test runs only with --ignored on a GPU machine");
    let mut rng = Rng(5);
    for (n, (spec, planes, esize)) in cases().into_iter().enumerate() {
        let data = data_for(&spec, planes, esize, n as u64);
        let fill: Vec<u8> = (0..esize as u8).map(|b| 0xA0 | b).collect();
        let mut cuts: Vec<usize> = (0..rng.next(6))
            .map(|_| rng.next(data.len() as u64 + 1) as usize)
            .collect();
        cuts.sort_unstable();
        cuts.push(data.len());
        let (cpu, gpu_sink) = (MemorySink::new(), MemorySink::new());
        let mut a = TileStream::new(spec.clone(), &fill, 2, Box::new(cpu.clone())).unwrap();
        let mut b = CudaTileStream::new(spec.clone(), &fill, Box::new(gpu_sink.clone())).unwrap();
        let pinned = n % 2 == 1;
        let mut staged = PinnedBuffer::new(&gpu, data.len()).unwrap();
        staged.as_mut().copy_from_slice(&data);
        let source: &[u8] = if pinned { staged.as_ref() } else { &data };
        let mut at = 0;
        for &cut in &cuts {
            assert_eq!(a.append(&data[at..cut]).unwrap(), cut - at);
            assert_eq!(b.append(&source[at..cut]).unwrap(), cut - at);
            at = cut;
        }
        let (ra, rb) = (a.finish().unwrap(), b.finish().unwrap());
        assert_eq!((ra.planes, ra.tiles), (rb.planes, rb.tiles));
        compare(
            &cpu,
            &gpu_sink,
            &format!("case {n} {spec:?} pinned={pinned}"),
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU with its driver and NVRTC: run with --ignored on a GPU machine"]
fn a_partial_plane_is_reported_with_every_complete_plane_kept() {
    let spec = StreamSpec::new(DType::U16, vec![0, 5, 6], vec![2, 4, 4]).unwrap();
    let data = data_for(&spec, 3, 2, 1);
    let sink = MemorySink::new();
    let mut s = CudaTileStream::new(spec, &[0, 0], Box::new(sink.clone())).unwrap();
    s.append(&data[..data.len() - 7]).unwrap();
    let err = s.finish().unwrap_err().to_string();
    assert!(err.contains("inside a plane"), "{err}");
    assert_eq!(sink.planes(), Some(2));
}

#[test]
#[ignore = "needs an NVIDIA GPU with its driver and NVRTC: run with --ignored on a GPU machine"]
fn device_resident_input_scatters_like_the_cpu() {
    let gpu = Gpu::open().expect("a GPU: this test runs only with --ignored on a GPU machine");
    for (n, (spec, planes, esize)) in cases().into_iter().enumerate().take(20) {
        let plan = StreamPlan::new(&spec).unwrap();
        let data = data_for(&spec, planes, esize, n as u64);
        let fill = vec![0x5A; esize];
        let cpu = MemorySink::new();
        let mut a = TileStream::new(spec.clone(), &fill, 2, Box::new(cpu.clone())).unwrap();
        a.append(&data).unwrap();
        a.finish().unwrap();
        let epochs = planes.div_ceil(spec.tile()[0]);
        let d_in = gpu.stream().memcpy_stod(&data).unwrap();
        let mut d_out = gpu
            .stream()
            .alloc_zeros::<u8>((epochs * plan.epoch_buffer_bytes()) as usize)
            .unwrap();
        scatter_device(&gpu, &plan, &fill, &d_in, &mut d_out).unwrap();
        let tiles = gpu.stream().memcpy_dtov(&d_out).unwrap();
        let tile_bytes = plan.tile_bytes() as usize;
        let counts = plan.tile_counts();
        for (i, slot) in tiles.chunks(plan.slot_bytes() as usize).enumerate() {
            let (tile, pad) = slot.split_at(tile_bytes);
            assert!(
                pad.iter().all(|&b| b == 0x5A),
                "case {n}: slot {i} pads with the fill"
            );
            let per_epoch = plan.m() as usize;
            let mut key = vec![(i / per_epoch) as u64];
            let mut rest = i % per_epoch;
            let mut rest_key = vec![0u64; counts.len() - 1];
            for d in (1..counts.len()).rev() {
                rest_key[d - 1] = (rest as u64) % counts[d];
                rest /= counts[d] as usize;
            }
            key.extend(rest_key);
            assert_eq!(
                cpu.tile(&key).as_deref(),
                Some(tile),
                "case {n}: tile {key:?}"
            );
        }
    }
}

/// Every level of a pyramid made on the GPU against the CPU's, byte for
/// byte: every dtype and method, ranks 2-5, ragged, the first dimension
/// halved or not, odd epochs (a pair of planes split between epochs),
/// bounded and unbounded, random append splits.
#[test]
#[ignore = "needs an NVIDIA GPU with its driver and NVRTC: run with --ignored on a GPU machine"]
fn gpu_pyramids_match_the_cpu_pyramids_byte_for_byte() {
    use retile_stream::{Backend, Method, MultiscaleStream, PyramidOptions};
    let mut rng = Rng(16);
    let dtypes: Vec<DType> = DType::numeric().collect();
    let methods = [
        Method::Mean,
        Method::Min,
        Method::Max,
        Method::Decimate,
        Method::Median,
    ];
    let mut compared = 0;
    for case in 0..120 {
        let dtype = dtypes[case % dtypes.len()];
        let method = methods[case % methods.len()];
        let rank = 2 + rng.next(4) as usize;
        let budget = [0, 0, 40, 12, 7, 5][rank];
        let mut shape: Vec<u64> = (0..rank).map(|_| 1 + rng.next(budget)).collect();
        let tile: Vec<u64> = (0..rank).map(|_| 1 + rng.next(5)).collect();
        let mut halve: Vec<bool> = (0..rank).map(|_| rng.next(2) == 1).collect();
        halve[rank - 1] |= !halve.contains(&true);
        let planes = shape[0];
        if rng.next(2) == 0 {
            shape[0] = 0;
        }
        let spec = StreamSpec::new(dtype, shape, tile).unwrap();
        let pyramid = PyramidOptions {
            method,
            downsample: Some(halve.clone()),
            levels: Some(2 + rng.next(3) as usize),
        };
        let Ok(specs) = pyramid.level_specs(&spec) else {
            continue; // more levels than the extents allow
        };
        let plane: u64 = spec.shape()[1..].iter().product::<u64>() * dtype.size() as u64;
        let mut data = data_for(&spec, planes, dtype.size(), case as u64);
        if dtype == DType::F32 {
            // NaN and -0 now and then: min, max and median keep them, a mean gives the quiet NaN
            for (i, e) in data.chunks_exact_mut(4).enumerate() {
                match i % 13 {
                    5 => e.copy_from_slice(&f32::from_bits(0xFFC0_0001).to_le_bytes()),
                    7 => e.copy_from_slice(&(-0.0f32).to_le_bytes()),
                    _ => {}
                }
            }
        }
        let mut stored = Vec::new();
        for backend in [Backend::Cpu { threads: 2 }, Backend::Cuda] {
            let sinks: Vec<MemorySink> = specs.iter().map(|_| MemorySink::new()).collect();
            let mut s = MultiscaleStream::new(
                spec.clone(),
                &vec![0; dtype.size()],
                backend,
                &pyramid,
                |k, _| Ok(Box::new(sinks[k].clone())),
            )
            .unwrap();
            let mut at = 0;
            let mut split = Rng(case as u64);
            while at < data.len() {
                let n = (1 + split.next(3 * plane)) as usize;
                let end = (at + n).min(data.len());
                assert_eq!(s.append(&data[at..end]).unwrap(), end - at);
                at = end;
            }
            s.finish().unwrap();
            stored.push(
                sinks
                    .iter()
                    .map(|k| (k.planes(), k.assemble().unwrap()))
                    .collect::<Vec<_>>(),
            );
        }
        assert_eq!(
            stored[0], stored[1],
            "case {case}: {spec:?} {method} {halve:?}"
        );
        compared += 1;
    }
    assert!(compared >= 80, "only {compared} cases had a pyramid");
}

/// Input past a bounded stream's shape is refused, not looped on, when the
/// GPU makes the pyramid; every level holds what the CPU's holds.
#[test]
#[ignore = "needs an NVIDIA GPU with its driver and NVRTC: run with --ignored on a GPU machine"]
fn a_full_bounded_pyramid_on_the_gpu_refuses_the_rest() {
    use retile_stream::{Backend, Method, MultiscaleStream, PyramidOptions};
    let spec = StreamSpec::new(DType::U16, vec![5, 6, 10], vec![2, 4, 4]).unwrap();
    let pyramid = PyramidOptions {
        method: Method::Mean,
        downsample: Some(vec![true, true, true]),
        levels: Some(3),
    };
    let plane = 6 * 10 * 2;
    let data = data_for(&spec, 7, 2, 9);
    let mut stored = Vec::new();
    for backend in [Backend::Cpu { threads: 1 }, Backend::Cuda] {
        let sinks = [MemorySink::new(), MemorySink::new(), MemorySink::new()];
        let mut s = MultiscaleStream::new(spec.clone(), &[0, 0], backend, &pyramid, |k, _| {
            Ok(Box::new(sinks[k].clone()))
        })
        .unwrap();
        assert_eq!(s.append(&data).unwrap(), 5 * plane);
        assert_eq!(s.append(&data[..plane]).unwrap(), 0);
        s.finish().unwrap();
        stored.push(
            sinks
                .iter()
                .map(|k| (k.planes(), k.assemble().unwrap()))
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(stored[0], stored[1]);
    assert_eq!(
        stored[1].iter().map(|l| l.0).collect::<Vec<_>>(),
        [Some(5), Some(3), Some(2)]
    );
}
