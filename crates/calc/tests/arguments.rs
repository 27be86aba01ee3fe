//! Arguments given in ways Python rejects (issue 20): integers for
//! booleans, a keyword twice, a keyword for an argument already given by
//! position, too many arguments; and messages that say what to change.

use retile_calc::evaluate;

#[test]
fn booleans_are_true_or_false_and_integers_for_them_are_errors() {
    let keep = evaluate("reduce(spatial(3, 4), [0], keepdims=True)").unwrap();
    let drop = evaluate("reduce(spatial(3, 4), [0], keepdims=False)").unwrap();
    assert_ne!(keep, drop);
    assert_eq!(
        evaluate("reduce(spatial(3, 4), [0], True)"),
        Ok(keep.clone())
    );
    assert_eq!(
        evaluate("spatial(3, 4).reduce([0], keepdims=True)"),
        Ok(keep)
    );
    assert_eq!(evaluate("reduce(spatial(3, 4), [0])"), Ok(drop));
    for bad in [
        "reduce(spatial(3, 4), [0], keepdims=1)",
        "reduce(spatial(3, 4), [0], keepdims=0)",
        "reduce(spatial(3, 4), [0], 1)",
        "reduce(spatial(3, 4), dims=[0], keepdims=yes)",
        "reduce(spatial(3, 4), dims=[0], keepdims=[1])",
        "spatial(3, 4).reduce([0], keepdims=1)",
    ] {
        let err = evaluate(bad).unwrap_err();
        assert!(
            err.message().contains("must be True or False")
                && err.message().contains("keepdims=True"),
            "{bad}: {err}"
        );
    }
}

/// Every function with named parameters: a call with its arguments by
/// position, and the parameters' names in order.
const SIGNATURES: &[(&str, &[&str], &[&str])] = &[
    (
        "register_layout",
        &["[6]", "[2, 3]", "[0, 1]", "[]"],
        &["shape", "mode_shape", "spatial_modes", "local_modes"],
    ),
    (
        "auto_local_spatial",
        &["128", "[16, 64]"],
        &["num_threads", "shape"],
    ),
    (
        "from_tv",
        &["tv_layout(spatial(2, 3))", "[2, 3]"],
        &["tv", "shape"],
    ),
    (
        "reduce",
        &["spatial(3, 4)", "[0]", "True"],
        &["layout", "dims", "keepdims"],
    ),
    ("squeeze", &["spatial(1, 4)", "[0]"], &["layout", "dims"]),
    ("unsqueeze", &["spatial(4)", "[0]"], &["layout", "dims"]),
    ("permute", &["spatial(2, 3)", "[1, 0]"], &["layout", "dims"]),
    (
        "reduce_to",
        &["spatial(2, 3)", "[1, 3]"],
        &["layout", "shape"],
    ),
    ("reshape", &["spatial(6)", "[2, 3]"], &["layout", "shape"]),
    (
        "flatten",
        &["spatial(2, 3, 4)", "0", "2"],
        &["layout", "start_dim", "end_dim"],
    ),
    (
        "holders",
        &["spatial(2, 3)", "[1, 2]"],
        &["layout", "coord"],
    ),
    (
        "element",
        &["spatial(2, 3)", "5", "0"],
        &["layout", "thread", "local"],
    ),
    ("tv_layout", &["spatial(2, 3)"], &["layout"]),
    ("num_threads", &["spatial(2, 3)"], &["layout"]),
    ("local_size", &["spatial(2, 3)"], &["layout"]),
    ("size", &["spatial(2, 3)"], &["layout"]),
    (
        "device_layout",
        &["[512, 256]", "float16", "[0, 1, -1]"],
        &["host_size", "dtype", "dim_order"],
    ),
    (
        "host_coord",
        &["device_layout([512, 256], float16)", "[1, 7, 3]"],
        &["layout", "coord"],
    ),
    (
        "device_offset",
        &["device_layout([512, 256], float16)", "[1, 7, 3]"],
        &["layout", "coord"],
    ),
    (
        "device_bytes",
        &["device_layout([512, 256], float16)"],
        &["layout"],
    ),
    (
        "host_stick_dim",
        &["device_layout([512, 256], float16)"],
        &["layout"],
    ),
    (
        "view",
        &["device_layout([3, 5, 128], float16)", "[3, 5, 1, 128]"],
        &["layout", "size"],
    ),
    (
        "cute",
        &["device_layout([512, 256], float16)", "[1, 512]"],
        &["layout", "host_stride"],
    ),
    (
        "transpose_plan",
        &[
            "256",
            "16",
            "128",
            "(256,16):(1,256)",
            "(256,16):(16,1)",
            "gfx942",
        ],
        &[
            "threads",
            "element_bits",
            "max_bits",
            "src",
            "dst",
            "target",
        ],
    ),
    (
        "vector_width",
        &["(8,32):(1,8)", "(8,32):(1,16)", "16", "128"],
        &["src", "dst", "element_bits", "max_bits"],
    ),
];

