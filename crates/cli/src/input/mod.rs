//! Where `retile stream` takes its bytes from, and how fast.
//!
//! A regular file that the kernel leases to retile is read in place: its
//! cached pages are mapped and every piece handed to the stream is a view
//! of them, so the input costs no copy ([`in_place`]; on 2 cores the copy
//! took about a fifth of a blosc-lz4:1 stream's CPU). Any other regular
//! file is read by several threads with `pread` at their own offsets into
//! a small ring of large buffers (huge pages where the kernel gives them),
//! handed to the stream whole and in order. Either way no page of the
//! input is faulted in one at a time by the stream, and a file cut short
//! while it is read is a short read, reported as an error, never a
//! `SIGBUS`. A pipe (or any other stream) is read by one thread that hands
//! on whatever it has as soon as the pipe is momentarily empty, so that a
//! slow producer's planes are tiled (and claimed) as they arrive, while a
//! fast one fills whole buffers. Without an input, the synthetic pattern is
//! made here.

mod in_place;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use in_place::{FileMap, InPlace};
use retile_stream::StorePath;
use thiserror::Error;

/// Bytes of one input buffer about: every append hands the stream one buffer.
/// Small enough that a buffer is still in the last-level cache when the
/// tiler reads it, large enough that appends are few (measured: 1 to 8 MiB
/// differ little on 2 cores, 4 MiB was best).
pub const BUFFER_BYTES: usize = 4 << 20;

/// The largest buffer made to hold whole planes; larger planes come in
/// pieces of [`BUFFER_BYTES`].
const MAX_PIECE_BYTES: u64 = 16 << 20;

/// Bytes of input a file's reader threads hold at most, about.
const RING_BYTES: usize = 64 << 20;

/// Where an input's pieces may end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Anywhere: pieces of [`BUFFER_BYTES`], which a flat stream tiles
    /// fastest whatever its planes (on 16 cores, 16 MiB planes came
    /// 7-15 % faster uncompressed in 4 MiB pieces than whole).
    Anywhere,
    /// Between planes of this many bytes, where a plane is at most 16 MiB,
    /// so that every append hands the stream whole planes: a pyramid's
    /// halver then reduces them where they lie instead of gathering a
    /// plane from two pieces, and an acquisition hands each array whole
    /// frames; larger planes are cut anywhere.
    WholePlanes(u64),
}

impl Cut {
    /// How a stream of planes of `plane` bytes wants its input cut: whole
    /// planes where it has a pyramid, anywhere where it has not.
    pub fn for_stream(plane: u64, pyramid: bool) -> Cut {
        match pyramid {
            true => Cut::WholePlanes(plane),
            false => Cut::Anywhere,
        }
    }

    /// Bytes of one input buffer: a whole number of planes, about
    /// [`BUFFER_BYTES`] of them, where the planes are kept whole and at
    /// most 16 MiB; otherwise [`BUFFER_BYTES`].
    pub(crate) fn piece_bytes(self) -> usize {
        match self {
            Cut::WholePlanes(p) if p > 0 && p <= MAX_PIECE_BYTES => {
                ((BUFFER_BYTES as u64).div_ceil(p) * p) as usize
            }
            _ => BUFFER_BYTES,
        }
    }
}

/// Whether a leased file's pieces may be read from its own mapped pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pages {
    /// Mapped in place where the kernel leases the file: no copy.
    InPlace,
    /// Always copied with `pread`: for a stream that may hold a piece
    /// longer than the kernel waits for a lease to be let go
    /// (`/proc/sys/fs/lease-break-time`, 45 s by default), after which
    /// another program could truncate the file under it.
    Copied,
}

impl Pages {
    /// How a stream into the store at `store` (none: measured only)
    /// reads its input: in place, but copied into object storage, whose
    /// requests are retried for minutes (and whose streams are bound by
    /// the network, not by a copy).
    pub fn for_store(store: Option<&Path>) -> Pages {
        match store.map(StorePath::classify) {
            Some(Ok(StorePath::S3 { .. })) => Pages::Copied,
            _ => Pages::InPlace,
        }
    }
}

/// Alignment of the buffers: a huge page, so that each can be made of them.
const HUGE_PAGE: usize = 2 << 20;

