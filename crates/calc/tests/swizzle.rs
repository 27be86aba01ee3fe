//! Swizzles in the calculator: `Sw<B,M,S>`, `Swizzle(B,M,S)`, the `o`
//! operator and `composition(Swizzle(..), L)`, and the algebra on swizzled
//! layouts, each answer checked against the layout crate's own.

use proptest::prelude::*;
use retile_calc::{evaluate, parse, Value};
use retile_layout::{ComposedLayout, Layout, Swizzle};

fn eval(text: &str) -> String {
    match evaluate(text) {
        Ok(v) => v.to_string(),
        Err(e) => panic!("{text}: {e}"),
    }
}

#[test]
fn the_notation_the_function_and_the_operator_agree() {
    let want = "Sw<3,4,3> o (8,64):(64,1)";
    for text in [
        "Sw<3,4,3> o (8,64):(64,1)",
        "Sw<3, 4, 3>o(8,64):(64,1)",
        "composition(Sw<3,4,3>, (8,64):(64,1))",
        "composition(Swizzle(3,4,3), (8,64):(64,1))",
        "composition(Swizzle(bits=3, base=4, shift=3), (8,64):(64,1))",
        "Swizzle(3,4,3) o (8,64):(64,1)",
        "Sw<3,4,3> o 0 o (8,64):(64,1)",
        "composition(Sw<3,4,3>, 0, (8,64):(64,1))",
        "Sw<3,4,3> o (8,64):(64,1) o 512:1",
        "Sw<3,4,3> o 512:1 o (8,64):(64,1)",
    ] {
        assert_eq!(eval(text), want, "{text}");
    }
    assert_eq!(
        eval("Sw<3,4,3> o 16 o (8,64):(64,1)"),
        "Sw<3,4,3> o 16 o (8,64):(64,1)"
    );
    assert_eq!(eval("Sw<2,0,-2> o 8"), "Sw<2,0,-2> o 8:1");
    assert_eq!(eval("Sw<0,3,3> o (8,8):(8,1)"), "(8,8):(8,1)");
    assert_eq!(
        eval("Sw<0,3,3> o 4 o (8,8):(8,1)"),
        "Sw<0,3,3> o 4 o (8,8):(8,1)"
    );
}

#[test]
fn the_algebra_on_a_swizzled_layout_acts_on_the_inner_layout() {
    let c = "Sw<3,3,3> o (8,64):(64,1)";
    let cases = [
        (format!("size({c})"), "512".to_string()),
        (format!("cosize({c})"), "512".into()),
        (format!("rank({c})"), "2".into()),
        (format!("depth({c})"), "1".into()),
        (format!("mode({c}, 1)"), "Sw<3,3,3> o 64:1".into()),
        (
            "flatten(Sw<1,0,1> o ((2,2),2):((1,2),4))".to_string(),
            "Sw<1,0,1> o (2,2,2):(1,2,4)".into(),
        ),
        (
            format!("composition({c}, <4,8>)"),
            "Sw<3,3,3> o (4,8):(64,1)".into(),
        ),
        (format!("{c} o <4,8>"), "Sw<3,3,3> o (4,8):(64,1)".into()),
        (
            format!("logical_divide({c}, <4,8>)"),
            "Sw<3,3,3> o ((4,2),(8,8)):((64,256),(1,8))".into(),
        ),
        (
            format!("zipped_divide({c}, <4,8>)"),
            "Sw<3,3,3> o ((4,8),(2,8)):((64,1),(256,8))".into(),
        ),
        (
            "coalesce(Sw<1,0,1> o (2,4):(1,2))".to_string(),
            "Sw<1,0,1> o 8:1".into(),
        ),
        (
            "complement(Sw<1,0,1> o 4:2, 16)".to_string(),
            "(2,2):(1,8)".into(),
        ),
        (
            "blocked_product(Sw<1,0,1> o 2:1, 3:1)".to_string(),
            "Sw<1,0,1> o ((2,3)):((1,2))".into(),
        ),
        (format!("eval({c}, (2,0))"), "144".into()),
        (format!("crd2idx((2,0), {c})"), "144".into()),
        ("size(Sw<3,4,3>)".into(), "1024".into()),
        ("cosize(Sw<2,0,-3>)".into(), "32".into()),
        ("eval(Sw<2,0,-3>, 1)".into(), "9".into()),
    ];
    for (text, want) in cases {
        assert_eq!(eval(&text), want, "{text}");
    }
}

