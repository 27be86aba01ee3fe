//! A local store's directory made ready for one stream: new, or emptied
//! (of a Zarr store where overwriting is allowed, of retile's own leftovers
//! always), locked for the stream's life ([`crate::lock`]), and synced to
//! the disk before the claims that need it.
//!
//! Overwriting deletes only what a Zarr store consists of: `zarr.json`
//! files, `c/` chunk trees (directories and files named by chunk
//! coordinates), the level arrays of an OME-Zarr image (directories named
//! by their level) and retile's leftovers ([`LEFTOVERS`]); anything else in
//! the directory is named and the store refused, never deleted. The
//! directory itself is kept (and a symbolic link to it followed), so that
//! its permissions, and a link to it, stay.

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use retile_plan::StreamError;

use crate::error::store_error;
use crate::lock::{live_owner, refusal, LocalLock, LOCK_NAME};

/// Files retile leaves in a store's directory besides the store: a
/// metadata document being replaced, the direct-I/O probe, the lock.
pub(crate) const LEFTOVERS: [&str; 3] =
    [".zarr.json.partial", ".retile-direct-io-probe", LOCK_NAME];

/// The suffix of a chunk or shard file written beside the one it replaces
/// (a stream appending to a store rewrites the row its claim ends in), and
/// renamed over it once whole: a leftover where the stream was killed.
pub(crate) const ASIDE: &str = ".partial";

/// A store's directory held for one stream: its lock, and the directory
/// open from before the first byte was written, so that syncing its file
/// system reports every failed write-back since.
#[derive(Debug)]
pub(crate) struct HeldDirectory {
    /// `None`: a slab of the store written by a task of a job whose caller
    /// holds the lock ([`open_unlocked`]).
    lock: Option<LocalLock>,
    dir: File,
    /// This stream made the directory.
    created: bool,
    /// The stream appends to the store that was there: a failed start
    /// leaves it as it was.
    resumed: bool,
}

impl HeldDirectory {
    /// Syncs every file and directory of the store's file system to the
    /// disk (`syncfs`: one call, whatever the number of files); fails if
    /// the disk failed to take any write since the store was made ready.
    pub fn sync_all(&self) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: syncfs on a descriptor `self.dir` owns.
            match unsafe { libc::syncfs(self.dir.as_raw_fd()) } {
                0 => Ok(()),
                _ => Err(io::Error::last_os_error()),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            // SAFETY: sync takes no arguments and cannot fail.
            unsafe { libc::sync() };
            let _ = self.dir.as_raw_fd();
            Ok(())
        }
    }

    /// Removes the store's directory too (if it is empty then) when the
    /// lock is released.
    pub fn remove_dir_on_release(&self) {
        if let Some(lock) = &self.lock {
            lock.remove_dir_on_release(true);
        }
    }
}

/// Syncs the directory at `path` (its entries: the files made in it).
pub(crate) fn sync_directory(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()
}

/// What a directory turned out to hold.
#[derive(Debug, PartialEq)]
enum Found {
    /// Nothing, or only retile's leftovers.
    Nothing,
    /// A Zarr store (and maybe leftovers).
    Store,
}

/// Why a directory may not be deleted.
enum Keep {
    /// An entry that is not part of a Zarr store.
    Foreign(PathBuf),
    /// A store inside, locked by a live stream.
    Locked(PathBuf, String),
    Io(io::Error),
}

impl From<io::Error> for Keep {
    fn from(e: io::Error) -> Keep {
        Keep::Io(e)
    }
}

/// Whether `name` is a chunk coordinate, or a level of an image.
fn is_number(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
}

