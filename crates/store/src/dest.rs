//! Where a store's bytes go: files in a local directory (through
//! [`crate::files`]) or objects in S3-compatible object storage (through
//! [`crate::object`]), as [`StorePath::classify`] reads the store's path.
//! The Zarr sink and the OME-Zarr group write through [`Dest`] alone, so
//! that the shard layout, the codecs and the metadata are made once,
//! whatever the destination.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use retile_plan::StreamError;

use crate::directory::{
    abandon, open_unlocked, prepare_directory, prepare_inner_directory, remove_rows_from,
    reopen_directory, reopen_inner_directory, sync_directory, HeldDirectory, ASIDE,
};
use crate::error::{quoted, DestError};
use crate::files::{direct_io_works, replace_atomically, LocalFile, Placed};
use crate::object::{Bucket, Upload};
use crate::options::ZarrOptions;

/// The destination of one store (an array, or an OME-Zarr group).
#[derive(Clone)]
pub(crate) enum Dest {
    /// A local directory; `direct`: chunk and shard files are written with
    /// `O_DIRECT`; `held`: the lock of the store it is (or is in), held
    /// while a clone lives.
    Local {
        root: PathBuf,
        direct: bool,
        held: Arc<HeldDirectory>,
    },
    /// A prefix in a bucket.
    Object(Arc<Bucket>),
}

/// One chunk or shard file or object being written, shared by the writer
/// tasks (behind a lock) until it is closed.
pub(crate) enum Open {
    /// A file.
    Local(LocalFile),
    /// A file written beside `target` and renamed over it when closed
    /// (`target` removed instead where nothing is stored).
    Replacing { file: LocalFile, target: PathBuf },
    /// An object: its bytes not yet uploaded and its multipart upload.
    Object(Upload),
}

impl Open {
    /// Bytes placed so far: the offset the next append lands at.
    pub fn len(&self) -> u64 {
        match self {
            Open::Local(file) | Open::Replacing { file, .. } => file.len(),
            Open::Object(upload) => upload.offset(),
        }
    }

    /// Places `bytes` after what the file or object holds; the caller
    /// writes them with [`Placed::write`] once it has released the lock.
    pub fn append(&mut self, bytes: &[u8]) -> Result<Placed, DestError> {
        match self {
            Open::Local(file) | Open::Replacing { file, .. } => Ok(file.append(bytes)?),
            Open::Object(upload) => upload.push(bytes).map(|()| Placed::Written),
        }
    }

    /// Ends the file or object; returns its length. Every placed append
    /// must be written first. A file exists from here on, whole (on the
    /// disk with `sync`); an object once the next metadata document is
    /// stored (a failed one is left out, its upload aborted, and fails the
    /// stream).
    pub fn close(&mut self, sync: bool) -> Result<u64, DestError> {
        match self {
            Open::Local(file) => Ok(file.close(sync)?),
            Open::Replacing { file, target } => {
                let len = file.close(sync)?;
                std::fs::rename(file.path(), &*target)?;
                Ok(len)
            }
            Open::Object(upload) => upload.close(),
        }
    }

    /// Ends a file or object that received nothing (a chunk of fill alone,
    /// a shard of nothing but such chunks): nothing is made, and a file it
    /// was to replace is removed (what that file held of claimed planes
    /// was fill too).
    pub fn discard(&mut self) -> Result<(), DestError> {
        match self {
            Open::Replacing { file, target } => {
                // a killed stream's file beside it goes too
                for path in [&*target, file.path()] {
                    match std::fs::remove_file(path) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                        _ => {}
                    }
                }
                Ok(())
            }
            Open::Local(_) | Open::Object(_) => Ok(()),
        }
    }
}

/// Whether `path` names a store in object storage (`s3://...`).
pub(crate) fn is_object_store(path: &Path) -> bool {
    matches!(StorePath::classify(path), Ok(StorePath::S3 { .. }))
}

