//! Bank conflicts against a brute-force count (every byte of every lane's
//! access, the distinct words of each bank in each phase), the suggested
//! swizzle against every swizzle of small cases, and the copy planner's
//! reference plans before and after their suggested swizzle.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use retile_copy::*;
use retile_layout::{ComposedLayout, Layout, Swizzle};
use serde_json::Value as Json;

/// The brute-force wavefronts of one instruction: lanes in phases of
/// `banks * bank_bytes / vector bytes`; in each phase, every byte of every
/// lane's vector names its word; the phase takes as many wavefronts as the
/// most distinct words of one bank.
fn brute_wavefronts(
    instruction: &Instruction,
    offsets: &[i64],
    element_bytes: i64,
    banks: Banks,
) -> (i64, i64) {
    let widest = instruction
        .lanes
        .iter()
        .flatten()
        .map(|l| l.elements.len() as i64)
        .max()
        .unwrap_or(1);
    let per_phase = ((banks.banks * banks.bank_bytes) / (widest * element_bytes)).max(1) as usize;
    let (mut wavefronts, mut ideal) = (0, 0);
    for phase in instruction.lanes.chunks(per_phase) {
        let mut words: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
        for lane in phase.iter().flatten() {
            for &e in &lane.elements {
                let address = offsets[e as usize] * element_bytes;
                for byte in address..address + element_bytes {
                    let word = byte.div_euclid(banks.bank_bytes);
                    words
                        .entry(word.rem_euclid(banks.banks))
                        .or_default()
                        .insert(word);
                }
            }
        }
        if let Some(most) = words.values().map(BTreeSet::len).max() {
            wavefronts += most as i64;
            let distinct: usize = words.values().map(BTreeSet::len).sum();
            ideal += (distinct as i64 + banks.banks - 1) / banks.banks;
        }
    }
    (wavefronts, ideal)
}