/// Walks the store directory `dir` (an array, an image's group, a level
/// of one, or an acquisition's group of them): what it holds, or what forbids deleting it (`ours`: this
/// stream holds `dir`'s lock).
fn survey(dir: &Path, ours: bool) -> Result<Found, Keep> {
    let mut found = Found::Nothing;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let (path, kind) = (entry.path(), entry.file_type()?);
        let name = entry.file_name().to_string_lossy().into_owned();
        match name.as_str() {
            "zarr.json" if kind.is_file() => found = Found::Store,
            LOCK_NAME if kind.is_file() && !ours => {
                if let Some(owner) = live_owner(dir)? {
                    return Err(Keep::Locked(dir.to_owned(), owner));
                }
            }
            n if kind.is_file() && LEFTOVERS.contains(&n) => {}
            "c" if kind.is_dir() => {
                chunk_tree(&path)?;
                found = Found::Store;
            }
            n if kind.is_dir() && is_number(n) => {
                survey(&path, false)?;
                found = Found::Store;
            }
            // an array or group of an acquisition (`cam0`, a plate's `A`):
            // Zarr nodes alone inside, or it is not ours to delete
            _ if kind.is_dir() => match survey(&path, false)? {
                Found::Store => found = Found::Store,
                Found::Nothing => return Err(Keep::Foreign(path)),
            },
            _ => return Err(Keep::Foreign(path)),
        }
    }
    Ok(found)
}

/// Whether the object key `relative` (inside a store's prefix) names a part
/// of a store retile writes: a `zarr.json`, a chunk `c/<i>/<j>/...` or one
/// of retile's leftovers, at the root or inside numbered level arrays. The
/// same entries [`survey`] accepts in a directory.
pub(crate) fn is_store_key(relative: &str) -> bool {
    let mut parts = relative.split('/').skip_while(|p| is_number(p)).peekable();
    match parts.next() {
        Some("zarr.json") => parts.next().is_none(),
        Some(name) if LEFTOVERS.contains(&name) => parts.next().is_none(),
        Some("c") => parts.peek().is_some() && parts.all(is_number),
        _ => false,
    }
}

/// Checks that `dir` holds chunks alone: directories and files named by
/// chunk coordinates.
fn chunk_tree(dir: &Path) -> Result<(), Keep> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let (path, kind) = (entry.path(), entry.file_type()?);
        let name = entry.file_name().to_string_lossy().into_owned();
        let chunk = is_number(&name) && (kind.is_file() || kind.is_dir());
        let aside = kind.is_file() && name.strip_suffix(ASIDE).is_some_and(is_number);
        if !(chunk || aside) {
            return Err(Keep::Foreign(path));
        }
        if kind.is_dir() {
            chunk_tree(&path)?;
        }
    }
    Ok(())
}

/// The refusal of `path` for what [`survey`] found.
fn kept(path: &Path, keep: Keep) -> StreamError {
    match keep {
        Keep::Foreign(entry) => StreamError::Invalid(format!(
            "{} is not a Zarr store alone: it holds {}, which is not part of a Zarr store; refusing to delete anything there (move it away, or write elsewhere)",
            path.display(),
            entry.display()
        )),
        Keep::Locked(dir, owner) => refusal(&dir, &owner),
        Keep::Io(e) => store_error(path, "reading the existing output directory", e),
    }
}

/// Refuses `path` if it lies inside a store that a live stream writes.
fn check_enclosing_stores(path: &Path) -> Result<(), StreamError> {
    // the directories around it as the file system names them (a link followed)
    let around = match std::fs::canonicalize(path) {
        Ok(real) => real.parent().map(Path::to_owned),
        Err(_) => path
            .ancestors()
            .skip(1)
            .find(|a| a.is_dir())
            .map(|a| std::fs::canonicalize(a).unwrap_or_else(|_| a.to_owned())),
    };
    let Some(around) = around else {
        return Ok(());
    };
    for dir in around.ancestors() {
        let owner = live_owner(dir)
            .map_err(|e| store_error(path, "looking for a stream writing around it", e))?;
        if let Some(owner) = owner {
            return Err(refusal(dir, &owner));
        }
    }
    Ok(())
}

