//! Properties of device layouts over random host sizes, dtypes and orders.

use std::collections::HashMap;

use proptest::prelude::*;
use retile_device::*;

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(retile_device::device_dtypes().collect::<Vec<_>>())
}

/// Host sizes, a dim order (a permutation, maybe with a trailing -1), a dtype.
fn layout() -> impl Strategy<Value = DeviceLayout> {
    (
        prop::collection::vec(
            prop_oneof![1 => Just(1u64), 4 => 2u64..=9, 1 => 60u64..=140],
            1..=4,
        ),
        any::<bool>(),
        dtype(),
    )
        .prop_flat_map(|(size, sparse, dtype)| {
            let n = size.len();
            (
                Just(size),
                Just((0..n as i64).collect::<Vec<_>>()).prop_shuffle(),
                Just(sparse),
                Just(dtype),
            )
        })
        .prop_map(|(size, mut order, sparse, dtype)| {
            if sparse {
                order.push(-1);
            }
            DeviceLayout::with_dim_order(&size, dtype, &order).unwrap()
        })
        .prop_filter("small enough to enumerate", |l| {
            l.device_size().iter().product::<u64>() <= 1 << 17
        })
}

fn unravel(mut k: u64, size: &[u64]) -> Vec<u64> {
    let mut c = vec![0; size.len()];
    for j in (0..size.len()).rev() {
        c[j] = k % size[j];
        k /= size[j];
    }
    c
}

fn host_index(host: &[u64], size: &[u64]) -> u64 {
    host.iter().zip(size).fold(0, |acc, (x, s)| acc * s + x)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_host_element_has_exactly_one_device_position(l in layout()) {
        let total: u64 = l.device_size().iter().product();
        let mut seen: HashMap<u64, u64> = HashMap::new();
        for k in 0..total {
            let device = unravel(k, l.device_size());
            if let Some(host) = l.host_coord(&device).unwrap() {
                prop_assert_eq!(l.device_coord(&host).unwrap(), device.clone(), "round trip of {:?}", device);
                *seen.entry(host_index(&host, l.host_size())).or_default() += 1;
            }
        }
        let elements: u64 = l.host_size().iter().product();
        prop_assert_eq!(seen.len() as u64, elements, "{}", l);
        prop_assert!(seen.values().all(|&c| c == 1));
    }

    #[test]
    fn the_cute_layout_agrees_with_the_fold_rule(l in layout(), permute in any::<prop::sample::Index>()) {
        let rank = l.host_size().len();
        let mut order: Vec<usize> = (0..rank).collect();
        order.rotate_left(permute.index(rank));
        let mut stride = vec![0i64; rank];
        let mut step = 1i64;
        for &h in order.iter().rev() {
            stride[h] = step;
            step *= l.host_size()[h] as i64;
        }
        let cute = l.to_cute(&stride).unwrap();
        let total: u64 = l.device_size().iter().product();
        for k in 0..total {
            if let Some(host) = l.host_coord(&unravel(k, l.device_size())).unwrap() {
                let expected: i64 = host.iter().zip(&stride).map(|(&x, &d)| x as i64 * d).sum();
                prop_assert_eq!(cute.eval(k as i64).unwrap(), expected);
            }
        }
    }

    #[test]
    fn a_view_keeps_every_element_in_place(l in layout(), dim in any::<prop::sample::Index>(), pick in any::<prop::sample::Index>()) {
        let size = l.host_size().to_vec();
        let h = dim.index(size.len());
        let divisors: Vec<u64> = (1..=size[h]).filter(|f| size[h] % f == 0).collect();
        let factor = divisors[pick.index(divisors.len())];
        let mut new_size = size.clone();
        new_size.splice(h..=h, [factor, size[h] / factor]);
        if let Ok(v) = l.view(&new_size) {
            let total: u64 = l.device_size().iter().product();
            prop_assert_eq!(v.device_size().iter().product::<u64>(), total, "{} -> {}", l, v);
            for k in 0..total {
                let old = l.host_coord(&unravel(k, l.device_size())).unwrap().map(|x| host_index(&x, &size));
                let new = v.host_coord(&unravel(k, v.device_size())).unwrap().map(|x| host_index(&x, &new_size));
                prop_assert_eq!(old, new, "{} -> {} at {}", l, v, k);
            }
        }
    }
}

