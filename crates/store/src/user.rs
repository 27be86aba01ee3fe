//! What a stream's user says about an array besides its elements: its
//! attributes (the `attributes` of the node's `zarr.json`, beside retile's
//! own keys) and a record for each plane (the 1-D string array
//! [`FRAME_METADATA`] inside the node), held until the array's claims
//! write them (`crate::records`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};

use retile_plan::StreamError;

/// Attribute keys retile writes itself, which user attributes may not use:
/// `ome` holds an OME-Zarr image's metadata; `retile` is kept for retile's
/// own records.
///
/// ```
/// use retile_store::{UserMetadata, RESERVED_ATTRIBUTES};
/// for key in RESERVED_ATTRIBUTES {
///     let err = UserMetadata::new(serde_json::json!({ key: 1 })).unwrap_err().to_string();
///     assert!(err.contains("is retile's own"), "{err}");
/// }
/// ```
pub const RESERVED_ATTRIBUTES: [&str; 2] = ["ome", "retile"];

/// The key, inside the array (or the OME-Zarr image) it describes, of the
/// array of per-plane records: 1-D, one UTF-8 string per plane (Zarr v3
/// `string`, codec `vlen-utf8`), the JSON text of the object given with the
/// plane, or `""` for a plane given none.
///
/// ```
/// use retile_plan::{DType, Epoch, Sink, StreamPlan, StreamSpec};
/// use retile_store::{UserMetadata, ZarrOptions, ZarrSink, FRAME_METADATA};
/// let dir = tempfile::tempdir()?;
/// let user = UserMetadata::new(serde_json::json!({}))?;
/// user.record(0, 2, &serde_json::json!({"exposure_ms": 5}))?;
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 4])?)?;
/// let mut sink = ZarrSink::new(ZarrOptions { path: dir.path().to_owned(), user: Some(user), ..Default::default() });
/// sink.begin(&plan, &[0])?;
/// sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &[1; 8], plan: &plan })?;
/// sink.finish(2)?;
/// assert!(dir.path().join(FRAME_METADATA).join("zarr.json").is_file());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const FRAME_METADATA: &str = "frame_metadata";

/// Records per chunk of the [`FRAME_METADATA`] array: a claim rewrites at
/// most the one chunk it ends in, besides the chunks it completes.
///
/// ```
/// use retile_plan::{DType, Epoch, Sink, StreamPlan, StreamSpec};
/// use retile_store::{UserMetadata, ZarrOptions, ZarrSink, FRAME_CHUNK};
/// let dir = tempfile::tempdir()?;
/// let user = UserMetadata::new(serde_json::json!({}))?;
/// user.record(0, 2, &serde_json::json!({"exposure_ms": 5}))?;
/// # let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 4])?)?;
/// # let mut sink = ZarrSink::new(ZarrOptions { path: dir.path().to_owned(), user: Some(user), ..Default::default() });
/// # sink.begin(&plan, &[0])?;
/// # sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &[1; 8], plan: &plan })?;
/// # sink.finish(2)?;
/// // ... two planes streamed with `user` ...
/// let records = std::fs::read(dir.path().join("frame_metadata/zarr.json"))?;
/// let records: serde_json::Value = serde_json::from_slice(&records)?;
/// assert_eq!(records["chunk_grid"]["configuration"]["chunk_shape"][0], FRAME_CHUNK);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const FRAME_CHUNK: u64 = 1024;

/// The user's metadata of one array (or image), shared by the stream's
/// user, who sets it, and the array's sink, which writes it with its
/// claims; clones share it. It holds no part of the store.
///
/// ```
/// use retile_store::UserMetadata;
/// use serde_json::json;
/// let user = UserMetadata::new(json!({"sample": "mouse 7"}))?;
/// user.set_attributes(json!({"temperature": 37.0}))?;
/// assert_eq!(user.attributes()["sample"], "mouse 7");
/// assert!(user.set_attributes(json!({"ome": {}})).is_err());
/// user.record(0, 1, &json!({"exposure_ms": 5}))?; // plane 0's record
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Clone, Default)]
pub struct UserMetadata {
    state: Arc<Mutex<State>>,
}

/// The metadata, and what of it is written.
#[derive(Default)]
struct State {
    attributes: Map<String, Value>,
    /// The attributes changed since they were last written.
    changed: bool,
    /// Records not yet written in a whole chunk: plane -> JSON text.
    frames: BTreeMap<u64, Arc<str>>,
    /// Planes below this are written in whole chunks for good: a record
    /// of one is dropped.
    settled: u64,
}