#[test]
fn what_is_not_defined_on_a_swizzle_says_what_to_do_instead() {
    for (text, says) in [
        (
            "right_inverse(Sw<1,0,1> o 4:1)",
            "apply it to the layout inside",
        ),
        ("filter(Sw<1,0,1> o 4:1)", "apply it to the layout inside"),
        ("composition(4:1, Sw<1,0,1>)", "swizzle last"),
        ("composition(4:1, Sw<1,0,1> o 4:1)", "swizzle last"),
        ("4:1 o Sw<1,0,1>", "swizzle last"),
        ("Sw<1,0,1> o Sw<1,0,1>", "expected a layout"),
        ("composition(4:1, 2, 4:1)", "takes 2 arguments"),
        (
            "composition(Sw<1,0,1> o 4:1, 2, 4:1)",
            "a swizzle, an offset and a layout",
        ),
        ("composition(Sw<1,0,1>)", "takes 2 or 3 arguments"),
        ("Swizzle(3, 4)", "needs argument 'shift'"),
        ("Swizzle(3, 4, 2)", "|S| >= B"),
        ("Sw<3,4,2> o 8:1", "|S| >= B"),
        ("Sw<1,2> o 8:1", "needs argument 'shift'"),
        ("Sw<1,2,3,4>", "at most 3 positional"),
        ("Sw<a,2,3>", "expected an integer"),
        ("Sw<1,0,1> o", "expected a value"),
        ("o 8:1", "expected an operator"),
        ("Sw<1,0,1> o 4 o", "expected a value"),
        ("size(Sw<1,0,1>, 2)", "takes 1 argument"),
        ("Sw<1,0,1>.size()", "not a method"),
        ("composition(Sw<1,0,1>, 4:1, key=2)", "no keyword arguments"),
    ] {
        let err = evaluate(text).expect_err(text);
        assert!(err.to_string().contains(says), "{text}: {err}");
    }
}

#[test]
fn o_binds_looser_than_colon_and_products_and_tighter_than_equality() {
    assert_eq!(
        eval("Sw<1,0,1> o 4:1 == composition(Sw<1,0,1>, 4:1)"),
        "true"
    );
    assert_eq!(
        eval("(4,2):(2,1) o 8:1"),
        eval("composition((4,2):(2,1), 8:1)")
    );
    // a bare name 'o' is still a name where a value is expected
    assert!(parse("f(o)").is_ok());
    assert!(parse("f(o=1)").is_ok());
}

/// Any swizzle with `B + M + |S| <= 16`.
fn any_swizzle() -> impl Strategy<Value = (i64, i64, i64)> {
    (0i64..=4, 0i64..=5, -7i64..=7).prop_filter("|S| >= B", |(b, _, s)| s.abs() >= *b)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_form_evaluates_to_the_layout_crates_answer(
        (b, m, s) in any_swizzle(), offset in 0i64..64, rows in 1i64..9, cols in 1i64..9,
        rs in -4i64..70, cs in -4i64..70,
    ) {
        let layout: Layout = format!("({rows},{cols}):({rs},{cs})").parse().unwrap();
        let sw = Swizzle::new(b, m, s).unwrap();
        let want = ComposedLayout::new(sw, offset, layout.clone());
        let text = format!("Sw<{b},{m},{s}> o {offset} o {layout}");
        let got = evaluate(&text).unwrap();
        if b == 0 && offset == 0 {
            prop_assert_eq!(got, Value::Layout(layout));
        } else {
            prop_assert_eq!(&got, &Value::Composed(want.clone()));
            // printed, it reads back
            prop_assert_eq!(evaluate(&got.to_string()).unwrap(), got);
        }
        for r in 0..rows {
            let e = evaluate(&format!("eval({text}, ({r},{}))", cols - 1)).unwrap();
            let coord = format!("({r},{})", cols - 1).parse().unwrap();
            prop_assert_eq!(e, Value::Int(want.eval_coord(&coord).unwrap()));
        }
    }
}
