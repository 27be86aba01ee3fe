//! A Zarr group: a directory or prefix whose `zarr.json` says what it
//! holds (the arrays of an OME-Zarr image, the images of a plate).

use std::path::Path;

use retile_plan::StreamError;

use crate::dest::Dest;
use crate::error::store_error;
use crate::options::ZarrOptions;

/// A group being written: made ready (new, or emptied where the options
/// allow) when created, its `zarr.json` written whole when asked.
///
/// ```
/// use retile_store::{Group, ZarrOptions};
/// let dir = std::env::temp_dir().join(format!("retile-group-doc-{}", std::process::id()));
/// let group = Group::create(&ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() })?;
/// group.put_metadata(&serde_json::json!({"zarr_format": 3, "node_type": "group"}))?;
/// assert!(dir.join("zarr.json").is_file());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub struct Group {
    dest: Dest,
}

impl Group {
    /// Makes ready the group at `options.path` (a local directory or
    /// `s3://BUCKET/PREFIX`), as a Zarr array's store is made ready.
    pub fn create(options: &ZarrOptions) -> Result<Group, StreamError> {
        Ok(Group {
            dest: Dest::prepare(&options.path, options)?,
        })
    }

    /// Where the group is.
    pub fn path(&self) -> &Path {
        self.dest.name()
    }

    /// Replaces the group's `zarr.json` with `metadata`, durably: a reader
    /// sees the old document or the new one, whole.
    pub fn put_metadata(&self, metadata: &serde_json::Value) -> Result<(), StreamError> {
        let fail = |e| store_error(self.dest.name(), "writing the group metadata zarr.json", e);
        let bytes = serde_json::to_vec_pretty(metadata).map_err(|e| fail(e.into()))?;
        self.dest
            .put_metadata("zarr.json", &bytes, true)
            .map_err(fail)
    }
}
