//! The store's files written at the disk's speed: chunk and shard bytes go
//! through an aligned staging buffer per writer thread and reach the disk
//! with direct I/O (`O_DIRECT`) where the file system takes it, in blocks of
//! megabytes; metadata is replaced atomically, so a reader (or a process
//! killed mid-write) never sees a torn `zarr.json`.
//!
//! Written by hand rather than through `zarrs`' store: a shard that spans
//! several epochs is appended to as each epoch lands (no store API appends),
//! and staging keeps every write aligned without a copy per chunk.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use retile_plan::{EpochBuffer, StreamError};

use crate::error::store_error;

/// The unit of direct I/O: offsets, lengths and addresses are multiples of it.
pub(crate) const BLOCK: usize = 4096;
/// Bytes staged per writer thread before they are written.
pub(crate) const STAGE_BYTES: usize = 4 << 20;

thread_local! {
    /// Each writer thread's staging buffer, made on its first write.
    static STAGE: RefCell<Option<EpochBuffer>> = const { RefCell::new(None) };
}

/// A file appended to over several calls: the bytes written in whole
/// blocks and the partial block after them, kept until the next call.
#[derive(Debug, Default)]
pub(crate) struct Appended {
    started: bool,
    flushed: u64,
    tail: Vec<u8>,
}

/// Appends to one file through the thread's staging buffer.
pub(crate) struct Appender<'s> {
    file: File,
    state: &'s mut Appended,
    stage: EpochBuffer,
    filled: usize,
}

impl<'s> Appender<'s> {
    /// Opens `path` for appending after `state` (creating it, and its
    /// directories, and truncating it on the first call).
    pub fn open(path: &Path, direct: bool, state: &'s mut Appended) -> io::Result<Appender<'s>> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(!state.started);
        #[cfg(target_os = "linux")]
        if direct {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_DIRECT);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = direct;
        let file = options.open(path)?;
        state.started = true;
        let mut stage = take_stage()?;
        let filled = state.tail.len();
        stage[..filled].copy_from_slice(&state.tail);
        Ok(Appender {
            file,
            state,
            stage,
            filled,
        })
    }

    /// The file offset the next pushed byte lands at.
    pub fn offset(&self) -> u64 {
        self.state.flushed + self.filled as u64
    }

    /// Appends `bytes`.
    pub fn push(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let filled = self.filled;
            let n = (STAGE_BYTES - filled).min(bytes.len());
            self.stage[filled..filled + n].copy_from_slice(&bytes[..n]);
            self.filled += n;
            bytes = &bytes[n..];
            if self.filled == STAGE_BYTES {
                self.write_blocks(STAGE_BYTES)?;
            }
        }
        Ok(())
    }

    /// Appends `parts` one after the other, writing the whole stage-sized
    /// segments they fill on all threads of the current pool at once (a
    /// shard's chunks would otherwise reach the disk one segment at a time);
    /// what is left over stays staged, as with [`Appender::push`].
    pub fn push_all(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        use rayon::prelude::*;
        let staged = &self.stage[..self.filled];
        let pieces: Vec<&[u8]> = std::iter::once(staged)
            .chain(parts.iter().copied())
            .collect();
        let total: usize = pieces.iter().map(|p| p.len()).sum();
        let segments = total / STAGE_BYTES;
        if segments < 2 {
            return parts.iter().try_for_each(|p| self.push(p));
        }
        let (file, base) = (&self.file, self.state.flushed);
        (0..segments).into_par_iter().try_for_each(|k| {
            with_stage(|stage| {
                gather(&pieces, k * STAGE_BYTES, &mut stage[..STAGE_BYTES]);
                std::os::unix::fs::FileExt::write_all_at(
                    file,
                    &stage[..STAGE_BYTES],
                    base + (k * STAGE_BYTES) as u64,
                )
            })?
        })?;
        let done = segments * STAGE_BYTES;
        let mut rest = vec![0; total - done];
        gather(&pieces, done, &mut rest);
        self.stage[..rest.len()].copy_from_slice(&rest);
        self.filled = rest.len();
        self.state.flushed += done as u64;
        Ok(())
    }

    /// Writes the first `len` staged bytes (a multiple of the block) and
    /// moves the rest to the front.
    fn write_blocks(&mut self, len: usize) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let at = self.state.flushed;
        self.file.write_all_at(&self.stage[..len], at)?;
        let rest = self.filled - len;
        self.stage.copy_within(len..len + rest, 0);
        self.filled = rest;
        self.state.flushed += len as u64;
        Ok(())
    }

    /// Keeps the staged bytes for the next appender of the same file when
    /// there are fewer than `hold` (small writes are slow writes), else
    /// writes every whole block and keeps the partial last one.
    pub fn pause(mut self, hold: usize) -> io::Result<()> {
        let whole = self.filled / BLOCK * BLOCK;
        if whole > 0 && self.filled >= hold {
            self.write_blocks(whole)?;
        }
        let filled = self.filled;
        self.state.tail = self.stage[..filled].to_vec();
        Ok(())
    }

    /// Writes everything and cuts the file to its exact length.
    pub fn close(mut self) -> io::Result<()> {
        let len = self.offset();
        let padded = self.filled.next_multiple_of(BLOCK);
        let filled = self.filled;
        self.stage[filled..padded].fill(0);
        self.filled = padded;
        if padded > 0 {
            self.write_blocks(padded)?;
        }
        self.state.tail.clear();
        self.file.set_len(len)
    }
}

impl Drop for Appender<'_> {
    fn drop(&mut self) {
        give_back_stage(std::mem::replace(&mut self.stage, EpochBuffer::empty()));
    }
}

