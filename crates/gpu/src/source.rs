//! Helpers for the CUDA C++ source that retile generates.

/// The CUDA C type that moves `bytes` bytes in one access (16: `uint4`).
///
/// ```
/// assert_eq!(retile_gpu::c_type(8), "unsigned long long");
/// assert_eq!(retile_gpu::c_type(16), "uint4");
/// ```
pub fn c_type(bytes: usize) -> &'static str {
    match bytes {
        1 => "unsigned char",
        2 => "unsigned short",
        4 => "unsigned int",
        8 => "unsigned long long",
        _ => "uint4",
    }
}