/// How often a wait for input looks whether the stream was interrupted.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Why the input could not be read.
#[derive(Debug, Error)]
pub enum InputError {
    /// The input could not be opened.
    #[error("cannot open the input {path}: {source}")]
    Open {
        /// The path given.
        path: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The input is a directory.
    #[error("the input {path} is a directory, not a file")]
    Directory {
        /// The path given.
        path: String,
    },
    /// Reading failed.
    #[error("cannot read the input at byte {offset}: {source}")]
    Read {
        /// Where in the input the read began.
        offset: u64,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A regular file ended before the length it had when it was opened.
    #[error(
        "the input {path} was {opened} bytes long when it was opened but ended at byte {ended}: \
         it was truncated or rewritten while it was read; give retile a file no other program changes"
    )]
    Shrank {
        /// The path given.
        path: String,
        /// Its length when opened.
        opened: u64,
        /// Where reading found it ending.
        ended: u64,
    },
    /// The input buffers could not be made.
    #[error("cannot allocate {bytes} bytes of input buffers: {source}")]
    Memory {
        /// Bytes asked for.
        bytes: usize,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A reader thread could not be started, or stopped unexpectedly.
    #[error("the input reader {0}")]
    Reader(String),
}

/// Bytes of input: memory of its own, or a view of a leased file's
/// pages. `len` bytes are input.
pub struct Buffer {
    data: NonNull<u8>,
    capacity: usize,
    len: usize,
    memory: Memory,
}

/// Where a [`Buffer`]'s bytes lie.
enum Memory {
    /// Anonymous pages of its own, mapped at a huge-page boundary and
    /// advised to be huge pages (fewer TLB misses for the tiler reading
    /// them), zero until written; unmapped when the buffer is dropped.
    Own { map: NonNull<u8>, mapped: usize },
    /// A piece of a leased file's mapped pages, read-only; holding the
    /// mapping keeps them mapped.
    File(#[allow(dead_code)] Arc<FileMap>),
}

// SAFETY: a Buffer owns its own mapping exclusively, and only reads a
// file's mapping, which is Sync; nothing else writes through its pointer.
unsafe impl Send for Buffer {}

impl Buffer {
    /// A buffer of `capacity` bytes.
    fn new(capacity: usize) -> Result<Buffer, InputError> {
        let mapped = capacity + HUGE_PAGE;
        // SAFETY: an anonymous private mapping with no address hint; the
        // result is checked against MAP_FAILED before it is used.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(InputError::Memory {
                bytes: capacity,
                source: io::Error::last_os_error(),
            });
        }
        let skip = (HUGE_PAGE - map as usize % HUGE_PAGE) % HUGE_PAGE;
        // SAFETY: `skip < HUGE_PAGE`, so `skip + capacity <= mapped` bytes lie in the mapping.
        let data = unsafe { map.cast::<u8>().add(skip) };
        // SAFETY: advice on a range inside our own mapping; failure (no THP) is harmless.
        unsafe { libc::madvise(data.cast(), capacity, libc::MADV_HUGEPAGE) };
        Ok(Buffer {
            memory: Memory::Own {
                map: NonNull::new(map.cast()).ok_or_else(|| InputError::Memory {
                    bytes: capacity,
                    source: io::Error::other("mmap returned null"),
                })?,
                mapped,
            },
            data: NonNull::new(data)
                .ok_or_else(|| InputError::Reader("has a null buffer".into()))?,
            capacity,
            len: 0,
        })
    }

    /// The `len` bytes of `map` from `offset` on (fewer past its end).
    fn view(map: &Arc<FileMap>, offset: u64, len: usize) -> Buffer {
        let bytes = map.bytes(offset, len);
        Buffer {
            data: NonNull::from(bytes).cast(),
            capacity: bytes.len(),
            len: bytes.len(),
            memory: Memory::File(map.clone()),
        }
    }

    /// Whether it is a view of a file's pages, to be dropped once used.
    fn is_view(&self) -> bool {
        matches!(self.memory, Memory::File(_))
    }

    /// The input bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `data..data + len` lies in the mapping, which is zeroed by
        // the kernel or written by us, and borrowed no other way while `self` is.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.len) }
    }

    /// The room after the input bytes (none in a view).
    fn spare(&mut self) -> &mut [u8] {
        if self.is_view() {
            return &mut [];
        }
        // SAFETY: `data + len..data + capacity` lies in our own mapping
        // (zeroed or written, so initialised) and `&mut self` makes the
        // borrow unique.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.data.as_ptr().add(self.len),
                self.capacity - self.len,
            )
        }
    }

    fn is_full(&self) -> bool {
        self.len == self.capacity
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let Memory::Own { map, mapped } = self.memory {
            // SAFETY: unmaps exactly the mapping made in `new`, which nothing uses any more.
            unsafe { libc::munmap(map.as_ptr().cast(), mapped) };
        }
    }
}

/// How a piece of input ends what came before it.
enum End {
    /// More may follow.
    More,
    /// The input ended after this piece.
    Eof,
    /// Reading failed after this piece (whose bytes are good).
    Failed(InputError),
}

/// A numbered piece of input from a reader thread.
struct Chunk {
    seq: u64,
    buffer: Buffer,
    end: End,
}

