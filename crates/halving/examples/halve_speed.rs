//! How fast planes halve on this machine: 2048 x 2048 u16 planes, every
//! method, on all cores, in GB/s of parent planes.
//!
//! `cargo run --release -p retile-halving --example halve_speed`

use std::time::Instant;

use retile_halving::{halve_planes, Halving, Method};
use retile_plan::DType;

fn main() -> Result<(), retile_plan::StreamError> {
    let (h, w, planes) = (2048u64, 2048u64, 64usize);
    let parent: Vec<u16> = (0..planes * (h * w) as usize).map(|i| (i * 7 % 4093) as u16).collect();
    let bytes: &[u8] = bytemuck::cast_slice(&parent);
    let halving = Halving::new(&[h, w], &[true, true]);
    let mut child = vec![0u8; planes * halving.child_elements() * 2];
    for method in [Method::Mean, Method::Max, Method::Decimate, Method::Median] {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            halve_planes(method, DType::U16, &halving, 1, bytes, &mut child)?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("{method}: {:.2} GB/s of parent planes on {} threads", bytes.len() as f64 / best / 1e9, rayon::current_num_threads());
    }
    Ok(())
}
