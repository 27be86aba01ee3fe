//! Swizzles and swizzled layouts: every offset of 1,200 random swizzled
//! layouts against pycute's (`data/swizzle_pycute.json`, written by
//! `data/make_swizzle_corpus.py`), and CuTe's laws over random swizzles.

use proptest::prelude::*;
use retile_layout::*;
use serde_json::Value as Json;

fn tuple(j: &Json) -> IntTuple {
    match j {
        Json::Array(items) => IntTuple::Tuple(items.iter().map(tuple).collect()),
        other => IntTuple::Int(other.as_i64().expect("an integer")),
    }
}

fn ints(j: &Json) -> Vec<i64> {
    j.as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_i64().expect("an integer"))
        .collect()
}

fn corpus() -> Vec<Json> {
    let text = include_str!("data/swizzle_pycute.json");
    let json: Json = serde_json::from_str(text).expect("the corpus parses");
    json["cases"].as_array().expect("cases").clone()
}

#[test]
fn every_offset_of_the_pycute_corpus_agrees() {
    let cases = corpus();
    assert!(cases.len() >= 1000, "{} cases", cases.len());
    let mut offsets = 0;
    for case in &cases {
        let p = ints(&case["swizzle"]);
        let swizzle = Swizzle::new(p[0], p[1], p[2]).unwrap();
        let layout = Layout::new(tuple(&case["shape"]), tuple(&case["stride"])).unwrap();
        let offset = case["offset"].as_i64().unwrap();
        let composed = ComposedLayout::new(swizzle, offset, layout);
        let want = ints(&case["offsets"]);
        let size = composed.size().unwrap();
        assert_eq!(size, case["size"].as_i64().unwrap(), "{composed}");
        assert_eq!(composed.table(size).unwrap(), want, "{composed}");
        offsets += want.len();
        assert_eq!(swizzle.size(), case["swizzle_size"].as_i64().unwrap());
        assert_eq!(swizzle.cosize(), case["swizzle_cosize"].as_i64().unwrap());
        // pycute's ComposedLayout.cosize is the swizzle's; C++'s (retile's) the inner layout's
        assert_eq!(case["pycute_cosize"].as_i64().unwrap(), swizzle.cosize());
        assert_eq!(
            composed.cosize().unwrap(),
            composed.layout().cosize().unwrap()
        );
        let probes = [-3, -1, 0, 1, 5, 77, 1000, 4097];
        let got: Vec<i64> = probes.iter().map(|&o| swizzle.apply(o)).collect();
        assert_eq!(got, ints(&case["swizzled"]), "{swizzle}");
        // the text form reads back as the same layout
        let text = composed.to_string();
        assert_eq!(text.parse::<ComposedLayout>().unwrap(), composed, "{text}");
    }
    assert!(offsets > 20_000, "{offsets} offsets");
}

/// Any valid swizzle with `B + M + |S| <= 20`.
fn any_swizzle() -> impl Strategy<Value = Swizzle> {
    (0i64..=5, 0i64..=6, 0i64..=8, any::<bool>()).prop_filter_map(
        "|S| >= B",
        |(bits, base, s, negative)| {
            let shift = if negative { -s } else { s };
            Swizzle::new(bits, base, shift).ok()
        },
    )
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_swizzle_is_an_involution_permuting_each_aligned_block(
        sw in any_swizzle(), offset in -100_000i64..100_000,
    ) {
        let once = sw.apply(offset);
        prop_assert_eq!(sw.apply(once), offset);
        // the bits above the block are kept; only ZZZ bits change
        prop_assert_eq!(once.div_euclid(sw.size()), offset.div_euclid(sw.size()));
        prop_assert_eq!((once ^ offset) & !sw.zzz_mask(), 0);
        prop_assert_eq!(sw.yyy_mask() & sw.zzz_mask(), 0);
        prop_assert_eq!(sw.yyy_mask().count_ones() as i64, sw.bits());
    }

    #[test]
    fn a_swizzle_reads_and_prints_back(sw in any_swizzle()) {
        prop_assert_eq!(sw.to_string().parse::<Swizzle>().unwrap(), sw);
        prop_assert_eq!(
            sw.to_string(),
            format!("Sw<{},{},{}>", sw.bits(), sw.base(), sw.shift())
        );
    }

    #[test]
    fn a_composed_layout_swizzles_the_inner_offsets_mode_by_mode(
        sw in any_swizzle(), offset in -50i64..50, rows in 1i64..9, cols in 1i64..9,
        row_stride in -9i64..70, col_stride in -9i64..70,
    ) {
        let layout = Layout::new(
            IntTuple::from(&[rows, cols][..]),
            IntTuple::from(&[row_stride, col_stride][..]),
        ).unwrap();
        let c = ComposedLayout::new(sw, offset, layout.clone());
        for i in 0..rows * cols {
            prop_assert_eq!(c.eval(i).unwrap(), sw.apply(offset + layout.eval(i).unwrap()));
        }
        for j in 0..cols {
            let coord = IntTuple::from(&[rows - 1, j][..]);
            let inner = layout.eval_coord(&coord).unwrap();
            prop_assert_eq!(c.eval_coord(&coord).unwrap(), sw.apply(offset + inner));
            prop_assert_eq!(c.mode(1).unwrap().eval(j).unwrap(), sw.apply(offset + col_stride * j));
        }
        prop_assert_eq!(c.size().unwrap(), rows * cols);
        prop_assert_eq!(c.rank(), 2);
        prop_assert_eq!(c.to_string().parse::<ComposedLayout>().unwrap(), c);
    }
}

