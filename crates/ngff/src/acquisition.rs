//! An acquisition: several arrays streamed at once into one Zarr group
//! (cameras, positions, a plate's fields), each a [`MultiscaleStream`] at
//! its key, all sharing one memory budget and one pool of tiling and writer
//! threads. A stream of one array is an acquisition of one unnamed array.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{json, Value};

use retile_plan::{DType, StreamError, StreamSpec, Summary};
use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};
use retile_store::{Group, UserMetadata, ZarrOptions};

use crate::budget::Budget;
use crate::keys::groups_of;
use crate::open::{open_in, open_output};
use crate::options::{backend_named, ArrayOptions, ResolvedArray};
use crate::plate::Plate;
use crate::resume::Continuation;

/// How many keys an error lists before it says how many more there are.
const LISTED_KEYS: usize = 12;

/// An acquisition as a user describes it: `retile.Stream(output,
/// arrays=...)` or `plate=..., image=...`, and the settings file of `retile
/// stream --config` (JSON or TOML, the same keys).
///
/// ```
/// use retile_ngff::AcquisitionSettings;
/// let settings: AcquisitionSettings = serde_json::from_str(r#"{
///     "output": "acq.zarr",
///     "arrays": {"cam0": {"shape": [0, 64, 64], "tile": [8, 32, 32], "dtype": "u16"},
///                "run/cam1": {"shape": [0, 16], "tile": [4, 16], "dtype": "f32", "codec": "zstd:1"}}
/// }"#)?;
/// assert_eq!(settings.arrays.unwrap().len(), 2);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcquisitionSettings {
    /// The root group: a directory or `s3://BUCKET/PREFIX`.
    pub output: PathBuf,
    /// The arrays by key (keys with `/` make nested groups).
    pub arrays: Option<BTreeMap<String, ArrayOptions>>,
    /// An HCS plate, whose every field is an image described by `image`.
    pub plate: Option<Plate>,
    /// The image of each field of `plate`.
    pub image: Option<ArrayOptions>,
    /// Bytes of tile buffers every array may take together.
    pub memory: Option<u64>,
    /// Replace the store at `output` if there is one.
    #[serde(default)]
    pub overwrite: bool,
    /// Where tiles are cut: `cpu` (the default) or `cuda`.
    pub backend: Option<String>,
    /// Threads for tiling, shared by every array (0 = all cores).
    pub threads: Option<usize>,
}

