//! The calculator evaluates every reference case written as an expression,
//! and agrees with the library called directly.

use retile_calc::evaluate;
use serde_json::Value as Json;

fn expression(case: &Json) -> String {
    let a = |k: &str| case["args"][k].as_str().unwrap().to_string();
    let op = case["op"].as_str().unwrap();
    match op {
        "props" => format!("size({})", a("A")),
        "coalesce_profile" => format!("coalesce({}, {})", a("A"), a("profile")),
        "composition_tiler" => format!("composition({}, {})", a("A"), a("T")),
        "complement" => format!("complement({}, {})", a("A"), a("M")),
        "idx2crd" => format!("idx2crd({}, {})", a("idx"), a("shape")),
        "crd2idx" => format!("crd2idx({}, {})", a("crd"), a("A")),
        "composition" | "blocked_product" | "raked_product" | "max_common_vector" => {
            format!("{op}({}, {})", a("A"), a("B"))
        }
        "coalesce" | "filter" | "right_inverse" | "left_inverse" => format!("{op}({})", a("A")),
        _ => format!("{op}({}, {})", a("A"), a("T")),
    }
}

#[test]
fn every_reference_case_evaluates_as_an_expression() {
    let corpus: Json =
        serde_json::from_str(include_str!("../../layout/tests/data/cute_public.json")).unwrap();
    let mut mismatches = Vec::new();
    for case in corpus["cases"].as_array().unwrap() {
        let text = expression(case);
        let result = evaluate(&text);
        let has_accepting_alternative =
            case["alt_cpp"].is_object() && case["alt_cpp"]["kind"] != "error";
        let invalid = !case["valid"].as_bool().unwrap_or(true);
        let rejected = case["expect"]["kind"] == "error" || (invalid && !has_accepting_alternative);
        match (&result, rejected) {
            (Err(_), true) | (Ok(_), false) => {}
            _ => mismatches.push(format!("{text}: {result:?}")),
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn results_print_in_cute_notation_without_spaces() {
    assert_eq!(
        evaluate("logical_divide((4,2,3):(2,1,8), 4:2)")
            .unwrap()
            .to_string(),
        "((2,2),(2,3)):((4,1),(2,8))"
    );
    assert_eq!(
        evaluate("tiled_divide((6):(1), <(2,3):(3,1)>)")
            .unwrap()
            .to_string(),
        "(((2,3)),(1)):(((3,1)),(0))"
    );
    assert_eq!(
        evaluate("composition((4,(6,2)):(48,(8,4)), <_>)")
            .unwrap()
            .to_string(),
        "(4):(48)"
    );
    assert_eq!(
        evaluate(" size ( ( 2 , 3 ) : ( 1 , 2 ) ) ")
            .unwrap()
            .to_string(),
        "6"
    );
    assert_eq!(
        evaluate("crd2idx((1,2), (2,4), (4,1))")
            .unwrap()
            .to_string(),
        "6"
    );
    assert_eq!(evaluate("composition(8:2, 4)").unwrap().to_string(), "4:2");
    assert_eq!(
        evaluate("composition((4,6):(1,4), (2,3))")
            .unwrap()
            .to_string(),
        "(2,3):(1,4)"
    );
}

#[test]
fn errors_point_at_the_column() {
    let err = evaluate("coalesce((2,2):(1,2)))").unwrap_err();
    assert_eq!(err.column(), Some(22));
    let err = evaluate("logical_divide(4:1, <2,2>)").unwrap_err();
    assert!(err.to_string().contains("tiler has 2 modes"), "{err}");
    let err = evaluate("frobnicate(4:1)").unwrap_err();
    assert!(
        err.to_string().contains("unknown function 'frobnicate'"),
        "{err}"
    );
    let err = evaluate("(2,3):(1)").unwrap_err();
    assert!(err.to_string().contains("not congruent"), "{err}");
    let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(evaluate(&deep)
        .unwrap_err()
        .to_string()
        .contains("nested deeper"));
}

#[test]
fn device_layouts_evaluate_and_print_as_the_issue_shows() {
    let cases = [
        ("device_layout([512, 256], float16, dim_order=[0, 1, -1])", "DeviceLayout(host_size=[512, 256], device_size=[256, 512, 64], dim_map=[1, 0, -1], dtype=float16)"),
        ("device_layout(host_size=[512, 256], device_size=[4, 512, 64], dim_map=[1, 0, 1], dtype=float16)", "DeviceLayout(host_size=[512, 256], device_size=[4, 512, 64], dim_map=[1, 0, 1], dtype=float16)"),
        ("host_coord(device_layout([512, 256], float16), [1, 7, 3])", "(7,67)"),
        ("host_coord(device_layout([65], float16), [1, 3])", "padding"),
        ("device_offset(device_layout([512, 256], float16), [1, 7, 3])", "33219"),
        ("device_bytes(device_layout([512, 256], float16))", "262144"),
        ("host_stick_dim(device_layout([512, 256], float16, dim_order=[1, 0]))", "0"),
        ("cute(device_layout([512, 256], float16))", "(64,512,4):(1,256,64)"),
        ("cute(device_layout([512, 256], float16), host_stride=[1, 512])", "(64,512,4):(512,1,32768)"),
        ("view(device_layout([3, 5, 128], float16), [3, 5, 1, 128])", "DeviceLayout(host_size=[3, 5, 1, 128], device_size=[5, 2, 3, 64], dim_map=[1, 3, 0, 3], dtype=float16)"),
    ];
    for (text, expected) in cases {
        assert_eq!(
            evaluate(text).map(|v| v.to_string()),
            Ok(expected.to_string()),
            "{text}"
        );
    }
    for bad in [
        "device_layout([4, 4], float16, dim_order=[0])",
        "device_layout([4], float99)",
        "device_layout([4], float16, frobnicate=1)",
        "host_coord(device_layout([4], float16), [9, 0])",
    ] {
        assert!(evaluate(bad).is_err(), "{bad}");
    }
}
