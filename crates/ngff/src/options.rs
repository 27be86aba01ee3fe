//! What one array of a stream is, as a user describes it: the keyword
//! arguments of `retile.Stream`, and the keys of each array in an
//! acquisition's settings file (`retile stream --config`). One source of
//! truth for their names, defaults and checks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use retile_halving::Method;
use retile_plan::{CodecOn, DType, StreamDType, StreamError, StreamSpec};
use retile_pyramid::{Backend, PyramidOptions};
use retile_store::{Codec, Shuffle, SyncPolicy, UserMetadata, ZarrOptions};

use crate::input_order::{resolve_input_order, DimRef};
use crate::metadata::{default_axes, Axis, NgffOptions};
use crate::open::Output;

/// One array's description: its shape, tile and type, and how it is
/// stored (shards, codec, pyramid, OME-Zarr axes). The names are those of
/// `retile.Stream`'s keyword arguments; a settings file uses the same keys
/// (unknown ones are refused).
///
/// ```
/// use retile_ngff::ArrayOptions;
/// use retile_pyramid::Backend;
/// let options: ArrayOptions = serde_json::from_str(
///     r#"{"shape": [0, 64, 64], "tile": [8, 32, 32], "dtype": "uint16", "codec": "zstd:1"}"#,
/// )?;
/// let array = options.resolve(None, Backend::Cpu { threads: 1 });
/// // a codec takes effect only with a store to write
/// assert!(array.unwrap_err().to_string().contains("codec take effect only with an output"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ArrayOptions {
    /// Extents, slowest first; a first extent of 0 is unbounded.
    pub shape: Vec<u64>,
    /// Tile (chunk) extents, slowest first.
    pub tile: Vec<u64>,
    /// Element type: retile's name (`u16`) or numpy's (`uint16`).
    pub dtype: String,
    /// Tiles per shard, slowest first.
    pub shard: Option<Vec<u64>>,
    /// Chunk codec (`none` when absent).
    pub codec: Option<String>,
    /// Padding of edge tiles, in the element type (a number, or text such as `nan`).
    pub fill: Option<Value>,
    /// Dimension names; in an OME-Zarr image, the axes' names.
    pub dim_names: Option<Vec<String>>,
    /// The order in which the elements arrive, slowest first: names of
    /// `dim_names` (or of the default axes without them) or stored indices;
    /// absent = the stored order.
    pub input_order: Option<Vec<DimRef>>,
    /// Shuffle of the blosc codecs.
    pub shuffle: Option<String>,
    /// Writer threads.
    pub writers: Option<usize>,
    /// Write through the page cache instead of with direct I/O.
    #[serde(default)]
    pub buffered_io: bool,
    /// Pyramid method (`mean`, `min`, `max`, `decimate`, `median`).
    pub pyramid: Option<String>,
    /// Levels of the pyramid.
    pub levels: Option<usize>,
    /// Which dimensions each level halves.
    pub downsample: Option<Vec<bool>>,
    /// Write an OME-Zarr image even without a pyramid.
    #[serde(default)]
    pub ngff: bool,
    /// OME-Zarr axis types.
    pub dim_types: Option<Vec<String>>,
    /// OME-Zarr axis units (`None` or empty: no unit).
    pub units: Option<Vec<Option<String>>>,
    /// Physical size of one element of level 0 along each axis.
    pub scale: Option<Vec<f64>>,
    /// Where a CUDA stream compresses (`auto`, `gpu`, `cpu`).
    pub codec_on: Option<String>,
    /// Bytes for this array's epoch buffers (as many as fit, at least two).
    pub memory: Option<u64>,
    /// When a local store reaches the disk (`end` when absent, or `rows`).
    pub sync: Option<String>,
    /// The array's user attributes (an image's: its group's), a JSON
    /// object; `ome` and `retile` are retile's keys and refused.
    pub attributes: Option<Value>,
}

