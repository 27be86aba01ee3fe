//! How fast a [`retile_halving::Halver`] takes planes that arrive whole,
//! in halves, or in pieces of a few rows: 2048 x 2048 u16 planes, mean,
//! halving the plane (and the planes' dimension), on all cores, in GB/s
//! of parent planes.
//!
//! `cargo run --release -p retile-halving --example halver_pieces`

use std::time::Instant;

use retile_halving::{Halver, Method};
use retile_plan::{DType, StreamSpec};

fn main() -> Result<(), retile_plan::StreamError> {
    let (h, w, planes) = (2048u64, 2048u64, 16usize);
    let parent: Vec<u16> = (0..planes * (h * w) as usize)
        .map(|i| (i * 7 % 4093) as u16)
        .collect();
    let bytes: &[u8] = bytemuck::cast_slice(&parent);
    let plane = (h * w) as usize * 2;
    let spec = StreamSpec::new(DType::U16, vec![0, h, w], vec![1, 256, 256])?;
    let pool = rayon::ThreadPoolBuilder::new().build().unwrap();
    for halve in [[false, true, true], [true, true, true]] {
        for (name, piece) in [
            ("whole planes", plane),
            ("half planes", plane / 2),
            (
                "pieces of 1000 rows and one element",
                1000 * w as usize * 2 + 2,
            ),
        ] {
            let mut best = f64::MAX;
            for _ in 0..5 {
                let mut halver = Halver::new(Method::Mean, &spec, &halve)?;
                let mut emitted = 0usize;
                let t = Instant::now();
                for chunk in bytes.chunks(piece) {
                    halver.push(chunk, &pool, &mut |c| {
                        emitted += c.len();
                        Ok(())
                    })?;
                }
                halver.flush(&pool, &mut |c| {
                    emitted += c.len();
                    Ok(())
                })?;
                best = best.min(t.elapsed().as_secs_f64());
                assert!(emitted > 0);
            }
            println!(
                "halve {halve:?}, {name}: {:.2} GB/s of parent planes on {} threads",
                bytes.len() as f64 / best / 1e9,
                pool.current_num_threads()
            );
        }
    }
    Ok(())
}
