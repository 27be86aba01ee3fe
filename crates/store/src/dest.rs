//! Where a store's bytes go: files in a local directory (through
//! [`crate::files`]) or objects in S3-compatible object storage (through
//! [`crate::object`]). The Zarr sink and the OME-Zarr group write through
//! [`Dest`] alone, so that the shard layout, the codecs and the metadata are
//! made once, whatever the destination.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use retile_plan::StreamError;

use crate::error::DestError;
use crate::files::{direct_io_works, prepare_directory, replace_atomically, Appended, Appender};
use crate::object::{Bucket, Upload};
use crate::options::ZarrOptions;

/// The destination of one store (an array, or an OME-Zarr group).
pub(crate) enum Dest {
    /// A local directory; `direct`: chunk and shard files are written with `O_DIRECT`.
    Local { root: PathBuf, direct: bool },
    /// A prefix in a bucket.
    Object(Arc<Bucket>),
}

/// One chunk or shard being written, kept between epochs.
pub(crate) enum Open {
    /// A file: its path and what was appended so far.
    Local { path: PathBuf, appended: Appended },
    /// An object: its bytes not yet uploaded and its multipart upload.
    Object(Upload),
}

/// Appends to an [`Open`] file or object during one epoch.
pub(crate) enum Writer<'s> {
    /// Through the thread's staging buffer.
    Local(Appender<'s>),
    /// Into the object's parts.
    Object(&'s mut Upload),
}

/// Whether `path` names a store in object storage (`s3://...`).
pub(crate) fn is_object_store(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.starts_with("s3://"))
}

impl Dest {
    /// Makes ready the store at `path` (`s3://BUCKET/PREFIX`, or a local
    /// directory): new, or emptied where `options.overwrite` allows.
    pub fn prepare(path: &Path, options: &ZarrOptions) -> Result<Dest, StreamError> {
        if let Some(url) = path.to_str().and_then(|p| p.strip_prefix("s3://")) {
            let bucket = Bucket::connect(url, &options.s3)?;
            bucket.prepare(options.overwrite)?;
            return Ok(Dest::Object(Arc::new(bucket)));
        }
        prepare_directory(path, options.overwrite)?;
        Ok(Dest::Local {
            root: path.to_owned(),
            direct: !options.buffered_io && direct_io_works(path),
        })
    }

    /// The store, as errors name it.
    pub fn name(&self) -> &Path {
        match self {
            Dest::Local { root, .. } => root,
            Dest::Object(bucket) => bucket.url(),
        }
    }

    /// A new, empty file or object at `key`, of about `expected` bytes; an
    /// object keeps at most `parts_in_flight` parts uploading at once.
    pub fn fresh(&self, key: &str, parts_in_flight: usize, expected: u64) -> Open {
        match self {
            Dest::Local { root, .. } => Open::Local {
                path: root.join(key),
                appended: Appended::default(),
            },
            Dest::Object(bucket) => {
                Open::Object(Upload::new(bucket, key, parts_in_flight, expected))
            }
        }
    }

    /// Appends to `open` after what it holds.
    pub fn writer<'s>(&self, open: &'s mut Open) -> Result<Writer<'s>, DestError> {
        match (self, open) {
            (Dest::Local { direct, .. }, Open::Local { path, appended }) => {
                Ok(Writer::Local(Appender::open(path, *direct, appended)?))
            }
            (_, Open::Object(upload)) => Ok(Writer::Object(upload)),
            (Dest::Object(_), Open::Local { .. }) => {
                Err("a local file was opened in object storage".into())
            }
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

impl Writer<'_> {
    /// The offset the next pushed byte lands at.
    pub fn offset(&self) -> u64 {
        match self {
            Writer::Local(file) => file.offset(),
            Writer::Object(upload) => upload.offset(),
        }
    }

    /// Appends `bytes`.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), DestError> {
        match self {
            Writer::Local(file) => Ok(file.push(bytes)?),
            Writer::Object(upload) => upload.push(bytes),
        }
    }

    /// Appends `parts` one after the other.
    pub fn push_all(&mut self, parts: &[&[u8]]) -> Result<(), DestError> {
        match self {
            Writer::Local(file) => Ok(file.push_all(parts)?),
            Writer::Object(upload) => parts.iter().try_for_each(|p| upload.push(p)),
        }
    }

    /// Stops appending until the next epoch (a file keeps fewer than
    /// `hold` staged bytes; an object keeps its unfinished part).
    pub fn pause(self, hold: usize) -> Result<(), DestError> {
        match self {
            Writer::Local(file) => Ok(file.pause(hold)?),
            Writer::Object(_) => Ok(()),
        }
    }

    /// Ends the file or object; returns its length. A file exists from here
    /// on, whole; an object once the next metadata document is stored (a
    /// failed one is left out, its upload aborted, and fails the stream).
    pub fn close(self) -> Result<u64, DestError> {
        match self {
            Writer::Local(file) => {
                let len = file.offset();
                file.close()?;
                Ok(len)
            }
            Writer::Object(upload) => upload.close(),
        }
    }
}