impl Dest {
    /// Makes ready the store at `path` (`s3://BUCKET/PREFIX`, or a local
    /// directory): new, or emptied where `options.overwrite` allows. A path
    /// [`StorePath::classify`] refuses is refused here, before anything is made.
    pub fn prepare(path: &Path, options: &ZarrOptions) -> Result<Dest, StreamError> {
        let root = match StorePath::classify(path)? {
            StorePath::S3 { .. } if options.resume.is_some() => {
                return Err(StreamError::Invalid(format!(
                    "appending to a store in S3 ({}) is not built yet: append to a local store, or write a new S3 store",
                    path.display()
                )))
            }
            StorePath::S3 { bucket, prefix } => {
                let bucket = Bucket::connect(&bucket, &prefix, path, &options.s3)?;
                bucket.prepare(options.overwrite)?;
                return Ok(Dest::Object(Arc::new(bucket)));
            }
            StorePath::Local(root) => root,
        };
        let held = match options.resume {
            Some(_) => reopen_directory(&root)?,
            None => prepare_directory(&root, options.overwrite)?,
        };
        Ok(Dest::Local {
            held,
            direct: !options.buffered_io && direct_io_works(&root),
            root,
        })
    }

    /// The store at `path` as a job made it ready, opened by one of its
    /// tasks to write a slab: neither locked (the job's caller holds the
    /// lock) nor emptied nor checked. A local directory must exist.
    pub fn unlocked(path: &Path, options: &ZarrOptions) -> Result<Dest, StreamError> {
        let root = match StorePath::classify(path)? {
            StorePath::S3 { bucket, prefix } => {
                let bucket = Bucket::connect(&bucket, &prefix, path, &options.s3)?;
                return Ok(Dest::Object(Arc::new(bucket)));
            }
            StorePath::Local(root) => root,
        };
        let held = open_unlocked(&root)?;
        Ok(Dest::Local {
            held,
            direct: !options.buffered_io && direct_io_works(&root),
            root,
        })
    }

    /// Waits until every file or object closed so far is stored whole
    /// (objects: their uploads completed; files are whole once closed),
    /// writing no metadata: the end of a slab written by a task.
    pub fn wait_closed(&self) -> Result<(), DestError> {
        match self {
            Dest::Local { .. } => Ok(()),
            Dest::Object(bucket) => bucket.wait_closed(),
        }
    }

    /// Whether the store is in object storage.
    pub fn is_object_store(&self) -> bool {
        matches!(self, Dest::Object(_))
    }

    /// The store, as errors name it.
    pub fn name(&self) -> &Path {
        match self {
            Dest::Local { root, .. } => root,
            Dest::Object(bucket) => bucket.url(),
        }
    }

    /// This store, its files written through the page cache where chunks
    /// of `chunk_bytes` (uncompressed) are smaller than `min_direct` (by
    /// default [`DIRECT_IO_MIN_CHUNK`]): a direct write waits for the disk,
    /// and one per small chunk is slower than the page cache gathering
    /// them.
    pub fn for_chunks_of(self, chunk_bytes: u64, min_direct: u64) -> Dest {
        match self {
            Dest::Local { root, direct, held } => Dest::Local {
                root,
                direct: direct && chunk_bytes >= min_direct,
                held,
            },
            object => object,
        }
    }

    /// A new, empty file or object at `key`, of about `expected` bytes
    /// (created at its first append or its close); an object keeps at most
    /// `parts_in_flight` parts uploading at once.
    pub fn fresh(&self, key: &str, parts_in_flight: usize, expected: u64) -> Open {
        match self {
            Dest::Local { root, direct, .. } => {
                Open::Local(LocalFile::new(root.join(key), *direct))
            }
            Dest::Object(bucket) => {
                Open::Object(Upload::new(bucket, key, parts_in_flight, expected))
            }
        }
    }

    /// A file at `key` that replaces the one there when it is closed: it
    /// is written beside (`key` with [`ASIDE`] after it) and renamed over,
    /// so that a reader, or a stream killed meanwhile, sees the old file
    /// whole or the new one whole. An object replaces the old one when its
    /// upload completes, as [`Dest::fresh`] does.
    pub fn replacing(&self, key: &str, parts_in_flight: usize, expected: u64) -> Open {
        match self {
            Dest::Local { root, direct, .. } => Open::Replacing {
                file: LocalFile::new(root.join(format!("{key}{ASIDE}")), *direct),
                target: root.join(key),
            },
            Dest::Object(_) => self.fresh(key, parts_in_flight, expected),
        }
    }

