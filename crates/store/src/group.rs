//! A Zarr group: a directory or prefix whose `zarr.json` says what it
//! holds (the arrays of an OME-Zarr image, the images of a plate).

use std::path::Path;

use retile_plan::StreamError;

use crate::error::store_error;
use crate::options::ZarrOptions;
use crate::root::StoreRoot;

/// A group being written: made ready (new, or emptied where the options
/// allow) and locked when created, as the root of a stream's store
/// ([`StoreRoot`]), its `zarr.json` written whole when asked.
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
    root: StoreRoot,
}

impl Group {
    /// Makes ready the group at `options.path` (a local directory or
    /// `s3://BUCKET/PREFIX`), as a Zarr array's store is made ready.
    ///
    /// ```
    /// use retile_store::{Group, ZarrOptions};
    /// let dir = tempfile::tempdir()?;
    /// let options = ZarrOptions { path: dir.path().join("plate.zarr"), ..Default::default() };
    /// let group = Group::create(&options)?;
    /// assert!(group.path().is_dir());
    /// assert!(Group::create(&options).is_err()); // locked while `group` lives
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(options: &ZarrOptions) -> Result<Group, StreamError> {
        Ok(Group {
            root: StoreRoot::open(options)?,
        })
    }

    /// Makes ready the group at `key` inside `parent` (new and empty),
    /// locked with `parent`: an image of an acquisition.
    ///
    /// ```
    /// use retile_store::{Group, ZarrOptions};
    /// let dir = tempfile::tempdir()?;
    /// let options = ZarrOptions { path: dir.path().join("plate.zarr"), ..Default::default() };
    /// let plate = Group::create(&options)?;
    /// let image = Group::within(plate.root(), "A/1/0", &options)?;
    /// image.put_metadata(&serde_json::json!({"zarr_format": 3, "node_type": "group"}))?;
    /// assert!(dir.path().join("plate.zarr/A/1/0/zarr.json").is_file());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn within(
        parent: &StoreRoot,
        key: &str,
        options: &ZarrOptions,
    ) -> Result<Group, StreamError> {
        Ok(Group {
            root: parent.within(key, options)?,
        })
    }

    /// Where the group is.
    ///
    /// ```
    /// use retile_store::{Group, ZarrOptions};
    /// let dir = tempfile::tempdir()?;
    /// let group = Group::create(&ZarrOptions { path: dir.path().join("image.zarr"), ..Default::default() })?;
    /// assert_eq!(group.path(), dir.path().join("image.zarr"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// The group as the root of the stream's store: where its arrays are
    /// made, and what keeps it locked.
    ///
    /// ```
    /// use retile_store::{Group, ZarrOptions};
    /// let dir = tempfile::tempdir()?;
    /// let options = ZarrOptions { path: dir.path().join("image.zarr"), ..Default::default() };
    /// let group = Group::create(&options)?;
    /// let level0 = group.root().within("0", &options)?; // an array's store in the group
    /// assert_eq!(level0.path(), group.path().join("0"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn root(&self) -> &StoreRoot {
        &self.root
    }

    /// Replaces the group's `zarr.json` with `metadata`, durably: a reader
    /// sees the old document or the new one, whole.
    ///
    /// ```
    /// use retile_store::{Group, ZarrOptions};
    /// use serde_json::json;
    /// let dir = tempfile::tempdir()?;
    /// let group = Group::create(&ZarrOptions { path: dir.path().join("image.zarr"), ..Default::default() })?;
    /// group.put_metadata(&json!({"zarr_format": 3, "node_type": "group", "attributes": {"n": 1}}))?;
    /// let written: serde_json::Value = serde_json::from_slice(&std::fs::read(group.path().join("zarr.json"))?)?;
    /// assert_eq!(written["attributes"]["n"], 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_metadata(&self, metadata: &serde_json::Value) -> Result<(), StreamError> {
        self.put_metadata_at("", metadata)
    }

    /// Replaces the `zarr.json` of the group at `key` under this one (`""`:
    /// this group's own) with `metadata`, durably, as [`Group::put_metadata`]
    /// does: the groups between an acquisition's root and its arrays.
    ///
    /// ```
    /// use retile_store::{Group, ZarrOptions};
    /// let dir = std::env::temp_dir().join(format!("retile-group-at-doc-{}", std::process::id()));
    /// let group = Group::create(&ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() })?;
    /// std::fs::create_dir_all(dir.join("A"))?;
    /// group.put_metadata_at("A", &serde_json::json!({"zarr_format": 3, "node_type": "group"}))?;
    /// assert!(dir.join("A/zarr.json").is_file());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_metadata_at(
        &self,
        key: &str,
        metadata: &serde_json::Value,
    ) -> Result<(), StreamError> {
        let dest = self.root.dest();
        let fail = |e| store_error(dest.name(), "writing the group metadata zarr.json", e);
        let bytes = serde_json::to_vec_pretty(metadata).map_err(|e| fail(e.into()))?;
        let file = match key {
            "" => "zarr.json".to_string(),
            key => format!("{key}/zarr.json"),
        };
        dest.put_metadata(&file, &bytes, true).map_err(fail)
    }
}