impl AcquisitionSettings {
    /// The backend named (`cpu` unless given).
    ///
    /// ```
    /// use retile_ngff::AcquisitionSettings;
    /// use retile_pyramid::Backend;
    /// let mut settings: AcquisitionSettings = serde_json::from_str(r#"{"output": "a.zarr", "threads": 4}"#)?;
    /// assert_eq!(settings.backend()?, Backend::Cpu { threads: 4 });
    /// settings.backend = Some("tpu".into());
    /// assert!(settings.backend().unwrap_err().to_string().contains("unknown backend 'tpu'"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn backend(&self) -> Result<Backend, StreamError> {
        backend_named(
            self.backend.as_deref().unwrap_or("cpu"),
            self.threads.unwrap_or(0),
        )
    }

    /// The keys of the arrays described, in order: the arrays' or the
    /// plate's fields' (`A/1/0`, ...).
    ///
    /// ```
    /// use retile_ngff::AcquisitionSettings;
    /// let settings: AcquisitionSettings = serde_json::from_str(r#"{"output": "plate.zarr",
    ///     "plate": {"rows": ["A", "B"], "columns": ["1"], "fields": 2, "wells": ["B/1", "A/1"]},
    ///     "image": {"shape": [0, 8, 8], "tile": [1, 8, 8], "dtype": "u8"}}"#)?;
    /// assert_eq!(settings.keys()?, ["A/1/0", "A/1/1", "B/1/0", "B/1/1"]); // in order
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keys(&self) -> Result<Vec<String>, StreamError> {
        match (&self.arrays, &self.plate) {
            (Some(arrays), None) => Ok(arrays.keys().cloned().collect()),
            (None, Some(plate)) => {
                let mut keys = plate.field_keys()?;
                keys.sort();
                Ok(keys)
            }
            _ => Ok(Vec::new()),
        }
    }

    /// The memory budget and what each array's buffers would take, as the
    /// stream would state it: nothing is made (`retile plan stream --config`).
    ///
    /// ```
    /// use retile_ngff::AcquisitionSettings;
    /// let settings: AcquisitionSettings = serde_json::from_str(r#"{"output": "a.zarr", "memory": 100,
    ///     "arrays": {"cam0": {"shape": [0, 4, 4], "tile": [1, 4, 4], "dtype": "u8"}}}"#)?;
    /// let budget = settings.budget(Default::default())?;
    /// assert_eq!(budget.limit, Some(100));
    /// assert_eq!(budget.arrays[0].0, "cam0");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn budget(&self, store: ZarrOptions) -> Result<Budget, StreamError> {
        let (mut arrays, _, _) = self.resolved(store)?;
        arrays.sort_by(|a, b| a.0.cmp(&b.0));
        budget_of(self.memory, &arrays)
    }

    /// Opens the acquisition: `store` gives the S3 settings and the like
    /// (its path and `overwrite` are these settings').
    ///
    /// ```
    /// use retile_ngff::AcquisitionSettings;
    /// # use retile_store::ZarrOptions;
    /// # let dir = std::env::temp_dir().join(format!("retile-settings-open-doc-{}", std::process::id()));
    /// let settings: AcquisitionSettings = serde_json::from_value(serde_json::json!({
    ///     "output": dir, "overwrite": true,
    ///     "plate": {"rows": ["A"], "columns": ["1", "2"], "fields": 1},
    ///     "image": {"shape": [0, 4, 4], "tile": [1, 4, 4], "dtype": "u8"}}))?;
    /// let mut acq = settings.open(ZarrOptions::default())?;
    /// acq.append(Some("A/2/0"), &[5; 16])?;
    /// acq.finish()?;
    /// let root: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("zarr.json"))?)?;
    /// assert_eq!(root["attributes"]["ome"]["plate"]["wells"][1]["path"], "A/2");
    /// assert!(dir.join("A/2/0/0/zarr.json").is_file()); // the field's image, level 0
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(&self, store: ZarrOptions) -> Result<Acquisition, StreamError> {
        let (arrays, layout, store) = self.resolved(store)?;
        let backend = self.backend()?;
        Acquisition::open(&store, backend, self.memory, arrays, layout)
    }

    /// Every array resolved (key, description), the groups' attributes,
    /// and the root's store settings.
    #[allow(clippy::type_complexity)]
    fn resolved(
        &self,
        store: ZarrOptions,
    ) -> Result<(Vec<(String, ResolvedArray)>, Layout, ZarrOptions), StreamError> {
        let backend = self.backend()?;
        let store = ZarrOptions {
            path: self.output.clone(),
            overwrite: self.overwrite,
            ..store
        };
        let resolve = |key: &str, options: &ArrayOptions| {
            options
                .resolve(Some(store.clone()), backend)
                .map_err(|e| for_array(key, e))
        };
        let (arrays, layout) = match (&self.arrays, &self.plate, &self.image) {
            (Some(arrays), None, None) if !arrays.is_empty() => {
                let arrays = arrays
                    .iter()
                    .map(|(key, options)| Ok((key.clone(), resolve(key, options)?)))
                    .collect::<Result<Vec<_>, StreamError>>()?;
                (arrays, Layout::default())
            }
            (None, Some(plate), Some(image)) => {
                let image = ArrayOptions {
                    ngff: true,
                    ..image.clone()
                };
                let arrays = plate
                    .field_keys()?
                    .iter()
                    .map(|key| Ok((key.clone(), resolve(key, &image)?)))
                    .collect::<Result<Vec<_>, StreamError>>()?;
                let layout = Layout {
                    root: plate.plate_attributes()?,
                    groups: plate.well_attributes()?.into_iter().collect(),
                };
                (arrays, layout)
            }
            (Some(_), None, None) => {
                return Err(StreamError::Invalid(
                    "arrays is empty: name at least one array".into(),
                ))
            }
            (None, Some(_), None) => return Err(StreamError::Invalid(
                "a plate needs image=dict(shape=..., tile=..., dtype=...): the image of each field"
                    .into(),
            )),
            (None, None, Some(_)) => return Err(StreamError::Invalid(
                "image describes the fields of a plate: give plate=dict(rows=..., columns=..., fields=...) too".into(),
            )),
            _ => return Err(StreamError::Invalid(
                "an acquisition is arrays={key: {...}}, or plate={...} with image={...}: give one of them".into(),
            )),
        };
        Ok((arrays, layout, store))
    }
}