    /// The metadata document `key` as it is in the store (a stream
    /// appending to the store reads what it claims).
    pub fn read_metadata(&self, key: &str) -> Result<Vec<u8>, DestError> {
        self.read_if_present(key)?
            .ok_or_else(|| format!("{} holds no {key}", self.name().display()).into())
    }

    /// The bytes of the file at `key` of a store being appended to, or
    /// `None` where there is none (any other failure is an error).
    pub fn read_if_present(&self, key: &str) -> Result<Option<Vec<u8>>, DestError> {
        match self {
            Dest::Local { root, .. } => match std::fs::read(root.join(key)) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e.into()),
            },
            Dest::Object(bucket) => Err(format!(
                "{} is in S3, where appending is not built yet",
                bucket.url().display()
            )
            .into()),
        }
    }

    /// Removes the array's chunk or shard files whose first grid
    /// coordinate is `first_row` or more: the rows past its claim, which a
    /// killed stream may have written (a stream appending to the array
    /// removes them before it writes).
    pub fn remove_rows_from(&self, first_row: u64) -> Result<(), DestError> {
        match self {
            Dest::Local { root, .. } => Ok(remove_rows_from(root, first_row)?),
            Dest::Object(bucket) => Err(format!(
                "{} is in S3, where appending is not built yet",
                bucket.url().display()
            )
            .into()),
        }
    }

    /// Writes the metadata `key` whole, replacing what was there: a reader
    /// sees the old document or the new one, never part of one, and never
    /// before the files closed ahead of it are whole. `durable`: a local
    /// file is synced to the disk, an object is stored when this returns;
    /// without it, an object is put by a task once the objects closed
    /// before it are complete, while the caller goes on (a failure fails
    /// the next request).
    pub fn put_metadata(&self, key: &str, bytes: &[u8], durable: bool) -> Result<(), DestError> {
        match self {
            Dest::Local { root, .. } => Ok(replace_atomically(&root.join(key), bytes, durable)?),
            Dest::Object(bucket) => bucket.put_after_closed(key, bytes.to_vec(), durable),
        }
    }

    /// Bytes uploaded and requests made (0 for a local directory).
    pub fn traffic(&self) -> (u64, u64) {
        match self {
            Dest::Local { .. } => (0, 0),
            Dest::Object(bucket) => bucket.traffic(),
        }
    }
}

/// A store's life besides its bytes: the arrays inside it, syncing, and a
/// failed start undone.
impl Dest {
    /// The destination of the array at `key` inside this store (a level of
    /// an image), made ready: new and empty. A local one shares the
    /// store's lock; one in S3 is a store of its own under the prefix.
    pub fn within(&self, key: &str, options: &ZarrOptions) -> Result<Dest, StreamError> {
        match self {
            Dest::Local { root, direct, held } => {
                let root = root.join(key);
                match options.resume {
                    Some(_) => reopen_inner_directory(&root)?,
                    None => prepare_inner_directory(&root)?,
                }
                Ok(Dest::Local {
                    root,
                    direct: *direct,
                    held: held.clone(),
                })
            }
            Dest::Object(bucket) => Dest::prepare(&bucket.url().join(key), options),
        }
    }

    /// Syncs every file and directory written so far to the disk (nothing
    /// to do for objects, stored once complete); fails if the disk failed
    /// to take any write since the store was made ready.
    pub fn sync_all(&self) -> Result<(), DestError> {
        match self {
            Dest::Local { held, .. } => Ok(held.sync_all()?),
            Dest::Object(_) => Ok(()),
        }
    }

