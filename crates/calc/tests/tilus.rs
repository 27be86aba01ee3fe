//! Every case of the tilus reference corpus, evaluated from its expression
//! as written in Python: the layout's attributes, both mappings, the exact
//! `visualize_layout` text, equality results and expected errors.

use retile_calc::{evaluate, Value};
use retile_register::RegisterLayout;
use serde_json::Value as Json;

fn ints(v: &Json) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

/// Differences between `layout` and the expected description.
fn compare(layout: &RegisterLayout, want: &Json) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut check = |what: &str, got: String, expected: String| {
        if got != expected {
            diffs.push(format!("{what}: got {got}, expected {expected}"));
        }
    };
    check(
        "str",
        layout.to_string(),
        want["str"].as_str().unwrap().to_string(),
    );
    check(
        "spatial_shape",
        format!("{:?}", layout.spatial_shape()),
        format!("{:?}", ints(&want["spatial_shape"])),
    );
    check(
        "local_shape",
        format!("{:?}", layout.local_shape()),
        format!("{:?}", ints(&want["local_shape"])),
    );
    let groups: Vec<Vec<i64>> = layout
        .grouped_modes()
        .into_iter()
        .map(|g| g.map(|m| m as i64).collect())
        .collect();
    let want_groups: Vec<Vec<i64>> = want["grouped_modes"]
        .as_array()
        .unwrap()
        .iter()
        .map(ints)
        .collect();
    check(
        "grouped_modes",
        format!("{groups:?}"),
        format!("{want_groups:?}"),
    );
    check(
        "spatial_size",
        layout.num_threads().unwrap().to_string(),
        want["spatial_size"].to_string(),
    );
    check(
        "local_size",
        layout.local_size().unwrap().to_string(),
        want["local_size"].to_string(),
    );
    let size = layout.size().unwrap();
    let mapping: Vec<Vec<[i64; 2]>> = (0..size)
        .map(|i| {
            layout
                .holders(&layout.coord(i))
                .unwrap()
                .into_iter()
                .map(|(t, l)| [t, l])
                .collect()
        })
        .collect();
    check(
        "mapping",
        serde_json::to_string(&mapping).unwrap(),
        want["mapping"].to_string(),
    );
    if let Some(tv) = want.get("tv") {
        let got: Vec<Vec<i64>> = (0..layout.num_threads().unwrap())
            .map(|t| {
                (0..layout.local_size().unwrap())
                    .map(|l| layout.flat_index(&layout.element(t, l).unwrap()).unwrap())
                    .collect()
            })
            .collect();
        check("tv", serde_json::to_string(&got).unwrap(), tv.to_string());
    }
    check(
        "visualize",
        layout.visualize().unwrap(),
        want["visualize"].as_str().unwrap().to_string(),
    );
    diffs
}

#[test]
fn every_tilus_case() {
    let corpus: Json = serde_json::from_str(include_str!("data/tilus_public.json")).unwrap();
    let cases = corpus["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 156);
    let mut failures = Vec::new();
    for case in cases {
        let expr = case["expr"].as_str().unwrap();
        let expected = &case["expected"];
        let result = evaluate(expr);
        let diffs = match (
            &result,
            expected.get("layout"),
            expected.get("value"),
            expected.get("error"),
        ) {
            (Ok(Value::Register(l)), Some(want), _, _) => compare(l, want),
            (Ok(Value::Bool(b)), _, Some(v), _) => {
                if Json::Bool(*b) == *v {
                    vec![]
                } else {
                    vec![format!("got {b}, expected {v}")]
                }
            }
            (Err(e), _, _, Some(err)) => error_diff(e.message(), err),
            _ => vec![format!("got {result:?}, expected {expected}")],
        };
        if !diffs.is_empty() {
            failures.push(format!("{} {expr}:\n  {}", case["id"], diffs.join("\n  ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// tilus's clear messages are reproduced (retile may append the offending
/// values after them, as in `..., got [0]`); where tilus fails with an
/// internal error (a KeyError, Python's own TypeError text) retile says what
/// is wrong in its own words, which must name the problem.
fn error_diff(got: &str, want: &Json) -> Vec<String> {
    let message = want["message"].as_str().unwrap();
    let ok = match want["type"].as_str().unwrap() {
        "KeyError" => got.contains("neither spatial nor local"),
        "TypeError" => got.contains("not defined for a register layout and an integer"),
        _ => got == message || got.starts_with(&format!("{message}, got ")),
    };
    if ok {
        vec![]
    } else {
        vec![format!("error {got:?}, expected {message:?}")]
    }
}

#[test]
fn mma_c_operand_as_a_thread_value_layout() {
    let v = evaluate("tv_layout(local(2, 1).spatial(8, 4).local(1, 2))").unwrap();
    assert_eq!(v.to_string(), "((4,8),(2,2)):((32,1),(16,8))");
    let back = evaluate("from_tv(((4,8),(2,2)):((32,1),(16,8)), [16, 8]) == repeat(2, 1).spatial(8, 4).repeat(1, 2)").unwrap();
    assert_eq!(back, Value::Bool(true));
}
