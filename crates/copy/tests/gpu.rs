//! GPU permutes against the CPU reference (feature `cuda`). The tests that
//! need a GPU or NVRTC are ignored by default, so a machine without one
//! reports them as not run; `cargo test --features cuda -- --ignored` runs
//! them on a GPU machine.
#![cfg(feature = "cuda")]

use retile_copy::gpu::{compile_only, permute, permute_kernel, Gpu};
use retile_copy::{permute_reference, Permute};

/// Small deterministic generator (no GPU-side randomness to reproduce).
struct Rng(u64);

impl Rng {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

fn cases() -> Vec<Permute> {
    let mut rng = Rng(7);
    let mut out = vec![
        Permute::new(&[256, 192], &[1, 0], 2).unwrap(),
        Permute::new(&[130, 67], &[1, 0], 4).unwrap(),
        Permute::new(&[8, 64, 32, 64, 4, 64], &[0, 2, 4, 1, 3, 5], 2).unwrap(),
        Permute::new(&[3, 5, 7, 9], &[3, 1, 0, 2], 1).unwrap(),
        Permute::new(&[1, 1, 1], &[2, 0, 1], 8).unwrap(),
    ];
    while out.len() < 60 {
        let rank = 1 + rng.next(5) as usize;
        let shape: Vec<i64> = (0..rank).map(|_| 1 + rng.next(40) as i64).collect();
        if shape.iter().product::<i64>() > 400_000 {
            continue;
        }
        let mut perm: Vec<usize> = (0..rank).collect();
        for i in (1..rank).rev() {
            perm.swap(i, rng.next(i as u64 + 1) as usize);
        }
        let e = [1, 2, 4, 8][rng.next(4) as usize];
        out.push(Permute::new(&shape, &perm, e).unwrap());
    }
    out
}

#[test]
fn transpose_kernels_move_the_units_the_planner_transposes_in_registers() {
    // the planner transposes p x p blocks in 8-byte registers: p = 8 / e,
    // fewer where an extent is not a multiple of it
    for (e, shape, p) in [
        (1, [64, 96], 8),
        (2, [64, 96], 4),
        (4, [64, 96], 2),
        (8, [64, 96], 1),
        (1, [64, 100], 4),
        (2, [62, 96], 2),
        (1, [63, 96], 1),
    ] {
        let permute = Permute::new(&shape, &[1, 0], e).unwrap();
        let source = permute_kernel(&permute, 132).source;
        assert!(
            source.contains(&format!("#define P {p}\n")),
            "{e}-byte elements, shape {shape:?}: expected P = {p}"
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU with its driver and NVRTC: run with --ignored on a GPU machine"]
fn generated_kernels_compile_with_nvrtc() {
    for p in cases() {
        compile_only(&permute_kernel(&p, 132).source, "sm_90").unwrap();
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU with its driver and NVRTC: run with --ignored on a GPU machine"]
fn permutes_match_the_reference() {
    let gpu = Gpu::open().expect("a GPU: this test runs only with --ignored on a GPU machine");
    let mut rng = Rng(11);
    for p in cases() {
        let bytes = p.elements() as usize * p.element_bytes;
        let input: Vec<u8> = (0..bytes).map(|_| rng.next(256) as u8).collect();
        let d_in = gpu.stream().memcpy_stod(&input).unwrap();
        let mut d_out = gpu.stream().alloc_zeros::<u8>(bytes).unwrap();
        permute(&gpu, &p, &d_in, &mut d_out).unwrap();
        let got = gpu.stream().memcpy_dtov(&d_out).unwrap();
        assert!(
            got == permute_reference(&p, &input).unwrap(),
            "permute {p:?} differs from the reference"
        );
    }
}
