//! A regular file read in place: where the kernel grants retile a read
//! lease on it (retile owns the file, and no program has it open for
//! writing), the file is mapped whole, read-only, and each piece handed to
//! the stream is a view of its cached pages, so the input costs no copy.
//!
//! The stream never waits for a reader thread: helper threads fault the
//! pages in ahead of it (`MADV_POPULATE_READ`, at most [`AHEAD_BYTES`]
//! ahead) and let go of them behind it (`MADV_DONTNEED`, which only unmaps:
//! the pages stay in the page cache), and where the stream outruns them it
//! faults the pages in itself.
//!
//! While the lease is held no program can truncate or rewrite the file
//! without the kernel first asking retile to let go (the other program
//! waits, up to `/proc/sys/fs/lease-break-time`). Before each piece retile
//! looks whether it was asked: if so it maps no more, reads the rest with
//! `pread` like any file, and lets go once every piece handed on is given
//! back and the file unmapped. So a file cut short while it is read is a
//! short read, reported as an error, never a `SIGBUS`, as long as no piece
//! is held longer than the kernel waits (45 s by default); streams into
//! object storage, whose requests are retried for minutes, copy instead
//! ([`super::Pages`]).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::{file_reader_threads, Buffer, InputError, Next, Readers};

/// Bytes the helpers fault in ahead of the stream at most.
pub(super) const AHEAD_BYTES: u64 = 64 << 20;

/// Bytes a helper faults in at a time (a whole number of pages).
const WINDOW_BYTES: u64 = 2 << 20;

/// Bytes behind the stream let go at a time, at least (a whole number of windows).
const DROP_BYTES: u64 = 16 << 20;

/// The input file, and where its read lease stands.
pub(super) struct LeasedFile {
    pub(super) file: File,
    lease: Mutex<Lease>,
}

/// Where a [`LeasedFile`]'s lease stands.
#[derive(Default)]
struct Lease {
    /// The lease is held.
    held: bool,
    /// The kernel asked for it back (or the file could not be mapped):
    /// nothing more is mapped, and it is let go once nothing is.
    ending: bool,
    /// The file is mapped.
    mapped: bool,
}

impl LeasedFile {
    /// `file` with a read lease, where the kernel grants one; the file
    /// back where it does not.
    pub(super) fn lease(file: File) -> Result<LeasedFile, File> {
        match take_read_lease(&file) {
            true => Ok(LeasedFile {
                file,
                lease: Mutex::new(Lease {
                    held: true,
                    ..Lease::default()
                }),
            }),
            false => Err(file),
        }
    }

    /// The file, its lease let go.
    fn into_file(self) -> File {
        self.end();
        self.file
    }

    /// Whether the kernel asked for the lease back (it then reports the
    /// type it is breaking to, no longer a read lease), or it is gone.
    fn asked_back(&self) -> bool {
        let Ok(mut lease) = self.lease.lock() else {
            return true;
        };
        if lease.held && !lease.ending {
            // SAFETY: fcntl on a descriptor we own.
            let kind = unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_GETLEASE) };
            lease.ending = kind != libc::F_RDLCK;
        }
        let asked = lease.ending || !lease.held;
        if asked {
            self.let_go_when_unmapped(&mut lease);
        }
        asked
    }

    /// Records whether the file is mapped; once it is not, an ending lease is let go.
    fn set_mapped(&self, mapped: bool) {
        if let Ok(mut lease) = self.lease.lock() {
            lease.mapped = mapped;
            self.let_go_when_unmapped(&mut lease);
        }
    }

    /// Maps nothing more, and lets the lease go once nothing is mapped.
    fn end(&self) {
        if let Ok(mut lease) = self.lease.lock() {
            lease.ending = true;
            self.let_go_when_unmapped(&mut lease);
        }
    }

    /// Lets the lease go once it is ending and the file unmapped, so that
    /// the program waiting for it goes on.
    fn let_go_when_unmapped(&self, lease: &mut Lease) {
        if lease.held && lease.ending && !lease.mapped {
            // SAFETY: fcntl on a descriptor we own.
            unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
            lease.held = false;
        }
    }
}

/// Takes a read lease on `file`, without the signal the kernel sends when
/// it asks for the lease back (SIGIO, which ends a process by default: it
/// is ignored where nothing handles it, and the file's owner is cleared so
/// that none is sent); `false` where the kernel refuses one.
fn take_read_lease(file: &File) -> bool {
    let fd = file.as_raw_fd();
    // SAFETY: reads SIGIO's disposition into a zeroed sigaction, and sets
    // it to ignore only where it is the default (nothing else handles it).
    unsafe {
        let mut now: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGIO, std::ptr::null(), &mut now) != 0
            || now.sa_sigaction != libc::SIG_DFL && now.sa_sigaction != libc::SIG_IGN
        {
            return false;
        }
        libc::signal(libc::SIGIO, libc::SIG_IGN);
    }
    // SAFETY: fcntl on a descriptor we own.
    let leased = unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) } == 0;
    if leased {
        // SAFETY: as above; an owner of 0 sends no signal.
        unsafe { libc::fcntl(fd, libc::F_SETOWN, 0) };
    }
    leased
}