    /// Syncs the directories that hold the files at `keys` and those above
    /// them, up to the store's own (their entries: the files made in them);
    /// directories never made (a chunk of fill alone) are passed over.
    pub fn sync_directories<'k>(
        &self,
        keys: impl Iterator<Item = &'k str>,
    ) -> Result<(), DestError> {
        let Dest::Local { root, .. } = self else {
            return Ok(());
        };
        let mut dirs = std::collections::BTreeSet::new();
        for key in keys {
            let mut dir = Path::new(key).parent();
            while let Some(d) = dir {
                if !dirs.insert(root.join(d)) {
                    break;
                }
                dir = d.parent();
            }
        }
        dirs.insert(root.clone());
        for dir in dirs.iter().rev() {
            match sync_directory(dir) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                synced => synced?,
            }
        }
        Ok(())
    }

    /// Removes what a failed start made in the store (a local directory:
    /// its files, and itself if the start made it; a prefix in S3: its
    /// objects).
    pub fn abandon(&self) {
        match self {
            Dest::Local { root, held, .. } => abandon(root, held),
            Dest::Object(bucket) => bucket.abandon(),
        }
    }
}

/// What a store's path names: where [`ZarrOptions::path`] puts the store.
///
/// ```
/// use std::path::{Path, PathBuf};
/// use retile_store::StorePath;
/// let s3 = StorePath::classify(Path::new("s3://recordings/mouse 7/run?3.zarr"))?;
/// assert_eq!(s3, StorePath::S3 { bucket: "recordings".into(), prefix: "mouse 7/run?3.zarr".into() });
/// let file = StorePath::classify(Path::new("file:///data/run%203.zarr"))?;
/// assert_eq!(file, StorePath::Local(PathBuf::from("/data/run 3.zarr")));
/// assert!(StorePath::classify(Path::new("gs://bucket/run.zarr")).is_err());
/// assert!(StorePath::classify(Path::new("")).is_err());
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorePath {
    /// A local directory: a plain path, or a `file:///ABSOLUTE/PATH` URL
    /// (percent-escapes decoded).
    Local(PathBuf),
    /// A prefix in a bucket of S3-compatible object storage,
    /// `s3://BUCKET/PREFIX`: the prefix is the objects' key as given, byte
    /// for byte (nothing percent-encoded or decoded), without a trailing `/`.
    S3 {
        /// The bucket's name.
        bucket: String,
        /// The key every object of the store starts with (empty: the
        /// bucket's root).
        prefix: String,
    },
}

/// The longest prefix taken, in bytes: S3 keys are at most 1024 bytes, and
/// the store's own names (levels, chunk coordinates) need the rest.
///
/// ```
/// use std::path::Path;
/// use retile_store::{StorePath, MAX_PREFIX_BYTES};
/// let store = |prefix: &str| StorePath::classify(Path::new(&format!("s3://bucket/{prefix}")));
/// assert!(store(&"a".repeat(MAX_PREFIX_BYTES)).is_ok());
/// let err = store(&"a".repeat(MAX_PREFIX_BYTES + 1)).unwrap_err().to_string();
/// assert!(err.contains("a store's prefix at most 896"), "{err}");
/// ```
pub const MAX_PREFIX_BYTES: usize = 896;

/// URL schemes named where a store path starts with one, though it is not
/// followed by `/`: a path such as `gs:bucket` is a mistyped URL, not a
/// local directory meant to be called that.
const KNOWN_SCHEMES: [&str; 16] = [
    "s3", "s3a", "s3n", "gs", "gcs", "az", "azure", "abfs", "abfss", "adl", "wasb", "wasbs",
    "http", "https", "file", "hdfs",
];

