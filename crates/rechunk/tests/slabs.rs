//! An output written in slabs, or in blocks cut along every dimension, or
//! (a pyramid) in two phases, in any order, is the store one stream writes: the same files, the same metadata byte for byte, and every
//! level's elements equal as zarrs reads them (a shard's inner chunks may
//! lie in another order: writers append them as they finish). Random
//! arrays of rank 2 to 5, with and without shards, codecs and pyramids (the
//! first dimension halved or not).

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use retile_ngff::{open_output, ArrayOptions, SlabJob};
use retile_pyramid::Backend;
use retile_rechunk::ZarrSource;
use retile_store::ZarrOptions;

/// Every file under `dir` (the lock aside) by its path inside it.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// Whether the store `name` under `dir` is the one stream's
/// (`stream.zarr`): the same files, the same metadata byte for byte, and
/// each of the `levels` levels' elements equal as zarrs reads them.
fn same_store(dir: &Path, name: &str, c: &Case, levels: usize) -> Result<(), TestCaseError> {
    let (ours, theirs) = (files(&dir.join(name)), files(&dir.join("stream.zarr")));
    prop_assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (file, bytes) in ours.iter().filter(|(file, _)| file.ends_with("zarr.json")) {
        prop_assert!(bytes == &theirs[file], "{} differs", file);
    }
    for k in 0..levels {
        let read = |store: &str| {
            let level = match c.pyramid {
                Some(_) => dir.join(store).join(k.to_string()),
                None => dir.join(store),
            };
            let source = ZarrSource::open(&level, &Default::default()).unwrap();
            source.read(0..source.shape()[0]).unwrap()
        };
        prop_assert!(
            read(name) == read("stream.zarr"),
            "level {} of {} differs",
            k,
            name
        );
    }
    Ok(())
}

#[derive(Debug, Clone)]
struct Case {
    shape: Vec<u64>,
    tile: Vec<u64>,
    shard: Option<Vec<u64>>,
    codec: &'static str,
    pyramid: Option<(usize, bool)>,
    order: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (2usize..=5).prop_flat_map(|rank| {
        (
            (1u64..40, prop::collection::vec(1u64..9, rank - 1)),
            prop::collection::vec(1u64..4, rank),
            prop::option::of(prop::collection::vec(1u64..3, rank)),
            prop::sample::select(vec!["none", "zstd:1"]),
            prop::option::of((2usize..4, any::<bool>())),
            any::<u64>(),
        )
            .prop_map(|((first, rest), tile, shard, codec, pyramid, order)| Case {
                shape: std::iter::once(first).chain(rest).collect(),
                tile,
                shard,
                codec,
                pyramid,
                order,
            })
    })
}

