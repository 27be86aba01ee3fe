//! Hostile input (issue 20): long chains, deep nesting, huge and binary
//! text, and arguments given in ways Python rejects. Every case must end in
//! a value or an error with a message, never in a panic or a stack overflow.

use proptest::prelude::*;
use retile_calc::{evaluate, parse, MAX_DEPTH, MAX_LEN};

/// Runs `f` on a thread with a 2 MiB stack, the default of spawned threads:
/// a recursion that grows with the input would overflow it and abort the
/// whole test binary.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

fn chain(first: &str, link: &str, n: usize) -> String {
    let mut text = String::from(first);
    for _ in 0..n {
        text.push_str(link);
    }
    text
}

#[test]
fn ten_thousand_long_chains_of_every_kind_evaluate_or_fail_on_a_small_stack() {
    on_small_stack(|| {
        let one = evaluate("spatial(1)").unwrap();
        let answers = [
            (chain("1", "*1", 10_000), None),
            (chain("1", "/1", 10_000), None),
            (
                chain("spatial(1)", "*spatial(1)", 10_000),
                Some(one.clone()),
            ),
            (
                chain("spatial(1)", "/spatial(1)", 10_000),
                Some(one.clone()),
            ),
            (chain("spatial(1)", ".local(1)", 10_000), Some(one.clone())),
            (
                chain("spatial(1)", ".spatial(1).local(1)", 5_000),
                Some(one.clone()),
            ),
            (
                chain("spatial(1)", ".local(1)*spatial(1)", 5_000),
                Some(one.clone()),
            ),
            (
                chain("spatial(2)", ".local(1)/local(1)", 5_000),
                evaluate("spatial(2)").ok(),
            ),
        ];
        for (text, expected) in answers {
            let result = evaluate(&text);
            match expected {
                Some(value) => assert_eq!(result, Ok(value), "{}", &text[..40]),
                None => assert!(result.is_err(), "{}", &text[..40]),
            }
            // the tree itself: built, cloned, compared, printed and dropped
            let tree = parse(&text).unwrap();
            let copy = tree.clone();
            assert_eq!(tree, copy);
            assert!(!format!("{tree:?}").is_empty());
        }
    });
}

#[test]
fn ten_thousand_long_composition_chains_evaluate_on_a_small_stack() {
    on_small_stack(|| {
        let composed = evaluate("Sw<1,0,1> o 4:1").unwrap();
        for (text, expected) in [
            (chain("Sw<1,0,1> o 4:1", " o 4:1", 10_000), composed.clone()),
            (chain("Sw<1,0,1>", " o 4:1", 10_000), composed.clone()),
            (
                format!("Sw<1,0,1> o 0 o {}", chain("4:1", " o 4:1", 10_000)),
                composed,
            ),
            (chain("4:1", " o 4:1", 10_000), evaluate("4:1").unwrap()),
        ] {
            assert_eq!(evaluate(&text), Ok(expected), "{}", &text[..40]);
        }
        let err = evaluate(&chain("Sw<1,0,1>", " o Sw<1,0,1>", 10_000)).unwrap_err();
        assert!(err.message().contains("expected a layout"), "{err}");
        // the failing `o` is the last one: composition goes right to left
        assert_eq!(err.column(), Some(9 + 12 * 9_999 + 2), "{err}");
    });
}

#[test]
fn swizzles_with_extreme_parameters_or_offsets_are_errors_not_panics() {
    let max = i64::MAX;
    for text in [
        format!("Sw<{max},0,0>"),
        format!("Sw<0,{max},0> o 4:1"),
        format!("Sw<1,0,{max}>"),
        format!("Swizzle(1, 0, -{max})"),
        "Sw<1,0,-9223372036854775808>".to_string(),
        format!("eval(Sw<1,0,1> o 2 o 4:{max}, 1)"),
        format!("eval(Sw<20,2,40> o {max} o 4:1, 1)"),
        format!("size(Sw<1,0,1> o ({max},2):(1,1))"),
        format!("cosize(Sw<1,0,1> o 3:{max})"),
        format!("logical_product(Sw<1,0,1> o 4:{max}, 4:1)"),
    ] {
        let err = evaluate(&text).expect_err(&text);
        assert!(!err.message().is_empty(), "{text}");
    }
    let low = i64::MIN + 1;
    assert_eq!(
        evaluate(&format!("eval(Sw<20,2,40> o {low} o 4:1, 0)"))
            .unwrap()
            .to_string(),
        (low ^ ((low & (((1 << 20) - 1) << 42)) >> 40)).to_string()
    );
}

#[test]
fn the_first_link_of_a_long_chain_that_fails_is_named_by_its_column() {
    let err = evaluate(&chain("1", "*1", 10_000)).unwrap_err();
    assert_eq!(err.column(), Some(2), "{err}");
    assert!(err.message().contains("'*' is not defined"), "{err}");
    let err = evaluate(&format!("{}.frob()", chain("spatial(1)", ".local(1)", 100))).unwrap_err();
    assert_eq!(err.column(), Some(11 + 9 * 100 + 1), "{err}");
    assert!(err.message().contains("unknown method 'frob'"), "{err}");
}

