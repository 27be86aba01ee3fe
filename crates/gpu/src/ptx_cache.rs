//! Compiled kernels kept on disk between runs: NVRTC takes a good part of
//! a second for each of a stream's kernels, which a short recording would
//! otherwise pay in every process. An entry is the kernel's source and its
//! PTX; it is used only when its source equals the one asked for, so a
//! stale or foreign file is never loaded. The cache is an optimisation: a
//! directory that cannot be read or written is passed over silently.
//!
//! Where: `RETILE_KERNEL_CACHE` (empty: no cache), else
//! `$XDG_CACHE_HOME/retile/kernels`, else `~/.cache/retile/kernels`.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;

/// Separates the source from the PTX in an entry (neither holds a NUL).
const SEPARATOR: char = '\0';

/// The cache's directory, or `None` for no cache.
fn directory() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("RETILE_KERNEL_CACHE") {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("retile").join("kernels"))
}

/// The entry's file for `source` compiled for `arch`.
fn entry(source: &str, arch: &str) -> Option<PathBuf> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (env!("CARGO_PKG_VERSION"), arch, source).hash(&mut hasher);
    Some(directory()?.join(format!("{arch}-{:016x}.ptx", hasher.finish())))
}

/// The PTX cached for `source` on `arch`, if an entry holds that source.
pub(crate) fn load(source: &str, arch: &str) -> Option<String> {
    let text = std::fs::read_to_string(entry(source, arch)?).ok()?;
    let (cached, ptx) = text.split_once(SEPARATOR)?;
    (cached == source).then(|| ptx.to_string())
}

/// Keeps `ptx` for `source` on `arch` (written whole, then renamed into
/// place, so that another process never reads half an entry).
pub(crate) fn store(source: &str, arch: &str, ptx: &str) {
    let Some(path) = entry(source, arch) else {
        return;
    };
    if source.contains(SEPARATOR) || ptx.contains(SEPARATOR) {
        return;
    }
    let Some(dir) = path.parent() else { return };
    let partial = path.with_extension(format!("{}.partial", std::process::id()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|_| std::fs::write(&partial, format!("{source}{SEPARATOR}{ptx}")))
        .and_then(|_| std::fs::rename(&partial, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_used_only_for_its_own_source() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("RETILE_KERNEL_CACHE", dir.path());
        assert_eq!(load("kernel a", "sm_90"), None);
        store("kernel a", "sm_90", "ptx of a");
        assert_eq!(load("kernel a", "sm_90").as_deref(), Some("ptx of a"));
        assert_eq!(load("kernel a", "sm_80"), None);
        assert_eq!(load("kernel b", "sm_90"), None);
        // an entry whose source differs (a collision, or a file written by
        // hand) is not loaded
        let path = entry("kernel b", "sm_90").unwrap();
        std::fs::write(&path, "another source\0bad ptx").unwrap();
        assert_eq!(load("kernel b", "sm_90"), None);
        // no cache at all
        std::env::set_var("RETILE_KERNEL_CACHE", "");
        store("kernel c", "sm_90", "ptx of c");
        assert_eq!(load("kernel c", "sm_90"), None);
        std::env::remove_var("RETILE_KERNEL_CACHE");
    }
}
