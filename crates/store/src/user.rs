//! What a stream's user says about an array besides its elements: its
//! attributes (the `attributes` of the node's `zarr.json`, beside retile's
//! own keys) and a record for each plane (the 1-D string array
//! [`FRAME_METADATA`] inside the node). Both are kept until the next claim
//! of the array's planes, which writes them: the attributes with the
//! claim's `zarr.json`, the records of exactly the planes it claims.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Map, Value};

use retile_plan::StreamError;

use crate::dest::Dest;
use crate::error::store_error;
use crate::group::Group;
use crate::options::ZarrOptions;

/// Attribute keys retile writes itself, which user attributes may not use:
/// `ome` holds an OME-Zarr image's metadata; `retile` is kept for retile's
/// own records.
pub const RESERVED_ATTRIBUTES: [&str; 2] = ["ome", "retile"];

/// The key, inside the array (or the OME-Zarr image) it describes, of the
/// array of per-plane records: 1-D, one UTF-8 string per plane (Zarr v3
/// `string`, codec `vlen-utf8`), the JSON text of the object given with the
/// plane, or `""` for a plane given none.
pub const FRAME_METADATA: &str = "frame_metadata";

/// Records per chunk of the [`FRAME_METADATA`] array: a claim rewrites at
/// most the one chunk it ends in, besides the chunks it completes.
pub const FRAME_CHUNK: u64 = 1024;

/// The user's metadata of one array (or image), shared by the stream's
/// user, who sets it, and the array's sink, which writes it with its
/// claims; clones share it.
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
    /// Where the metadata goes, once a sink or an image took it.
    node: Option<Node>,
    /// The records' array, once made.
    sidecar: Option<Dest>,
    /// Planes the records' array claims.
    claimed: u64,
}

/// The node the metadata describes.
struct Node {
    dest: Dest,
    options: ZarrOptions,
    /// An OME-Zarr image's group: its `zarr.json` without the user's
    /// attributes (`None`: the array's own `zarr.json` holds them).
    group: Option<Value>,
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
    pub fn set_attributes(&self, attributes: Value) -> Result<(), StreamError> {
        let update = checked_attributes(attributes)?;
        let mut state = self.lock();
        state.attributes.extend(update);
        state.changed = true;
        Ok(())
    }

    /// The attributes as they are now (written or not).
    pub fn attributes(&self) -> Map<String, Value> {
        self.lock().attributes.clone()
    }

    /// Records `metadata` (a JSON object) for the `planes` planes from
    /// plane `first` on; written with the claim that claims them. A plane
    /// recorded twice keeps the last record.
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
        for plane in first.max(state.claimed)..end {
            state.frames.insert(plane, text.clone());
        }
        Ok(())
    }

    /// Makes the metadata an OME-Zarr image's: the attributes go in the
    /// image group's `zarr.json` (`document` is that without them), the
    /// records in the group. Nothing is written until
    /// [`UserMetadata::put_group`].
    pub fn attach_group(&self, group: &Group, options: &ZarrOptions, document: Value) {
        let mut state = self.lock();
        state.node = Some(Node {
            dest: group.root().dest().clone(),
            options: ZarrOptions {
                user: None,
                ..options.clone()
            },
            group: Some(document),
        });
        state.changed = false;
    }

    /// Lets go of the store the metadata was attached to (and so of its
    /// lock): called when the stream's store is closed or its start
    /// failed. Nothing more is written.
    pub fn detach(&self) {
        let mut state = self.lock();
        state.node = None;
        state.sidecar = None;
    }

    /// Writes the image group's `zarr.json` with the attributes as they
    /// are now (see [`UserMetadata::attach_group`]).
    pub fn put_group(&self) -> Result<(), StreamError> {
        let mut state = self.lock();
        state.put_group(true)
    }

    /// Makes the metadata the array's at `dest`, unless an image took it;
    /// the store is let go of when what this returns is dropped.
    pub(crate) fn attach_array(&self, dest: &Dest, options: &ZarrOptions) -> Attached {
        let mut state = self.lock();
        state.node.get_or_insert_with(|| Node {
            dest: dest.clone(),
            options: ZarrOptions {
                user: None,
                ..options.clone()
            },
            group: None,
        });
        Attached(self.clone())
    }

    /// Before a claim of `planes` planes replaces the array's `zarr.json`
    /// (whose attributes are `attributes`): the records of the planes it
    /// claims are written, and the user's attributes put in `attributes`
    /// when they are the array's own.
    pub(crate) fn before_claim(
        &self,
        planes: u64,
        attributes: &mut Map<String, Value>,
        durable: bool,
    ) -> Result<(), StreamError> {
        let mut state = self.lock();
        state.write_frames(planes, durable)?;
        if state.node.as_ref().is_some_and(|n| n.group.is_none()) {
            attributes.extend(state.attributes.clone());
            state.changed = false;
        }
        Ok(())
    }

    /// After the claim: an image's group `zarr.json` is replaced when the
    /// attributes changed.
    pub(crate) fn after_claim(&self, durable: bool) -> Result<(), StreamError> {
        let mut state = self.lock();
        match state.changed && state.node.as_ref().is_some_and(|n| n.group.is_some()) {
            true => state.put_group(durable),
            false => Ok(()),
        }
    }
}

