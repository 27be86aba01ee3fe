//! The root of what one stream writes: an array, or an OME-Zarr image's
//! group with one array per level under it. It is made ready once (new, or
//! emptied where the options allow), locked against every other stream for
//! as long as anything of it is written, and what a failed start made is
//! removed again, so that the start can be retried as it was.

use std::path::{Path, PathBuf};

use retile_plan::StreamError;

use crate::dest::Dest;
use crate::options::ZarrOptions;

/// The root of a stream's store, locked while a clone of it (or of an
/// array sink made in it) lives.
///
/// ```
/// use retile_store::{StoreRoot, ZarrOptions};
/// let dir = std::env::temp_dir().join(format!("retile-root-doc-{}", std::process::id()));
/// let options = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
/// let root = StoreRoot::open(&options)?;
/// // a second stream is refused while the first holds the store
/// let refused = StoreRoot::open(&options).err().unwrap().to_string();
/// assert!(refused.contains("is being written by another stream"), "{refused}");
/// drop(root);
/// assert!(StoreRoot::open(&options).is_ok());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Clone)]
pub struct StoreRoot {
    dest: Dest,
}

impl StoreRoot {
    /// Makes ready and locks the store at `options.path` (a local
    /// directory or `s3://BUCKET/PREFIX`): new, or emptied where
    /// `options.overwrite` allows (a Zarr store and retile's leftovers
    /// only); refused while another stream writes there.
    ///
    /// ```
    /// use retile_store::{StoreRoot, ZarrOptions};
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("notes.txt"), "not a Zarr store")?;
    /// let options = ZarrOptions { path: dir.path().to_owned(), overwrite: true, ..Default::default() };
    /// let refused = StoreRoot::open(&options).unwrap_err().to_string();
    /// assert!(refused.contains("is not a Zarr store alone"), "{refused}");
    /// assert!(dir.path().join("notes.txt").is_file()); // nothing deleted
    /// let root = StoreRoot::open(&ZarrOptions { path: dir.path().join("run.zarr"), ..Default::default() })?;
    /// assert!(root.path().is_dir()); // made new
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(options: &ZarrOptions) -> Result<StoreRoot, StreamError> {
        Ok(StoreRoot {
            dest: Dest::prepare(&options.path, options)?,
        })
    }

    /// Where the store is.
    ///
    /// ```
    /// use retile_store::{StoreRoot, ZarrOptions};
    /// let dir = tempfile::tempdir()?;
    /// let root = StoreRoot::open(&ZarrOptions { path: dir.path().join("run.zarr"), ..Default::default() })?;
    /// assert_eq!(root.path(), dir.path().join("run.zarr"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        self.dest.name()
    }

    /// The store at `key` inside this one (an image's group in an
    /// acquisition), made ready (new and empty) and locked with this one.
    ///
    /// ```
    /// use retile_store::{StoreRoot, ZarrOptions};
    /// let dir = std::env::temp_dir().join(format!("retile-root-within-doc-{}", std::process::id()));
    /// let options = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
    /// let root = StoreRoot::open(&options)?;
    /// let image = root.within("plate/A/1/0", &options)?;
    /// assert!(image.path().ends_with("plate/A/1/0") && image.path().is_dir());
    /// # drop(image); drop(root); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn within(&self, key: &str, options: &ZarrOptions) -> Result<StoreRoot, StreamError> {
        Ok(StoreRoot {
            dest: self.dest_for(key, options)?,
        })
    }

    /// The destination of the array at `key` (made ready: new and empty).
    pub(crate) fn dest_for(&self, key: &str, options: &ZarrOptions) -> Result<Dest, StreamError> {
        match key {
            "" => Ok(self.dest.clone()),
            key => self.dest.within(key, options),
        }
    }

    /// The root's own destination (a group's metadata is written there).
    pub(crate) fn dest(&self) -> &Dest {
        &self.dest
    }

    /// Removes what a start that failed made (every file of the store; its
    /// directory, if the start made it, once the last clone is dropped), so
    /// that the same start can be tried again.
    ///
    /// ```
    /// use retile_store::{StoreRoot, ZarrOptions};
    /// let dir = tempfile::tempdir()?;
    /// let store = dir.path().join("run.zarr");
    /// let root = StoreRoot::open(&ZarrOptions { path: store.clone(), ..Default::default() })?;
    /// assert!(store.is_dir());
    /// root.abandon(); // the stream could not start
    /// drop(root);
    /// assert!(!store.exists()); // the start made the directory: it is gone
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abandon(&self) {
        self.dest.abandon();
    }
}

impl std::fmt::Debug for StoreRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StoreRoot")
            .field(&PathBuf::from(self.path()))
            .finish()
    }
}