/// What [`Input::next`] found.
pub enum Next {
    /// The next bytes; give the buffer back with [`Input::give_back`].
    Piece(Buffer),
    /// The input ended.
    End,
    /// `stop` said so while waiting for input.
    Stopped,
}

/// Where `retile stream` reads from.
pub struct Input {
    source: Source,
}

enum Source {
    InPlace(InPlace),
    Readers(Readers),
    Synthetic {
        buffer: Option<Buffer>,
        piece: usize,
        index: u64,
        total: u64,
        esize: usize,
    },
}

/// Reader threads filling buffers from a ring, their pieces put back in order.
struct Readers {
    filled: Receiver<Chunk>,
    free: Sender<Buffer>,
    early: BTreeMap<u64, Chunk>,
    next: u64,
    /// What ended the input, returned after the last piece.
    ended: Option<End>,
}

/// An input opened but not yet read: the file at a path, or stdin,
/// checked to be something to read; [`InputFile::read`] starts reading it.
pub struct InputFile {
    file: File,
    name: String,
}

impl InputFile {
    /// The file at `path`, or stdin for `-`.
    pub fn open(path: &str) -> Result<InputFile, InputError> {
        let (file, name) = match path {
            "-" => {
                let fd = io::stdin().as_fd().try_clone_to_owned().map_err(|source| {
                    InputError::Open {
                        path: "stdin".into(),
                        source,
                    }
                })?;
                (File::from(fd), "stdin".to_string())
            }
            _ => {
                let file = File::open(path).map_err(|source| InputError::Open {
                    path: path.into(),
                    source,
                })?;
                (file, path.to_string())
            }
        };
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(InputError::Directory { path: name });
        }
        Ok(InputFile { file, name })
    }

    /// Starts reading it, handed on in pieces cut as `cut` says, a
    /// regular file's pages read as `pages` says.
    pub fn read(self, cut: Cut, pages: Pages) -> Result<Input, InputError> {
        let piece = cut.piece_bytes();
        let regular = self.file.metadata().is_ok_and(|m| m.is_file());
        let file = match (regular, pages) {
            (false, _) => {
                let source = Source::Readers(Readers::stream(self.file, piece)?);
                return Ok(Input { source });
            }
            (true, Pages::InPlace) => match InPlace::open(self.file, self.name.clone(), piece) {
                Ok(in_place) => {
                    let source = Source::InPlace(in_place);
                    return Ok(Input { source });
                }
                Err(file) => file,
            },
            (true, Pages::Copied) => self.file,
        };
        let source = Source::Readers(Readers::file(
            file,
            self.name,
            file_reader_threads(),
            piece,
        )?);
        Ok(Input { source })
    }
}

/// Gives pieces' buffers back to the input they came from, from any
/// thread (see [`Input::giver`]).
#[derive(Clone)]
pub struct Giver {
    free: Option<Sender<Buffer>>,
}

impl Giver {
    /// Returns a piece's buffer to be filled again (dropped where its
    /// input makes its own, or has stopped reading, or where it is a view
    /// of a file's pages, which must not outlive its use).
    pub fn give_back(&self, mut buffer: Buffer) {
        buffer.len = 0;
        if let Some(free) = self.free.as_ref().filter(|_| !buffer.is_view()) {
            drop(free.send(buffer));
        }
    }
}

impl Input {
    /// The file at `path`, or stdin for `-`, handed on in pieces cut as
    /// `cut` says, its pages read as `pages` says.
    pub fn open(path: &str, cut: Cut, pages: Pages) -> Result<Input, InputError> {
        InputFile::open(path)?.read(cut, pages)
    }

    /// `total` elements of `esize` bytes, element `i` holding `i` (little
    /// endian, truncated to the element), in pieces cut as `cut` says
    /// (always between elements).
    pub fn synthetic(total: u64, esize: usize, cut: Cut) -> Input {
        Input {
            source: Source::Synthetic {
                buffer: None,
                piece: cut.piece_bytes(),
                index: 0,
                total,
                esize,
            },
        }
    }

    /// The next piece of input; while waiting for it, `stop()` is asked
    /// now and then and ends the wait when it says so.
    pub fn next(&mut self, stop: impl Fn() -> bool) -> Result<Next, InputError> {
        match &mut self.source {
            Source::InPlace(in_place) => in_place.next(stop),
            Source::Readers(readers) => readers.next(stop),
            Source::Synthetic {
                buffer,
                piece,
                index,
                total,
                esize,
            } => {
                let mut buffer = match buffer.take() {
                    Some(b) => b,
                    None => Buffer::new(*piece)?,
                };
                let n = ((*total - *index) as usize).min(buffer.capacity / *esize);
                if n == 0 {
                    return Ok(Next::End);
                }
                buffer.len = 0;
                let out = &mut buffer.spare()[..n * *esize];
                match *esize {
                    1 => pattern::<1>(out, *index),
                    2 => pattern::<2>(out, *index),
                    4 => pattern::<4>(out, *index),
                    _ => pattern::<8>(out, *index),
                }
                buffer.len = n * *esize;
                *index += n as u64;
                Ok(Next::Piece(buffer))
            }
        }
    }