/// A random pattern over an `rows x cols` tile whose rows are contiguous in
/// memory: each instruction's lanes read random `vector`-aligned pieces of
/// random rows, or idle.
fn random_pattern(rows: i64, cols: i64, vector: i64, seed: &[u64]) -> AccessPattern {
    let mut k = 0;
    let mut next = || {
        k += 1;
        seed[k % seed.len()]
            .wrapping_mul(6364136223846793005)
            .wrapping_add(k as u64)
            >> 11
    };
    let instructions = (0..4)
        .map(|step| Instruction {
            warp: 0,
            step,
            lanes: (0..32)
                .map(|_| {
                    if next() % 5 == 0 {
                        return None;
                    }
                    let r = (next() % rows as u64) as i64;
                    let c = (next() % (cols / vector) as u64) as i64 * vector;
                    // tile index r + rows * c (colexicographic over (rows, cols))
                    Some(LaneAccess {
                        elements: (0..vector).map(|j| r + rows * (c + j)).collect(),
                    })
                })
                .collect(),
        })
        .collect();
    AccessPattern {
        instructions,
        warp: 32,
        source: "random".into(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn wavefronts_agree_with_the_brute_force_count(
        rows in 1i64..=16, cols_pow in 0u32..=6, pad in prop::sample::select(vec![0i64, 1, 2, 4, 8]),
        element_bytes in prop::sample::select(vec![1i64, 2, 4, 8, 16]),
        vector_pow in 0u32..=3,
        banks in prop::sample::select(vec![(32i64, 4i64), (16, 4), (32, 8), (64, 4), (8, 2)]),
        swizzle in prop::option::of((1i64..=3, 0i64..=3, 3i64..=5)),
        seed in prop::collection::vec(any::<u64>(), 1..8),
    ) {
        let cols = 1i64 << cols_pow;
        let vector = (1i64 << vector_pow).min(cols);
        // a swizzle keeps vectors whole only on unpadded, aligned rows
        let pad = if swizzle.is_some() { 0 } else { pad };
        let inner: Layout = format!("({rows},{cols}):({},1)", cols + pad).parse().unwrap();
        let memory = match swizzle {
            Some((b, m, s)) => ComposedLayout::new(Swizzle::new(b, m.max(vector_pow as i64), s.max(b)).unwrap(), 0, inner),
            None => ComposedLayout::from(inner),
        };
        let offsets = memory.table(rows * cols).unwrap();
        let pattern = random_pattern(rows, cols, vector, &seed);
        let banks = Banks::new(banks.0, banks.1).unwrap();
        let report = BankReport::new(&offsets, &pattern, element_bytes * 8, banks).unwrap();
        for (i, got) in pattern.instructions.iter().zip(&report.instructions) {
            let (wavefronts, ideal) = brute_wavefronts(i, &offsets, element_bytes, banks);
            prop_assert_eq!((got.wavefronts, got.ideal), (wavefronts, ideal));
        }
    }
}

/// Every swizzle with `B`, `M` and `|S|` up to `span`, that maps the tile's offsets onto themselves and keeps every
/// vector contiguous (checked here, independently of the library), with
/// its brute-force wavefronts.
fn every_swizzle(
    inner: &Layout,
    pattern: &AccessPattern,
    element_bytes: i64,
    span: i64,
) -> Vec<(Swizzle, i64)> {
    let size = inner.size().unwrap();
    let plain = inner.table(size).unwrap();
    let mut present = vec![false; 1 << (span + 1)];
    plain.iter().for_each(|&o| present[o as usize] = true);
    let mut out = Vec::new();
    for b in 1..=span {
        for m in 0..=span {
            for s in -span..=span {
                let Ok(sw) = Swizzle::new(b, m, s) else {
                    continue;
                };
                let offsets: Vec<i64> = plain.iter().map(|&o| sw.apply(o)).collect();
                // a swizzle is a bijection: the image is the tile's offsets
                // exactly when it lies inside them
                let inside =
                    |o: &i64| usize::try_from(*o).ok().and_then(|o| present.get(o)) == Some(&true);
                if !offsets.iter().all(inside) {
                    continue;
                }
                let whole = pattern
                    .instructions
                    .iter()
                    .flat_map(|i| i.lanes.iter().flatten())
                    .all(|l| {
                        l.elements.iter().enumerate().all(|(j, &e)| {
                            offsets[e as usize] == offsets[l.elements[0] as usize] + j as i64
                        })
                    });
                if !whole {
                    continue;
                }
                let total = pattern
                    .instructions
                    .iter()
                    .map(|i| brute_wavefronts(i, &offsets, element_bytes, Banks::default()).0)
                    .sum();
                out.push((sw, total));
            }
        }
    }
    out
}

#[test]
fn the_suggested_swizzle_is_the_best_of_every_swizzle_on_small_tiles() {
    let mut cases = 0;
    let mut freed = 0;
    for (rows, cols) in [(8, 8), (4, 16), (16, 8), (8, 32), (32, 4), (16, 16)] {
        for element_bytes in [2, 4, 8] {
            for vector in [1, 2, 4] {
                if vector > cols {
                    continue;
                }
                let inner: Layout = format!("({rows},{cols}):({cols},1)").parse().unwrap();
                // thread t reads row t; or thread (p, r) reads piece p of row r
                let patterns = [
                    format!("({rows},{cols}):(1,{rows})"),
                    format!(
                        "(({},{rows}),{vector}):(({},1),{rows})",
                        cols / vector,
                        rows * vector
                    ),
                ];
                for tv in &patterns {
                    let tv: Layout = tv.parse().unwrap();
                    let v = vector;
                    let pattern = AccessPattern::from_tv(&tv, v, 32).unwrap();
                    let analysis = BankAnalysis::new(
                        ComposedLayout::from(inner.clone()),
                        pattern.clone(),
                        element_bytes * 8,
                        Banks::default(),
                    )
                    .unwrap();
                    let plain_total: i64 = pattern
                        .instructions
                        .iter()
                        .map(|i| {
                            brute_wavefronts(
                                i,
                                &inner.table(rows * cols).unwrap(),
                                element_bytes,
                                Banks::default(),
                            )
                            .0
                        })
                        .sum();
                    assert_eq!(analysis.report.wavefronts(), plain_total);
                    // one bit past the tile's offsets: swizzles reaching beyond them move offsets out
                    let span = 64 - (rows * cols - 1).leading_zeros() as i64 + 1;
                    let all = every_swizzle(&inner, &pattern, element_bytes, span);
                    let best = all.iter().map(|x| x.1).min().unwrap_or(i64::MAX);
                    let ideal = analysis.report.ideal();
                    let context = format!("{rows}x{cols}, {element_bytes} B, vector {v}, {tv}");
                    match &analysis.suggestion {
                        Some(s) => {
                            assert_eq!(s.report.wavefronts(), best, "{context}: {}", s.swizzle);
                            assert!(
                                all.iter().any(|(sw, w)| *sw == s.swizzle && *w == best),
                                "{context}"
                            );
                            if best == ideal {
                                assert!(s.report.conflict_free(), "{context}");
                                freed += 1;
                            }
                        }
                        None => assert!(
                            analysis.report.conflict_free() || best >= plain_total,
                            "{context}: no suggestion, yet {best} < {plain_total}"
                        ),
                    }
                    cases += 1;
                }
            }
        }
    }
    assert!(cases >= 60, "{cases} cases");
    assert!(freed >= 20, "{freed} cases made conflict-free");
}

fn wave_cases() -> Vec<Json> {
    let json: Json = serde_json::from_str(include_str!("data/wave_itt_cases.json")).unwrap();
    json["cases"].as_array().unwrap().clone()
}

/// Each reference plan's stores into the shared [N, K] tile: the conflicts
/// as planned and after the suggested swizzle, which removes them.
#[test]
fn the_reference_plans_stores_are_conflict_free_after_the_suggested_swizzle() {
    let mut applied = 0;
    for case in wave_cases() {
        let i = &case["inputs"];
        let n = i["tile_N"].as_i64().unwrap();
        let k = i["tile_K"].as_i64().unwrap();
        let request = TransposeRequest::new(
            i["threads"].as_i64().unwrap(),
            i["element_bits"].as_i64().unwrap(),
            i["max_bits_per_load"].as_i64().unwrap(),
            format!("({n},{k}):(1,{n})").parse().unwrap(),
            format!("({n},{k}):({k},1)").parse().unwrap(),
        )
        .with_target(i["target"].as_str().unwrap());
        let warp = i["threads_per_wave"].as_i64().unwrap();
        let Some(banks) = request.banks(warp, Banks::default()).unwrap() else {
            assert!(!case["applies"].as_bool().unwrap());
            continue;
        };
        applied += 1;
        let stores = &banks.stores;
        let after = stores.best();
        println!(
            "{}: stores {} -> {} with {}",
            case["id"],
            stores.report,
            after,
            stores
                .suggestion
                .as_ref()
                .map_or("no swizzle".into(), |s| s.swizzle.to_string())
        );
        assert!(after.conflict_free(), "{}: {after}", case["id"]);
        if let Some(s) = &stores.suggestion {
            // the swizzled layout holds the same offsets
            let size = n * k;
            let mut a = request.dst.table(size).unwrap();
            let mut b = s.memory.table(size).unwrap();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b);
        }
    }
    assert_eq!(applied, 7);
}

#[test]
fn a_vector_that_is_not_contiguous_or_a_pattern_past_the_tile_is_an_error() {
    let memory: ComposedLayout = "(8,8):(1,8)".parse().unwrap();
    // thread t reads elements 8t, 8t+1: offsets t, t+8 apart
    let tv: Layout = "(8,8):(1,8)".parse().unwrap();
    let pattern = AccessPattern::from_tv(&tv, 2, 32).unwrap();
    let err = BankAnalysis::new(memory.clone(), pattern, 32, Banks::default()).unwrap_err();
    assert!(err.to_string().contains("not contiguous"), "{err}");
    let pattern = AccessPattern::threads(32, 4, 256, 32).unwrap();
    let err = BankAnalysis::new(memory, pattern, 32, Banks::default()).unwrap_err();
    assert!(err.to_string().contains("past the 64 elements"), "{err}");
    assert!(AccessPattern::from_tv(&"(4,6):(6,1)".parse().unwrap(), 4, 32).is_err());
    assert!(AccessPattern::threads(0, 1, 8, 32).is_err());
    assert!(AccessPattern::threads(8, 0, 8, 32).is_err());
    assert!(AccessPattern::threads(8, 1, 8, 0).is_err());
    assert!(Banks::new(32, 0).is_err());
}
