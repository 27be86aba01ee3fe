//! The store's files written at the disk's speed by many threads at once:
//! chunk and shard bytes reach the disk with direct I/O (`O_DIRECT`), through
//! an aligned staging buffer per writer thread, where the file system takes
//! it, and straight from where they are through the page cache elsewhere
//! (tmpfs, `--buffered-io`); metadata is replaced atomically, so a reader (or
//! a process killed mid-write) never sees a torn `zarr.json`.
//!
//! Written by hand rather than through `zarrs`' store: a shard is appended to
//! by the writer threads as its chunks are encoded, across epochs (no store
//! API appends), and its chunks are written where they are, without a copy.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use retile_plan::EpochBuffer;

/// The unit of direct I/O: offsets, lengths and addresses are multiples of it.
pub(crate) const BLOCK: usize = 4096;
/// The smallest chunk (uncompressed bytes) written with direct I/O unless
/// [`crate::ZarrOptions::direct_io_min_chunk`] says otherwise: a store of
/// smaller chunks writes through the page cache, which gathers their
/// writes; on the device host's disk 8 to 32 KiB chunks went 1.5-2.7x
/// faster that way, and 128 KiB ones 0.9-1.0x (BENCHMARKS, the
/// seventeenth session).
///
/// ```
/// assert_eq!(retile_store::DIRECT_IO_MIN_CHUNK, 65536);
/// ```
pub const DIRECT_IO_MIN_CHUNK: u64 = 64 << 10;
/// Bytes staged per writer thread before they are written.
pub(crate) const STAGE_BYTES: usize = 4 << 20;

thread_local! {
    /// Each writer thread's staging buffer, made on its first write.
    static STAGE: RefCell<Option<EpochBuffer>> = const { RefCell::new(None) };
}

/// A chunk or shard file being written by several writer threads: each
/// append is given its place in the file under the file's lock, and the
/// bytes reach the file at that place.
///
/// Through the page cache ([`LocalFile::Buffered`]) a task writes its
/// bytes straight from where they are (the epoch buffer, or the codec's
/// output) after releasing the lock, so that nothing is copied on the way
/// and the tasks of one shard place and encode in parallel; their writes
/// take turns ([`TurnFile`]). With direct I/O
/// ([`LocalFile::Direct`]) writes must be whole aligned blocks from aligned
/// memory, so the bytes go through the thread's aligned staging buffer,
/// under the lock, and the partial block at the end stays in memory until
/// the next append or the close.
pub(crate) enum LocalFile {
    /// Written through the page cache.
    Buffered {
        path: PathBuf,
        file: Option<Arc<TurnFile>>,
        len: u64,
    },
    /// Written with `O_DIRECT`.
    Direct {
        path: PathBuf,
        file: Option<File>,
        flushed: u64,
        tail: Vec<u8>,
    },
}

/// Where an append's bytes go: written already, or to be written at
/// `offset` of `file` by the caller once it has released the file's lock.
pub(crate) enum Placed {
    /// The bytes are in the file.
    Written,
    /// The caller writes the bytes at `offset`.
    At { file: Arc<TurnFile>, offset: u64 },
}

impl Placed {
    /// Writes `bytes` where they were placed (nothing if written already).
    pub fn write(&self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Placed::Written => Ok(()),
            Placed::At { file, offset } => file.write_all_at(bytes, *offset),
        }
    }
}

/// A file written through the page cache by several threads, one write
/// at a time. A file system takes one write to a file at a time anyway
/// (a lock per file), and threads that contend for that lock inside the
/// kernel spend CPU waiting: on the 16-core device host, 16 threads
/// writing 3 GiB into 4 files of `/dev/shm` spent 4.3-4.9 s of system
/// time, 4 threads 1.4 s, in the same wall time (BENCHMARKS, "The
/// tenth session"; `bench/file_writes_probe.py`). Waiting here puts the
/// thread to sleep instead, and leaves the cores to the codec and the tiler.
pub(crate) struct TurnFile {
    file: File,
    turn: Mutex<()>,
}

impl TurnFile {
    /// Writes `bytes` at `offset` once no other thread writes the file.
    fn write_all_at(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        let _turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
        self.file.write_all_at(bytes, offset)
    }
}

impl LocalFile {
    /// A file at `path`, not created until its first append.
    pub fn new(path: PathBuf, direct: bool) -> LocalFile {
        match direct {
            true => LocalFile::Direct {
                path,
                file: None,
                flushed: 0,
                tail: Vec::new(),
            },
            false => LocalFile::Buffered {
                path,
                file: None,
                len: 0,
            },
        }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        match self {
            LocalFile::Buffered { path, .. } | LocalFile::Direct { path, .. } => path,
        }
    }

    /// The length of the file once every placed append is written.
    pub fn len(&self) -> u64 {
        match self {
            LocalFile::Buffered { len, .. } => *len,
            LocalFile::Direct { flushed, tail, .. } => flushed + tail.len() as u64,
        }
    }

