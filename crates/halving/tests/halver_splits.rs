//! A Halver emits, for every split of its input into pieces (pieces that
//! cut rows, units and elements, aligned or not), exactly the child planes
//! that reducing whole planes gives, and each child plane as soon as the
//! parent planes it reduces have arrived; a halver holding batches emits
//! the same bytes, holding back less than 2 MiB and a plane; and so does
//! one that reduces each piece ahead (`reduce_ahead`, as beside a stream's
//! tiling) before it is pushed the rest, or has that undone (`rewind`).

use proptest::prelude::*;
use retile_halving::{halve_planes, Halver, Halving, Method};
use retile_plan::{DType, StreamSpec};

const METHODS: [Method; 5] = [
    Method::Mean,
    Method::Min,
    Method::Max,
    Method::Decimate,
    Method::Median,
];
const DTYPES: [DType; 7] = [
    DType::U8,
    DType::U16,
    DType::I16,
    DType::U32,
    DType::F16,
    DType::F32,
    DType::F64,
];

/// A halving case: the parent stream's plane, what is halved, the input.
#[derive(Debug, Clone)]
struct Case {
    method: Method,
    dtype: DType,
    /// Extents of every dimension but the first.
    plane: Vec<u64>,
    /// One flag per dimension, the first included.
    halve: Vec<bool>,
    /// Whole planes and the bytes of an incomplete last plane.
    bytes: Vec<u8>,
    /// Where the input is cut into pieces (sorted).
    cuts: Vec<usize>,
    /// Whether the input starts one byte past an 8-byte boundary.
    shifted: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (
        0..METHODS.len(),
        0..DTYPES.len(),
        prop::collection::vec((1u64..=5, any::<bool>()), 0..=4),
        any::<bool>(),
    )
        .prop_flat_map(|(m, d, dims, halve_first)| {
            let dtype = DTYPES[d];
            let plane_bytes =
                dims.iter().map(|(n, _)| *n as usize).product::<usize>() * dtype.size();
            let len = (0..=5usize, 0..plane_bytes)
                .prop_map(move |(planes, extra)| planes * plane_bytes + extra);
            (Just((m, dtype, dims, halve_first)), len)
        })
        .prop_flat_map(|(head, len)| {
            (
                Just(head),
                prop::collection::vec(any::<u8>(), len),
                prop::collection::vec(0..=len, 0..8),
                any::<bool>(),
            )
        })
        .prop_map(
            |((m, dtype, dims, halve_first), bytes, mut cuts, shifted)| {
                cuts.sort_unstable();
                Case {
                    method: METHODS[m],
                    dtype,
                    plane: dims.iter().map(|(n, _)| *n).collect(),
                    halve: std::iter::once(halve_first)
                        .chain(dims.iter().map(|(_, h)| *h))
                        .collect(),
                    bytes,
                    cuts,
                    shifted,
                }
            },
        )
}

/// Bytes copied into 8-byte aligned storage.
fn aligned(bytes: &[u8]) -> Vec<u64> {
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
    words
}

/// The child planes of the whole parent planes in `bytes`, each group of
/// planes reduced at once (a lone last plane of a pair on its own).
fn reference(case: &Case) -> (Vec<u8>, usize, usize) {
    let esize = case.dtype.size();
    // a stream of one dimension has planes of one element
    let (plane, halves) = match case.plane.is_empty() {
        true => (vec![1], vec![false]),
        false => (case.plane.clone(), case.halve[1..].to_vec()),
    };
    let halving = Halving::new(&plane, &halves);
    let (parent_plane, child_plane) = (
        halving.parent_elements() * esize,
        halving.child_elements() * esize,
    );
    let per_group = if case.halve[0] { 2 } else { 1 };
    let planes = case.bytes.len() / parent_plane;
    let children = planes.div_ceil(per_group);
    let mut out = vec![0u64; (children * child_plane).div_ceil(8)];
    let out_bytes = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut out)[..children * child_plane];
    for child in 0..children {
        let first = child * per_group;
        let count = per_group.min(planes - first);
        let parent = aligned(&case.bytes[first * parent_plane..(first + count) * parent_plane]);
        let parent = &bytemuck::cast_slice::<u64, u8>(&parent)[..count * parent_plane];
        let dst = &mut out_bytes[child * child_plane..(child + 1) * child_plane];
        halve_planes(case.method, case.dtype, &halving, count, parent, dst).unwrap();
    }
    (out_bytes.to_vec(), per_group * parent_plane, child_plane)
}

