//! Every case of the device-layout reference corpus (`data/device_public.json`).

use retile_device::*;
use serde_json::Value;

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

fn i64s(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

fn unravel(mut k: u64, size: &[u64]) -> Vec<u64> {
    let mut c = vec![0; size.len()];
    for j in (0..size.len()).rev() {
        c[j] = k % size[j];
        k /= size[j];
    }
    c
}

/// Host row-major index of every device element, or None for padding.
fn host_indices(l: &DeviceLayout) -> Vec<Option<u64>> {
    let total: u64 = l.device_size().iter().product();
    let strides: Vec<u64> = (0..l.host_size().len())
        .map(|h| l.host_size()[h + 1..].iter().product())
        .collect();
    (0..total)
        .map(|k| {
            l.host_coord(&unravel(k, l.device_size()))
                .unwrap()
                .map(|h| h.iter().zip(&strides).map(|(x, s)| x * s).sum())
        })
        .collect()
}

fn build(case: &Value) -> Result<DeviceLayout, DeviceError> {
    let dtype: DType = case["dtype"].as_str().unwrap().parse()?;
    match case["constructor"].as_str().unwrap() {
        "default" => DeviceLayout::default_for(&u64s(&case["host_size"]), dtype),
        "dim_order" => DeviceLayout::with_dim_order(
            &u64s(&case["host_size"]),
            dtype,
            &i64s(&case["dim_order"]),
        ),
        _ => {
            let old = DeviceLayout::explicit(
                &u64s(&case["old_host_size"]),
                &u64s(&case["old"]["device_size"]),
                &i64s(&case["old"]["dim_map"]),
                dtype,
            )?;
            old.view(&u64s(&case["new_host_size"]))
        }
    }
}

fn check(case: &Value) -> Result<(), String> {
    let e = &case["expected"];
    let result = build(case);
    if let Some(message) = e["error"].as_str() {
        return match result {
            Err(err) if err.to_string().contains(message) => Ok(()),
            other => Err(format!("expected error '{message}', got {other:?}")),
        };
    }
    if case["constructor"] == "view" {
        return check_view(case, result.map_err(|err| err.to_string())?);
    }
    let l = result.map_err(|err| err.to_string())?;
    if l.device_size() != u64s(&e["device_size"]) || l.dim_map() != i64s(&e["dim_map"]) {
        return Err(format!("got {l}"));
    }
    if l.host_stick_dim().map(|d| d as u64) != e["host_stick_dim"].as_u64()
        || l.device_bytes() != e["device_bytes"].as_u64().unwrap()
    {
        return Err(format!(
            "stick dim {:?} / bytes {}",
            l.host_stick_dim(),
            l.device_bytes()
        ));
    }
    let stride = i64s(&case["host_stride"]);
    let cute = l.to_cute(&stride).map_err(|err| err.to_string())?;
    for m in case["coord_mappings"].as_array().unwrap() {
        let device = u64s(&m["device"]);
        let offset = l.device_offset(&device).map_err(|err| err.to_string())?;
        if offset != m["device_elem_offset"].as_u64().unwrap() {
            return Err(format!("device offset of {device:?}: {offset}"));
        }
        let host = l.host_coord(&device).map_err(|err| err.to_string())?;
        match (&host, m["host"].is_null()) {
            (None, true) => {}
            (Some(h), false) if *h == u64s(&m["host"]) => {
                let host_offset: i64 = h.iter().zip(&stride).map(|(&x, &d)| x as i64 * d).sum();
                if host_offset != m["host_offset"].as_i64().unwrap()
                    || cute.eval(offset as i64).unwrap() != host_offset
                {
                    return Err(format!("host offset of {device:?}"));
                }
                if l.device_coord(h).unwrap() != device {
                    return Err(format!("device_coord({h:?}) is not {device:?}"));
                }
            }
            _ => return Err(format!("host of {device:?}: {host:?}")),
        }
    }
    Ok(())
}

/// A view must match the reference where the reference's answer obeys the
/// fold rule; where it does not (`fold_rule_consistent: false`), retile
/// answers with a layout that does, or rejects the view when none exists.
/// Either way, every device element must keep its host element.
fn check_view(case: &Value, view: DeviceLayout) -> Result<(), String> {
    let e = &case["expected"];
    let consistent = case["fold_rule_consistent"]
        .as_bool()
        .or(e["fold_rule_consistent"].as_bool())
        .unwrap_or(true);
    if consistent
        && (view.device_size() != u64s(&e["device_size"]) || view.dim_map() != i64s(&e["dim_map"]))
    {
        return Err(format!("got {view}"));
    }
    let dtype: DType = case["dtype"].as_str().unwrap().parse().unwrap();
    let old = DeviceLayout::explicit(
        &u64s(&case["old_host_size"]),
        &u64s(&case["old"]["device_size"]),
        &i64s(&case["old"]["dim_map"]),
        dtype,
    )
    .unwrap();
    if host_indices(&old) != host_indices(&view) {
        return Err(format!("{view} does not keep every element in place"));
    }
    Ok(())
}

#[test]
fn every_device_reference_case_passes() {
    let corpus: Value = serde_json::from_str(include_str!("data/device_public.json")).unwrap();
    let mut failures = Vec::new();
    for case in corpus["cases"].as_array().unwrap() {
        if case["id"] == "seed_view_fuse" {
            continue;
        }
        if let Err(why) = check(case) {
            failures.push(format!("{}: {why}", case["id"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(corpus["cases"].as_array().unwrap().len(), 42);
}

/// The reference fuses [3,5,128] into [15,1,128] as dim_map [0,2,0,2], which
/// its own fold rule maps wrongly (device (a,b,c,d) would give host
/// a*3+c instead of c*5+a); no layout over the same memory expresses the
/// view, so retile rejects it and says why.
#[test]
fn the_inconsistent_reference_fuse_is_rejected_with_a_reason() {
    let old =
        DeviceLayout::explicit(&[3, 5, 128], &[5, 2, 3, 64], &[1, 2, 0, 2], DType::F16).unwrap();
    let err = old.view(&[15, 1, 128]).unwrap_err();
    assert!(err.to_string().contains("device order"), "{err}");
}

#[test]
fn every_error_case_is_rejected_with_its_meaning() {
    let corpus: Value = serde_json::from_str(include_str!("data/device_public.json")).unwrap();
    for case in corpus["error_cases"].as_array().unwrap() {
        let size = u64s(&case["host_size"]);
        let result = match case["dim_order"].as_array() {
            Some(_) => DeviceLayout::with_dim_order(&size, DType::F16, &i64s(&case["dim_order"])),
            None => DeviceLayout::default_for(&size, DType::F16),
        };
        let message = case["error"].as_str().unwrap();
        match result {
            Err(err) => assert!(err.to_string().contains(message), "{err} lacks '{message}'"),
            Ok(l) => panic!("{size:?} should be rejected, got {l}"),
        }
    }
}
