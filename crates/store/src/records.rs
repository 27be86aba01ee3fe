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
            // the records' array is made new (`resume` continues one)
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

    /// A stream appending to the store from plane `first_plane`, whose
    /// array claims `claimed` planes: the records' array there (if any)
    /// goes on. The records from the start of `first_plane`'s chunk to
    /// `claimed` are taken back (the stream rewrites that chunk, and the
    /// planes it takes again keep their records); those past `claimed`
    /// (of planes the array never claimed) are dropped.
    pub(crate) fn resume(&mut self, first_plane: u64, claimed: u64) -> Result<(), StreamError> {
        let fail = |doing: &str| {
            let (name, doing) = (self.node.name().to_owned(), doing.to_owned());
            move |e: crate::error::DestError| store_error(&name, &doing, e)
        };
        let found = self
            .node
            .read_if_present(&format!("{FRAME_METADATA}/zarr.json"))
            .map_err(fail("reading the per-plane metadata's zarr.json"))?;
        if found.is_none() {
            return Ok(());
        }
        let options = ZarrOptions {
            resume: Some(crate::options::Resume { first_plane }),
            ..self.options.clone()
        };
        let sidecar = self.node.within(FRAME_METADATA, &options)?;
        let start = first_plane / FRAME_CHUNK * FRAME_CHUNK;
        for chunk in start / FRAME_CHUNK..claimed.div_ceil(FRAME_CHUNK) {
            let doing = format!("reading chunk {chunk} of the per-plane metadata");
            let Some(bytes) = sidecar
                .read_if_present(&chunk.to_string())
                .map_err(fail(&doing))?
            else {
                continue;
            };
            let records = decode_vlen_utf8(&bytes).map_err(|e| fail(&doing)(e.into()))?;
            for (i, text) in records.into_iter().enumerate() {
                let plane = chunk * FRAME_CHUNK + i as u64;
                if (start..claimed).contains(&plane) && !text.is_empty() {
                    self.user.restore(plane, text);
                }
            }
        }
        self.user.settle(start);
        self.sidecar = Some(sidecar);
        self.claimed = start;
        Ok(())
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

/// The records `bytes` hold in Zarr's `vlen-utf8` form ([`vlen_utf8`]),
/// or what is wrong with them.
fn decode_vlen_utf8(bytes: &[u8]) -> Result<Vec<String>, String> {
    let broken = || "the records are not in vlen-utf8 form".to_string();
    let word = |at: usize| -> Result<usize, String> {
        let four = bytes
            .get(at..at.checked_add(4).ok_or_else(broken)?)
            .ok_or_else(broken)?;
        Ok(u32::from_le_bytes(four.try_into().map_err(|_| broken())?) as usize)
    };
    let count = word(0)?;
    let mut at = 4usize;
    let mut records = Vec::with_capacity(count.min(bytes.len() / 4));
    for _ in 0..count {
        let len = word(at)?;
        let end = (at + 4).checked_add(len).ok_or_else(broken)?;
        let text = bytes.get(at + 4..end).ok_or_else(broken)?;
        records.push(String::from_utf8(text.to_vec()).map_err(|_| broken())?);
        at = end;
    }
    Ok(records)
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
            prop_assert_eq!(decode(&vlen_utf8(&records)), records.clone());
            prop_assert_eq!(decode_vlen_utf8(&vlen_utf8(&records)), Ok(records));
        }

        #[test]
        fn broken_records_are_an_error_not_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_vlen_utf8(&bytes);
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
