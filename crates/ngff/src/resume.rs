//! Appending to a store retile wrote (`retile.Stream(output, mode="a")`,
//! `retile stream --append`): after a restart or a crash, a stream goes on
//! from the store's last claimed plane.
//!
//! Every array or image retile writes keeps its description (the
//! [`ArrayOptions`] it was asked for, less how that stream ran) in the
//! attribute `retile` of its `zarr.json` (an image's group's): the record
//! that recognises a store retile wrote, and from which an appending stream
//! takes its shape, type, tile, shards, codec, fill and pyramid. An option
//! given again must agree with it.
//!
//! The stream starts at the first plane of the row of files its claim ends
//! in (of the lowest level's row, for a pyramid whose levels halve the
//! first dimension): it reads the claimed planes of that row back from
//! level 0 and takes them again, so that the row is rewritten whole (each
//! file replaced at once, see `retile_store::Resume`) and every level is
//! made again from stored data; the caller's planes follow from the claim
//! on.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore;

use retile_copy::{permute_reference, Permute};
use retile_plan::{DType, StreamError};
use retile_pyramid::{Backend, MultiscaleStream};
use retile_store::{Codec, Resume, StorePath, ZarrOptions};

use crate::metadata::{default_axes, RECORD_KEY};
use crate::open::open_output;
use crate::options::{ArrayOptions, ResolvedArray};

/// The version of the record's layout: a store whose record says another
/// is refused rather than guessed at.
///
/// ```
/// assert_eq!(retile_ngff::RECORD_VERSION, 1);
/// ```
pub const RECORD_VERSION: u64 = 1;

/// Bytes of level 0 read back at once while the claimed planes are taken
/// again (at least one plane).
const REPLAY_BYTES: u64 = 64 << 20;

impl ArrayOptions {
    /// retile's record of the array these options describe, kept in the
    /// attribute `retile` of what a stream writes (an array's `zarr.json`,
    /// an image's group's): `{"version": 1, "array": {...}}`, the
    /// description and the order its frames arrive in (not the writer
    /// threads, the memory, the syncing or the user's attributes, which a
    /// later stream chooses again), from which a stream appending to the
    /// store takes its options.
    ///
    /// ```
    /// use retile_ngff::ArrayOptions;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![2, 4], dtype: "u8".into(), writers: Some(3), ..Default::default() };
    /// assert_eq!(
    ///     options.record(),
    ///     serde_json::json!({"version": 1, "array": {"shape": [0, 4], "tile": [2, 4], "dtype": "u8"}})
    /// );
    /// ```
    pub fn record(&self) -> Value {
        let described = ArrayOptions {
            writers: None,
            buffered_io: false,
            codec_on: None,
            memory: None,
            sync: None,
            attributes: None,
            ..self.clone()
        };
        let mut array = serde_json::to_value(described).unwrap_or(Value::Null);
        if let Some(fields) = array.as_object_mut() {
            fields.retain(|_, v| !v.is_null() && *v != Value::Bool(false));
        }
        json!({"version": RECORD_VERSION, "array": array})
    }
}

/// A store retile wrote, opened to be appended to: the stream that goes on
/// writing it, and where it goes on from.
///
/// ```
/// use retile_ngff::{Acquisition, ArrayOptions, Continuation};
/// use retile_pyramid::{Backend, MultiscaleStream};
/// use retile_store::ZarrOptions;
/// let dir = std::env::temp_dir().join(format!("retile-continuation-doc-{}", std::process::id()));
/// let store = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
/// let options: ArrayOptions = serde_json::from_str(r#"{"shape": [0, 4], "tile": [2, 4], "dtype": "u8"}"#).unwrap();
/// let backend = Backend::Cpu { threads: 1 };
/// let mut first = Acquisition::single(options.resolve(Some(store.clone()), backend)?, backend)?;
/// first.append(None, &[1; 12])?; // 3 planes
/// first.finish()?;
/// let next = Continuation::open(&dir, &ArrayOptions::default(), ZarrOptions::default(), backend)?;
/// assert_eq!((next.first_plane, next.claimed), (2, 3)); // plane 2 begins the last row
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Continuation {
    /// The stream to open: the store's options with the given ones, its
    /// shape counted from `first_plane`, its output appending.
    pub array: ResolvedArray,
    /// The array's plane the stream's first plane is: the first plane of
    /// the row of files the claim ends in.
    pub first_plane: u64,
    /// The planes level 0 claims: the caller's input goes on from here.
    pub claimed: u64,
    /// Where level 0 is, to read the claimed planes back.
    level0: PathBuf,
}