/// A leased file mapped whole, read-only: the pages its pieces are views
/// of. Unmapped when the last piece and the reader drop it.
pub(super) struct FileMap {
    file: Arc<LeasedFile>,
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is read-only and lives as long as the FileMap; its
// pages are only read, from any thread.
unsafe impl Send for FileMap {}
// SAFETY: as above.
unsafe impl Sync for FileMap {}

impl FileMap {
    /// The first `len > 0` bytes of `file` mapped; the file back where
    /// they cannot be.
    fn new(file: LeasedFile, len: u64) -> Result<FileMap, LeasedFile> {
        let Some(len) = usize::try_from(len).ok().filter(|&n| n > 0) else {
            return Err(file);
        };
        // SAFETY: a read-only shared mapping of a file we hold open and
        // leased (so it does not shrink below `len`), no address hint;
        // checked against MAP_FAILED before use.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.file.as_raw_fd(),
                0,
            )
        };
        let Some(base) = NonNull::new(base.cast::<u8>()).filter(|_| base != libc::MAP_FAILED)
        else {
            return Err(file);
        };
        file.set_mapped(true);
        Ok(FileMap {
            file: Arc::new(file),
            base,
            len,
        })
    }

    /// `len` bytes from `offset` on, within the mapping.
    pub(super) fn bytes(&self, offset: u64, len: usize) -> &[u8] {
        let start = usize::try_from(offset).unwrap_or(self.len).min(self.len);
        let len = len.min(self.len - start);
        // SAFETY: `start..start + len` lies in the mapping, which lives as
        // long as `self` and is never written.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(start), len) }
    }

    /// Advises the kernel about the whole pages in `range` (clamped to the
    /// mapping); whether it took the advice.
    fn advise(&self, range: std::ops::Range<u64>, advice: libc::c_int) -> bool {
        let end = range.end.min(self.len as u64);
        if range.start >= end {
            return true;
        }
        // SAFETY: advice on a page-aligned range inside our own mapping
        // (`range.start` is a multiple of the page size where it is called).
        unsafe {
            libc::madvise(
                self.base.as_ptr().add(range.start as usize).cast(),
                (end - range.start) as usize,
                advice,
            ) == 0
        }
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, which no piece uses any more.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        self.file.set_mapped(false);
    }
}

/// Where the stream stands, shared with the helpers.
struct Position {
    /// The start of the piece handed on last: the pages before it are let go.
    at: u64,
    /// The next window to fault in.
    populate: u64,
    /// Pages before this are let go.
    dropped: u64,
    /// The helpers stop.
    stop: bool,
}

/// The stream's position and the helpers' signal that it moved.
struct Ahead {
    position: Mutex<Position>,
    moved: Condvar,
}

/// A leased file read in place, in pieces of `piece` bytes.
pub(super) struct InPlace {
    map: Option<Arc<FileMap>>,
    name: String,
    /// The next byte to hand on, and the file's length when leased.
    next: u64,
    end: u64,
    piece: u64,
    ahead: Arc<Ahead>,
    helpers: Vec<JoinHandle<()>>,
    /// The rest of the file, read with `pread` once the lease is asked back.
    rest: Option<Readers>,
    /// The free ring the rest's readers will take their buffers from.
    ring: (Sender<Buffer>, Option<Receiver<Buffer>>),
}