    /// Returns a piece's buffer to be filled again.
    pub fn give_back(&mut self, mut buffer: Buffer) {
        match &mut self.source {
            // a reader that stopped needs no buffer: dropping it is right
            Source::InPlace(_) | Source::Readers(_) => self.giver().give_back(buffer),
            Source::Synthetic { buffer: slot, .. } => {
                buffer.len = 0;
                *slot = Some(buffer)
            }
        }
    }

    /// What gives its pieces' buffers back from another thread than the
    /// one reading it: a piece handed on whole, to be given back once used.
    pub fn giver(&self) -> Giver {
        Giver {
            free: match &self.source {
                Source::InPlace(in_place) => Some(in_place.free()),
                Source::Readers(readers) => Some(readers.free.clone()),
                Source::Synthetic { .. } => None,
            },
        }
    }
}

/// Writes elements of `N` bytes holding their index from `start` on, truncated.
fn pattern<const N: usize>(out: &mut [u8], start: u64) {
    for (k, element) in out.chunks_exact_mut(N).enumerate() {
        let bytes = (start + k as u64).to_le_bytes();
        element.copy_from_slice(&bytes[..N]);
    }
}

/// The free buffers, shared by the reader threads.
type FreeRing = Arc<Mutex<Receiver<Buffer>>>;

/// Waits for a free buffer; `None` once the input is dropped.
fn free_buffer(free: &FreeRing) -> Option<Buffer> {
    free.lock().ok()?.recv().ok()
}

impl Readers {
    /// A ring of `buffers` buffers of `piece` bytes and its channels.
    fn ring(
        buffers: usize,
        piece: usize,
    ) -> Result<(Readers, FreeRing, Sender<Chunk>), InputError> {
        Readers::ring_on(channel(), buffers, piece)
    }

    /// [`Readers::ring`] on a free ring's channel made before.
    fn ring_on(
        (free, free_rx): (Sender<Buffer>, Receiver<Buffer>),
        buffers: usize,
        piece: usize,
    ) -> Result<(Readers, FreeRing, Sender<Chunk>), InputError> {
        for _ in 0..buffers {
            // cannot fail: the receiver is alive
            let _ = free.send(Buffer::new(piece)?);
        }
        let (filled_tx, filled) = channel();
        let readers = Readers {
            filled,
            free,
            early: BTreeMap::new(),
            next: 0,
            ended: None,
        };
        Ok((readers, Arc::new(Mutex::new(free_rx)), filled_tx))
    }

    /// `threads` reader threads over a regular file, each reading whole
    /// buffers of `piece` bytes at its own offsets, from the file's
    /// current offset (stdin may be a file someone has read from already)
    /// to its end; three buffers more than threads, fewer (at least three)
    /// where that would hold more than [`RING_BYTES`].
    fn file(file: File, name: String, threads: usize, piece: usize) -> Result<Readers, InputError> {
        let opened = file.metadata().map(|m| m.len()).unwrap_or(0);
        Readers::file_on(channel(), file, name, threads, piece, opened)
    }