impl std::fmt::Debug for UserMetadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserMetadata")
            .field("attributes", &self.attributes())
            .finish_non_exhaustive()
    }
}

/// `value` as user attributes: a JSON object none of whose keys is retile's own.
fn checked_attributes(value: Value) -> Result<Map<String, Value>, StreamError> {
    let Value::Object(map) = value else {
        return Err(StreamError::Invalid(format!(
            "attributes must be a JSON object (a dict of JSON values), not {}",
            kind(&value)
        )));
    };
    if let Some(key) = RESERVED_ATTRIBUTES.iter().find(|k| map.contains_key(**k)) {
        return Err(StreamError::Invalid(format!(
            "the attribute '{key}' is retile's own (retile writes {}); user attributes may not use the keys {}: rename it",
            match *key {
                "ome" => "an OME-Zarr image's metadata there",
                _ => "its own records there",
            },
            RESERVED_ATTRIBUTES.join(", ")
        )));
    }
    Ok(map)
}

/// What kind of JSON value `value` is, for a message.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl UserMetadata {
    /// Metadata whose attributes are `attributes` (a JSON object; `{}` for
    /// none), refused if it is not an object or uses a key of
    /// [`RESERVED_ATTRIBUTES`].
    ///
    /// ```
    /// use retile_store::UserMetadata;
    /// use serde_json::json;
    /// assert!(UserMetadata::new(json!({}))?.attributes().is_empty());
    /// let err = UserMetadata::new(json!(["mouse 7"])).unwrap_err().to_string();
    /// assert!(err.contains("must be a JSON object"), "{err}");
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn new(attributes: Value) -> Result<UserMetadata, StreamError> {
        let attributes = checked_attributes(attributes)?;
        Ok(UserMetadata {
            state: Arc::new(Mutex::new(State {
                changed: !attributes.is_empty(),
                attributes,
                ..State::default()
            })),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Updates the attributes with `attributes`' keys (the others are
    /// kept, as Python's `dict.update`); written with the next claim.
    /// Refused, changing nothing, as [`UserMetadata::new`] refuses.
    ///
    /// ```
    /// use retile_store::UserMetadata;
    /// use serde_json::json;
    /// let user = UserMetadata::new(json!({"sample": "m7", "run": 1}))?;
    /// user.set_attributes(json!({"run": 2}))?;
    /// assert_eq!(user.attributes()["run"], 2);
    /// assert_eq!(user.attributes()["sample"], "m7"); // kept
    /// assert!(user.set_attributes(json!({"retile": {}, "run": 3})).is_err());
    /// assert_eq!(user.attributes()["run"], 2); // refused: nothing changed
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn set_attributes(&self, attributes: Value) -> Result<(), StreamError> {
        let update = checked_attributes(attributes)?;
        let mut state = self.lock();
        state.attributes.extend(update);
        state.changed = true;
        Ok(())
    }

    /// The attributes as they are now (written or not).
    ///
    /// ```
    /// use retile_store::UserMetadata;
    /// use serde_json::json;
    /// let user = UserMetadata::new(json!({"sample": "m7"}))?;
    /// user.clone().set_attributes(json!({"stage": "B"}))?; // clones share it
    /// let keys: Vec<String> = user.attributes().keys().cloned().collect();
    /// assert_eq!(keys, ["sample", "stage"]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn attributes(&self) -> Map<String, Value> {
        self.lock().attributes.clone()
    }

    /// `document` (a node's `zarr.json`) with the attributes as they are
    /// now put in its `attributes`, beside the keys it has.
    ///
    /// ```
    /// use retile_store::UserMetadata;
    /// use serde_json::json;
    /// let user = UserMetadata::new(json!({"sample": "m7"}))?;
    /// let group = json!({"node_type": "group", "attributes": {"ome": {"version": "0.5"}}});
    /// let written = user.written_into(&group);
    /// assert_eq!(written["attributes"]["ome"]["version"], "0.5");
    /// assert_eq!(written["attributes"]["sample"], "m7");
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn written_into(&self, document: &Value) -> Value {
        let mut document = document.clone();
        let mut state = self.lock();
        if let Some(attributes) = document.as_object_mut().and_then(|d| {
            d.entry("attributes")
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
        }) {
            attributes.extend(state.attributes.clone());
        }
        state.changed = false;
        document
    }

    /// Records `metadata` (a JSON object) for the `planes` planes from
    /// plane `first` on; written with the claim that claims them. A plane
    /// recorded twice keeps the last record.
    ///
    /// ```
    /// use retile_store::UserMetadata;
    /// use serde_json::json;
    /// let user = UserMetadata::new(json!({}))?;
    /// user.record(0, 10, &json!({"exposure_ms": 5}))?; // planes 0 to 9
    /// user.record(3, 1, &json!({"exposure_ms": 8}))?; // plane 3 recorded again
    /// let err = user.record(10, 1, &json!(5)).unwrap_err().to_string();
    /// assert!(err.contains("must be a JSON object"), "{err}");
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn record(&self, first: u64, planes: u64, metadata: &Value) -> Result<(), StreamError> {
        if !metadata.is_object() {
            return Err(StreamError::Invalid(format!(
                "a plane's metadata must be a JSON object (a dict of JSON values), not {}",
                kind(metadata)
            )));
        }
        let text: Arc<str> = metadata.to_string().into();
        let mut state = self.lock();
        let end = first.saturating_add(planes);
        for plane in first.max(state.settled)..end {
            state.frames.insert(plane, text.clone());
        }
        Ok(())
    }

    /// The attributes, if they changed since they were last taken (or
    /// written into a document).
    pub(crate) fn take_changed(&self) -> Option<Map<String, Value>> {
        let mut state = self.lock();
        std::mem::take(&mut state.changed).then(|| state.attributes.clone())
    }

    /// Whether any plane has a record not yet settled.
    pub(crate) fn has_records(&self) -> bool {
        !self.lock().frames.is_empty()
    }

    /// The records of planes `start..start + count` (`""` for none; none
    /// past `end`).
    pub(crate) fn records(&self, start: u64, count: u64, end: u64) -> Vec<Arc<str>> {
        let state = self.lock();
        (start..start + count)
            .map(|p| match p < end {
                true => state.frames.get(&p).cloned().unwrap_or_else(|| "".into()),
                false => "".into(),
            })
            .collect()
    }

    /// Takes back the record `text` (a JSON object's, as stored) of plane
    /// `plane`, read from a store being appended to.
    pub(crate) fn restore(&self, plane: u64, text: String) {
        self.lock().frames.insert(plane, text.into());
    }

    /// Forgets the records of planes below `plane`: written for good.
    pub(crate) fn settle(&self, plane: u64) {
        let mut state = self.lock();
        state.frames = state.frames.split_off(&plane);
        state.settled = state.settled.max(plane);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        #[test]
        fn attributes_update_like_a_dict(
            first in proptest::collection::btree_map("[a-z]{1,3}", 0i64..9, 0..6),
            second in proptest::collection::btree_map("[a-z]{1,3}", 0i64..9, 0..6),
        ) {
            let first: BTreeMap<String, i64> = first.into_iter().filter(|(k, _)| !RESERVED_ATTRIBUTES.contains(&k.as_str())).collect();
            let second: BTreeMap<String, i64> = second.into_iter().filter(|(k, _)| !RESERVED_ATTRIBUTES.contains(&k.as_str())).collect();
            let user = UserMetadata::new(json!(first)).unwrap();
            user.set_attributes(json!(second)).unwrap();
            let mut expected = first.clone();
            expected.extend(second);
            prop_assert_eq!(Value::Object(user.attributes()), json!(expected));
        }
    }

    #[test]
    fn reserved_keys_and_non_objects_are_refused_and_change_nothing() {
        let user = UserMetadata::new(json!({"a": 1})).unwrap();
        for key in RESERVED_ATTRIBUTES {
            let e = user.set_attributes(json!({ key: 1, "b": 2 })).unwrap_err();
            assert!(
                e.to_string().contains(&format!("'{key}' is retile's own")),
                "{e}"
            );
            assert!(UserMetadata::new(json!({ key: {} })).is_err());
        }
        for bad in [json!([1]), json!("a"), json!(1), json!(null)] {
            let e = user.set_attributes(bad.clone()).unwrap_err();
            assert!(e.to_string().contains("must be a JSON object"), "{e}");
            assert!(user.record(0, 1, &bad).is_err());
        }
        assert_eq!(Value::Object(user.attributes()), json!({"a": 1}));
    }
}