impl StorePath {
    /// Reads `path` as the store's location: `s3://BUCKET/PREFIX`, a
    /// `file:///ABSOLUTE/PATH` URL, or a local directory. Refused, with the
    /// rule named: an empty path; any other URL scheme (`gs://`, `s3a://`,
    /// `S3://`, `http://`, ...); an S3 bucket that is empty or holds other
    /// characters than letters, digits, `.`, `-` and `_`; an S3 prefix with
    /// an empty segment (`a//b`), a `.` or `..` segment or a control
    /// character, or longer than [`MAX_PREFIX_BYTES`].
    ///
    /// ```
    /// use std::path::Path;
    /// use retile_store::StorePath;
    /// assert_eq!(StorePath::classify(Path::new("run.zarr"))?, StorePath::Local("run.zarr".into()));
    /// let s3 = StorePath::classify(Path::new("s3://bucket/run.zarr/"))?; // the trailing / dropped
    /// assert_eq!(s3, StorePath::S3 { bucket: "bucket".into(), prefix: "run.zarr".into() });
    /// let err = StorePath::classify(Path::new("S3://bucket/run.zarr")).unwrap_err().to_string();
    /// assert!(err.contains("lower case"), "{err}");
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn classify(path: &Path) -> Result<StorePath, StreamError> {
        let text = path.to_string_lossy();
        if text.is_empty() {
            return Err(StreamError::Invalid(
                "the store's path is empty: name a directory, or s3://BUCKET/PREFIX".into(),
            ));
        }
        let Some(scheme) = url_scheme(&text) else {
            return Ok(StorePath::Local(path.to_owned()));
        };
        let refuse = |why: String| Err(StreamError::Invalid(format!("{}: {why}", quoted(&text))));
        if text.starts_with(char::is_whitespace) {
            return refuse(format!("a space comes before the scheme {scheme}:"));
        }
        let Some(text) = path.to_str() else {
            return refuse(format!("a {scheme}: URL must be UTF-8"));
        };
        match scheme {
            "s3" => match text.strip_prefix("s3://") {
                Some(url) => parse_s3(url).or_else(refuse),
                None => refuse("an S3 store is written s3://BUCKET/PREFIX".into()),
            },
            "file" => parse_file_url(text).map(StorePath::Local).or_else(refuse),
            other => refuse(unknown_scheme(other)),
        }
    }
}

/// The URL scheme `text` starts with (leading spaces skipped): one followed
/// by `/`, or one of [`KNOWN_SCHEMES`] in any case.
fn url_scheme(text: &str) -> Option<&str> {
    let text = text.trim_start();
    let (scheme, rest) = text.split_once(':')?;
    let mut chars = scheme.chars();
    let well_formed = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let known = KNOWN_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str());
    (well_formed && (rest.starts_with('/') || known)).then_some(scheme)
}

/// Why `scheme` is refused, and what to write instead.
fn unknown_scheme(scheme: &str) -> String {
    let instead = match scheme.to_ascii_lowercase().as_str() {
        "s3" => " (schemes are written in lower case: s3://)",
        "s3a" | "s3n" => " (Hadoop's names for S3: write s3://)",
        "file" => " (written in lower case: file:///ABSOLUTE/PATH)",
        _ => "",
    };
    format!(
        "the scheme {scheme}: is not one retile writes{instead}; a store is a local directory (a path, or file:///ABSOLUTE/PATH) or s3://BUCKET/PREFIX (for a local directory whose name has a colon, write ./ in front)"
    )
}

/// `BUCKET/PREFIX` (after `s3://`) as a bucket and a prefix kept as given.
fn parse_s3(url: &str) -> Result<StorePath, String> {
    let (bucket, prefix) = url.split_once('/').unwrap_or((url, ""));
    if bucket.is_empty() {
        return Err("an S3 store is written s3://BUCKET/PREFIX, and the bucket is empty".into());
    }
    if let Some(c) = bucket
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || ".-_".contains(*c)))
    {
        return Err(format!(
            "the bucket '{bucket}' holds {}: a bucket's name has letters, digits, '.', '-' and '_'",
            named(c)
        ));
    }
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    check_prefix(prefix)?;
    Ok(StorePath::S3 {
        bucket: bucket.to_owned(),
        prefix: prefix.to_owned(),
    })
}

/// Refuses a prefix S3 cannot hold as the store's keys.
fn check_prefix(prefix: &str) -> Result<(), String> {
    if prefix.len() > MAX_PREFIX_BYTES {
        return Err(format!(
            "the prefix is {} bytes long; S3 keys are at most 1024 bytes, and a store's prefix at most {MAX_PREFIX_BYTES}",
            prefix.len()
        ));
    }
    if prefix.is_empty() {
        return Ok(());
    }
    for segment in prefix.split('/') {
        match segment {
            "" => {
                return Err(
                    "the prefix has an empty segment (two '/' in a row, or a '/' first)".into(),
                )
            }
            "." | ".." => {
                return Err(format!(
                    "the prefix has a '{segment}' segment, which S3 clients resolve away: name the prefix without it"
                ))
            }
            _ => {}
        }
        if let Some(c) = segment.chars().find(|c| c.is_control()) {
            return Err(format!("the prefix holds {}", named(c)));
        }
    }
    Ok(())
}

