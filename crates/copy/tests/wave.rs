//! The reference compiler's decisions on every Wave in-thread-transpose
//! case: whether it applies (and why not), the plan's numbers, and sample
//! threads' exact load and store coordinates and register shuffle.

use retile_copy::{Access, Transpose, TransposePlan, TransposeRequest};
use serde_json::Value as Json;

/// Tile coordinates are (N, K): memory [K, N] has N contiguous, the
/// destination [N, K] has K contiguous.
fn request(inputs: &Json) -> TransposeRequest {
    let i = |k: &str| inputs[k].as_i64().unwrap();
    let (n, k) = (i("tile_N"), i("tile_K"));
    let src = format!("({n},{k}):(1,{n})").parse().unwrap();
    let dst = format!("({n},{k}):({k},1)").parse().unwrap();
    TransposeRequest::new(
        i("threads"),
        i("element_bits"),
        i("max_bits_per_load"),
        src,
        dst,
    )
    .with_target(inputs["target"].as_str().unwrap())
}

/// An access as the corpus writes it: `{"K": .., "N": .., "vec": .., "along": ..}`.
fn access_json(a: &Access) -> Json {
    serde_json::json!({"N": a.coord[0], "K": a.coord[1], "vec": a.width, "along": if a.dim == 0 { "N" } else { "K" }})
}

fn check_thread(t: &Transpose, thread: i64, want: &Json, case: &str) {
    let grid = |dims: [usize; 2]| Json::from(dims.iter().map(|&d| t.grid[d]).collect::<Vec<_>>());
    assert_eq!(
        grid([1, 0]),
        want["load_shape"],
        "{case} t{thread} load_shape"
    );
    assert_eq!(
        grid([0, 1]),
        want["store_shape"],
        "{case} t{thread} store_shape"
    );
    let loads: Vec<Json> = t
        .loads_of(thread)
        .unwrap()
        .iter()
        .map(access_json)
        .collect();
    let stores: Vec<Json> = t
        .stores_of(thread)
        .unwrap()
        .iter()
        .map(access_json)
        .collect();
    assert_eq!(Json::from(loads), want["loads"], "{case} t{thread} loads");
    assert_eq!(
        Json::from(stores),
        want["stores"],
        "{case} t{thread} stores"
    );
    let lanes: Vec<Vec<[i64; 2]>> = t
        .store_from_load_lane()
        .unwrap()
        .into_iter()
        .map(|s| s.into_iter().map(|(l, j)| [l, j]).collect())
        .collect();
    assert_eq!(
        serde_json::to_value(lanes).unwrap(),
        want["store_from_load_lane"],
        "{case} t{thread} lanes"
    );
}

#[test]
fn every_wave_case() {
    let corpus: Json = serde_json::from_str(include_str!("data/wave_itt_cases.json")).unwrap();
    let cases = corpus["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 10);
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let plan = request(&case["inputs"]).plan().unwrap();
        match (&plan, case["applies"].as_bool().unwrap()) {
            (TransposePlan::Rejected { reason }, false) => {
                let want = case["reason"].as_str().unwrap();
                assert!(
                    reason.contains(want),
                    "{id}: reason {reason:?} does not state {want:?}"
                );
            }
            (TransposePlan::Applies(t), true) => {
                let c = &case["config"];
                let n = |k: &str| c[k].as_i64().unwrap();
                assert_eq!(
                    (t.store_width, t.stores, t.load_width, t.loads),
                    (
                        n("store_elems_per_thread"),
                        n("expected_number_of_stores"),
                        n("load_elems_per_thread"),
                        n("expected_number_of_loads")
                    ),
                    "{id} config"
                );
                assert_eq!(
                    t.extracts,
                    case["ops_per_thread"]["extracts"].as_i64().unwrap(),
                    "{id} extracts"
                );
                assert_eq!(
                    t.blocks(),
                    case["coverage"]["distinct_thread_tiles"].as_i64().unwrap(),
                    "{id} tiles"
                );
                for (thread, want) in case["sample_threads"].as_object().unwrap() {
                    let thread: i64 = thread.parse().unwrap();
                    if thread < t.blocks() {
                        check_thread(t, thread, want, id);
                    } else {
                        // Wave wraps idle threads onto blocks already taken
                        // (duplicate loads); retile leaves them idle.
                        assert!(
                            t.loads_of(thread).unwrap().is_empty(),
                            "{id} t{thread} should be idle"
                        );
                        assert!(
                            t.stores_of(thread).unwrap().is_empty(),
                            "{id} t{thread} should be idle"
                        );
                        check_thread(t, thread % t.blocks(), want, id);
                    }
                }
            }
            _ => panic!("{id}: got {plan}, expected applies={}", case["applies"]),
        }
    }
}
