//! An NCHW -> NHWC permute on the GPU (feature `cuda`, a GPU and NVRTC at
//! run time), checked against the CPU reference.
//!
//! ```sh
//! cargo run --release -p retile-copy --features cuda --example gpu_permute
//! ```

use retile_copy::gpu::{CompiledPermute, Gpu};
use retile_copy::{permute_reference, Permute};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (n, c, h, w) = (8, 64, 56, 56);
    let p = Permute::new(&[n, c, h, w], &[0, 2, 3, 1], 4)?;
    let input: Vec<u8> = (0..p.elements() as usize * 4)
        .map(|i| (i * 13 % 251) as u8)
        .collect();
    let gpu = Gpu::open()?;
    let compiled = CompiledPermute::new(&gpu, &p)?;
    let d_in = gpu.stream().memcpy_stod(&input)?;
    let mut d_out = gpu.stream().alloc_zeros::<u8>(input.len())?;
    compiled.launch(&d_in, &mut d_out)?;
    let out = gpu.stream().memcpy_dtov(&d_out)?;
    assert_eq!(out, permute_reference(&p, &input)?);
    println!(
        "NCHW -> NHWC f32 on {}: {} bytes permuted, equal to the CPU reference",
        gpu.name(),
        out.len()
    );
    Ok(())
}
