//! Post-conditions of every operation on thousands of random layouts built
//! from chains of primitives.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use retile_register::{column_local, column_spatial, local, spatial, RegisterLayout};

/// A chain `p0(dims).p1(dims)...` of primitives of one rank.
fn chain(rank: usize) -> impl Strategy<Value = RegisterLayout> {
    prop::collection::vec((0..4u8, prop::collection::vec(1i64..=3, rank)), 1..=3).prop_map(
        |steps| {
            steps
                .iter()
                .map(|(kind, dims)| match kind {
                    0 => spatial(dims),
                    1 => local(dims),
                    2 => column_spatial(dims),
                    _ => column_local(dims),
                })
                .try_fold(local(&vec![1; dims_rank(&steps)]).unwrap(), |acc, p| {
                    acc.compose(&p.unwrap())
                })
                .unwrap()
        },
    )
}

fn dims_rank(steps: &[(u8, Vec<i64>)]) -> usize {
    steps[0].1.len()
}

/// Random layouts of up to 1024 elements.
fn layout() -> impl Strategy<Value = RegisterLayout> {
    (1usize..=3)
        .prop_flat_map(chain)
        .prop_filter("at most 1024 elements", |l| l.size().unwrap() <= 1024)
}

/// All (thread, local) pairs of every element, by row-major index.
fn table(l: &RegisterLayout) -> Vec<Vec<(i64, i64)>> {
    (0..l.size().unwrap())
        .map(|i| l.holders(&l.coord(i)).unwrap())
        .collect()
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 1000,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn threads_and_registers_partition_the_tile(l in layout()) {
        let (threads, locals, size) = (l.num_threads().unwrap(), l.local_size().unwrap(), l.size().unwrap());
        prop_assert_eq!(threads * locals, size);
        let mut seen = BTreeSet::new();
        for i in 0..size {
            let coord = l.coord(i);
            let holders = l.holders(&coord).unwrap();
            prop_assert_eq!(holders.len(), 1);
            let (t, v) = holders[0];
            prop_assert!(seen.insert((t, v)));
            prop_assert_eq!(l.element(t, v).unwrap(), coord);
        }
    }

    #[test]
    fn reduce_replicates_over_the_reduced_threads(l in layout(), pick in 0usize..3, keep in any::<bool>()) {
        let d = pick % l.shape().len();
        let r = l.reduce(&[d as i64], keep).unwrap();
        prop_assert_eq!(r.num_threads().unwrap(), l.num_threads().unwrap());
        for i in 0..l.size().unwrap() {
            let coord = l.coord(i);
            let mut reduced = coord.clone();
            if keep { reduced[d] = 0 } else { reduced.remove(d); }
            let along: BTreeSet<i64> = (0..l.shape()[d])
                .map(|x| { let mut c = coord.clone(); c[d] = x; l.holders(&c).unwrap()[0].0 })
                .collect();
            let holders = r.holders(&reduced).unwrap();
            let threads: BTreeSet<i64> = holders.iter().map(|h| h.0).collect();
            prop_assert_eq!(threads.len(), holders.len());
            prop_assert_eq!(threads, along);
        }
    }

    #[test]
    fn compose_then_divide_gives_back_the_quotient(a in layout(), b in layout()) {
        let ab = a.compose(&b).unwrap();
        prop_assert_eq!(ab.shape().iter().product::<i64>(), a.size().unwrap() * b.size().unwrap());
        if let Ok(q) = ab.divide(&b) {
            prop_assert_eq!(q.compose(&b).unwrap(), ab.clone());
        }
        if let Ok(q) = ab.left_divide(&a) {
            prop_assert_eq!(a.compose(&q).unwrap(), ab);
        }
    }

    #[test]
    fn concat_numbers_threads_and_registers_row_major(a in layout(), b in layout()) {
        let ab = a.concat(&b).unwrap();
        let (tb, lb) = (b.num_threads().unwrap(), b.local_size().unwrap());
        for i in (0..a.size().unwrap()).step_by(3) {
            for j in (0..b.size().unwrap()).step_by(5) {
                let (ca, cb) = (a.coord(i), b.coord(j));
                let (ta, la) = a.holders(&ca).unwrap()[0];
                let (tbb, lbb) = b.holders(&cb).unwrap()[0];
                let coord: Vec<i64> = ca.iter().chain(&cb).copied().collect();
                prop_assert_eq!(ab.holders(&coord).unwrap(), vec![(ta * tb + tbb, la * lb + lbb)]);
            }
        }
    }

    #[test]
    fn reshape_and_flatten_keep_the_flat_mapping(l in layout(), cuts in prop::collection::vec(2i64..=6, 0..4)) {
        let before = table(&l);
        let rank = l.shape().len() as i64;
        for start in 0..rank {
            let flat = l.flatten(start, rank).unwrap();
            prop_assert_eq!(table(&flat), before.clone());
        }
        let mut shape = Vec::new();
        let mut left = l.size().unwrap();
        for c in cuts {
            if left % c == 0 { shape.push(c); left /= c; }
        }
        shape.push(left);
        if let Ok(r) = l.reshape(&shape) {
            prop_assert_eq!(table(&r), before);
        }
    }

    #[test]
    fn permute_moves_coordinates_only(l in layout(), rot in 0usize..3) {
        let n = l.shape().len();
        let dims: Vec<i64> = (0..n).map(|i| ((i + rot) % n) as i64).collect();
        let p = l.permute(&dims).unwrap();
        for i in 0..l.size().unwrap() {
            let c = l.coord(i);
            let moved: Vec<i64> = dims.iter().map(|&d| c[d as usize]).collect();
            prop_assert_eq!(p.holders(&moved).unwrap(), l.holders(&c).unwrap());
        }
    }

    #[test]
    fn thread_value_layouts_round_trip(l in layout(), pick in 0usize..4) {
        let l = if pick == 0 { l.reduce(&[0], true).unwrap() } else { l };
        let tv = l.tv_layout().unwrap();
        let back = RegisterLayout::from_tv(&tv, l.shape()).unwrap();
        prop_assert_eq!(&back, &l);
        let threads = l.num_threads().unwrap();
        for t in 0..threads {
            for v in 0..l.local_size().unwrap() {
                let e = l.element(t, v).unwrap();
                let column_major = e.iter().zip(l.shape()).rev().fold(0, |acc, (c, s)| acc * s + c);
                if l.spatial_modes().iter().all(|&m| m >= 0) {
                    prop_assert_eq!(tv.eval(t + threads * v).unwrap(), column_major);
                }
            }
        }
    }

    #[test]
    fn the_canonical_form_is_a_fixed_point(l in layout()) {
        let again = RegisterLayout::new(l.shape(), l.mode_shape(), l.spatial_modes(), l.local_modes()).unwrap();
        prop_assert_eq!(again, l);
    }
}

#[test]
fn division_succeeds_on_most_composed_pairs() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut tried, mut divided) = (0, 0);
    for _ in 0..500 {
        let a = layout().new_tree(&mut runner).unwrap().current();
        let b = layout().new_tree(&mut runner).unwrap().current();
        tried += 1;
        divided += a.compose(&b).unwrap().divide(&b).is_ok() as i32;
    }
    assert!(
        divided * 2 > tried,
        "only {divided} of {tried} composed pairs divided back"
    );
}

#[test]
fn thread_value_layouts_over_non_positive_shapes_are_errors() {
    let tv: retile_layout::Layout = "((4,8),(2,2)):((32,1),(16,8))".parse().unwrap();
    assert!(RegisterLayout::from_tv(&tv, &[0, 8]).is_err());
    assert!(RegisterLayout::from_tv(&tv, &[16, -8]).is_err());
}