/// Follows `path` if it is a symbolic link: the directory it points to,
/// which must exist (a link is never replaced).
fn follow(path: &Path) -> Result<(), StreamError> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link && !path.exists() {
        let target = std::fs::read_link(path).unwrap_or_default();
        return Err(StreamError::Invalid(format!(
            "{} is a symbolic link to {}, which does not exist; make that directory, or write elsewhere (a link is never replaced)",
            path.display(),
            target.display()
        )));
    }
    if path.exists() && !path.is_dir() {
        return Err(StreamError::Invalid(format!(
            "{} exists and is not a directory; a Zarr store is a directory",
            path.display()
        )));
    }
    Ok(())
}

/// Whether the directory `path` holds only retile's leftovers (or nothing).
fn only_leftovers(path: &Path) -> io::Result<bool> {
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let name = entry.file_name();
        if !(entry.file_type()?.is_file() && LEFTOVERS.contains(&&*name.to_string_lossy())) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Checks what `path` holds against `overwrite`: a live stream's store is
/// refused, and so is a store (without `overwrite`) or anything that is
/// not part of one (`ours`: this stream holds the lock of `path`).
fn check_contents(path: &Path, overwrite: bool, ours: bool) -> Result<(), StreamError> {
    let fail = |e| store_error(path, "reading the existing output directory", e);
    if let Some(owner) = live_owner(path).map_err(fail)?.filter(|_| !ours) {
        return Err(refusal(path, &owner));
    }
    if only_leftovers(path).map_err(fail)? {
        return Ok(());
    }
    if !overwrite {
        return Err(StreamError::Invalid(format!(
            "{} already exists and is not empty; choose a new path, or ask to overwrite it (the old store is deleted)",
            path.display()
        )));
    }
    survey(path, ours)
        .map(drop)
        .map_err(|keep| kept(path, keep))
}

/// Deletes every entry of `path` but its lock: the store and leftovers
/// [`check_contents`] allowed.
fn empty(path: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        if entry.file_name() == LOCK_NAME {
            continue;
        }
        match entry.file_type()?.is_dir() {
            true => std::fs::remove_dir_all(entry.path())?,
            false => std::fs::remove_file(entry.path())?,
        }
    }
    Ok(())
}

/// Makes the store's directory ready for one stream and locks it: new, or
/// emptied of retile's leftovers, and of a Zarr store where `overwrite`
/// allows; refused while another stream writes it or a store around it.
pub(crate) fn prepare_directory(
    path: &Path,
    overwrite: bool,
) -> Result<Arc<HeldDirectory>, StreamError> {
    let fail = |doing: &str, e: io::Error| store_error(path, doing, e);
    follow(path)?;
    check_enclosing_stores(path)?;
    let created = !path.exists();
    if !created {
        // refused here, before the directory is touched
        check_contents(path, overwrite, false)?;
    }
    std::fs::create_dir_all(path).map_err(|e| fail("creating the store directory", e))?;
    let lock = LocalLock::acquire(path)
        .map_err(|e| fail("locking the store", e))?
        .map_err(|owner| refusal(path, &owner))?;
    let dir = File::open(path).map_err(|e| fail("opening the store directory", e))?;
    let held = Arc::new(HeldDirectory {
        lock: Some(lock),
        dir,
        created,
        resumed: false,
    });
    // again under the lock: another stream may have written meanwhile
    if let Err(e) = check_contents(path, overwrite, true) {
        if created {
            held.remove_dir_on_release();
        }
        return Err(e);
    }
    empty(path).map_err(|e| fail("deleting the old store", e))?;
    Ok(held)
}

/// The directory of an array that a job made ready, and whose lock its
/// caller holds, opened by one of the job's tasks to write a slab of it:
/// neither locked nor emptied; it must exist.
pub(crate) fn open_unlocked(path: &Path) -> Result<Arc<HeldDirectory>, StreamError> {
    follow(path)?;
    if !path.is_dir() {
        return Err(StreamError::Invalid(format!(
            "{} is not a directory: a slab is written into a store its job made ready first",
            path.display()
        )));
    }
    let dir = File::open(path).map_err(|e| store_error(path, "opening the store directory", e))?;
    Ok(Arc::new(HeldDirectory {
        lock: None,
        dir,
        created: false,
        resumed: false,
    }))
}