    /// [`Readers::file`] with a free ring's channel made before (whose
    /// sender a [`Giver`] may hold already), over a file that was `opened`
    /// bytes long: ending before is an error.
    fn file_on(
        ring: (Sender<Buffer>, Receiver<Buffer>),
        file: File,
        name: String,
        threads: usize,
        piece: usize,
        opened: u64,
    ) -> Result<Readers, InputError> {
        let buffers = (RING_BYTES / piece).clamp(3, threads + 3);
        let (readers, free, filled) = Readers::ring_on(ring, buffers, piece)?;
        // SAFETY: lseek on a descriptor we own; -1 is checked.
        let start = unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_CUR) };
        let start = u64::try_from(start).unwrap_or(0);
        // SAFETY: advice on a descriptor we own; failure only loses read-ahead.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL) };
        let shared = Arc::new(FileShared {
            file,
            name,
            start,
            opened,
            piece: piece as u64,
            claimed: AtomicU64::new(0),
            ended: AtomicBool::new(false),
        });
        for t in 0..threads {
            let (shared, free, filled) = (shared.clone(), free.clone(), filled.clone());
            spawn(format!("retile-read-{t}"), move || {
                shared.read_chunks(&free, &filled)
            })?;
        }
        Ok(readers)
    }

    /// One reader thread over a pipe, a terminal, a device or a socket,
    /// into buffers of `piece` bytes.
    fn stream(mut file: File, piece: usize) -> Result<Readers, InputError> {
        let (readers, free, filled) = Readers::ring(4, piece)?;
        // a larger pipe lets a fast producer run ahead (at most what
        // /proc/sys/fs/pipe-max-size allows; refused elsewhere, harmlessly)
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
        spawn("retile-read".into(), move || {
            read_stream(&mut file, &free, &filled)
        })?;
        Ok(readers)
    }

    fn next(&mut self, stop: impl Fn() -> bool) -> Result<Next, InputError> {
        loop {
            if let Some(end) = self.ended.take() {
                self.ended = Some(End::Eof);
                return match end {
                    End::Failed(e) => Err(e),
                    _ => Ok(Next::End),
                };
            }
            if let Some(chunk) = self.early.remove(&self.next) {
                self.next += 1;
                if !matches!(chunk.end, End::More) {
                    self.ended = Some(chunk.end);
                }
                match chunk.buffer.len {
                    0 => continue,
                    _ => return Ok(Next::Piece(chunk.buffer)),
                }
            }
            match self.filled.recv_timeout(STOP_POLL) {
                Ok(chunk) => {
                    self.early.insert(chunk.seq, chunk);
                }
                Err(RecvTimeoutError::Timeout) if stop() => return Ok(Next::Stopped),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(InputError::Reader("stopped before the input ended".into()))
                }
            }
        }
    }
}

/// How many threads read a regular file: a quarter of the cores, 2 to 4,
/// enough to copy from the page cache at well over 8 GB/s on 16 cores (each
/// copies several GB/s), and two on a small machine, so that one reads while
/// the other waits for a buffer.
fn file_reader_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / 4).clamp(2, 4)
}

fn spawn(name: String, job: impl FnOnce() + Send + 'static) -> Result<(), InputError> {
    std::thread::Builder::new()
        .name(name)
        .spawn(job)
        .map(drop)
        .map_err(|e| InputError::Reader(format!("thread could not be started: {e}")))
}

/// A regular file read by several threads.
struct FileShared {
    file: File,
    name: String,
    /// The offset reading begins at.
    start: u64,
    /// The length when opened: reading ending before it is an error.
    opened: u64,
    /// Bytes of each buffer's worth.
    piece: u64,
    /// Buffers' worth of the file claimed by a thread so far.
    claimed: AtomicU64,
    /// A thread found the end (or an error): no more claims.
    ended: AtomicBool,
}

impl FileShared {
    /// Claims the next buffer's worth of the file, reads it and sends it,
    /// until the file ends or the input is dropped.
    fn read_chunks(&self, free: &FreeRing, filled: &Sender<Chunk>) {
        while !self.ended.load(Ordering::Acquire) {
            let Some(mut buffer) = free_buffer(free) else {
                return;
            };
            let seq = self.claimed.fetch_add(1, Ordering::AcqRel);
            let offset = self.start + seq * self.piece;
            let end = match read_at(&self.file, &mut buffer, offset) {
                Err(source) => End::Failed(InputError::Read { offset, source }),
                Ok(()) if buffer.is_full() => End::More,
                Ok(()) if offset + (buffer.len as u64) < self.opened => {
                    End::Failed(InputError::Shrank {
                        path: self.name.clone(),
                        opened: self.opened,
                        ended: offset + buffer.len as u64,
                    })
                }
                Ok(()) => End::Eof,
            };
            if !matches!(end, End::More) {
                self.ended.store(true, Ordering::Release);
            }
            if filled.send(Chunk { seq, buffer, end }).is_err() {
                return;
            }
        }
    }
}