/// A character as messages name it: itself where printable, else its code.
fn named(c: char) -> String {
    match c.is_control() || c.is_whitespace() {
        true => format!("the character U+{:04X}", u32::from(c)),
        false => format!("the character '{c}'"),
    }
}

/// The local path of a `file:` URL: `file:///ABSOLUTE/PATH` or
/// `file://localhost/ABSOLUTE/PATH`, percent-escapes decoded.
fn parse_file_url(url: &str) -> Result<PathBuf, String> {
    let rule = "a file: URL names an absolute local path, file:///ABSOLUTE/PATH";
    let rest = url.strip_prefix("file://").ok_or(rule)?;
    let path = match rest.strip_prefix("localhost") {
        Some(after) if after.starts_with('/') => after,
        _ => rest,
    };
    if !path.starts_with('/') {
        return Err(format!(
            "{rule} (the host '{}' is not this machine)",
            path.split('/').next().unwrap_or_default()
        ));
    }
    if let Some(c) = path.chars().find(|c| *c == '?' || *c == '#') {
        return Err(format!(
            "{rule}: '{c}' starts a query or fragment in a URL; write it as %{:02X}",
            u32::from(c)
        ));
    }
    let bytes = percent_decode(path)?;
    if bytes.contains(&0) {
        return Err("a local path cannot hold the character U+0000".into());
    }
    Ok(path_of_bytes(bytes))
}

/// `text` with every `%XX` escape decoded.
fn percent_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        if b != b'%' {
            out.push(b);
            continue;
        }
        let hex = [bytes.next(), bytes.next()];
        let digit = |d: Option<u8>| d.and_then(|d| char::from(d).to_digit(16));
        match (digit(hex[0]), digit(hex[1])) {
            (Some(hi), Some(lo)) => out.push((hi * 16 + lo) as u8),
            _ => {
                return Err("a '%' in a URL starts an escape of two hex digits (%25 is '%')".into())
            }
        }
    }
    Ok(out)
}

#[cfg(unix)]
fn path_of_bytes(bytes: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}

#[cfg(not(unix))]
fn path_of_bytes(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::DIRECT_IO_MIN_CHUNK;

    /// Whether `dest` writes its chunk files with direct I/O.
    fn direct(dest: &Dest) -> bool {
        matches!(dest, Dest::Local { direct: true, .. })
    }

    #[test]
    fn chunks_smaller_than_the_direct_io_minimum_go_through_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let options = ZarrOptions {
            path: dir.path().join("a.zarr"),
            ..Default::default()
        };
        let Dest::Local { root, held, .. } = Dest::prepare(&options.path, &options).unwrap() else {
            panic!("a local path is a local store")
        };
        // as on a file system that takes O_DIRECT (tmpfs does not)
        let taking = || Dest::Local {
            root: root.clone(),
            direct: true,
            held: held.clone(),
        };
        assert!(!direct(
            &taking().for_chunks_of(DIRECT_IO_MIN_CHUNK - 1, DIRECT_IO_MIN_CHUNK)
        ));
        assert!(!direct(
            &taking().for_chunks_of(8 << 10, DIRECT_IO_MIN_CHUNK)
        ));
        assert!(direct(
            &taking().for_chunks_of(DIRECT_IO_MIN_CHUNK, DIRECT_IO_MIN_CHUNK)
        ));
        assert!(direct(
            &taking().for_chunks_of(8 << 20, DIRECT_IO_MIN_CHUNK)
        ));
        assert!(direct(&taking().for_chunks_of(1, 0))); // every chunk, asked for
                                                        // a store written through the page cache stays so, whatever its chunks
        let buffered = Dest::Local {
            root: root.clone(),
            direct: false,
            held: held.clone(),
        };
        assert!(!direct(&buffered.for_chunks_of(8 << 20, 0)));
    }
}