#[test]
fn chains_as_long_as_the_length_limit_allows_run_on_a_small_stack() {
    on_small_stack(|| {
        let text = chain("1", "*1", (MAX_LEN - 1) / 2);
        assert!(text.len() <= MAX_LEN);
        assert!(evaluate(&text).is_err());
        let text = chain("spatial(1)", ".local(1)", (MAX_LEN - 10) / 9);
        assert_eq!(evaluate(&text), evaluate("spatial(1)"));
    });
}

/// Text nested `depth` levels deep in the form `open * depth, core, close * depth`.
fn nested(open: &str, core: &str, close: &str, depth: usize) -> String {
    format!("{}{core}{}", open.repeat(depth), close.repeat(depth))
}

#[test]
fn nesting_to_the_limit_works_and_past_it_is_an_error_naming_the_limit() {
    on_small_stack(|| {
        // each level also carries an operator chain, a method chain, ':' and
        // '==', so that the deepest tree per level is exercised
        let heavy_open = "rank(1 == spatial(1).local(1) * spatial(1) / (";
        let heavy_close = "):(1))";
        // (open, core, close, levels of brackets and calls per nesting)
        let forms = [
            ("(", "1", ")", 1),
            ("[", "1", "]", 1),
            ("<", "1", ">", 1),
            ("size(", "1", ")", 1),
            ("spatial(1).local(", "1", ")", 1),
            ("f(x=", "1", ")", 1),
            (heavy_open, "1", heavy_close, 2),
        ];
        for (open, core, close, per) in forms {
            // the whole expression is the first level
            let ok = nested(open, core, close, (MAX_DEPTH - 1) / per);
            let parsed = parse(&ok);
            assert!(parsed.is_ok(), "{open}: {parsed:?}");
            let _ = evaluate(&ok);
            for depth in [MAX_DEPTH / per + 1, 10_000] {
                let err = evaluate(&nested(open, core, close, depth)).unwrap_err();
                assert!(
                    err.message()
                        .contains(&format!("deeper than {MAX_DEPTH} levels")),
                    "{open}: {err}"
                );
            }
        }
    });
}

#[test]
fn text_longer_than_the_limit_is_refused_by_its_length() {
    let text = "1".repeat(MAX_LEN + 1);
    let err = evaluate(&text).unwrap_err();
    assert!(
        err.message().contains(&format!("limit of {MAX_LEN} bytes")),
        "{err}"
    );
    let ok = format!("size(({}1))", "1,".repeat((MAX_LEN - 20) / 2));
    assert!(ok.len() <= MAX_LEN);
    assert!(evaluate(&ok).is_ok());
}

/// Characters that must never reach a terminal raw.
fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

#[test]
fn control_characters_are_never_echoed_raw() {
    for text in [
        "\0",
        "size(\0)",
        "\u{1b}[31m",
        "size(4:1)\u{7f}",
        "spatial(\u{202e}1)",
        "f\u{0}(",
    ] {
        let err = evaluate(text).unwrap_err();
        let message = err.to_string();
        assert!(!message.chars().any(invisible), "{message:?}");
        assert!(message.contains("U+"), "{message:?}");
    }
}

proptest! {
    #[test]
    fn no_message_or_value_carries_invisible_characters(text in "(?s).{0,40}") {
        let shown = match evaluate(&text) {
            Ok(value) => value.to_string(),
            Err(e) => e.to_string(),
        };
        prop_assert!(!shown.chars().any(invisible), "{:?} -> {:?}", text, shown);
    }

    #[test]
    fn calls_with_arbitrary_integers_never_panic(
        f in prop::sample::select(vec![
            "reduce", "squeeze", "unsqueeze", "permute", "reduce_to", "reshape",
            "flatten", "holders", "element",
        ]),
        args in prop::collection::vec(
            prop::sample::select(vec![i64::MIN, -3, -1, 0, 1, 2, 3, 4, 64, 1 << 32, i64::MAX]),
            0..4,
        ),
        as_list in any::<bool>(),
    ) {
        let ints: Vec<String> = args.iter().map(i64::to_string).collect();
        let arg = if as_list { format!("[{}]", ints.join(", ")) } else { ints.join(", ") };
        let text = format!("{f}(local(2, 1).spatial(2, 3), {arg})");
        let _ = evaluate(&text);
    }

    #[test]
    fn swizzled_layouts_with_arbitrary_integers_never_panic(
        f in prop::sample::select(vec![
            "Swizzle", "size", "cosize", "eval", "mode", "composition", "logical_divide",
            "zipped_product", "coalesce", "complement", "crd2idx", "flatten", "rank",
        ]),
        ints in prop::collection::vec(
            prop::sample::select(vec![i64::MIN + 1, -63, -3, -1, 0, 1, 2, 3, 62, 63, 1 << 32, i64::MAX]),
            3..7,
        ),
        form in 0usize..4,
    ) {
        let [b, m, s, x] = [ints[0], ints[1], ints[2], ints[ints.len() - 1]];
        let text = match form {
            0 => format!("{f}(Sw<{b},{m},{s}> o ({x},2):(1,{x}), {x})"),
            1 => format!("{f}(Sw<1,0,{s}> o {x} o 4:{m}, <{b}:{x}>)"),
            2 => format!("{f}({b}, {m}, {s})"),
            _ => format!("{f}(Sw<{b},{m},{s}>, {x})"),
        };
        let _ = evaluate(&text);
    }
}
