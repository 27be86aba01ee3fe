use cc::Build;
use std::env;
use std::fs;

/// The files that hold c-blosc's AVX2 kernels (built apart: see below).
const AVX2_KERNELS: [&str; 2] = ["shuffle-avx2.c", "bitshuffle-avx2.c"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // retile's change: c-blosc's own sources are edited here too (its zstd contexts)
    println!("cargo:rerun-if-changed=c-blosc/blosc/blosc.c");

    let mut build = cc::Build::new();

    let target_mscv = env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("msvc");
    let add_file = |builder: &mut Build, folder: &str| {
        for entry in fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if let Some(extension) = path.extension() {
                let avx2_kernel = path.to_str().is_some_and(|p| AVX2_KERNELS.iter().any(|k| p.ends_with(k)));
                if !avx2_kernel
                    && (extension == "c" || extension == "cpp" || (!target_mscv && extension == "S"))
                {
                    builder.file(path);
                }
            }
        }
    };

    add_file(&mut build, "c-blosc/blosc");
    let target_features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let target_features = target_features.split(',').collect::<Vec<_>>();

    if target_features.contains(&"sse2") {
        build.define("SHUFFLE_SSE2_ENABLED", "1");
        if target_mscv {
            if env::var("CARGO_CFG_TARGET_POINTER_WIDTH").as_deref() == Ok("32") {
                build.flag("/arch:SSE2");
            }
        } else {
            build.flag("-msse2");
        }
    }
    // retile's change: c-blosc chooses its shuffle at run time (cpuid and
    // xgetbv in shuffle.c), so its AVX2 kernels are built on every x86 target,
    // alone with -mavx2, as c-blosc's own CMake build does. Upstream built
    // them only where the whole target had AVX2, which a portable build
    // never has: the SSE2 shuffle then took 1.7 times the CPU of the lz4
    // compression it feeds (a blosc-lz4:1 stream of u16 frames, profiled).
    let x86 = matches!(
        env::var("CARGO_CFG_TARGET_ARCH").as_deref(),
        Ok("x86_64") | Ok("x86")
    );
    if x86 && !target_mscv {
        build.define("SHUFFLE_AVX2_ENABLED", "1");
        let mut kernels = cc::Build::new();
        kernels.define("SHUFFLE_AVX2_ENABLED", "1").flag("-mavx2");
        if target_features.contains(&"sse2") {
            kernels.define("SHUFFLE_SSE2_ENABLED", "1").flag("-msse2");
        }
        for kernel in AVX2_KERNELS {
            kernels.file(format!("c-blosc/blosc/{kernel}"));
        }
        for object in kernels.compile_intermediates() {
            build.object(object);
        }
    } else {
        if target_features.contains(&"avx2") {
            build.define("SHUFFLE_AVX2_ENABLED", "1");
            if target_mscv {
                build.flag("/arch:AVX2");
            } else {
                build.flag("-mavx2");
            }
        }
        for kernel in AVX2_KERNELS {
            build.file(format!("c-blosc/blosc/{kernel}"));
        }
    }

    if cfg!(feature = "lz4") {
        let lz4_include_dir = std::env::var_os("DEP_LZ4_INCLUDE").unwrap();
        build.include(&lz4_include_dir);
        build.define("HAVE_LZ4", None);
    }
    if cfg!(feature = "zlib") {
        let zlib_include_dir = std::env::var_os("DEP_Z_INCLUDE").unwrap();
        build.include(&zlib_include_dir);
        build.define("HAVE_ZLIB", None);
    }

    if cfg!(feature = "zstd") {
        let zstd_include_dir = std::env::var_os("DEP_ZSTD_INCLUDE").unwrap();
        build.include(&zstd_include_dir);
        build.define("HAVE_ZSTD", None);
    }
    if cfg!(feature = "snappy") {
        let snappy_include_dir = std::env::var_os("DEP_SNAPPY_INCLUDE").unwrap();
        build.include(&snappy_include_dir);
        build.define("HAVE_SNAPPY", None);
    }

    let linklib = if cfg!(target_env = "msvc") {
        "libblosc"
    } else {
        "blosc"
    };
    build.compile(linklib);
}