/// What a store retile wrote says of itself.
struct Stored {
    options: ArrayOptions,
    /// The user's attributes (retile's own keys left out).
    attributes: Map<String, Value>,
    /// Planes each level claims (one level for a plain array).
    claims: Vec<u64>,
    /// Where level 0 is.
    level0: PathBuf,
}

impl Continuation {
    /// Opens the store at `path` to be appended to: its record and claims
    /// read, the `given` options checked against them (an option given
    /// with another value than the store's is refused, naming both),
    /// and the stream's options made. `given` adds the runtime options
    /// (writer threads, memory, syncing, direct I/O) and the user's
    /// attributes, which update the store's; `store` says how the store is
    /// reached. Nothing is written here: opening the stream
    /// ([`crate::Acquisition::appending`]) locks the store.
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions, Continuation};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let dir = std::env::temp_dir().join(format!("retile-continuation-open-doc-{}", std::process::id()));
    /// let backend = Backend::Cpu { threads: 1 };
    /// // a store of 3 planes in rows of 2 (planes 0, 1, 2 hold 1, 2, 3), written first
    /// # let store = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
    /// # let options = ArrayOptions { shape: vec![0, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// # let mut first = Acquisition::single(options.resolve(Some(store), backend)?, backend)?;
    /// # first.append(None, &[1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3])?;
    /// # first.finish()?;
    /// let next = Continuation::open(&dir, &ArrayOptions::default(), ZarrOptions::default(), backend)?;
    /// assert_eq!(next.array.spec.dtype(), retile_plan::DType::U8); // the store's own options
    /// let other = ArrayOptions { tile: vec![1, 4], ..Default::default() };
    /// let err = Continuation::open(&dir, &other, ZarrOptions::default(), backend).unwrap_err();
    /// assert!(err.to_string().contains("tile"), "{err}");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn open(
        path: &Path,
        given: &ArrayOptions,
        store: ZarrOptions,
        backend: Backend,
    ) -> Result<Continuation, StreamError> {
        let root = match StorePath::classify(path)? {
            StorePath::Local(root) => root,
            StorePath::S3 { .. } => {
                return Err(StreamError::Invalid(format!(
                    "appending to a store in S3 ({}) is not built yet: append to a local store, or write a new S3 store",
                    path.display()
                )))
            }
        };
        let stored = read_store(&root)?;
        let options = merged(&root, &stored, given)?;
        let halves_first = halves_first(&options);
        let row_planes = options.tile.first().copied().unwrap_or(1).max(1)
            * options
                .shard
                .as_ref()
                .and_then(|s| s.first().copied())
                .unwrap_or(1)
                .max(1);
        let first_plane = first_plane(&stored.claims, row_planes, halves_first);
        let claimed = stored.claims[0];
        let bound = options.shape.first().copied().unwrap_or(0);
        if bound > 0 && claimed >= bound {
            return Err(StreamError::Invalid(format!(
                "{} holds all {bound} planes of its shape already: there is nothing to append",
                root.display()
            )));
        }
        let mut remaining = options.clone();
        if let Some(first) = remaining.shape.first_mut() {
            *first = bound.saturating_sub(first_plane) * u64::from(bound > 0);
        }
        let store = ZarrOptions {
            path: root.clone(),
            overwrite: false,
            resume: Some(Resume { first_plane }),
            ..store
        };
        let mut array = remaining.resolve(Some(store), backend)?;
        if !array.spec.epochs_in_input_order() {
            return Err(StreamError::Invalid(format!(
                "appending to {} takes an input whose slowest dimension is the stored first: an input order slowest along another one claims nothing before its end, so a stopped stream of it left nothing to go on from; write the store anew",
                root.display()
            )));
        }
        if let Some(zarr) = array.output.zarr.as_mut() {
            zarr.record = Some(options.record());
        }
        if let Some(pyramid) = array.output.pyramid.as_mut() {
            pyramid.levels = Some(stored.claims.len());
        }
        Ok(Continuation {
            array,
            first_plane,
            claimed,
            level0: stored.level0,
        })
    }

    /// Opens the stream appending to the store (locking it; a failure
    /// leaves the store as it was) and takes the claimed planes of the row
    /// it goes on from again, read back from level 0 ([`Self::replay`]):
    /// the caller's planes go on from plane [`Self::claimed`].
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions, Continuation};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let dir = std::env::temp_dir().join(format!("retile-open-stream-doc-{}", std::process::id()));
    /// let backend = Backend::Cpu { threads: 1 };
    /// // a store of 3 planes in rows of 2 (planes 0, 1, 2 hold 1, 2, 3), written first
    /// # let store = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
    /// # let options = ArrayOptions { shape: vec![0, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// # let mut first = Acquisition::single(options.resolve(Some(store), backend)?, backend)?;
    /// # first.append(None, &[1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3])?;
    /// # first.finish()?;
    /// let next = Continuation::open(&dir, &ArrayOptions::default(), ZarrOptions::default(), backend)?;
    /// let mut stream = next.open_stream(backend)?;
    /// assert_eq!(stream.bytes_taken(), 4); // plane 2, read back and taken again
    /// stream.append(&[4; 4])?; // the caller's plane 3
    /// assert_eq!(stream.finish()?.planes, 2);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn open_stream(&self, backend: Backend) -> Result<MultiscaleStream, StreamError> {
        let array = &self.array;
        let mut stream = open_output(array.spec.clone(), &array.fill, backend, &array.output)?;
        self.replay(|planes| stream.append(planes).map(drop))?;
        Ok(stream)
    }

    /// Reads the claimed planes `first_plane..claimed` of level 0 back, in
    /// pieces of whole planes, and hands each to `take` in the stream's
    /// input order (each plane's elements permuted as its frames arrive).
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions, Continuation};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let dir = std::env::temp_dir().join(format!("retile-replay-doc-{}", std::process::id()));
    /// let backend = Backend::Cpu { threads: 1 };
    /// // a store of 3 planes in rows of 2 (planes 0, 1, 2 hold 1, 2, 3), written first
    /// # let store = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
    /// # let options = ArrayOptions { shape: vec![0, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// # let mut first = Acquisition::single(options.resolve(Some(store), backend)?, backend)?;
    /// # first.append(None, &[1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3])?;
    /// # first.finish()?;
    /// let next = Continuation::open(&dir, &ArrayOptions::default(), ZarrOptions::default(), backend)?;
    /// let mut replayed = Vec::new();
    /// next.replay(|planes| Ok(replayed.extend_from_slice(planes)))?;
    /// assert_eq!(replayed, [3, 3, 3, 3]); // plane 2, the claimed part of the last row
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn replay(
        &self,
        mut take: impl FnMut(&[u8]) -> Result<(), StreamError>,
    ) -> Result<(), StreamError> {
        if self.first_plane == self.claimed {
            return Ok(());
        }
        let fail = |doing: &str, e: String| StreamError::Store {
            doing: doing.to_owned(),
            path: self.level0.clone(),
            source: e.into(),
        };
        let doing = "reading back the claimed planes of the row a stream appending goes on from";
        let store = FilesystemStore::new(&self.level0).map_err(|e| fail(doing, e.to_string()))?;
        let array = Array::open(Arc::new(store), "/").map_err(|e| fail(doing, e.to_string()))?;
        let spec = &self.array.spec;
        let plane_bytes = spec.plane_elements()? * spec.dtype().size() as u64;
        let step = (REPLAY_BYTES / plane_bytes.max(1)).max(1);
        let mut start = self.first_plane;
        while start < self.claimed {
            let end = (start + step).min(self.claimed);
            let planes = read_planes(&array, start..end).map_err(|e| fail(doing, e))?;
            match spec.in_stored_order() {
                true => take(&planes)?,
                false => take(&in_input_order(&planes, spec)?)?,
            }
            start = end;
        }
        Ok(())
    }
}

