//! The user's metadata written with an array's claims: before a claim's
//! `zarr.json`, the records of the planes it claims (the
//! [`FRAME_METADATA`] string array) and the attributes into the array's
//! own metadata; after it, an image's group `zarr.json` when its
//! attributes changed.

use serde_json::{json, Map, Value};

use retile_plan::StreamError;

use crate::dest::Dest;
use crate::error::store_error;
use crate::options::ZarrOptions;
use crate::user::{UserMetadata, FRAME_CHUNK, FRAME_METADATA};

/// Writes one array's (or image's) user metadata with the array's claims;
/// owned by the array's claim, so it lets go of the store with it.
pub(crate) struct MetadataWriter {
    user: UserMetadata,
    /// The node the metadata describes: the array, or its image's group.
    node: Dest,
    options: ZarrOptions,
    /// The image group's `zarr.json` without the user's attributes
    /// (`None`: the array's own `zarr.json` holds them).
    group: Option<Value>,
    /// The records' array, once made.
    sidecar: Option<Dest>,
    /// Planes the records' array claims.
    claimed: u64,
    /// A claim was made: the array's first one, when it is made, writes
    /// no image group (open_ngff writes it once every level exists).
    began: bool,
}

impl MetadataWriter {
    /// The writer of `user` for the array at `node`, or, with `group`,
    /// for the image whose group is at `node`.
    pub(crate) fn new(
        user: UserMetadata,
        node: Dest,
        options: &ZarrOptions,
        group: Option<Value>,
    ) -> MetadataWriter {
        MetadataWriter {
            user,
            node,
            // the records' array is made new, even in a store appended to
            options: ZarrOptions {
                user: None,
                resume: None,
                record: None,
                ..options.clone()
            },
            group,
            sidecar: None,
            claimed: 0,
            began: false,
        }
    }

    /// Before a claim of `planes` planes replaces the array's `zarr.json`
    /// (whose attributes are `attributes`): the records of the planes it
    /// claims are written, and the user's attributes put in `attributes`
    /// when they are the array's own.
    pub(crate) fn before_claim(
        &mut self,
        planes: u64,
        attributes: &mut Map<String, Value>,
        durable: bool,
    ) -> Result<(), StreamError> {
        self.write_records(planes, durable)?;
        if self.group.is_none() {
            if let Some(changed) = self.user.take_changed() {
                attributes.extend(changed);
            }
        }
        Ok(())
    }

    /// After the claim: an image's group `zarr.json` is replaced when its
    /// attributes changed.
    pub(crate) fn after_claim(&mut self, durable: bool) -> Result<(), StreamError> {
        let began = std::mem::replace(&mut self.began, true);
        let Some(document) = self.group.as_ref().filter(|_| began) else {
            return Ok(());
        };
        if self.user.take_changed().is_none() {
            return Ok(());
        }
        let written = self.user.written_into(document);
        let fail = |e| store_error(self.node.name(), "writing the group metadata zarr.json", e);
        let bytes = serde_json::to_vec_pretty(&written).map_err(|e| fail(e.into()))?;
        self.node
            .put_metadata("zarr.json", &bytes, durable)
            .map_err(fail)
    }

