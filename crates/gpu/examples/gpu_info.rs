//! Opens GPU 0 and says what it is, or why there is none.
//!
//! `cargo run -p retile-gpu --features cuda --example gpu_info`

fn main() {
    match retile_gpu::Gpu::open() {
        Ok(gpu) => println!(
            "{} with {} multiprocessors",
            gpu.name(),
            gpu.multiprocessors().unwrap_or(0)
        ),
        Err(e) => println!("no GPU: {e}"),
    }
}