/// Copies the bytes `start..start + out.len()` of the concatenation of
/// `pieces` into `out`.
fn gather(pieces: &[&[u8]], start: usize, out: &mut [u8]) {
    let (mut at, mut written) = (0, 0);
    for piece in pieces {
        let end = at + piece.len();
        if end > start && written < out.len() {
            let from = start.max(at) - at;
            let n = (piece.len() - from).min(out.len() - written);
            out[written..written + n].copy_from_slice(&piece[from..from + n]);
            written += n;
        }
        at = end;
    }
}

/// This thread's staging buffer, made on its first use.
fn take_stage() -> io::Result<EpochBuffer> {
    match STAGE.with(|s| s.borrow_mut().take()) {
        Some(stage) => Ok(stage),
        None => EpochBuffer::new(STAGE_BYTES, &[0]).map_err(io::Error::other),
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
pub(crate) fn replace_atomically(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = path.with_file_name(format!(".{name}.partial"));
    let mut file = File::create(&partial)?;
    file.write_all(bytes)?;
    if durable {
        file.sync_all()?;
    }
    std::fs::rename(&partial, path)?;
    if let (true, Some(dir)) = (durable, path.parent()) {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Whether `dir`'s file system takes direct I/O: a block written to a
/// probe file opened with `O_DIRECT` (some file systems refuse the flag,
/// others the write).
#[cfg(target_os = "linux")]
pub(crate) fn direct_io_works(dir: &Path) -> bool {
    let probe = dir.join(".retile-direct-io-probe");
    let mut state = Appended::default();
    let works = Appender::open(&probe, true, &mut state)
        .and_then(|mut a| a.push(&[0; BLOCK]).and_then(|()| a.close()))
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    works
}

/// Direct I/O is used on Linux only.
#[cfg(not(target_os = "linux"))]
pub(crate) fn direct_io_works(_: &Path) -> bool {
    false
}

/// Makes the store's directory: new, or emptied where `overwrite` allows.
pub(crate) fn prepare_directory(path: &Path, overwrite: bool) -> Result<(), StreamError> {
    let fail = |doing: &str, e: std::io::Error| store_error(path, doing, e);
    if path.exists() && !path.is_dir() {
        return Err(StreamError::Invalid(format!(
            "{} exists and is not a directory; a Zarr store is a directory",
            path.display()
        )));
    }
    if path.exists() {
        let mut entries = std::fs::read_dir(path)
            .map_err(|e| fail("reading the existing output directory", e))?;
        if entries.next().is_some() {
            if !overwrite {
                return Err(StreamError::Invalid(format!(
                    "{} already exists and is not empty; choose a new path, or ask to overwrite it (the old store is deleted)",
                    path.display()
                )));
            }
            if !path.join("zarr.json").is_file() {
                return Err(StreamError::Invalid(format!(
                    "{} is not a Zarr store (it has no zarr.json); refusing to delete it",
                    path.display()
                )));
            }
            std::fs::remove_dir_all(path).map_err(|e| fail("deleting the old store", e))?;
        }
    }
    std::fs::create_dir_all(path).map_err(|e| fail("creating the store directory", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn appended_in_pieces(direct: bool, pieces: &[Vec<u8>], pause_after: usize) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file");
        let mut state = Appended::default();
        let mut appender = Appender::open(&path, direct, &mut state).unwrap();
        for (i, piece) in pieces.iter().enumerate() {
            assert_eq!(
                appender.offset(),
                pieces[..i].iter().map(|p| p.len() as u64).sum::<u64>()
            );
            appender.push(piece).unwrap();
            if i == pause_after {
                appender
                    .pause(if i % 2 == 0 { 0 } else { STAGE_BYTES })
                    .unwrap();
                appender = Appender::open(&path, direct, &mut state).unwrap();
            }
        }
        appender.close().unwrap();
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn appends_across_pauses_give_the_exact_bytes() {
        let direct = direct_io_works(&std::env::temp_dir());
        let pieces: Vec<Vec<u8>> = [0usize, 1, 4095, 4096, 4097, STAGE_BYTES + 3, 10, 0]
            .iter()
            .enumerate()
            .map(|(i, &n)| (0..n).map(|k| (k * 31 + i) as u8).collect())
            .collect();
        let all: Vec<u8> = pieces.concat();
        for d in [false, direct] {
            for pause in [0, 2, 5, 99] {
                assert_eq!(
                    appended_in_pieces(d, &pieces, pause),
                    all,
                    "direct {d}, pause {pause}"
                );
            }
        }
    }

    #[test]
    fn parallel_appends_give_the_same_bytes_as_sequential_ones() {
        let direct = direct_io_works(&std::env::temp_dir());
        let pieces: Vec<Vec<u8>> = [
            5usize,
            STAGE_BYTES - 1,
            3 * STAGE_BYTES + 7,
            0,
            4096,
            STAGE_BYTES,
        ]
        .iter()
        .enumerate()
        .map(|(i, &n)| (0..n).map(|k| (k * 7 + i * 13) as u8).collect())
        .collect();
        for d in [false, direct] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("p");
            let mut state = Appended::default();
            let mut out = Appender::open(&path, d, &mut state).unwrap();
            out.push(&pieces[0]).unwrap();
            let rest: Vec<&[u8]> = pieces[1..4].iter().map(|p| &p[..]).collect();
            out.push_all(&rest).unwrap();
            assert_eq!(
                out.offset(),
                pieces[..4].iter().map(|p| p.len() as u64).sum::<u64>()
            );
            out.pause(BLOCK).unwrap();
            let mut out = Appender::open(&path, d, &mut state).unwrap();
            out.push_all(&[&pieces[4], &pieces[5]]).unwrap();
            out.close().unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), pieces.concat(), "direct {d}");
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