    /// Places `bytes` after what the file holds: writes them now (direct
    /// I/O), or says where the caller writes them.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<Placed> {
        match self {
            LocalFile::Buffered { path, file, len } => {
                let file = match file {
                    Some(file) => file.clone(),
                    None => file
                        .insert(Arc::new(TurnFile {
                            file: create(path, false)?,
                            turn: Mutex::new(()),
                        }))
                        .clone(),
                };
                let offset = *len;
                *len += bytes.len() as u64;
                Ok(Placed::At { file, offset })
            }
            LocalFile::Direct {
                path,
                file,
                flushed,
                tail,
            } => {
                let file = match file {
                    Some(file) => file,
                    None => file.insert(create(path, true)?),
                };
                append_direct(file, flushed, tail, bytes)?;
                Ok(Placed::Written)
            }
        }
    }

    /// Ends the file: its last partial block written (direct I/O), its
    /// length exact, the file created even when nothing was appended, and,
    /// with `sync`, its data on the disk. Every failure is reported, the
    /// close's own included (where a network file system reports a write
    /// that did not reach the server).
    pub fn close(&mut self, sync: bool) -> io::Result<u64> {
        let len = self.len();
        let file = match self {
            LocalFile::Buffered { path, file, .. } => match file.take() {
                // every placed write is done: no task holds the file now
                Some(file) => {
                    Arc::try_unwrap(file)
                        .map_err(|_| io::Error::other("the file is still being written"))?
                        .file
                }
                None => create(path, false)?,
            },
            LocalFile::Direct {
                path,
                file,
                flushed,
                tail,
            } => {
                let file = match file.take() {
                    Some(file) => file,
                    None => create(path, true)?,
                };
                if !tail.is_empty() {
                    let padded = tail.len().next_multiple_of(BLOCK);
                    with_stage(|stage| {
                        stage[..tail.len()].copy_from_slice(tail);
                        stage[tail.len()..padded].fill(0);
                        file.write_all_at(&stage[..padded], *flushed)
                    })??;
                    tail.clear();
                }
                file.set_len(len)?;
                file
            }
        };
        if sync {
            file.sync_data()?;
        }
        close_checked(file)?;
        Ok(len)
    }
}

/// Closes `file`, reporting the close's failure (dropping a `File` ignores
/// it). An interrupted close has closed the file all the same (Linux).
pub(crate) fn close_checked(file: File) -> io::Result<()> {
    use std::os::unix::io::IntoRawFd;
    let fd = file.into_raw_fd();
    // SAFETY: `fd` was just taken from a `File`, which no longer owns it.
    match unsafe { libc::close(fd) } {
        0 => Ok(()),
        _ => match io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::EINTR) => Ok(()),
            e => Err(e),
        },
    }
}

/// Creates (or truncates) `path` and the directories above it.
fn create(path: &Path, direct: bool) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(target_os = "linux")]
    if direct {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_DIRECT);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = direct;
    options.open(path)
}

/// Appends `bytes` to a direct-I/O file whose first `flushed` bytes are
/// written and whose partial last block is `tail`: whole blocks are written
/// through the thread's staging buffer, the new partial block kept.
fn append_direct(
    file: &File,
    flushed: &mut u64,
    tail: &mut Vec<u8>,
    mut bytes: &[u8],
) -> io::Result<()> {
    with_stage(|stage| {
        while !bytes.is_empty() {
            let kept = tail.len();
            stage[..kept].copy_from_slice(tail);
            let n = (STAGE_BYTES - kept).min(bytes.len());
            stage[kept..kept + n].copy_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            let filled = kept + n;
            let whole = filled / BLOCK * BLOCK;
            if whole > 0 {
                file.write_all_at(&stage[..whole], *flushed)?;
                *flushed += whole as u64;
            }
            tail.clear();
            tail.extend_from_slice(&stage[whole..filled]);
        }
        Ok(())
    })?
}

/// This thread's staging buffer, made on its first use.
fn take_stage() -> io::Result<EpochBuffer> {
    match STAGE.with(|s| s.borrow_mut().take()) {
        Some(stage) => Ok(stage),
        // made under a file's lock: filled here, not on the pool (see new_on_this_thread)
        None => EpochBuffer::new_on_this_thread(STAGE_BYTES, &[0]).map_err(io::Error::other),
    }
}

/// Keeps `stage` as this thread's staging buffer.
fn give_back_stage(stage: EpochBuffer) {
    STAGE.with(|s| *s.borrow_mut() = Some(stage));
}

/// Runs `f` with this thread's staging buffer.
fn with_stage<R>(f: impl FnOnce(&mut EpochBuffer) -> R) -> io::Result<R> {
    let mut stage = take_stage()?;
    let result = f(&mut stage);
    give_back_stage(stage);
    Ok(result)
}