/// The elements of `planes` of `array`, every other dimension whole, in C
/// order and the machine's byte order (little-endian, as the stream takes
/// them, on every machine retile builds for).
fn read_planes(array: &Array<FilesystemStore>, planes: Range<u64>) -> Result<Vec<u8>, String> {
    let mut ranges = vec![planes];
    ranges.extend(array.shape()[1..].iter().map(|&n| 0..n));
    let bytes: ArrayBytes<'static> = array
        .retrieve_array_subset(&ArraySubset::new_with_ranges(&ranges))
        .map_err(|e| e.to_string())?;
    let raw = bytes.into_fixed().map_err(|e| e.to_string())?;
    Ok(raw.into_owned())
}

/// Whole planes of `spec` (C order over the stored dimensions) as its
/// input brings them: each plane's elements in the order of
/// `spec.input_order()[1..]` (an input whose slowest dimension is the
/// stored first). A resumed stream's planes taken again go through here.
fn in_input_order(planes: &[u8], spec: &retile_plan::StreamSpec) -> Result<Vec<u8>, StreamError> {
    let es = spec.dtype().size();
    let plane_bytes = spec.plane_elements()? * es as u64;
    if planes.is_empty() || plane_bytes == 0 {
        return Ok(Vec::new());
    }
    let mut shape = vec![(planes.len() as u64 / plane_bytes) as i64];
    shape.extend(spec.shape()[1..].iter().map(|&n| n as i64));
    Permute::new(&shape, spec.input_order(), es)
        .and_then(|permute| permute_reference(&permute, planes))
        .map_err(|e| {
            StreamError::Invalid(format!("putting the planes read back in input order: {e}"))
        })
}

