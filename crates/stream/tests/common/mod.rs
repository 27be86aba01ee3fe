//! Helpers shared by the memory tests (each runs alone in its own process).

/// Peak resident memory of this process since the last reset, in bytes.
#[cfg(target_os = "linux")]
pub fn peak() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}
