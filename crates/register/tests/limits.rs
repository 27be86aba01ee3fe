//! Hostile sizes (issue 20): what a short expression can ask of memory and
//! time stays bounded, and long lists of dimensions cost linear time.

use retile_register::{local, replicated, spatial, spatial_ranked};

#[test]
fn listings_and_drawings_are_capped_at_65536_entries() {
    let err = replicated(&[1], 65537).unwrap().holders(&[0]).unwrap_err();
    assert!(
        err.to_string().contains("more than retile lists (65536)"),
        "{err}"
    );
    assert_eq!(
        replicated(&[1], 65536)
            .unwrap()
            .holders(&[0])
            .unwrap()
            .len(),
        65536
    );
    let err = spatial(&[2048, 2048]).unwrap().visualize().unwrap_err();
    assert!(
        err.to_string().contains("more than retile draws (65536)"),
        "{err}"
    );
    assert!(spatial(&[256, 256]).unwrap().visualize().is_ok());
}

#[test]
fn a_hundred_thousand_dimensions_cost_linear_time() {
    let n = 100_000;
    let dims: Vec<i64> = (0..n).collect();
    let ones = vec![1; n as usize];
    let start = std::time::Instant::now();
    let wide = spatial(&[2]).unwrap().unsqueeze(&dims).unwrap();
    assert_eq!(wide.shape().len(), n as usize + 1);
    let back = wide.squeeze(&dims).unwrap();
    assert_eq!(back, spatial(&[2]).unwrap());
    let reduced = wide.reduce(&dims, true).unwrap();
    assert_eq!(reduced.shape().len(), n as usize + 1);
    let reversed: Vec<i64> = dims.iter().rev().copied().collect();
    assert_eq!(
        spatial_ranked(&ones, Some(&reversed)).unwrap(),
        local(&ones)
            .unwrap()
            .compose(&spatial(&ones).unwrap())
            .unwrap()
    );
    // quadratic work (10^10 steps) would take minutes even in a release build
    assert!(start.elapsed().as_secs() < 60, "{:?}", start.elapsed());
}