/// The JSON document at `path`.
fn read_json(path: &Path) -> Result<Value, StreamError> {
    let fail = |e: Box<dyn std::error::Error + Send + Sync>| StreamError::Store {
        doing: "reading the metadata of the store to append to".into(),
        path: path.to_owned(),
        source: e,
    };
    let bytes = std::fs::read(path).map_err(|e| fail(e.into()))?;
    serde_json::from_slice(&bytes).map_err(|e| fail(e.into()))
}

/// The record, the user's attributes and the claims of the store at
/// `root`.
fn read_store(root: &Path) -> Result<Stored, StreamError> {
    let metadata = root.join("zarr.json");
    if !metadata.is_file() {
        return Err(StreamError::Invalid(format!(
            "{} holds no Zarr store to append to (no zarr.json there); write a new store without appending",
            root.display()
        )));
    }
    let document = read_json(&metadata)?;
    let mut attributes = document["attributes"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let Some(record) = attributes.remove(RECORD_KEY) else {
        return Err(StreamError::Invalid(format!(
            "{} was not written by retile (its zarr.json has no 'retile' attribute): retile appends only to the arrays and images it wrote; write a new store",
            root.display()
        )));
    };
    if record["version"].as_u64() != Some(RECORD_VERSION) {
        return Err(StreamError::Invalid(format!(
            "{} was written by a retile whose record (version {}) this one does not read (it reads version {RECORD_VERSION})",
            root.display(),
            record["version"]
        )));
    }
    let options: ArrayOptions = serde_json::from_value(record["array"].clone()).map_err(|e| {
        StreamError::Invalid(format!(
            "the 'retile' attribute of {} is not a record retile reads: {e}",
            root.display()
        ))
    })?;
    let image = document["node_type"] == "group";
    let (claims, level0) = match image {
        false => (vec![claim_of(&document, root)?], root.to_owned()),
        true => {
            attributes.remove("ome");
            let levels = document["attributes"]["ome"]["multiscales"][0]["datasets"]
                .as_array()
                .map_or(0, Vec::len);
            let claims = (0..levels)
                .map(|k| {
                    let level = root.join(k.to_string());
                    claim_of(&read_json(&level.join("zarr.json"))?, &level)
                })
                .collect::<Result<Vec<u64>, StreamError>>()?;
            if claims.is_empty() {
                return Err(StreamError::Invalid(format!(
                    "the OME-Zarr image at {} names no level",
                    root.display()
                )));
            }
            (claims, root.join("0"))
        }
    };
    Ok(Stored {
        options,
        attributes,
        claims,
        level0,
    })
}

/// The planes the array whose metadata is `document` claims.
fn claim_of(document: &Value, at: &Path) -> Result<u64, StreamError> {
    match (&document["node_type"], document["shape"][0].as_u64()) {
        (Value::String(kind), Some(planes)) if kind == "array" => Ok(planes),
        _ => Err(StreamError::Invalid(format!(
            "{} is not a Zarr array with a shape",
            at.display()
        ))),
    }
}

/// Whether the pyramid `options` describe halves the first dimension.
fn halves_first(options: &ArrayOptions) -> bool {
    options.pyramid.is_some()
        && options
            .downsample
            .as_ref()
            .and_then(|d| d.first().copied())
            .unwrap_or(false)
}

/// The array's plane a stream appending goes on from: the first plane of
/// the row of files (`row_planes` planes each) that the lowest claim ends
/// in, counted in level 0's planes (a level that halves the first
/// dimension `k` times holds one plane for `2^k`, and its rows start every
/// `row_planes * 2^k` planes of level 0).
fn first_plane(claims: &[u64], row_planes: u64, halves_first: bool) -> u64 {
    let factor = |k: usize| match halves_first {
        true => 1u64 << k.min(63),
        false => 1,
    };
    let lowest = claims
        .iter()
        .enumerate()
        .map(|(k, &n)| n.saturating_mul(factor(k)))
        .min()
        .unwrap_or(0);
    let unit = row_planes.saturating_mul(factor(claims.len().saturating_sub(1)));
    lowest / unit.max(1) * unit.max(1)
}

/// The store's options with the `given` ones: an option that describes
/// the array (shape, tile, dtype, shards, codec, fill, pyramid, axes) must
/// agree with the store's; how this stream runs comes from `given`; the
/// user's attributes are the store's updated by the given ones.
fn merged(root: &Path, stored: &Stored, given: &ArrayOptions) -> Result<ArrayOptions, StreamError> {
    let store = &stored.options;
    let contradiction = |name: &str, given: &dyn std::fmt::Debug, kept: &dyn std::fmt::Debug| {
        StreamError::Invalid(format!(
            "{name}={given:?} contradicts the store at {}, whose {name} is {kept:?}: leave {name} out to take the store's, or write a new store",
            root.display()
        ))
    };
    macro_rules! same {
        ($field:ident, $given:expr, $kept:expr) => {
            if let Some(given) = $given {
                let kept = $kept;
                if given != kept {
                    return Err(contradiction(stringify!($field), &given, &kept));
                }
            }
        };
    }
    same!(
        shape,
        (!given.shape.is_empty()).then_some(&given.shape),
        &store.shape
    );
    same!(
        tile,
        (!given.tile.is_empty()).then_some(&given.tile),
        &store.tile
    );
    if !given.dtype.is_empty() {
        let (dtype, kept) = (given.dtype.parse::<DType>()?, store.dtype.parse::<DType>()?);
        same!(dtype, Some(dtype.to_string()), kept.to_string());
    }
    same!(shard, given.shard.as_ref().map(Some), store.shard.as_ref());
    if given.codec.is_some() || given.shuffle.is_some() {
        // one given alone goes with the store's other
        let asked = ArrayOptions {
            codec: given.codec.clone().or_else(|| store.codec.clone()),
            shuffle: given.shuffle.clone().or_else(|| store.shuffle.clone()),
            ..Default::default()
        };
        same!(
            codec,
            Some(codec_text(asked.codec()?)),
            codec_text(store.codec()?)
        );
    }
    if given.fill.is_some() {
        let dtype = store.dtype.parse::<DType>()?;
        same!(
            fill,
            Some(given.fill_bytes(dtype)?),
            store.fill_bytes(dtype)?
        );
    }
    same!(
        dim_names,
        given.dim_names.as_ref().map(Some),
        store.dim_names.as_ref()
    );
    same!(
        pyramid,
        given.pyramid.as_ref().map(Some),
        store.pyramid.as_ref()
    );
    same!(levels, given.levels, stored.claims.len());
    same!(
        downsample,
        given.downsample.clone().map(Some),
        downsample_of(store)?
    );
    same!(
        ngff,
        given.ngff.then_some(true),
        store.ngff || store.pyramid.is_some()
    );
    same!(
        dim_types,
        given.dim_types.as_ref().map(Some),
        store.dim_types.as_ref()
    );
    same!(units, given.units.as_ref().map(Some), store.units.as_ref());
    same!(scale, given.scale.as_ref().map(Some), store.scale.as_ref());
    let mut attributes = stored.attributes.clone();
    if let Some(Value::Object(more)) = &given.attributes {
        attributes.extend(more.clone());
    }
    Ok(ArrayOptions {
        // the recording goes on in its order, unless another is given
        input_order: given
            .input_order
            .clone()
            .or_else(|| store.input_order.clone()),
        writers: given.writers,
        buffered_io: given.buffered_io,
        codec_on: given.codec_on.clone(),
        memory: given.memory,
        sync: given.sync.clone(),
        attributes: Some(Value::Object(attributes)),
        ..store.clone()
    })
}

/// The codec as the options name it, with blosc's shuffle.
fn codec_text(codec: Codec) -> String {
    match codec {
        Codec::Blosc { shuffle, .. } => format!("{codec} with shuffle {shuffle:?}"),
        other => other.to_string(),
    }
}

/// Which dimensions the levels of the pyramid `options` describe halve
/// (`None` without a pyramid): the given ones, or an image's default,
/// every dimension but the first and a channel axis.
fn downsample_of(options: &ArrayOptions) -> Result<Option<Vec<bool>>, StreamError> {
    if options.pyramid.is_none() {
        return Ok(None);
    }
    if let Some(given) = &options.downsample {
        return Ok(Some(given.clone()));
    }
    let rank = options.shape.len();
    let kinds = match &options.dim_types {
        Some(kinds) => kinds.clone(),
        None => default_axes(rank)?.into_iter().map(|a| a.kind).collect(),
    };
    Ok(Some(
        (0..rank).map(|d| d > 0 && kinds[d] != "channel").collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_goes_on_from_the_row_the_lowest_claim_ends_in() {
        // rows of 4 planes; the claim 10 ends in the row from plane 8
        assert_eq!(first_plane(&[10], 4, false), 8);
        assert_eq!(first_plane(&[8], 4, false), 8);
        // a level lagging behind level 0
        assert_eq!(first_plane(&[12, 6], 4, false), 4);
        // levels halving the first dimension: level 1's rows start every 8
        // planes of level 0, its claim of 5 is level 0's 10
        assert_eq!(first_plane(&[13, 5], 4, true), 8);
        assert_eq!(first_plane(&[13, 6], 4, true), 8);
        assert_eq!(first_plane(&[16, 8], 4, true), 16);
        assert_eq!(first_plane(&[0], 4, false), 0);
    }

    #[test]
    fn the_record_keeps_the_description_not_how_a_stream_ran() {
        let options = ArrayOptions {
            shape: vec![0, 4],
            tile: vec![2, 4],
            dtype: "u8".into(),
            writers: Some(3),
            memory: Some(1 << 30),
            sync: Some("rows".into()),
            attributes: Some(json!({"a": 1})),
            ..Default::default()
        };
        let record = options.record();
        assert_eq!(
            record,
            json!({"version": 1, "array": {"shape": [0, 4], "tile": [2, 4], "dtype": "u8"}})
        );
        let back: ArrayOptions = serde_json::from_value(record["array"].clone()).unwrap();
        assert_eq!(back.shape, options.shape);
        assert_eq!(back.writers, None);
    }
}