/// Locks the store at `path` for a stream that appends to it: the
/// directory must hold a Zarr array or group, which is kept as it is;
/// refused while another stream writes it or a store around it (the lock
/// of a killed stream is released by the kernel, so it never refuses).
pub(crate) fn reopen_directory(path: &Path) -> Result<Arc<HeldDirectory>, StreamError> {
    let fail = |doing: &str, e: io::Error| store_error(path, doing, e);
    follow(path)?;
    check_enclosing_stores(path)?;
    if !path.join("zarr.json").is_file() {
        return Err(StreamError::Invalid(format!(
            "{} holds no Zarr store to append to (no zarr.json); write a new store there without appending",
            path.display()
        )));
    }
    let lock = LocalLock::acquire(path)
        .map_err(|e| fail("locking the store", e))?
        .map_err(|owner| refusal(path, &owner))?;
    let dir = File::open(path).map_err(|e| fail("opening the store directory", e))?;
    Ok(Arc::new(HeldDirectory {
        lock: Some(lock),
        dir,
        created: false,
        resumed: true,
    }))
}

/// Checks that the array inside a store this stream holds (a level of an
/// image) is there to be appended to.
pub(crate) fn reopen_inner_directory(path: &Path) -> Result<(), StreamError> {
    follow(path)?;
    match path.join("zarr.json").is_file() {
        true => Ok(()),
        false => Err(StreamError::Invalid(format!(
            "{} holds no Zarr array to append to (no zarr.json): the store is not whole",
            path.display()
        ))),
    }
}

/// Removes the chunk or shard files of the array at `path` whose first
/// grid coordinate is `first_row` or more (`c/<row>/...`): rows a killed
/// stream wrote and never claimed.
pub(crate) fn remove_rows_from(path: &Path, first_row: u64) -> io::Result<()> {
    let chunks = path.join("c");
    let entries = match std::fs::read_dir(&chunks) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let row = name.strip_suffix(ASIDE).unwrap_or(&name);
        if !row.parse::<u64>().is_ok_and(|row| row >= first_row) {
            continue;
        }
        match entry.file_type()?.is_dir() {
            true => std::fs::remove_dir_all(entry.path())?,
            false => std::fs::remove_file(entry.path())?,
        }
    }
    Ok(())
}

/// Makes the directory of an array inside a store this stream holds (a
/// level of an image), which must be new or empty.
pub(crate) fn prepare_inner_directory(path: &Path) -> Result<(), StreamError> {
    follow(path)?;
    if path.exists()
        && !only_leftovers(path)
            .map_err(|e| store_error(path, "reading the array's directory", e))?
    {
        return Err(StreamError::Invalid(format!(
            "{} already exists and is not empty",
            path.display()
        )));
    }
    std::fs::create_dir_all(path)
        .map_err(|e| store_error(path, "creating the array directory", e))?;
    empty(path).map_err(|e| store_error(path, "emptying the array directory", e))
}

/// Removes what a stream that failed to start made in its store at
/// `path`: every entry but the lock, and the directory itself (once the
/// lock is released) if the stream made it.
pub(crate) fn abandon(path: &Path, held: &HeldDirectory) {
    if held.resumed {
        return;
    }
    let _ = empty(path);
    if held.created {
        held.remove_dir_on_release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_key_is_metadata_a_chunk_or_a_leftover_at_the_root_or_in_a_level() {
        for key in [
            "zarr.json",
            "c/0",
            "c/0/12/3",
            "2/zarr.json",
            "1/c/0/3",
            ".retile.lock",
        ] {
            assert!(is_store_key(key), "{key}");
        }
        for key in [
            "",
            "notes.txt",
            "c",
            "c/x",
            "c/0/",
            "a/zarr.json",
            "zarr.json/x",
            "0",
            "1/c",
        ] {
            assert!(!is_store_key(key), "{key}");
        }
    }

    #[test]
    fn numbers_are_digits_alone() {
        assert!(is_number("0") && is_number("0123"));
        assert!(!is_number("") && !is_number("c") && !is_number("1a") && !is_number("-1"));
    }
}