/// An array's description checked and resolved: what opens its stream.
///
/// ```
/// use retile_ngff::ArrayOptions;
/// use retile_pyramid::Backend;
/// let options = ArrayOptions { shape: vec![0, 8, 8], tile: vec![1, 4, 4], dtype: "uint16".into(),
///     fill: Some(serde_json::json!(3)), pyramid: Some("max".into()), ..Default::default() };
/// let array = options.resolve(None, Backend::Cpu { threads: 1 })?;
/// assert_eq!(array.spec.shape(), &[0, 8, 8]);
/// assert_eq!(array.fill, 3u16.to_ne_bytes());
/// assert!(array.output.zarr.is_none() && array.output.pyramid.is_some());
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ResolvedArray {
    /// The stream's shape, tile, type and epoch buffers.
    pub spec: StreamSpec,
    /// The fill value's bytes.
    pub fill: Vec<u8>,
    /// What is written.
    pub output: Output,
}

impl ArrayOptions {
    /// The options given that need a store (`codec`, `shard`, ...): an error
    /// to give without one.
    ///
    /// ```
    /// use retile_ngff::ArrayOptions;
    /// let options = ArrayOptions { shard: Some(vec![1, 2]), codec: Some("none".into()), buffered_io: true, ..Default::default() };
    /// // `codec: none` asks for nothing a store would do
    /// assert_eq!(options.store_options_given(), ["shard", "buffered_io"]);
    /// ```
    pub fn store_options_given(&self) -> Vec<&'static str> {
        let codec = !matches!(self.codec.as_deref(), None | Some("none"));
        let sync = !matches!(self.sync.as_deref(), None | Some("end"));
        [
            (self.shard.is_some(), "shard"),
            (codec, "codec"),
            (self.shuffle.is_some(), "shuffle"),
            (self.writers.is_some(), "writers"),
            (self.dim_names.is_some(), "dim_names"),
            (self.buffered_io, "buffered_io"),
            (self.ngff, "ngff"),
            (self.dim_types.is_some(), "dim_types"),
            (self.units.is_some(), "units"),
            (self.scale.is_some(), "scale"),
            (self.codec_on.is_some(), "codec_on"),
            (sync, "sync"),
            (self.attributes.is_some(), "attributes"),
        ]
        .into_iter()
        .filter_map(|(given, name)| given.then_some(name))
        .collect()
    }

    /// The options given that describe an array, each array's own in an
    /// acquisition: those of [`ArrayOptions::store_options_given`], the
    /// shape, tile, type, fill and pyramid.
    ///
    /// ```
    /// use retile_ngff::ArrayOptions;
    /// let options = ArrayOptions { shape: vec![0, 4], tile: vec![1, 4], levels: Some(2),
    ///     codec: Some("zstd".into()), ..Default::default() };
    /// assert_eq!(options.array_options_given(), ["shape", "tile", "levels", "codec"]);
    /// assert!(ArrayOptions::default().array_options_given().is_empty());
    /// ```
    pub fn array_options_given(&self) -> Vec<&'static str> {
        let mut given: Vec<&'static str> = [
            (!self.shape.is_empty(), "shape"),
            (!self.tile.is_empty(), "tile"),
            (!self.dtype.is_empty(), "dtype"),
            (self.input_order.is_some(), "input_order"),
            (self.fill.is_some(), "fill"),
            (self.pyramid.is_some(), "pyramid"),
            (self.levels.is_some(), "levels"),
            (self.downsample.is_some(), "downsample"),
        ]
        .into_iter()
        .filter_map(|(given, name)| given.then_some(name))
        .collect();
        given.extend(self.store_options_given());
        given
    }

    /// The stream the description asks for: shape, tile and type, the
    /// order the input arrives in (an input slowest along another
    /// dimension than the stored first comes in slabs of whole shards) and
    /// the memory for its epochs.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, DimRef};
    /// let options = ArrayOptions {
    ///     shape: vec![4, 3, 8, 8],
    ///     tile: vec![2, 1, 8, 8],
    ///     dtype: "u16".into(),
    ///     input_order: Some(vec![DimRef::from("c"), DimRef::from("t"), DimRef::from("y"), DimRef::from("x")]),
    ///     dim_names: Some(["t", "c", "y", "x"].map(String::from).to_vec()),
    ///     shard: Some(vec![1, 3, 1, 1]),
    ///     ..Default::default()
    /// };
    /// let spec = options.spec()?;
    /// assert_eq!(spec.input_order(), &[1, 0, 2, 3]);
    /// assert_eq!(spec.input_slab(), Some((1, 3)));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn spec(&self) -> Result<StreamSpec, StreamError> {
        let dtype: DType = self.dtype.parse()?;
        let mut spec = StreamSpec::new(dtype, self.shape.clone(), self.tile.clone())?;
        if let Some(order) = &self.input_order {
            let rank = spec.shape().len();
            spec = spec.with_input_order(resolve_input_order(
                order,
                self.dim_names.as_deref(),
                rank,
            )?)?;
        }
        if let Some(shard) = &self.shard {
            spec = spec.with_input_slab_of_shard(shard)?;
        }
        match self.memory {
            Some(memory) => spec.within_memory(memory),
            None => Ok(spec),
        }
    }

    /// Checks the description and resolves it into what opens the stream:
    /// written to `store` (its path, `overwrite` and S3 settings are the
    /// caller's; the rest comes from here), or only measured when `None`.
    ///
    /// ```
    /// use retile_ngff::ArrayOptions;
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![0, 8, 8], tile: vec![1, 4, 4], dtype: "u8".into(),
    ///     pyramid: Some("mean".into()), levels: Some(2),
    ///     dim_names: Some(["t", "y", "x"].map(String::from).to_vec()), ..Default::default() };
    /// let store = ZarrOptions { path: "out.zarr".into(), ..Default::default() };
    /// let array = options.resolve(Some(store), Backend::Cpu { threads: 1 })?;
    /// // levels make a pyramid, written as an OME-Zarr image with the names as its axes
    /// let axes = array.output.ngff.unwrap().axes.unwrap();
    /// assert_eq!(axes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["t", "y", "x"]);
    /// assert_eq!(array.output.pyramid.unwrap().levels, Some(2));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn resolve(
        &self,
        store: Option<ZarrOptions>,
        backend: Backend,
    ) -> Result<ResolvedArray, StreamError> {
        let codec_on = self
            .codec_on
            .as_deref()
            .unwrap_or("auto")
            .parse::<CodecOn>()?;
        if codec_on == CodecOn::Gpu && backend != Backend::Cuda {
            return Err(StreamError::Invalid(
                "codec_on='gpu' compresses on the GPU of backend='cuda'".into(),
            ));
        }
        let sync = self
            .sync
            .as_deref()
            .unwrap_or("end")
            .parse::<SyncPolicy>()?;
        let spec = self.spec()?;
        let dtype = spec.dtype();
        let fill = self.fill_bytes(dtype)?;
        let pyramid = self.pyramid_options()?;
        let Some(store) = store else {
            let given = self.store_options_given();
            if !given.is_empty() {
                return Err(StreamError::Invalid(format!(
                    "{} take effect only with an output (without it the tiler is only measured)",
                    given.join(", ")
                )));
            }
            let output = Output {
                pyramid,
                ..Default::default()
            };
            return Ok(ResolvedArray { spec, fill, output });
        };
        let codec = self.codec()?;
        let is_ngff = self.ngff || pyramid.is_some();
        let ngff = match is_ngff {
            true => Some(self.ngff_options(spec.shape().len())?),
            false if self.dim_types.is_some() || self.units.is_some() || self.scale.is_some() => {
                return Err(StreamError::Invalid(
                    "dim_types, units and scale describe an OME-Zarr image: pass ngff=True or a pyramid".into(),
                ))
            }
            false => None,
        };
        let user = UserMetadata::new(
            self.attributes
                .clone()
                .unwrap_or_else(|| Value::Object(Default::default())),
        )?;
        let zarr = ZarrOptions {
            codec,
            user: Some(user),
            shard: self.shard.clone(),
            dimension_names: self.dim_names.clone().filter(|_| !is_ngff),
            buffered_io: self.buffered_io,
            writers: self.writers,
            sync,
            codec_on,
            record: Some(self.record()),
            ..store
        };
        let output = Output {
            zarr: Some(zarr),
            pyramid,
            ngff,
        };
        Ok(ResolvedArray { spec, fill, output })
    }

    /// The codec these options name (`none` without one), with their
    /// blosc shuffle.
    pub(crate) fn codec(&self) -> Result<Codec, StreamError> {
        let codec = self.codec.as_deref().unwrap_or("none").parse::<Codec>()?;
        match &self.shuffle {
            Some(shuffle) => codec.with_shuffle(shuffle.parse::<Shuffle>()?),
            None => Ok(codec),
        }
    }

    /// The fill value's bytes (0 when absent).
    pub(crate) fn fill_bytes(&self, dtype: DType) -> Result<Vec<u8>, StreamError> {
        let text = match &self.fill {
            None => "0".to_string(),
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        dtype
            .parse_value(&text)
            .map_err(|e| StreamError::Invalid(format!("fill: {e}")))
    }

    /// The pyramid asked for; `levels` or `downsample` without one is an error.
    fn pyramid_options(&self) -> Result<Option<PyramidOptions>, StreamError> {
        pyramid_named(
            self.pyramid.as_deref(),
            self.levels,
            self.downsample.clone(),
        )
    }

    /// The OME-Zarr axes of the given names, types and units (each absent =
    /// the defaults for `rank` dimensions) and scale.
    fn ngff_options(&self, rank: usize) -> Result<NgffOptions, StreamError> {
        let defaults = default_axes(rank)?;
        let names = self
            .dim_names
            .clone()
            .unwrap_or_else(|| defaults.iter().map(|a| a.name.clone()).collect());
        let kinds = self
            .dim_types
            .clone()
            .unwrap_or_else(|| defaults.iter().map(|a| a.kind.clone()).collect());
        let units = self.units.clone().unwrap_or_else(|| vec![None; rank]);
        for (what, n) in [
            ("dim_names", names.len()),
            ("dim_types", kinds.len()),
            ("units", units.len()),
        ] {
            if n != rank {
                return Err(StreamError::Invalid(format!(
                    "{what} has {n} entries for {rank} dimensions"
                )));
            }
        }
        let axes = (0..rank)
            .map(|d| {
                Axis::new(
                    &names[d],
                    &kinds[d],
                    units[d].as_deref().filter(|u| !u.is_empty()),
                )
            })
            .collect::<Vec<Axis>>();
        Ok(NgffOptions {
            axes: Some(axes),
            scale: self.scale.clone(),
        })
    }
}

