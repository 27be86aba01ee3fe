//! Every case of the CuTe reference corpus (`data/cute_public.json`), under
//! the comparison rules of the corpus README.

use retile_layout::*;
use serde_json::Value;

/// What retile computed for a case.
enum Outcome {
    Layout(Layout),
    Int(i64),
    Tuple(IntTuple),
    Props(Layout),
}

fn arg<T: std::str::FromStr<Err = LayoutError>>(case: &Value, name: &str) -> Result<T> {
    case["args"][name]
        .as_str()
        .unwrap_or_else(|| panic!("case {} lacks arg {name}", case["id"]))
        .parse()
}

fn run(case: &Value) -> Result<Outcome> {
    let a = || arg::<Layout>(case, "A");
    let t = || arg::<Tiler>(case, "T");
    let b = || arg::<Layout>(case, "B");
    let op = case["op"].as_str().unwrap();
    Ok(match op {
        "props" => Outcome::Props(a()?),
        "coalesce" => Outcome::Layout(coalesce(&a()?)?),
        "coalesce_profile" => Outcome::Layout(coalesce_profile(&a()?, &arg(case, "profile")?)?),
        "filter" => Outcome::Layout(filter(&a()?)?),
        "composition" => Outcome::Layout(composition(&a()?, &b()?)?),
        "composition_tiler" => Outcome::Layout(composition_tiler(&a()?, &t()?)?),
        "complement" => Outcome::Layout(complement(&a()?, &arg(case, "M")?)?),
        "logical_divide" => Outcome::Layout(logical_divide(&a()?, &t()?)?),
        "zipped_divide" => Outcome::Layout(zipped_divide(&a()?, &t()?)?),
        "tiled_divide" => Outcome::Layout(tiled_divide(&a()?, &t()?)?),
        "flat_divide" => Outcome::Layout(flat_divide(&a()?, &t()?)?),
        "logical_product" => Outcome::Layout(logical_product(&a()?, &t()?)?),
        "zipped_product" => Outcome::Layout(zipped_product(&a()?, &t()?)?),
        "tiled_product" => Outcome::Layout(tiled_product(&a()?, &t()?)?),
        "flat_product" => Outcome::Layout(flat_product(&a()?, &t()?)?),
        "blocked_product" => Outcome::Layout(blocked_product(&a()?, &b()?)?),
        "raked_product" => Outcome::Layout(raked_product(&a()?, &b()?)?),
        "right_inverse" => Outcome::Layout(right_inverse(&a()?)?),
        "left_inverse" => Outcome::Layout(left_inverse(&a()?)?),
        "max_common_vector" => Outcome::Int(max_common_vector(&a()?, &b()?)?),
        "idx2crd" => Outcome::Tuple(idx2crd(
            arg::<IntTuple>(case, "idx")?.size()?,
            &arg(case, "shape")?,
        )?),
        "crd2idx" => Outcome::Int(a()?.eval_coord(&arg(case, "crd")?)?),
        other => panic!("unknown op {other}"),
    })
}

fn table_of(expect: &Value) -> Vec<i64> {
    expect["table"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect()
}

/// Same shape, same strides except on size-1 modes, same size and table.
fn same_layout(ours: &Layout, expect: &Value) -> bool {
    let theirs: Layout = expect["layout"].as_str().unwrap().parse().unwrap();
    let table = table_of(expect);
    let strides_match = ours
        .flat_modes()
        .iter()
        .zip(theirs.flat_modes())
        .all(|(o, t)| o.1 == t.1 || o.0 == 1);
    ours.shape() == theirs.shape()
        && strides_match
        && ours.size().unwrap() == expect["size"].as_i64().unwrap()
        && ours.table(table.len() as i64).unwrap() == table
}

/// The post-condition of an inverse, on every index of its domain.
fn inverse_holds(op: &str, l: &Layout, r: &Layout) -> bool {
    match op {
        "right_inverse" => (0..r.size().unwrap()).all(|i| l.eval(r.eval(i).unwrap()).unwrap() == i),
        _ => (0..l.size().unwrap()).all(|i| {
            let li = l.eval(i).unwrap();
            l.eval(r.eval(li).unwrap()).unwrap() == li
        }),
    }
}

/// The answers a case accepts: the oracle's when valid, C++'s when valid.
fn accepted(case: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    if case["valid"].as_bool().unwrap_or(true) && case["expect"]["kind"] != "error" {
        out.push(&case["expect"]);
    }
    let alt = &case["alt_cpp"];
    if alt.is_object() && alt["valid"].as_bool().unwrap_or(true) && alt["kind"] != "error" {
        out.push(alt);
    }
    out
}

fn check(case: &Value) -> std::result::Result<(), String> {
    let op = case["op"].as_str().unwrap();
    let answers = accepted(case);
    let outcome = run(case);
    let Ok(outcome) = outcome else {
        return if answers.is_empty() {
            Ok(())
        } else {
            Err(format!("rejected: {}", outcome.err().unwrap()))
        };
    };
    if answers.is_empty() {
        return Err("accepted an input that must be rejected".into());
    }
    let ok = match &outcome {
        Outcome::Layout(r) if op.ends_with("_inverse") => {
            inverse_holds(op, &arg(case, "A").unwrap(), r)
        }
        Outcome::Layout(r) => answers.iter().any(|e| same_layout(r, e)),
        Outcome::Int(v) => answers.iter().any(|e| e["value"].as_i64() == Some(*v)),
        Outcome::Tuple(t) => answers.iter().any(|e| match t {
            IntTuple::Int(v) => e["value"].as_i64() == Some(*v),
            IntTuple::Tuple(_) => e["text"].as_str() == Some(&t.to_string()),
        }),
        Outcome::Props(l) => answers.iter().any(|e| props_match(case, l, e)),
    };
    if ok {
        Ok(())
    } else {
        let shown = match outcome {
            Outcome::Layout(l) | Outcome::Props(l) => l.to_string(),
            Outcome::Int(v) => v.to_string(),
            Outcome::Tuple(t) => t.to_string(),
        };
        Err(format!("got {shown}"))
    }
}

/// size, rank, depth and table as the oracle; cosize as C++ computes it
/// (with |stride|), which is what the oracle gives wherever strides are
/// non-negative — the one negative-stride case's note says C++ differs.
fn props_match(case: &Value, l: &Layout, e: &Value) -> bool {
    let cpp_cosize = 1 + l
        .flat_modes()
        .iter()
        .map(|&(s, d)| (s - 1) * d.abs())
        .sum::<i64>();
    let negative = l.flat_modes().iter().any(|m| m.1 < 0);
    let cosize_ok = if negative {
        case["note"]
            .as_str()
            .is_some_and(|n| n.contains("C++ cosize uses |strides|"))
            && l.cosize().unwrap() == cpp_cosize
    } else {
        l.cosize().unwrap() == e["cosize"].as_i64().unwrap()
    };
    let table = table_of(e);
    cosize_ok
        && l.size().unwrap() == e["size"].as_i64().unwrap()
        && l.rank() as i64 == e["rank"].as_i64().unwrap()
        && l.depth() as i64 == e["depth"].as_i64().unwrap()
        && l.table(table.len() as i64).unwrap() == table
}

#[test]
fn every_cute_reference_case_passes() {
    let corpus: Value = serde_json::from_str(include_str!("data/cute_public.json")).unwrap();
    let cases = corpus["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 299, "the corpus should hold 299 cases");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            check(case)
                .err()
                .map(|why| format!("{} {} {}: {why}", case["id"], case["op"], case["args"]))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