/// Replaces `path` with `bytes` atomically: a new file beside it renamed
/// over it, so that a reader, or a process killed at any moment, sees the
/// old file or the new one whole. With `durable`, the new file and the
/// directory are also synced, to survive a power loss (a sync costs
/// milliseconds, too much for every epoch).
/// A failure leaves no new file behind (the old one stays).
pub(crate) fn replace_atomically(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = path.with_file_name(format!(".{name}.partial"));
    let written = write_whole(&partial, bytes, durable);
    if let Err(e) = written.and_then(|()| std::fs::rename(&partial, path)) {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    if let (true, Some(dir)) = (durable, path.parent()) {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Writes `bytes` to a new file at `path` (synced with `durable`), closed
/// with its failure reported.
fn write_whole(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    use std::io::Write;
    let mut file = File::create(path)?;
    file.write_all(bytes)?;
    if durable {
        file.sync_all()?;
    }
    close_checked(file)
}

/// Whether `dir`'s file system takes direct I/O and gains from it: not
/// one that lives in memory (tmpfs, ramfs: its pages are the storage, and
/// direct I/O would only serialise a shard's writes through a staging
/// copy), and one where a block written to a probe file opened with
/// `O_DIRECT` succeeds (some file systems refuse the flag, others the write).
#[cfg(target_os = "linux")]
pub(crate) fn direct_io_works(dir: &Path) -> bool {
    if in_memory(dir) {
        return false;
    }
    let probe = dir.join(".retile-direct-io-probe");
    let mut file = LocalFile::new(probe.clone(), true);
    let works = file
        .append(&[0; BLOCK])
        .and_then(|_| file.close(false))
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    works
}

/// Whether `dir` is on a file system held in memory (tmpfs, ramfs).
#[cfg(target_os = "linux")]
fn in_memory(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs writes one `struct statfs` into `info`, zeroed before.
    let mut info: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `info` a valid out-pointer.
    if unsafe { libc::statfs(path.as_ptr(), &mut info) } != 0 {
        return false;
    }
    matches!(info.f_type as i64, TMPFS_MAGIC | RAMFS_MAGIC)
}

/// Direct I/O is used on Linux only.
#[cfg(not(target_os = "linux"))]
pub(crate) fn direct_io_works(_: &Path) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends `pieces` to a file, `threads` at a time, each thread
    /// placing then writing its pieces as the sink's tasks do.
    fn appended(direct: bool, pieces: &[Vec<u8>], threads: usize) -> (Vec<u8>, Vec<u64>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file");
        let file = std::sync::Mutex::new(LocalFile::new(path.clone(), direct));
        let offsets = std::sync::Mutex::new(vec![0; pieces.len()]);
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(piece) = pieces.get(i) else { break };
                    let (placed, at) = {
                        let mut f = file.lock().unwrap();
                        let at = f.len();
                        (f.append(piece).unwrap(), at)
                    };
                    placed.write(piece).unwrap();
                    offsets.lock().unwrap()[i] = at;
                });
            }
        });
        let len = file.lock().unwrap().close(false).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len() as u64, len);
        (bytes, offsets.into_inner().unwrap())
    }

    #[test]
    fn appends_from_many_threads_land_where_they_were_placed() {
        let direct = direct_io_works(&std::env::temp_dir());
        let pieces: Vec<Vec<u8>> = [
            0usize,
            1,
            4095,
            4096,
            4097,
            STAGE_BYTES + 3,
            10,
            0,
            3 * STAGE_BYTES + 7,
            5,
        ]
        .iter()
        .enumerate()
        .map(|(i, &n)| (0..n).map(|k| (k * 31 + i) as u8).collect())
        .collect();
        for d in [false, direct] {
            for threads in [1, 4] {
                let (bytes, offsets) = appended(d, &pieces, threads);
                for (piece, &at) in pieces.iter().zip(&offsets) {
                    assert_eq!(
                        &bytes[at as usize..at as usize + piece.len()],
                        &piece[..],
                        "direct {d}, {threads} threads"
                    );
                }
                assert_eq!(bytes.len(), pieces.iter().map(Vec::len).sum::<usize>());
            }
        }
    }

    #[test]
    fn a_file_system_in_memory_is_written_through_the_page_cache() {
        // /proc/mounts says which directories are tmpfs; each is in memory
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let tmpfs: Vec<&str> = mounts
            .lines()
            .filter_map(|l| {
                l.split_whitespace()
                    .collect::<Vec<_>>()
                    .get(1..3)
                    .map(|f| (f[0], f[1]))
            })
            .filter(|(_, kind)| *kind == "tmpfs")
            .map(|(dir, _)| dir)
            .filter(|dir| Path::new(dir).is_dir())
            .collect();
        for dir in &tmpfs {
            assert!(in_memory(Path::new(dir)), "{dir}");
            assert!(!direct_io_works(Path::new(dir)), "{dir}");
        }
        assert!(!in_memory(Path::new("/nonexistent/retile")));
    }

    #[test]
    fn a_file_closed_without_appends_exists_and_is_empty() {
        for d in [false, direct_io_works(&std::env::temp_dir())] {
            let (bytes, _) = appended(d, &[], 1);
            assert!(bytes.is_empty());
        }
    }

    #[test]
    fn metadata_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zarr.json");
        replace_atomically(&path, b"{\"a\": 1}", false).unwrap();
        replace_atomically(&path, b"{}", true).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