#[test]
fn a_swizzle_of_no_bits_and_no_shift_is_the_identity() {
    // pycute cannot answer this one: its shiftr(x, 0) never returns
    for base in 0..8 {
        let sw = Swizzle::new(0, base, 0).unwrap();
        assert!(sw.is_identity());
        assert!((-50..50).all(|o| sw.apply(o) == o));
        assert_eq!(sw.size(), 1 << base);
    }
}

#[test]
fn bad_swizzles_are_errors_that_name_the_rule() {
    let cases = [
        ((3, 4, 2), "|S| >= B"),
        ((3, 4, -2), "|S| >= B"),
        ((-1, 4, 2), "at least 0"),
        ((1, -4, 2), "at least 0"),
        ((20, 20, 23), "at most 62"),
        ((1, i64::MAX, 1), "at most 62"),
        ((1, 0, i64::MIN), "at most 62"),
    ];
    for ((b, m, s), rule) in cases {
        let err = Swizzle::new(b, m, s).unwrap_err();
        assert!(matches!(err, LayoutError::BadSwizzle { .. }), "{err}");
        assert!(err.to_string().contains(rule), "{err}");
    }
    // the widest one allowed never overflows
    let sw = Swizzle::new(20, 2, 40).unwrap();
    for o in [i64::MIN, -1, 0, 1, i64::MAX] {
        assert_eq!(sw.apply(sw.apply(o)), o);
    }
    let sw = Swizzle::new(20, 2, -40).unwrap();
    for o in [i64::MIN, -1, 0, 1, i64::MAX] {
        assert_eq!(sw.apply(sw.apply(o)), o);
    }
}

#[test]
fn text_that_is_not_a_swizzled_layout_is_an_error_with_a_column() {
    for text in [
        "Sw<3,4,3>",
        "Sw<3,4,3> (8,8)",
        "8:1 o Sw<3,4,3>",
        "Sw<3,4> o 8:1",
        "Sw<3,4,3,1> o 8:1",
        "Sw<3,4,2> o 8:1",
        "Sw<3,4,3> o 8 o",
        "Sw<3,4,3> o o 8:1",
        "sw<3,4,3> o 8:1",
        "S",
        "Sw<3,4,3> o 8:1 o 4:1",
        "Sw<99999999999999999999,4,3> o 8:1",
        "",
        "(8,8):(1)",
    ] {
        let err = text.parse::<ComposedLayout>().unwrap_err();
        assert!(matches!(err, LayoutError::Parse { .. }), "{text}: {err}");
    }
}

#[test]
fn divides_and_compositions_act_on_the_inner_layout() {
    let c: ComposedLayout = "Sw<3,4,3> o (8,64):(64,1)".parse().unwrap();
    let tile = c.compose(&"<4,8>".parse().unwrap()).unwrap();
    for i in 0..32 {
        let inner = composition_tiler(c.layout(), &"<4,8>".parse().unwrap()).unwrap();
        assert_eq!(
            tile.eval(i).unwrap(),
            c.swizzle().apply(inner.eval(i).unwrap())
        );
    }
    // CuTe's 128-byte swizzle of halves, Sw<3,3,3> on 8 rows of 64: every
    // row's first 16-byte chunk lands in a different chunk
    let c: ComposedLayout = "Sw<3,3,3> o (8,64):(64,1)".parse().unwrap();
    let chunks: Vec<i64> = (0..8)
        .map(|r| c.eval_coord(&IntTuple::from(&[r, 0][..])).unwrap() % 64 / 8)
        .collect();
    assert_eq!(chunks, [0, 1, 2, 3, 4, 5, 6, 7]);
}