/// User metadata attached to an array's sink: detached when the sink's
/// claims end.
pub(crate) struct Attached(UserMetadata);

impl Attached {
    /// The metadata.
    pub(crate) fn user(&self) -> &UserMetadata {
        &self.0
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.0.detach();
    }
}

impl State {
    fn put_group(&mut self, durable: bool) -> Result<(), StreamError> {
        let Some(Node {
            dest,
            group: Some(document),
            ..
        }) = &self.node
        else {
            return Ok(());
        };
        let mut document = document.clone();
        if let Some(attributes) = document.as_object_mut().and_then(|d| {
            d.entry("attributes")
                .or_insert_with(|| json!({}))
                .as_object_mut()
        }) {
            attributes.extend(self.attributes.clone());
        }
        let fail = |e| store_error(dest.name(), "writing the group metadata zarr.json", e);
        let bytes = serde_json::to_vec_pretty(&document).map_err(|e| fail(e.into()))?;
        dest.put_metadata("zarr.json", &bytes, durable)
            .map_err(fail)?;
        self.changed = false;
        Ok(())
    }

    /// Writes the records of planes `claimed..planes` into the records'
    /// array (made at the first claim that has a record), then its
    /// `zarr.json` claiming `planes`.
    fn write_frames(&mut self, planes: u64, durable: bool) -> Result<(), StreamError> {
        if planes <= self.claimed || (self.sidecar.is_none() && self.frames.is_empty()) {
            return Ok(());
        }
        let sidecar = match &self.sidecar {
            Some(dest) => dest.clone(),
            None => {
                let node = self.node.as_ref().ok_or_else(|| {
                    StreamError::Sink("per-plane metadata has no array to go with".into())
                })?;
                let dest = node.dest.within(FRAME_METADATA, &node.options)?;
                self.sidecar = Some(dest.clone());
                dest
            }
        };
        let fail = |doing: String| {
            let name = sidecar.name().to_owned();
            move |e| store_error(&name, &doing, e)
        };
        for chunk in self.claimed / FRAME_CHUNK..planes.div_ceil(FRAME_CHUNK) {
            let start = chunk * FRAME_CHUNK;
            let end = (start + FRAME_CHUNK).min(planes);
            let records: Vec<&str> = (start..start + FRAME_CHUNK)
                .map(|p| match p < end {
                    true => self.frames.get(&p).map_or("", |t| t),
                    false => "",
                })
                .collect();
            sidecar
                .put_metadata(&chunk.to_string(), &vlen_utf8(&records), durable)
                .map_err(fail(format!(
                    "writing chunk {chunk} of the per-plane metadata"
                )))?;
        }
        let metadata = serde_json::to_vec_pretty(&frame_array(planes))
            .map_err(|e| fail("writing the per-plane metadata's zarr.json".into())(e.into()))?;
        sidecar
            .put_metadata("zarr.json", &metadata, durable)
            .map_err(fail("writing the per-plane metadata's zarr.json".into()))?;
        self.claimed = planes;
        // the records of whole chunks are written for good
        let kept = planes / FRAME_CHUNK * FRAME_CHUNK;
        self.frames = self.frames.split_off(&kept);
        Ok(())
    }
}