/// Child bytes a halver holding batches may keep back after a push:
/// under 2 MiB, and the child plane whose bytes reached 2 MiB.
const HOLD_BOUND: usize = 2 << 20;

/// How each piece reaches the halver.
#[derive(Debug, Clone, Copy)]
enum Feed {
    /// `push` alone.
    Push,
    /// `reduce_ahead` (as beside a stream's tiling), then `push` of the rest.
    Ahead,
    /// `reduce_ahead` undone by `rewind` (the stream refused), then `push`.
    Rewound,
}

const FEEDS: [Feed; 3] = [Feed::Push, Feed::Ahead, Feed::Rewound];

fn check(case: &Case, hold: bool, feed: Feed) -> Result<(), TestCaseError> {
    let (expected, group_bytes, child_plane) = reference(case);
    let shape: Vec<u64> = std::iter::once(0)
        .chain(case.plane.iter().copied())
        .collect();
    let spec = StreamSpec::new(case.dtype, shape.clone(), vec![1; shape.len()]).unwrap();
    let mut halver = Halver::new(case.method, &spec, &case.halve).unwrap();
    if hold {
        halver = halver.holding_batches();
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let shift = usize::from(case.shifted);
    let mut storage = vec![0u8; case.bytes.len() + 16];
    let start = storage.as_ptr().align_offset(8) + shift;
    storage[start..start + case.bytes.len()].copy_from_slice(&case.bytes);
    let input = &storage[start..start + case.bytes.len()];
    let mut emitted = Vec::new();
    let mut previous = 0;
    let mut cut_planes = 0;
    for &cut in case.cuts.iter().chain([&case.bytes.len()]) {
        let piece = &input[previous..cut];
        let ahead = match feed {
            Feed::Push => 0,
            Feed::Ahead => halver.reduce_ahead(piece, &pool).unwrap(),
            Feed::Rewound => {
                let ahead = halver.reduce_ahead(piece, &pool).unwrap();
                halver.rewind(ahead);
                0
            }
        };
        halver
            .push(&piece[ahead..], &pool, &mut |c| {
                cut_planes += usize::from(c.len() % child_plane.max(1) != 0);
                emitted.extend_from_slice(c);
                Ok(())
            })
            .unwrap();
        prop_assert_eq!(cut_planes, 0, "a child plane was handed on in pieces");
        // every group received whole has gone on (held back under 2 MiB
        // and a plane, when holding batches), and no more
        let whole = cut / group_bytes * child_plane;
        match hold {
            false => prop_assert_eq!(emitted.len(), whole, "after {} bytes", cut),
            true => prop_assert!(
                emitted.len() <= whole && whole - emitted.len() < HOLD_BOUND + child_plane,
                "after {} bytes: {} of {} child bytes emitted",
                cut,
                emitted.len(),
                whole
            ),
        }
        previous = cut;
    }
    halver
        .flush(&pool, &mut |c| {
            emitted.extend_from_slice(c);
            Ok(())
        })
        .unwrap();
    prop_assert_eq!(emitted, expected);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn pieces_halve_as_whole_planes_do(
        case in case(),
        hold in any::<bool>(),
        feed in prop_oneof![Just(Feed::Push), Just(Feed::Ahead), Just(Feed::Rewound)],
    ) {
        check(&case, hold, feed)?;
    }
}

/// Planes halved along the first dimension and one inside the plane, each
/// plane cut in the middle of a unit and of an element: the cases the
/// first plane of a pair is held in, and a unit is completed from a copy.
#[test]
fn pairs_of_planes_cut_inside_units_and_elements() {
    for method in METHODS {
        for dtype in [DType::U8, DType::U16, DType::F32] {
            let esize = dtype.size();
            let plane = vec![3u64, 5, 4];
            let plane_bytes = 60 * esize;
            let bytes: Vec<u8> = (0..5 * plane_bytes).map(|i| (i * 37 % 251) as u8).collect();
            let cuts: Vec<usize> = (0..5)
                .flat_map(|p| {
                    [
                        p * plane_bytes + 21 * esize + 1,
                        p * plane_bytes + 45 * esize,
                    ]
                })
                .collect();
            for halve in [
                vec![true, true, false, true],
                vec![true, false, true, false],
                vec![false, true, true, true],
            ] {
                for shifted in [false, true] {
                    let case = Case {
                        method,
                        dtype,
                        plane: plane.clone(),
                        halve: halve.clone(),
                        bytes: bytes.clone(),
                        cuts: cuts.clone(),
                        shifted,
                    };
                    for hold in [false, true] {
                        for feed in FEEDS {
                            check(&case, hold, feed)
                                .unwrap_or_else(|e| panic!("{case:?} {feed:?}: {e}"));
                        }
                    }
                }
            }
        }
    }
}

/// Child planes over half a batch each: every batch holds one, so pieces
/// that complete several planes, or one and part of the next, hand each
/// on before the next is made.
#[test]
fn planes_larger_than_half_a_batch_go_on_one_at_a_time() {
    let plane = vec![2050u64, 2048];
    let plane_bytes = 2050 * 2048 * 2;
    let bytes: Vec<u8> = (0..4 * plane_bytes + 100)
        .map(|i| (i * 37 % 251) as u8)
        .collect();
    for (method, halve, shifted) in [
        (Method::Max, vec![false, true, false], false),
        (Method::Max, vec![false, true, false], true),
        (Method::Decimate, vec![true, true, false], true),
    ] {
        let case = Case {
            method,
            dtype: DType::U16,
            plane: plane.clone(),
            halve,
            bytes: bytes.clone(),
            cuts: vec![plane_bytes / 2, 4 * plane_bytes + 50],
            shifted,
        };
        for hold in [false, true] {
            for feed in FEEDS {
                check(&case, hold, feed).unwrap_or_else(|e| panic!("{method} {feed:?}: {e}"));
            }
        }
    }
}

/// Child planes of 512 KiB, held until four of them (2 MiB) wait: pieces
/// cut inside planes and elements, and pieces of several planes, give the
/// bytes of whole planes, and never hold back more than the bound.
#[test]
fn a_halver_holding_batches_hands_on_every_plane_of_a_long_stream() {
    let plane = vec![1024u64, 1024];
    let plane_bytes = 1024 * 1024 * 2;
    let bytes: Vec<u8> = (0..13 * plane_bytes + 7)
        .map(|i| (i * 41 % 253) as u8)
        .collect();
    let cuts = vec![
        plane_bytes / 3,
        plane_bytes + 1,
        5 * plane_bytes,
        5 * plane_bytes + 9,
        11 * plane_bytes - 3,
    ];
    for (method, halve) in [
        (Method::Mean, vec![false, true, true]),
        (Method::Mean, vec![true, true, true]),
        (Method::Median, vec![false, true, true]),
    ] {
        for shifted in [false, true] {
            let case = Case {
                method,
                dtype: DType::U16,
                plane: plane.clone(),
                halve: halve.clone(),
                bytes: bytes.clone(),
                cuts: cuts.clone(),
                shifted,
            };
            for feed in FEEDS {
                check(&case, true, feed).unwrap_or_else(|e| panic!("{method} {feed:?}: {e}"));
            }
        }
    }
}