/// Each array's buffers held to `memory` (`arrays` in key order).
fn budget_of(
    memory: Option<u64>,
    arrays: &[(String, ResolvedArray)],
) -> Result<Budget, StreamError> {
    let needs = arrays
        .iter()
        .map(|(key, a)| Ok((key.clone(), buffer_bytes(a).map_err(|e| for_array(key, e))?)))
        .collect::<Result<Vec<_>, StreamError>>()?;
    Budget::split(memory, needs)
}

/// The groups' attributes: the root's and those between the root and the
/// arrays (a plate's wells); a group not named is a plain group.
#[derive(Debug, Clone, Default)]
struct Layout {
    root: Value,
    groups: HashMap<String, Value>,
}

/// One array of an acquisition.
struct Array {
    key: String,
    stream: MultiscaleStream,
    /// The array's plane the stream's first plane is (0 but for a stream
    /// appending to a store).
    first_plane: u64,
    plane_bytes: u64,
    /// Its user metadata (`None`: no store).
    user: Option<UserMetadata>,
}

/// Several arrays streamed at once, each at its key.
///
/// ```
/// use retile_ngff::AcquisitionSettings;
/// use retile_store::ZarrOptions;
/// let dir = std::env::temp_dir().join(format!("retile-acq-doc-{}", std::process::id()));
/// let settings: AcquisitionSettings = serde_json::from_value(serde_json::json!({
///     "output": dir, "overwrite": true,
///     "arrays": {"cam0": {"shape": [0, 4, 4], "tile": [2, 2, 2], "dtype": "u8"},
///                "run/cam1": {"shape": [0, 8], "tile": [1, 8], "dtype": "u16", "pyramid": "mean"}}}))?;
/// let mut acq = settings.open(ZarrOptions::default())?;
/// acq.append(Some("run/cam1"), &[1; 16])?;
/// acq.append(Some("cam0"), &[2; 32])?;
/// let summaries = acq.finish()?;
/// assert_eq!(summaries[0].0, "cam0");
/// assert_eq!(summaries[0].1.planes, 2);
/// assert!(dir.join("run/zarr.json").is_file() && dir.join("run/cam1/0/zarr.json").is_file());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Acquisition {
    arrays: Vec<Array>,
    index: HashMap<String, usize>,
    budget: Budget,
    /// One unnamed array (a plain `retile.Stream`): no keys.
    single: bool,
    /// Planes level 0 claimed when the stream opened it (a stream
    /// appending to a store; 0 for a new one).
    claimed_at_open: u64,
}

/// An error about one array, naming it.
fn for_array(key: &str, e: StreamError) -> StreamError {
    match e {
        StreamError::Invalid(m) => StreamError::Invalid(format!("array '{key}': {m}")),
        other => other,
    }
}

/// The bytes of tile buffers a stream of `array` holds (every level's epochs, and the halving).
fn buffer_bytes(array: &ResolvedArray) -> Result<u64, StreamError> {
    let one_level = PyramidOptions {
        levels: Some(1),
        ..Default::default()
    };
    let pyramid = array.output.pyramid.as_ref().unwrap_or(&one_level);
    pyramid.memory_bytes(&array.spec)
}

/// The user metadata an array's store writes (`None`: no store).
fn user_of(array: &ResolvedArray) -> Option<UserMetadata> {
    array.output.zarr.as_ref().and_then(|z| z.user.clone())
}

/// The bytes of one frame of `spec`'s input (one index of its slowest
/// input dimension: a plane, in stored order).
fn plane_bytes(spec: &StreamSpec) -> Result<u64, StreamError> {
    spec.frame_elements()?
        .checked_mul(spec.dtype().size() as u64)
        .ok_or_else(|| StreamError::Invalid("a plane has more than 2^64 bytes".into()))
}