#[test]
fn every_function_matches_arguments_by_position_and_by_name_alike() {
    for (f, args, params) in SIGNATURES {
        let by_position = evaluate(&format!("{f}({})", args.join(", ")));
        assert!(by_position.is_ok(), "{f}: {by_position:?}");
        let keywords: Vec<String> = params
            .iter()
            .zip(*args)
            .map(|(p, a)| format!("{p}={a}"))
            .collect();
        let by_name = evaluate(&format!("{f}({})", keywords.join(", ")));
        assert_eq!(by_position, by_name, "{f}");
        // the first argument by position, the rest by name
        let mixed = evaluate(
            &format!("{f}({}, {})", args[0], keywords[1..].join(", ")).replace(", )", ")"),
        );
        assert_eq!(by_position, mixed, "{f}");
    }
}

#[test]
fn every_function_rejects_a_keyword_twice_a_keyword_for_a_positional_and_extra_arguments() {
    for (f, args, params) in SIGNATURES {
        let all = args.join(", ");
        let twice = format!("{f}({}={}, {}={})", params[0], args[0], params[0], args[0]);
        let err = evaluate(&twice).unwrap_err();
        assert!(err.message().contains("repeated"), "{twice}: {err}");
        let again = format!("{f}({all}, {}={})", params[0], args[0]);
        let err = evaluate(&again).unwrap_err();
        assert!(
            err.message()
                .contains(&format!("two values for '{}'", params[0])),
            "{again}: {err}"
        );
        let extra = format!("{f}({all}, 1)");
        let err = evaluate(&extra).unwrap_err();
        assert!(
            err.message().contains("positional argument"),
            "{extra}: {err}"
        );
        let unknown = format!("{f}({all}, frobnicate=1)");
        let err = evaluate(&unknown).unwrap_err();
        assert!(
            err.message().contains("no keyword argument 'frobnicate'")
                && err.message().contains(params[0]),
            "{unknown}: {err}"
        );
    }
    for text in [
        "spatial(2, 3, ranks=[0, 1], ranks=[1, 0])",
        "replicated(2, num_workers=2, num_workers=3)",
        "local(2).spatial(2, ranks=[0], ranks=[0])",
        "device_layout([4, 4], float16, device_size=[1], device_size=[1])",
    ] {
        let err = evaluate(text).unwrap_err();
        assert!(
            err.message().contains("repeated; give it once"),
            "{text}: {err}"
        );
    }
    for text in [
        "coalesce(A=4:1)",
        "size(4:1, x=1)",
        "composition(4:1, B=2:1)",
    ] {
        let err = evaluate(text).unwrap_err();
        assert!(
            err.message().contains("takes no keyword arguments"),
            "{text}: {err}"
        );
    }
}

#[test]
fn messages_say_what_to_change() {
    let cases = [
        (
            "make_layout()",
            "make_layout takes at least 1 argument, got 0",
        ),
        ("coalesce()", "coalesce takes 1 or 2 arguments, got 0"),
        ("size(4:1, 2:1)", "size takes 1 argument, got 2"),
        (
            "mode(4:1, -1)",
            "mode index -1 is negative; modes are numbered from 0",
        ),
        (
            "transpose_plan(256, 16, 128)",
            "transpose_plan needs argument 'src': give it as the 4th argument or as src=...",
        ),
        (
            "compose(spatial(2))",
            "compose takes 2 register layouts, got 1 argument",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(evaluate(text).unwrap_err().message(), message, "{text}");
    }
    let plan = evaluate("transpose_plan(256, 16, 128, (256,16):(1,256), (256,16):(16,1))").unwrap();
    let named = evaluate(
        "transpose_plan(threads=256, element_bits=16, max_bits=128, src=(256,16):(1,256), dst=(256,16):(16,1))",
    )
    .unwrap();
    assert_eq!(plan, named);
    for bad in ["garbage", "gfx", "sm_", "gfx9999999", "1"] {
        let text =
            format!("transpose_plan(src=(256,16):(1,256), dst=(256,16):(16,1), target={bad})");
        let err = evaluate(&text).unwrap_err();
        assert!(err.message().contains("gfx942"), "{text}: {err}");
    }
    let err = evaluate("spatial(2).frobnicate()").unwrap_err();
    assert!(
        err.message().starts_with("unknown method 'frobnicate'"),
        "{err}"
    );
    let err = evaluate("spatial(2).coalesce()").unwrap_err();
    assert!(
        err.message().contains("is a function, not a method"),
        "{err}"
    );
}