#[test]
fn explicit_layouts_say_what_is_wrong() {
    let f16 = DType::F16;
    // (host shape, device shape, dimension map, expected message)
    type Case<'a> = (&'a [u64], &'a [u64], &'a [i64], &'a str);
    let cases: [Case; 5] = [
        (&[512, 256], &[4, 512, 64], &[1, 0], "dim_map has 2"),
        (
            &[512, 256],
            &[4, 512, 64],
            &[1, 2, 1],
            "not a host dimension",
        ),
        (&[512, 256], &[4, 511, 64], &[1, 0, 1], "hold only 511"),
        (&[512, 256], &[4, 512, 64], &[-1, 0, 1], "only be the last"),
        (
            &[512, 256],
            &[4, 512, 32],
            &[1, 0, 1],
            "stick dimension has extent 32",
        ),
    ];
    for (host, device, map, message) in cases {
        let err = DeviceLayout::explicit(host, device, map, f16).unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }
    let l = DeviceLayout::default_for(&[512, 256], f16).unwrap();
    assert!(l.host_coord(&[4, 0, 0]).is_err());
    assert!(l.device_coord(&[512, 0]).is_err());
}

proptest! {
    #[test]
    fn strided_layouts_round_trip_through_cute(size in prop::collection::vec(1u64..=9, 1..=5), stride in prop::collection::vec(-20i64..=20, 5)) {
        let t = StridedLayout::new(size.clone(), stride[..size.len()].to_vec()).unwrap();
        let cute = t.to_cute().unwrap();
        prop_assert_eq!(StridedLayout::from_cute(&cute), t.clone());
        let coord: Vec<u64> = size.iter().map(|&s| s - 1).collect();
        let as_tuple = retile_layout::IntTuple::Tuple(coord.iter().map(|&c| retile_layout::IntTuple::Int(c as i64)).collect());
        prop_assert_eq!(cute.eval_coord(&as_tuple).ok(), t.offset(&coord));
        prop_assert!(t.canonical().size().iter().all(|&s| s != 1));
    }
}

#[test]
fn huge_or_hostile_sizes_are_errors_not_panics() {
    let f16 = DType::F16;
    assert!(DeviceLayout::default_for(&[1 << 40, 1 << 40], f16).is_err());
    assert!(DeviceLayout::explicit(&[4], &[u64::MAX, 64], &[0, 0], f16).is_err());
    let l = DeviceLayout::default_for(&[4, 64], f16).unwrap();
    assert!(l.view(&[u64::MAX, 2]).is_err());
    assert!(l.view(&[1, 1, 1, 1, 1, 1, 1, 256]).is_err());
    assert!(l.view(&[0, 256]).is_err());
    assert!(
        DeviceLayout::default_for(&[], f16).is_err(),
        "found by the fuzzer: an empty host size"
    );
    assert!(DeviceLayout::with_dim_order(&[], f16, &[-1]).is_err());
}

#[test]
fn types_the_device_does_not_hold_are_refused_by_name() {
    let held: Vec<DType> = device_dtypes().collect();
    for dtype in DType::all() {
        let made = DeviceLayout::default_for(&[4, 64], dtype);
        assert_eq!(made.is_ok(), held.contains(&dtype), "{dtype}");
        if let Err(e) = made {
            assert!(e.to_string().contains("holds no"), "{e}");
            assert!(DeviceLayout::explicit(&[4, 64], &[1, 4, 64], &[0, 0, 1], dtype).is_err());
        }
    }
    // host names, device names: one table
    assert_eq!(
        device_name("torch.float8_e5m2fnuz".parse().unwrap()),
        Some("SEN152_FP8")
    );
}