/// Fills `buffer` from `offset` on, short only at the end of the file.
fn read_at(file: &File, buffer: &mut Buffer, offset: u64) -> io::Result<()> {
    while !buffer.is_full() {
        let at = offset + buffer.len as u64;
        match file.read_at(buffer.spare(), at) {
            Ok(0) => break,
            Ok(n) => buffer.len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads a stream into buffers, sending each when it is full or when the
/// stream has nothing more to read at once.
fn read_stream(file: &mut File, free: &FreeRing, filled: &Sender<Chunk>) {
    let mut offset = 0u64;
    for seq in 0.. {
        let Some(mut buffer) = free_buffer(free) else {
            return;
        };
        let end = loop {
            match file.read(buffer.spare()) {
                Ok(0) => break End::Eof,
                Ok(n) => {
                    buffer.len += n;
                    if buffer.is_full() || !readable_now(file) {
                        break End::More;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    break End::Failed(InputError::Read {
                        offset: offset + buffer.len as u64,
                        source,
                    })
                }
            }
        };
        offset += buffer.len as u64;
        let last = !matches!(end, End::More);
        if filled.send(Chunk { seq, buffer, end }).is_err() || last {
            return;
        }
    }
}

/// Whether a read of `file` would return at once.
fn readable_now(file: &File) -> bool {
    let mut poll = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no timeout.
    let ready = unsafe { libc::poll(&mut poll, 1, 0) };
    ready > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything `input` gives until it ends or fails.
    fn drain(input: &mut Input) -> (Vec<u8>, Option<InputError>) {
        let mut all = Vec::new();
        loop {
            match input.next(|| false) {
                Ok(Next::Piece(piece)) => {
                    all.extend_from_slice(piece.bytes());
                    input.give_back(piece);
                }
                Ok(Next::End | Next::Stopped) => return (all, None),
                Err(e) => return (all, Some(e)),
            }
        }
    }

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8 ^ (i >> 16) as u8).collect()
    }

    /// Reads `data` from a file written, closed and opened again
    /// read-only, which the kernel leases: its pieces are views of its
    /// pages. The file's path is returned too, to change it while it is read.
    fn in_place_over(data: &[u8], piece: usize) -> (Input, tempfile::TempPath) {
        let path = tempfile::NamedTempFile::new().unwrap().into_temp_path();
        std::fs::write(&path, data).unwrap();
        let file = InputFile {
            file: File::open(&path).unwrap(),
            name: "test".into(),
        };
        let input = file.read(Cut::Anywhere, Pages::InPlace).unwrap();
        let input = match input.source {
            Source::Readers(_) if !data.is_empty() => {
                panic!("the kernel leased no file (is /proc/sys/fs/leases-enable 0?)")
            }
            Source::InPlace(mut in_place) => {
                in_place.set_piece(piece);
                Input {
                    source: Source::InPlace(in_place),
                }
            }
            source => Input { source },
        };
        (input, path)
    }

    /// Drains `input`, saying whether each piece was a view of the file's pages.
    fn drain_noting_views(input: &mut Input) -> (Vec<u8>, Vec<bool>, Option<InputError>) {
        let (mut all, mut views) = (Vec::new(), Vec::new());
        loop {
            match input.next(|| false) {
                Ok(Next::Piece(piece)) => {
                    all.extend_from_slice(piece.bytes());
                    views.push(piece.is_view());
                    input.give_back(piece);
                }
                Ok(Next::End | Next::Stopped) => return (all, views, None),
                Err(e) => return (all, views, Some(e)),
            }
        }
    }

    fn next_piece(input: &mut Input) -> Buffer {
        match input.next(|| false).unwrap() {
            Next::Piece(p) => p,
            _ => panic!("the input ended"),
        }
    }

    #[test]
    fn a_leased_file_is_handed_on_whole_and_in_order_as_views_of_its_pages() {
        for (len, piece) in [
            (1, BUFFER_BYTES),
            (4096, 4096),
            (3 * BUFFER_BYTES + 12345, BUFFER_BYTES),
            // pieces that start inside a page, and more than the helpers fault in ahead
            (5 * 3_000_000 + 7, 3_000_000),
            (100_003, 1_000),
            ((in_place::AHEAD_BYTES * 2 + 5) as usize, 1 << 20),
        ] {
            let data = bytes(len);
            let (mut input, _path) = in_place_over(&data, piece);
            let (read, views, error) = drain_noting_views(&mut input);
            assert!(error.is_none(), "{len} bytes: {error:?}");
            assert!(read == data, "{len} bytes in {piece}-byte pieces");
            assert_eq!(views.len(), len.div_ceil(piece), "{len} bytes");
            assert!(views.iter().all(|&v| v), "{len} bytes: views {views:?}");
        }
        // an empty file is no mapping: it is read, and ends at once
        let (mut input, _path) = in_place_over(&[], BUFFER_BYTES);
        assert!(drain_noting_views(&mut input).0.is_empty());
    }

    #[test]
    fn a_leased_file_read_from_where_stdin_stands_starts_there() {
        let data = bytes(3 * BUFFER_BYTES + 77);
        let path = tempfile::NamedTempFile::new().unwrap().into_temp_path();
        std::fs::write(&path, &data).unwrap();
        let mut file = File::open(&path).unwrap();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(12345)).unwrap();
        let input = InputFile {
            file,
            name: "stdin".into(),
        };
        let mut input = input.read(Cut::Anywhere, Pages::InPlace).unwrap();
        assert!(matches!(input.source, Source::InPlace(_)));
        let (read, views, error) = drain_noting_views(&mut input);
        assert!(error.is_none() && read == data[12345..] && views.iter().all(|&v| v));
    }

    #[test]
    fn object_storage_streams_copy_their_input_and_take_no_lease() {
        assert_eq!(Pages::for_store(None), Pages::InPlace);
        assert_eq!(
            Pages::for_store(Some(Path::new("out.zarr"))),
            Pages::InPlace
        );
        assert_eq!(
            Pages::for_store(Some(Path::new("s3://bucket/run.zarr"))),
            Pages::Copied
        );
        let path = tempfile::NamedTempFile::new().unwrap().into_temp_path();
        std::fs::write(&path, bytes(3 * 4096 + 5)).unwrap();
        let mut input = Input::open(path.to_str().unwrap(), Cut::Anywhere, Pages::Copied).unwrap();
        assert!(matches!(input.source, Source::Readers(_)));
        let (read, views, error) = drain_noting_views(&mut input);
        assert!(error.is_none() && read == bytes(3 * 4096 + 5));
        assert!(views.iter().all(|&v| !v), "{views:?}");
        // and a file open for writing elsewhere is leased to nobody: it is read
        let mut open = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let mut input = Input::open(path.to_str().unwrap(), Cut::Anywhere, Pages::InPlace).unwrap();
        assert!(matches!(input.source, Source::Readers(_)));
        std::io::Write::write_all(&mut open, b"!").unwrap();
        let (read, _, error) = drain_noting_views(&mut input);
        assert!(error.is_none() && read.len() >= 3 * 4096 + 5);
    }

    #[test]
    fn a_leased_file_truncated_while_read_ends_in_an_error_after_good_bytes() {
        // another program truncating the file waits until retile lets go
        // of its lease, which it does once it noticed and every view of
        // the file's pages was given back; then the file is truncated and
        // the rest, read with pread, found short. No piece ever reads a
        // page that is gone.
        let piece = 64 << 10;
        let data = bytes(64 * piece);
        let (mut input, path) = in_place_over(&data, piece);
        let first = next_piece(&mut input);
        assert!(first.is_view());
        let cut = (piece / 2) as u64;
        let truncate = {
            let path = path.to_path_buf();
            std::thread::spawn(move || {
                let began = std::time::Instant::now();
                let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                file.set_len(cut).unwrap();
                began.elapsed()
            })
        };
        // the truncating program is waiting for the lease by now; the
        // next piece notices, and is read, not mapped
        std::thread::sleep(Duration::from_millis(200));
        let second = next_piece(&mut input);
        assert!(!second.is_view());
        // the first piece is still held: a lease let go now would let the
        // truncation take its pages away (a SIGBUS below)
        std::thread::sleep(Duration::from_millis(200));
        let mut read = first.bytes().to_vec();
        read.extend_from_slice(second.bytes());
        // the last view given back lets the lease go: the file is cut
        // while the readers wait for the second piece's buffer
        input.give_back(first);
        std::thread::sleep(Duration::from_millis(200));
        input.give_back(second);
        let (rest, _, error) = drain_noting_views(&mut input);
        read.extend_from_slice(&rest);
        let waited = truncate.join().unwrap();
        assert!(
            waited < Duration::from_secs(20),
            "the lease was let go only when the kernel took it back, after {waited:?}"
        );
        assert!(
            read == data[..read.len()],
            "a piece held other bytes than the file's"
        );
        // pieces read before the truncation hold the file's bytes; the
        // first one read after it ends the input
        let got = read.len() as u64;
        assert!(got >= 2 * piece as u64, "{got} bytes read");
        match error {
            Some(InputError::Shrank { ended, .. }) => assert_eq!(ended, got),
            other => panic!("{other:?} after {got} bytes"),
        }
    }

    fn readers_over(data: &[u8], threads: usize, piece: usize) -> Input {
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, data).unwrap();
        // reading begins where the file stands, as stdin's does
        std::io::Seek::rewind(&mut file).unwrap();
        Input {
            source: Source::Readers(Readers::file(file, "test".into(), threads, piece).unwrap()),
        }
    }

    #[test]
    fn several_threads_hand_a_file_on_whole_and_in_order() {
        for (len, threads, piece) in [
            (0, 3, BUFFER_BYTES),
            (1, 2, BUFFER_BYTES),
            (BUFFER_BYTES, 4, BUFFER_BYTES),
            (3 * BUFFER_BYTES + 12345, 4, BUFFER_BYTES),
            (2 * BUFFER_BYTES - 1, 1, BUFFER_BYTES),
            (
                5 * 3_000_000 + 7,
                4,
                Cut::WholePlanes(3_000_000).piece_bytes(),
            ),
            (40 << 20, 4, Cut::WholePlanes(16 << 20).piece_bytes()),
        ] {
            let data = bytes(len);
            let (read, error) = drain(&mut readers_over(&data, threads, piece));
            assert!(error.is_none(), "{len} bytes: {error:?}");
            assert!(
                read == data,
                "{len} bytes over {threads} threads in {piece}-byte pieces"
            );
        }
    }

    #[test]
    fn a_file_that_ends_before_its_opened_length_is_an_error_after_its_bytes() {
        // threads that find the end before the length the file had: each
        // reads what is there, then says where it ended
        let data = bytes(2 * BUFFER_BYTES + 100);
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &data).unwrap();
        let (readers, free, filled) = Readers::ring(3, BUFFER_BYTES).unwrap();
        let shared = Arc::new(FileShared {
            file,
            name: "cut".into(),
            start: 0,
            opened: 5 * BUFFER_BYTES as u64,
            piece: BUFFER_BYTES as u64,
            claimed: AtomicU64::new(0),
            ended: AtomicBool::new(false),
        });
        for _ in 0..2 {
            let (shared, free, filled) = (shared.clone(), free.clone(), filled.clone());
            std::thread::spawn(move || shared.read_chunks(&free, &filled));
        }
        let mut input = Input {
            source: Source::Readers(readers),
        };
        let (read, error) = drain(&mut input);
        assert!(read == data);
        match error {
            Some(InputError::Shrank { opened, ended, .. }) => {
                assert_eq!(
                    (opened, ended),
                    (5 * BUFFER_BYTES as u64, data.len() as u64)
                )
            }
            other => panic!("{other:?}"),
        }
    }

    /// Reads the pipe whose reading end is `read_end`.
    fn pipe_input(read_end: std::io::PipeReader) -> Input {
        let file = File::from(std::os::fd::OwnedFd::from(read_end));
        Input {
            source: Source::Readers(Readers::stream(file, BUFFER_BYTES).unwrap()),
        }
    }

    #[test]
    fn a_pipe_hands_on_what_it_has_without_waiting_for_a_full_buffer() {
        let (read_end, mut write_end) = std::io::pipe().unwrap();
        let mut input = pipe_input(read_end);
        for round in 0..3u8 {
            std::io::Write::write_all(&mut write_end, &[round; 100]).unwrap();
            let mut got = Vec::new();
            while got.len() < 100 {
                match input.next(|| false).unwrap() {
                    Next::Piece(piece) => {
                        got.extend_from_slice(piece.bytes());
                        input.give_back(piece);
                    }
                    _ => panic!("the pipe ended"),
                }
            }
            assert_eq!(got, [round; 100]);
        }
        drop(write_end);
        assert!(matches!(input.next(|| false).unwrap(), Next::End));
    }

    #[test]
    fn a_wait_for_a_silent_pipe_ends_when_asked() {
        let (read_end, _write_end) = std::io::pipe().unwrap();
        let mut input = pipe_input(read_end);
        let asked = std::cell::Cell::new(0);
        let stop = || {
            asked.set(asked.get() + 1);
            asked.get() > 2
        };
        assert!(matches!(input.next(stop).unwrap(), Next::Stopped));
    }

    #[test]
    fn the_synthetic_pattern_holds_each_element_s_index() {
        let mut input = Input::synthetic(5, 2, Cut::WholePlanes(4));
        let (read, _) = drain(&mut input);
        assert_eq!(read, [0, 0, 1, 0, 2, 0, 3, 0, 4, 0]);
    }

    #[test]
    fn pieces_hold_whole_planes_up_to_sixteen_mib() {
        for plane in [
            1,
            2,
            3,
            1000,
            3 << 20,
            4 << 20,
            (4 << 20) + 1,
            8 << 20,
            16 << 20,
        ] {
            let piece = Cut::WholePlanes(plane).piece_bytes() as u64;
            assert_eq!(
                piece % plane,
                0,
                "{plane}-byte planes in {piece}-byte pieces"
            );
            assert!(piece >= BUFFER_BYTES as u64 && piece < BUFFER_BYTES as u64 + plane);
        }
        for plane in [0, (16 << 20) + 1, 1 << 40] {
            assert_eq!(Cut::WholePlanes(plane).piece_bytes(), BUFFER_BYTES);
        }
        for plane in [1, 3 << 20, 16 << 20, 1 << 40] {
            assert_eq!(Cut::for_stream(plane, false).piece_bytes(), BUFFER_BYTES);
            assert_eq!(Cut::for_stream(plane, true), Cut::WholePlanes(plane));
        }
    }

    #[test]
    fn every_piece_of_a_file_but_the_last_holds_whole_planes() {
        let plane = 3_000_000;
        let data = bytes(7 * plane + 11);
        let mut input = readers_over(&data, 3, Cut::WholePlanes(plane as u64).piece_bytes());
        let mut lens = Vec::new();
        while let Next::Piece(piece) = input.next(|| false).unwrap() {
            lens.push(piece.bytes().len());
            input.give_back(piece);
        }
        assert_eq!(lens, [6_000_000, 6_000_000, 6_000_000, 3_000_011]);
    }
}