/// The `zarr.json` of the records' array, `planes` long.
fn frame_array(planes: u64) -> Value {
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [planes],
        "data_type": "string",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [FRAME_CHUNK]}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}},
        "fill_value": "",
        "codecs": [{"name": "vlen-utf8", "configuration": {}}],
        "attributes": {},
    })
}

/// `records` as Zarr's `vlen-utf8` codec stores them: their count, then
/// each one's length and bytes (lengths little-endian `u32`).
fn vlen_utf8(records: &[&str]) -> Vec<u8> {
    let total: usize = records.iter().map(|r| 4 + r.len()).sum();
    let mut bytes = Vec::with_capacity(4 + total);
    bytes.extend_from_slice(&(records.len() as u32).to_le_bytes());
    for record in records {
        bytes.extend_from_slice(&(record.len() as u32).to_le_bytes());
        bytes.extend_from_slice(record.as_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The records `vlen-utf8` bytes hold, decoded independently of the encoder.
    fn decode(bytes: &[u8]) -> Vec<String> {
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let mut at = 4;
        (0..word(0))
            .map(|_| {
                let len = word(at);
                let text = String::from_utf8(bytes[at + 4..at + 4 + len].to_vec()).unwrap();
                at += 4 + len;
                text
            })
            .collect()
    }

    proptest! {
        #[test]
        fn vlen_utf8_round_trips(records in proptest::collection::vec(".{0,40}", 0..20)) {
            let refs: Vec<&str> = records.iter().map(String::as_str).collect();
            let bytes = vlen_utf8(&refs);
            prop_assert_eq!(decode(&bytes), records);
        }

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

    #[test]
    fn records_are_written_with_their_claims_and_whole_chunks_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let options = ZarrOptions {
            path: dir.path().join("a.zarr"),
            ..Default::default()
        };
        let dest = Dest::prepare(&options.path, &options).unwrap();
        let user = UserMetadata::default();
        let _attached = user.attach_array(&dest, &options);
        let planes = FRAME_CHUNK + 5;
        user.record(0, planes, &json!({"k": "v"})).unwrap();
        user.record(3, 1, &json!({"k": 3})).unwrap();
        let mut attributes = Map::new();
        user.before_claim(2, &mut attributes, false).unwrap();
        let sidecar = options.path.join(FRAME_METADATA);
        let chunk0 = decode(&std::fs::read(sidecar.join("0")).unwrap());
        assert_eq!(chunk0.len() as u64, FRAME_CHUNK);
        assert_eq!(chunk0[..3], [r#"{"k":"v"}"#, r#"{"k":"v"}"#, ""]);
        user.before_claim(planes, &mut attributes, false).unwrap();
        let chunk0 = decode(&std::fs::read(sidecar.join("0")).unwrap());
        assert_eq!(chunk0[3], r#"{"k":3}"#);
        let chunk1 = decode(&std::fs::read(sidecar.join("1")).unwrap());
        assert_eq!(chunk1[4], r#"{"k":"v"}"#);
        assert_eq!(chunk1[5], "");
        let meta: Value =
            serde_json::from_slice(&std::fs::read(sidecar.join("zarr.json")).unwrap()).unwrap();
        assert_eq!(meta["shape"], json!([planes]));
        // only the last, partly claimed chunk's records are kept
        assert_eq!(user.lock().frames.len(), 5);
    }
}