impl InPlace {
    /// `file` read in place from its current offset in pieces of `piece`
    /// bytes; the file back where it cannot be (no lease, or no mapping).
    pub(super) fn open(file: File, name: String, piece: usize) -> Result<InPlace, File> {
        // SAFETY: lseek on a descriptor we own; -1 is checked.
        let start = u64::try_from(unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_CUR) });
        let leased = LeasedFile::lease(file)?;
        // measured once leased, so that the file is at least this long
        let end = leased.file.metadata().map(|m| m.len()).unwrap_or(0);
        let start = match start {
            Ok(start) if start <= end => start,
            _ => return Err(leased.into_file()),
        };
        let map = match FileMap::new(leased, end) {
            Ok(map) => Arc::new(map),
            Err(leased) => return Err(leased.into_file()),
        };
        let window = start - start % WINDOW_BYTES;
        let ahead = Arc::new(Ahead {
            position: Mutex::new(Position {
                at: start,
                populate: window,
                dropped: window,
                stop: false,
            }),
            moved: Condvar::new(),
        });
        let helpers = (0..file_reader_threads())
            .filter_map(|t| {
                let (map, ahead) = (map.clone(), ahead.clone());
                std::thread::Builder::new()
                    .name(format!("retile-fault-in-{t}"))
                    .spawn(move || fault_in_ahead(&map, &ahead))
                    .ok()
            })
            .collect();
        Ok(InPlace {
            map: Some(map),
            name,
            next: start,
            end,
            piece: piece.max(1) as u64,
            ahead,
            helpers,
            rest: None,
            ring: {
                let (free, free_rx) = channel();
                (free, Some(free_rx))
            },
        })
    }

    /// Where pieces' buffers go back to: views are dropped, and the
    /// rest's readers (once there are) take their ring's buffers from it.
    pub(super) fn free(&self) -> Sender<Buffer> {
        self.ring.0.clone()
    }

    /// The next piece: a view of the file's pages while its lease is held,
    /// read with `pread` once the kernel asks for it back.
    pub(super) fn next(&mut self, stop: impl Fn() -> bool) -> Result<Next, InputError> {
        if let Some(rest) = &mut self.rest {
            return rest.next(stop);
        }
        let Some(map) = self.map.as_ref() else {
            return Ok(Next::End);
        };
        if self.next >= self.end {
            return Ok(Next::End);
        }
        if map.file.asked_back() {
            self.read_the_rest()?;
            return self.next(stop);
        }
        let len = (self.end - self.next).min(self.piece) as usize;
        let piece = Buffer::view(map, self.next, len);
        if let Ok(mut p) = self.ahead.position.lock() {
            p.at = self.next;
        }
        self.ahead.moved.notify_all();
        self.next += len as u64;
        Ok(Next::Piece(piece))
    }

    /// Stops mapping: the helpers end, the mapping goes once every piece
    /// handed on is given back (then the lease is let go), and the rest of
    /// the file is read with `pread` from where the stream stands.
    fn read_the_rest(&mut self) -> Result<(), InputError> {
        self.stop_helpers();
        let Some(map) = self.map.take() else {
            return Ok(());
        };
        map.file.end();
        let file = map.file.file.try_clone();
        drop(map);
        let file = file.map_err(|source| InputError::Read {
            offset: self.next,
            source,
        })?;
        let at = libc::off_t::try_from(self.next).unwrap_or(libc::off_t::MAX);
        // SAFETY: lseek on a descriptor we own; a failure leaves reading at 0, checked below.
        if unsafe { libc::lseek(file.as_raw_fd(), at, libc::SEEK_SET) } != at {
            return Err(InputError::Read {
                offset: self.next,
                source: std::io::Error::last_os_error(),
            });
        }
        let ring = self
            .ring
            .1
            .take()
            .ok_or_else(|| InputError::Reader("read the rest twice".into()))?;
        self.rest = Some(Readers::file_on(
            (self.ring.0.clone(), ring),
            file,
            std::mem::take(&mut self.name),
            file_reader_threads(),
            self.piece as usize,
            // the length it had while leased: a truncation since is an error
            self.end,
        )?);
        Ok(())
    }

    fn stop_helpers(&mut self) {
        if let Ok(mut p) = self.ahead.position.lock() {
            p.stop = true;
        }
        self.ahead.moved.notify_all();
        for helper in self.helpers.drain(..) {
            drop(helper.join());
        }
    }

    /// Hands on pieces of `piece` bytes from now on.
    #[cfg(test)]
    pub(super) fn set_piece(&mut self, piece: usize) {
        self.piece = piece.max(1) as u64;
    }
}

impl Drop for InPlace {
    fn drop(&mut self) {
        self.stop_helpers();
    }
}

/// A helper: faults in the windows ahead of the stream, one at a time,
/// and lets go of the pages behind it, until told to stop.
fn fault_in_ahead(map: &FileMap, ahead: &Ahead) {
    loop {
        let Ok(mut p) = ahead.position.lock() else {
            return;
        };
        while !p.stop && p.populate >= p.at + AHEAD_BYTES {
            p = match ahead.moved.wait(p) {
                Ok(p) => p,
                Err(_) => return,
            };
        }
        // the stream may have outrun the helpers: nothing behind it is faulted in
        let here = p.at - p.at % WINDOW_BYTES;
        p.populate = p.populate.max(here);
        if p.stop || p.populate >= map.len as u64 {
            return;
        }
        let window = p.populate..p.populate + WINDOW_BYTES;
        p.populate = window.end;
        // let go behind in batches: each one interrupts every core to flush its TLB
        let behind = match here >= p.dropped + DROP_BYTES {
            true => p.dropped..here,
            false => p.dropped..p.dropped,
        };
        p.dropped = behind.end;
        drop(p);
        map.advise(behind, libc::MADV_DONTNEED);
        if !map.advise(window, libc::MADV_POPULATE_READ) {
            // a kernel without it (before 5.14): the stream faults pages in itself
            return;
        }
    }
}