/// The backend `name`d (`cpu`, tiling with `threads`, 0 = all cores; or `cuda`).
///
/// ```
/// use retile_ngff::backend_named;
/// use retile_pyramid::Backend;
/// assert_eq!(backend_named("cpu", 4)?, Backend::Cpu { threads: 4 });
/// assert!(backend_named("tpu", 0).unwrap_err().to_string().contains("unknown backend 'tpu'"));
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn backend_named(name: &str, threads: usize) -> Result<Backend, StreamError> {
    match name {
        "cpu" => Ok(Backend::Cpu { threads }),
        "cuda" => Ok(Backend::Cuda),
        other => Err(StreamError::Invalid(format!(
            "unknown backend '{other}'; use 'cpu' or 'cuda'"
        ))),
    }
}

/// The pyramid of a `method` (`mean`, `min`, `max`, `decimate`, `median`;
/// `None`: no pyramid) with `levels` and `downsample`; either of those
/// without a method is an error.
///
/// ```
/// use retile_ngff::pyramid_named;
/// assert_eq!(pyramid_named(Some("max"), Some(3), None)?.unwrap().levels, Some(3));
/// assert!(pyramid_named(None, None, None)?.is_none());
/// assert!(pyramid_named(None, Some(3), None).is_err());
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn pyramid_named(
    method: Option<&str>,
    levels: Option<usize>,
    downsample: Option<Vec<bool>>,
) -> Result<Option<PyramidOptions>, StreamError> {
    match method {
        Some(method) => Ok(Some(PyramidOptions {
            method: method.parse::<Method>()?,
            downsample,
            levels,
        })),
        None if levels.is_some() || downsample.is_some() => Err(StreamError::Invalid(
            "levels and downsample take effect only with pyramid='mean' (or min, max, decimate, median)".into(),
        )),
        None => Ok(None),
    }
}