fn options(c: &Case) -> ArrayOptions {
    let rank = c.shape.len();
    ArrayOptions {
        shape: c.shape.clone(),
        tile: c.tile.clone(),
        dtype: "u16".into(),
        shard: c.shard.clone(),
        codec: Some(c.codec.into()),
        writers: Some(2),
        pyramid: c.pyramid.map(|_| "mean".into()),
        levels: c.pyramid.map(|(levels, _)| levels),
        downsample: c
            .pyramid
            .map(|(_, first)| (0..rank).map(|d| d > 0 || first).collect()),
        ..Default::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn slabs_in_any_order_write_the_store_one_stream_writes(c in case()) {
        let dir = tempfile::tempdir().unwrap();
        let backend = Backend::Cpu { threads: 1 };
        let store = |name: &str| ZarrOptions { path: dir.path().join(name), ..Default::default() };
        let plane: u64 = c.shape[1..].iter().product();
        let data: Vec<u8> = (0..c.shape[0] * plane)
            .flat_map(|i| ((i * 7919 % 65521) as u16).to_ne_bytes())
            .collect();
        // one stream
        let whole = match options(&c).resolve(Some(store("stream.zarr")), backend) {
            Ok(whole) => whole,
            Err(e) => return Err(TestCaseError::reject(e.to_string())),
        };
        let mut stream = match open_output(whole.spec.clone(), &whole.fill, backend, &whole.output) {
            Ok(stream) => stream,
            // a pyramid the extents cannot make is refused alike below
            Err(e) => {
                let slabs = options(&c).resolve(Some(store("slabs.zarr")), backend).unwrap();
                prop_assert!(SlabJob::new(slabs).is_err(), "{e}");
                return Ok(());
            }
        };
        stream.append(&data).unwrap();
        stream.finish().unwrap();
        // slabs, in a shuffled order
        let job = SlabJob::new(options(&c).resolve(Some(store("slabs.zarr")), backend).unwrap()).unwrap();
        let unit = job.slab_planes();
        let begun = job.begin().unwrap();
        let mut starts: Vec<u64> = (0..c.shape[0]).step_by(unit as usize).collect();
        let n = starts.len();
        for i in 0..n {
            starts.swap(i, (c.order.wrapping_mul(i as u64 + 1) % n as u64) as usize);
        }
        let bytes = (plane * 2) as usize;
        for first in starts {
            let end = (first + unit).min(c.shape[0]);
            job.write_slab(first, &data[first as usize * bytes..end as usize * bytes], backend).unwrap();
        }
        begun.finish().unwrap();
        same_store(dir.path(), "slabs.zarr", &c, job.level_shapes().len())?;
    }
}

/// The element index, in the C-order array of shape `shape`, of each
/// element of the box at `origin` of extents `extent`, in C order.
fn box_indexes(shape: &[u64], origin: &[u64], extent: &[u64]) -> Vec<usize> {
    let rank = shape.len();
    let count: u64 = extent.iter().product();
    (0..count)
        .map(|i| {
            let (mut rest, mut at) = (i, 0u64);
            let mut coords = vec![0u64; rank];
            for d in (0..rank).rev() {
                coords[d] = origin[d] + rest % extent[d];
                rest /= extent[d];
            }
            for d in 0..rank {
                at = at * shape[d] + coords[d];
            }
            at as usize
        })
        .collect()
}

/// The elements of the box at `origin` of extents `extent` of the C-order
/// array `data` of shape `shape`, `item` bytes each, in C order.
fn boxed(data: &[u8], shape: &[u64], origin: &[u64], extent: &[u64], item: usize) -> Vec<u8> {
    box_indexes(shape, origin, extent)
        .into_iter()
        .flat_map(|at| data[at * item..(at + 1) * item].iter().copied())
        .collect()
}

/// Cuts `extent` into parts of whole `unit`s, each `per` units long, the
/// last shorter but, where `whole_units` (a pyramid's halved dimension),
/// merged into the one before when it is less than a unit.
fn cuts(extent: u64, unit: u64, per: u64, whole_units: bool) -> Vec<(u64, u64)> {
    let step = unit * per.max(1);
    let mut parts: Vec<(u64, u64)> = (0..extent)
        .step_by(step as usize)
        .map(|s| (s, step.min(extent - s)))
        .collect();
    if whole_units && parts.len() > 1 && parts[parts.len() - 1].1 < unit {
        let (_, last) = parts.pop().unwrap();
        parts.last_mut().unwrap().1 += last;
    }
    parts
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn blocks_in_any_order_write_the_store_one_stream_writes(c in case()) {
        let dir = tempfile::tempdir().unwrap();
        let backend = Backend::Cpu { threads: 1 };
        let store = |name: &str| ZarrOptions { path: dir.path().join(name), ..Default::default() };
        let data = streamed(dir.path(), &c)?;
        let job = SlabJob::new(options(&c).resolve(Some(store("blocks.zarr")), backend).unwrap()).unwrap();
        let units = job.block_units();
        // each dimension cut into parts of 1 to 3 units, as the case's bits say
        let parts: Vec<Vec<(u64, u64)>> = (0..c.shape.len())
            .map(|d| cuts(c.shape[d], units[d], 1 + (c.order >> (2 * d)) % 3, c.pyramid.is_some() && d > 0))
            .collect();
        let begun = job.begin().unwrap();
        for (origin, extent) in shuffled_boxes(&parts, c.order) {
            let bytes = boxed(&data, &c.shape, &origin, &extent, 2);
            job.write_block(&origin, &extent, &bytes, backend).unwrap();
        }
        begun.finish().unwrap();
        same_store(dir.path(), "blocks.zarr", &c, job.level_shapes().len())?;
    }
}

/// The case's elements (C order, u16), written by one stream at
/// `dir/stream.zarr`; the case rejected where its options or its pyramid
/// cannot be made.
fn streamed(dir: &Path, c: &Case) -> Result<Vec<u8>, TestCaseError> {
    let backend = Backend::Cpu { threads: 1 };
    let store = ZarrOptions {
        path: dir.join("stream.zarr"),
        ..Default::default()
    };
    let count: u64 = c.shape.iter().product();
    let data: Vec<u8> = (0..count)
        .flat_map(|i| ((i * 7919 % 65521) as u16).to_ne_bytes())
        .collect();
    let whole = options(c)
        .resolve(Some(store), backend)
        .map_err(|e| TestCaseError::reject(e.to_string()))?;
    let Ok(mut stream) = open_output(whole.spec.clone(), &whole.fill, backend, &whole.output)
    else {
        return Err(TestCaseError::reject("a pyramid the extents cannot make"));
    };
    stream.append(&data).unwrap();
    stream.finish().unwrap();
    Ok(data)
}

/// Every box of `parts` (each dimension's parts), shuffled as `order` says.
fn shuffled_boxes(parts: &[Vec<(u64, u64)>], order: u64) -> Vec<(Vec<u64>, Vec<u64>)> {
    let mut blocks: Vec<Vec<(u64, u64)>> = vec![vec![]];
    for dim in parts {
        blocks = blocks
            .iter()
            .flat_map(|b| dim.iter().map(move |p| [b.clone(), vec![*p]].concat()))
            .collect();
    }
    let n = blocks.len();
    for i in 0..n {
        blocks.swap(i, (order.wrapping_mul(i as u64 + 5) % n as u64) as usize);
    }
    blocks.into_iter().map(|b| b.into_iter().unzip()).collect()
}

/// Writes the box `piece` of shape `extent` at `origin` into the C-order
/// array `whole` of shape `shape`, `item` bytes an element.
fn place(
    whole: &mut [u8],
    shape: &[u64],
    origin: &[u64],
    extent: &[u64],
    piece: &[u8],
    item: usize,
) {
    for (i, at) in box_indexes(shape, origin, extent).into_iter().enumerate() {
        whole[at * item..(at + 1) * item].copy_from_slice(&piece[i * item..(i + 1) * item]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// A pyramid in two phases: blocks of whole level-0 files written into
    /// level 0 (`write_top`) and halved (`halve_top`), then boxes of whole files of every
    /// level below written from those level-1 pieces (`write_levels`),
    /// each phase in any order.
    #[test]
    fn a_pyramid_in_two_phases_writes_the_store_one_stream_writes(c in case()) {
        if c.pyramid.is_none() {
            return Err(TestCaseError::reject("two phases are a pyramid's"));
        }
        let dir = tempfile::tempdir().unwrap();
        let backend = Backend::Cpu { threads: 1 };
        let store = |name: &str| ZarrOptions { path: dir.path().join(name), ..Default::default() };
        let data = streamed(dir.path(), &c)?;
        let job = SlabJob::new(options(&c).resolve(Some(store("phases.zarr")), backend).unwrap()).unwrap();
        let (top, halved) = (job.top_units(), job.halved().to_vec());
        let level1_shape = job.level_shapes()[1].clone();
        let mut level1 = vec![0u8; level1_shape.iter().product::<u64>() as usize * 2];
        let begun = job.begin().unwrap();
        let parts: Vec<Vec<(u64, u64)>> = (0..c.shape.len())
            .map(|d| cuts(c.shape[d], top[d], 1 + (c.order >> (2 * d)) % 3, false))
            .collect();
        for (origin, extent) in shuffled_boxes(&parts, c.order) {
            let block = boxed(&data, &c.shape, &origin, &extent, 2);
            job.write_top(&origin, &extent, &block, backend).unwrap();
            let child = job.halve_top(&origin, &extent, &block, backend).unwrap();
            let (at, size): (Vec<u64>, Vec<u64>) = (0..origin.len())
                .map(|d| match halved[d] {
                    true => (origin[d] / 2, extent[d].div_ceil(2)),
                    false => (origin[d], extent[d]),
                })
                .unzip();
            place(&mut level1, &level1_shape, &at, &size, &child, 2);
        }
        let units = job.level_units(1);
        let parts: Vec<Vec<(u64, u64)>> = (0..c.shape.len())
            .map(|d| cuts(level1_shape[d], units[d], 1 + (c.order >> (2 * d + 1)) % 2, halved[d] && d > 0))
            .collect();
        for (origin, extent) in shuffled_boxes(&parts, c.order >> 7) {
            let piece = boxed(&level1, &level1_shape, &origin, &extent, 2);
            job.write_levels(1, &origin, &extent, &piece, backend).unwrap();
        }
        begun.finish().unwrap();
        same_store(dir.path(), "phases.zarr", &c, job.level_shapes().len())?;
    }
}

/// The job of writing `options` at `dir/a.zarr`, in slabs or blocks.
fn job_at(dir: &Path, options: ArrayOptions) -> SlabJob {
    let store = ZarrOptions {
        path: dir.join("a.zarr"),
        ..Default::default()
    };
    let resolved = options.resolve(Some(store), Backend::Cpu { threads: 1 });
    SlabJob::new(resolved.unwrap()).unwrap()
}

#[test]
fn a_block_that_does_not_start_a_file_or_has_the_wrong_size_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let options = ArrayOptions {
        shape: vec![8, 10, 6],
        tile: vec![2, 2, 3],
        dtype: "u8".into(),
        shard: Some(vec![1, 2, 1]),
        ..Default::default()
    };
    let job = job_at(dir.path(), options);
    assert_eq!(job.block_units(), vec![2, 4, 3]);
    let begun = job.begin().unwrap();
    let cpu = Backend::Cpu { threads: 1 };
    let refused = |origin: &[u64], shape: &[u64], bytes: usize| {
        job.write_block(origin, shape, &vec![0; bytes], cpu)
            .unwrap_err()
            .to_string()
    };
    let err = refused(&[0, 2, 0], &[2, 4, 3], 24);
    assert!(
        err.contains("multiple of 4 elements along dimension 1"),
        "{err}"
    );
    // ends inside a file, not at the array's end
    let err = refused(&[0, 0, 0], &[2, 4, 2], 16);
    assert!(
        err.contains("multiple of 3 elements along dimension 2"),
        "{err}"
    );
    let err = refused(&[0, 8, 0], &[2, 4, 3], 24);
    assert!(err.contains("non-empty part of the array's 10"), "{err}");
    let err = refused(&[0, 0, 0], &[2, 4, 3], 23);
    assert!(err.contains("is 24 bytes; 23 bytes were given"), "{err}");
    let err = refused(&[0, 0], &[2, 4], 8);
    assert!(err.contains("3 dimensions"), "{err}");
    // the array's ragged end is a block's end
    job.write_block(&[6, 8, 3], &[2, 2, 3], &[5; 12], cpu)
        .unwrap();
    drop(begun);
    let source = ZarrSource::open(&dir.path().join("a.zarr"), &Default::default()).unwrap();
    assert_eq!(source.shape(), [0, 10, 6]);
}

#[test]
fn a_slab_that_does_not_start_a_row_of_every_level_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let options = ArrayOptions {
        shape: vec![20, 4],
        tile: vec![2, 4],
        dtype: "u8".into(),
        shard: Some(vec![2, 1]),
        pyramid: Some("mean".into()),
        levels: Some(3),
        downsample: Some(vec![true, true]),
        ..Default::default()
    };
    let job = job_at(dir.path(), options);
    assert_eq!(job.slab_planes(), 16);
    assert_eq!(job.block_units(), vec![16, 16]);
    let begun = job.begin().unwrap();
    let err = job
        .write_slab(8, &[0; 32], Backend::Cpu { threads: 1 })
        .unwrap_err()
        .to_string();
    assert!(err.contains("multiple of 16 planes"), "{err}");
    let err = job
        .write_slab(16, &[0; 3], Backend::Cpu { threads: 1 })
        .unwrap_err()
        .to_string();
    assert!(err.contains("whole planes"), "{err}");
    drop(begun);
    // dropped unfinished: level 0 claims nothing
    let level0 = ZarrSource::open(&dir.path().join("a.zarr/0"), &Default::default()).unwrap();
    assert_eq!(level0.shape(), [0, 4]);
    assert!(!dir.path().join("a.zarr/.retile.lock").exists());
}

#[test]
fn a_pyramids_block_narrower_than_a_unit_along_a_halved_dimension_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let options = ArrayOptions {
        shape: vec![4, 36],
        tile: vec![2, 4],
        dtype: "u8".into(),
        pyramid: Some("mean".into()),
        levels: Some(2),
        downsample: Some(vec![false, true]),
        ..Default::default()
    };
    let job = job_at(dir.path(), options);
    assert_eq!(job.halved(), &[false, true]);
    assert_eq!(job.block_units(), vec![2, 8]);
    let begun = job.begin().unwrap();
    let cpu = Backend::Cpu { threads: 1 };
    let err = job
        .write_block(&[0, 32], &[2, 4], &[0; 8], cpu)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("at least 8 elements along dimension 1"),
        "{err}"
    );
    // the last whole unit and the rest together make the array's edge block
    job.write_block(&[0, 24], &[2, 12], &[3; 24], cpu).unwrap();
    drop(begun);
}