    /// Writes the records of planes `claimed..planes` into the records'
    /// array (made at the first claim that has a record), then its
    /// `zarr.json` claiming `planes`.
    fn write_records(&mut self, planes: u64, durable: bool) -> Result<(), StreamError> {
        if planes <= self.claimed || (self.sidecar.is_none() && !self.user.has_records()) {
            return Ok(());
        }
        let sidecar = match &self.sidecar {
            Some(dest) => dest.clone(),
            None => self.node.within(FRAME_METADATA, &self.options)?,
        };
        self.sidecar = Some(sidecar.clone());
        let fail = |doing: String| {
            let name = sidecar.name().to_owned();
            move |e| store_error(&name, &doing, e)
        };
        for chunk in self.claimed / FRAME_CHUNK..planes.div_ceil(FRAME_CHUNK) {
            let records = self.user.records(chunk * FRAME_CHUNK, FRAME_CHUNK, planes);
            sidecar
                .put_metadata(&chunk.to_string(), &vlen_utf8(&records), durable)
                .map_err(fail(format!(
                    "writing chunk {chunk} of the per-plane metadata"
                )))?;
        }
        let doing = "writing the per-plane metadata's zarr.json";
        let metadata = serde_json::to_vec_pretty(&records_array(planes))
            .map_err(|e| fail(doing.into())(e.into()))?;
        // in S3 the records' array is a store of its own, whose puts are
        // not ordered with the array's: its claim is stored before the
        // array's is put, so that it is never behind
        let wait = durable || sidecar.is_object_store();
        sidecar
            .put_metadata("zarr.json", &metadata, wait)
            .map_err(fail(doing.into()))?;
        self.claimed = planes;
        // the records of whole chunks are written for good
        self.user.settle(planes / FRAME_CHUNK * FRAME_CHUNK);
        Ok(())
    }
}

/// The `zarr.json` of the records' array, `planes` long.
fn records_array(planes: u64) -> Value {
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
fn vlen_utf8<S: AsRef<str>>(records: &[S]) -> Vec<u8> {
    let total: usize = records.iter().map(|r| 4 + r.as_ref().len()).sum();
    let mut bytes = Vec::with_capacity(4 + total);
    bytes.extend_from_slice(&(records.len() as u32).to_le_bytes());
    for record in records {
        let record = record.as_ref().as_bytes();
        bytes.extend_from_slice(&(record.len() as u32).to_le_bytes());
        bytes.extend_from_slice(record);
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
            prop_assert_eq!(decode(&vlen_utf8(&records)), records);
        }
    }

    #[test]
    fn records_are_written_with_their_claims_and_whole_chunks_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let options = ZarrOptions {
            path: dir.path().join("a.zarr"),
            ..Default::default()
        };
        let dest = Dest::prepare(&options.path, &options).unwrap();
        let user = UserMetadata::new(json!({"a": 1})).unwrap();
        let mut writer = MetadataWriter::new(user.clone(), dest, &options, None);
        let planes = FRAME_CHUNK + 5;
        user.record(0, planes, &json!({"k": "v"})).unwrap();
        user.record(3, 1, &json!({"k": 3})).unwrap();
        let mut attributes = Map::new();
        writer.before_claim(2, &mut attributes, false).unwrap();
        assert_eq!(Value::Object(attributes.clone()), json!({"a": 1}));
        let sidecar = options.path.join(FRAME_METADATA);
        let chunk0 = decode(&std::fs::read(sidecar.join("0")).unwrap());
        assert_eq!(chunk0.len() as u64, FRAME_CHUNK);
        assert_eq!(chunk0[..3], [r#"{"k":"v"}"#, r#"{"k":"v"}"#, ""]);
        writer.before_claim(planes, &mut attributes, false).unwrap();
        let chunk0 = decode(&std::fs::read(sidecar.join("0")).unwrap());
        assert_eq!(chunk0[3], r#"{"k":3}"#);
        let chunk1 = decode(&std::fs::read(sidecar.join("1")).unwrap());
        assert_eq!(chunk1[4], r#"{"k":"v"}"#);
        assert_eq!(chunk1[5], "");
        let meta: Value =
            serde_json::from_slice(&std::fs::read(sidecar.join("zarr.json")).unwrap()).unwrap();
        assert_eq!(meta["shape"], json!([planes]));
        // a record of a plane in a chunk written for good is dropped
        user.record(0, 1, &json!({"late": 1})).unwrap();
        writer
            .before_claim(planes + 1, &mut attributes, false)
            .unwrap();
        let chunk0 = decode(&std::fs::read(sidecar.join("0")).unwrap());
        assert_eq!(chunk0[0], r#"{"k":"v"}"#);
    }
}