/// A group's `zarr.json`, with `attributes` unless they are null.
fn group_json(attributes: &Value) -> Value {
    match attributes {
        Value::Null => json!({"zarr_format": 3, "node_type": "group"}),
        a => json!({"zarr_format": 3, "node_type": "group", "attributes": a}),
    }
}

impl Acquisition {
    /// The acquisition of one unnamed array appending to the store retile
    /// wrote at `continuation`'s path: the stream opened (the store locked),
    /// the claimed planes of the row it goes on from taken again from the
    /// store, and then the caller's planes from
    /// [`Continuation::claimed`] on. Refused, and the store left as it
    /// was, if it cannot be opened.
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions, Continuation};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let dir = std::env::temp_dir().join(format!("retile-append-doc-{}", std::process::id()));
    /// let store = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let mut first = Acquisition::single(options.resolve(Some(store), backend)?, backend)?;
    /// first.append(None, &[1; 12])?;
    /// first.finish()?; // 3 planes
    /// let next = Continuation::open(&dir, &ArrayOptions::default(), ZarrOptions::default(), backend)?;
    /// let mut more = Acquisition::appending(&next, backend)?;
    /// assert_eq!(more.claimed_at_open(), 3);
    /// more.append(None, &[2; 8])?; // planes 3 and 4
    /// more.finish()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn appending(
        continuation: &Continuation,
        backend: Backend,
    ) -> Result<Acquisition, StreamError> {
        let array = &continuation.array;
        let stream = continuation.open_stream(backend)?;
        let mut acquisition = Acquisition::of_one(array, stream)?;
        acquisition.arrays[0].first_plane = continuation.first_plane;
        acquisition.claimed_at_open = continuation.claimed;
        Ok(acquisition)
    }

    /// The acquisition of one unnamed array, `array` written at the root
    /// (or only measured): a plain stream, taking pieces of any length.
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_pyramid::Backend;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let mut one = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// assert_eq!(one.append(None, &[1, 2, 3])?, 3); // pieces of any length
    /// assert!(one.append(Some("cam0"), &[4]).is_err());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn single(array: ResolvedArray, backend: Backend) -> Result<Acquisition, StreamError> {
        let stream = open_output(array.spec.clone(), &array.fill, backend, &array.output)?;
        Acquisition::of_one(&array, stream)
    }

    /// The acquisition of one unnamed array, `array`, whose stream is
    /// `stream`.
    fn of_one(array: &ResolvedArray, stream: MultiscaleStream) -> Result<Acquisition, StreamError> {
        let budget = Budget::split(None, vec![(String::new(), buffer_bytes(array)?)])?;
        let plane_bytes = plane_bytes(&array.spec)?;
        let user = user_of(array);
        Ok(Acquisition {
            arrays: vec![Array {
                key: String::new(),
                plane_bytes,
                stream,
                first_plane: 0,
                user,
            }],
            index: HashMap::new(),
            budget,
            single: true,
            claimed_at_open: 0,
        })
    }

    /// Opens `arrays` (key, resolved description) under the root group at
    /// `store.path`, in the order of their keys: the budget is checked
    /// first (nothing is made if an array does not fit), then the root made
    /// ready, every array opened, and the groups between written last, so
    /// that no metadata names an array that is not there. A failure removes
    /// what was made.
    fn open(
        store: &ZarrOptions,
        backend: Backend,
        memory: Option<u64>,
        mut arrays: Vec<(String, ResolvedArray)>,
        layout: Layout,
    ) -> Result<Acquisition, StreamError> {
        arrays.sort_by(|a, b| a.0.cmp(&b.0));
        let keys: Vec<&str> = arrays.iter().map(|(k, _)| k.as_str()).collect();
        let groups = groups_of(&keys)?;
        let budget = budget_of(memory, &arrays)?;
        let root = Group::create(store)?;
        let opened = Acquisition::open_arrays(&root, backend, arrays).and_then(|opened| {
            for group in groups.iter().rev() {
                let attributes = layout.groups.get(group).unwrap_or(&Value::Null);
                root.put_metadata_at(group, &group_json(attributes))?;
            }
            root.put_metadata(&group_json(&layout.root))?;
            Ok(opened)
        });
        let opened = match opened {
            Ok(opened) => opened,
            Err(e) => {
                // a failed start leaves nothing that would refuse the retry
                root.root().abandon();
                return Err(e);
            }
        };
        let index = opened
            .iter()
            .enumerate()
            .map(|(i, a)| (a.key.clone(), i))
            .collect();
        Ok(Acquisition {
            arrays: opened,
            index,
            budget,
            single: false,
            claimed_at_open: 0,
        })
    }

    /// Opens every array's stream inside `root`.
    fn open_arrays(
        root: &Group,
        backend: Backend,
        arrays: Vec<(String, ResolvedArray)>,
    ) -> Result<Vec<Array>, StreamError> {
        arrays
            .into_iter()
            .map(|(key, a)| {
                let plane_bytes = plane_bytes(&a.spec)?;
                let user = user_of(&a);
                let stream = open_in(root.root(), &key, a.spec, &a.fill, backend, &a.output)
                    .map_err(|e| for_array(&key, e))?;
                Ok(Array {
                    key,
                    stream,
                    first_plane: 0,
                    plane_bytes,
                    user,
                })
            })
            .collect()
    }

    /// The position of the array `key` names, or why there is none.
    fn position(&self, key: Option<&str>) -> Result<usize, StreamError> {
        match (self.single, key) {
            (true, None) => Ok(0),
            (true, Some(key)) => Err(StreamError::Invalid(format!(
                "key='{key}' names an array of a stream made with arrays= or plate=; this stream writes one array: append without key"
            ))),
            (false, None) if self.arrays.len() == 1 => Ok(0),
            (false, None) => Err(StreamError::Invalid(format!(
                "this stream writes {} arrays: say which with key= (one of {})",
                self.arrays.len(),
                self.listed_keys()
            ))),
            (false, Some(key)) => self.index.get(key).copied().ok_or_else(|| {
                StreamError::Invalid(format!(
                    "no array has the key '{key}'; the keys are {}",
                    self.listed_keys()
                ))
            }),
        }
    }

    /// The keys, as an error lists them.
    fn listed_keys(&self) -> String {
        let mut text: Vec<String> = self
            .arrays
            .iter()
            .take(LISTED_KEYS)
            .map(|a| format!("'{}'", a.key))
            .collect();
        if self.arrays.len() > LISTED_KEYS {
            text.push(format!("and {} more", self.arrays.len() - LISTED_KEYS));
        }
        text.join(", ")
    }

    /// Appends input to the array `key` names (`None`: the only one).
    /// A plain stream takes pieces of any length; an array of an
    /// acquisition takes whole planes (frames), and a frame of the wrong
    /// size is refused before anything of it is taken. Returns the bytes
    /// taken (fewer only past the end of a bounded shape).
    ///
    /// ```
    /// use retile_ngff::AcquisitionSettings;
    /// use retile_store::ZarrOptions;
    /// let dir = std::env::temp_dir().join(format!("retile-acq-append-doc-{}", std::process::id()));
    /// let settings: AcquisitionSettings = serde_json::from_value(serde_json::json!({"output": dir, "overwrite": true,
    ///     "arrays": {"cam0": {"shape": [0, 2, 4], "tile": [1, 2, 4], "dtype": "u8"}}}))?;
    /// let mut acq = settings.open(ZarrOptions::default())?;
    /// assert_eq!(acq.append(Some("cam0"), &[1; 16])?, 16); // two frames
    /// let err = acq.append(Some("cam0"), &[1; 5]).unwrap_err();
    /// assert!(err.to_string().contains("whole planes of 8 bytes (2 x 4 u8 elements)"), "{err}");
    /// assert!(acq.append(Some("cam9"), &[1; 8]).is_err()); // no such key
    /// # acq.finish()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn append(&mut self, key: Option<&str>, data: &[u8]) -> Result<usize, StreamError> {
        let at = self.position(key)?;
        let single = self.single;
        let array = &mut self.arrays[at];
        let plane = array.plane_bytes;
        if !single && !(data.len() as u64).is_multiple_of(plane) {
            let spec = array.stream.plan().spec();
            let extents: Vec<String> = spec.input_shape()[1..].iter().map(u64::to_string).collect();
            let elements = match extents.is_empty() {
                true => format!("one {} element", spec.dtype()),
                false => format!("{} {} elements", extents.join(" x "), spec.dtype()),
            };
            return Err(StreamError::Invalid(format!(
                "a frame of '{}' is whole planes of {plane} bytes ({elements}), but this one is {} bytes: nothing of it was taken",
                array.key,
                data.len()
            )));
        }
        array.stream.append(data)
    }

    /// Finishes every array (each writes what it took and closes), even
    /// when one fails; returns each array's summary by key, in key order,
    /// or the first failure, naming its array.
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_pyramid::Backend;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let mut one = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// one.append(None, &[1; 8])?;
    /// let summaries = one.finish()?;
    /// assert_eq!((summaries[0].0.as_str(), summaries[0].1.planes), ("", 2));
    /// assert!(one.finish().is_err()); // finished already
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn finish(&mut self) -> Result<Vec<(String, Summary)>, StreamError> {
        let mut summaries = Vec::with_capacity(self.arrays.len());
        let mut failed = None;
        for array in &mut self.arrays {
            match array.stream.finish() {
                Ok(summary) => summaries.push((array.key.clone(), summary)),
                Err(e) if failed.is_none() => failed = Some(for_array_finish(&array.key, e)),
                Err(_) => {}
            }
        }
        match failed {
            None => Ok(summaries),
            Some(e) => Err(e),
        }
    }

    /// The element type of the array `key` names.
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_plan::DType;
    /// use retile_pyramid::Backend;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], dtype: "float32".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let one = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// assert_eq!(one.dtype(None)?, DType::F32);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn dtype(&self, key: Option<&str>) -> Result<DType, StreamError> {
        Ok(self.arrays[self.position(key)?]
            .stream
            .plan()
            .spec()
            .dtype())
    }

    /// The bytes of one plane of the array `key` names: its frames are
    /// whole multiples of it.
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_pyramid::Backend;
    /// let options = ArrayOptions { shape: vec![0, 3, 4], tile: vec![1, 3, 4], dtype: "u16".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let one = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// assert_eq!(one.plane_bytes(None)?, 24); // 3 x 4 elements of 2 bytes
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn plane_bytes(&self, key: Option<&str>) -> Result<u64, StreamError> {
        Ok(self.arrays[self.position(key)?].plane_bytes)
    }

    /// The stream of the array `key` names.
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_pyramid::Backend;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let one = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// assert_eq!(one.stream(None)?.plan().spec().tile(), &[1, 4]);
    /// assert!(one.stream(Some("cam0")).is_err()); // a plain stream has no keys
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn stream(&self, key: Option<&str>) -> Result<&MultiscaleStream, StreamError> {
        Ok(&self.arrays[self.position(key)?].stream)
    }

    /// Adds `planes` planes of the fill value to the array `key` names
    /// (frames its camera dropped), as [`MultiscaleStream::skip`].
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_pyramid::Backend;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let mut one = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// one.append(None, &[1; 4])?;
    /// one.skip(None, 3)?; // three frames dropped
    /// one.append(None, &[1; 4])?;
    /// let summary = &one.finish()?[0].1;
    /// assert_eq!((summary.planes, summary.skipped_planes), (5, 3));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn skip(&mut self, key: Option<&str>, planes: u64) -> Result<(), StreamError> {
        self.skip_while(key, planes, || true).map(|_| ())
    }

    /// [`Acquisition::skip`] that stops when `go_on` answers false, as
    /// [`MultiscaleStream::skip_while`]; returns the planes added.
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_pyramid::Backend;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let mut one = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// assert_eq!(one.skip_while(None, 5, || false)?, 0);
    /// assert_eq!(one.skip_while(None, 5, || true)?, 5);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn skip_while(
        &mut self,
        key: Option<&str>,
        planes: u64,
        go_on: impl FnMut() -> bool,
    ) -> Result<u64, StreamError> {
        let at = self.position(key)?;
        self.arrays[at].stream.skip_while(planes, go_on)
    }

    /// The user attributes and per-plane records of the array `key` names
    /// (`None`: it is only measured, without a store).
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let measured = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// assert!(measured.user(None)?.is_none());
    /// let dir = std::env::temp_dir().join(format!("retile-acq-user-doc-{}", std::process::id()));
    /// let store = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
    /// let mut stored = Acquisition::single(options.resolve(Some(store), backend)?, backend)?;
    /// assert!(stored.user(None)?.is_some());
    /// # stored.finish()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn user(&self, key: Option<&str>) -> Result<Option<&UserMetadata>, StreamError> {
        Ok(self.arrays[self.position(key)?].user.as_ref())
    }

    /// Every array's key, in order (`""` for a plain stream's one array).
    ///
    /// ```
    /// use retile_ngff::AcquisitionSettings;
    /// use retile_store::ZarrOptions;
    /// let dir = std::env::temp_dir().join(format!("retile-acq-keys-doc-{}", std::process::id()));
    /// let settings: AcquisitionSettings = serde_json::from_value(serde_json::json!({"output": dir, "overwrite": true,
    ///     "arrays": {"cam1": {"shape": [0, 4], "tile": [1, 4], "dtype": "u8"},
    ///                "cam0": {"shape": [0, 4], "tile": [1, 4], "dtype": "u8"}}}))?;
    /// let mut acq = settings.open(ZarrOptions::default())?;
    /// assert_eq!(acq.keys().collect::<Vec<_>>(), ["cam0", "cam1"]);
    /// # acq.finish()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.arrays.iter().map(|a| a.key.as_str())
    }

    /// Planes the store claimed when the stream opened it: for a stream
    /// appending to a store, the plane its caller's first plane is (0 for
    /// a new store).
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_pyramid::Backend;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let one = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// assert_eq!(one.claimed_at_open(), 0);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn claimed_at_open(&self) -> u64 {
        self.claimed_at_open
    }

    /// The array's plane that the stream of the array `key` names took
    /// first (0 but for a stream appending to a store, whose first planes
    /// are the claimed ones of the row it goes on from, taken again).
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions, Continuation};
    /// use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// # let dir = std::env::temp_dir().join(format!("retile-first-plane-doc-{}", std::process::id()));
    /// # let store = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let mut first = Acquisition::single(options.resolve(Some(store), backend)?, backend)?;
    /// assert_eq!(first.first_plane(None)?, 0); // a new store
    /// first.append(None, &[1; 12])?; // 3 planes: the last row of tiles holds one
    /// first.finish()?;
    /// let next = Continuation::open(&dir, &ArrayOptions::default(), ZarrOptions::default(), backend)?;
    /// let mut more = Acquisition::appending(&next, backend)?;
    /// assert_eq!(more.first_plane(None)?, 2); // plane 2 is taken again
    /// # more.finish()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn first_plane(&self, key: Option<&str>) -> Result<u64, StreamError> {
        Ok(self.arrays[self.position(key)?].first_plane)
    }

    /// Whether this is a plain stream of one unnamed array.
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_pyramid::Backend;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let one = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// assert!(one.is_single());
    /// assert_eq!(one.keys().collect::<Vec<_>>(), [""]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn is_single(&self) -> bool {
        self.single
    }

    /// The memory budget and what each array's buffers take.
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_pyramid::Backend;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let one = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// let budget = one.budget();
    /// assert_eq!((budget.limit, budget.arrays.len()), (None, 1));
    /// assert_eq!(budget.total(), one.stream(None)?.plan().memory_bytes());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Input bytes taken so far, by every array.
    ///
    /// ```
    /// use retile_ngff::{Acquisition, ArrayOptions};
    /// use retile_pyramid::Backend;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], dtype: "u8".into(), ..Default::default() };
    /// let backend = Backend::Cpu { threads: 1 };
    /// let mut one = Acquisition::single(options.resolve(None, backend)?, backend)?;
    /// one.append(None, &[1; 3])?;
    /// one.append(None, &[1; 5])?;
    /// assert_eq!(one.bytes_taken(), 8);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn bytes_taken(&self) -> u64 {
        self.arrays.iter().map(|a| a.stream.bytes_taken()).sum()
    }
}

/// A failure to finish one array of several, naming it (a plain stream's is
/// left as it is: the caller knows its array).
fn for_array_finish(key: &str, e: StreamError) -> StreamError {
    match key {
        "" => e,
        key => match e {
            StreamError::Invalid(m) => StreamError::Invalid(format!("array '{key}': {m}")),
            StreamError::Sink(m) => StreamError::Sink(format!("array '{key}': {m}")),
            other => other,
        },
    }
}
