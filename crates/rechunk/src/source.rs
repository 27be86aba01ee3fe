//! An existing Zarr array (v2 or v3, in a local directory or under an S3
//! prefix) read with zarrs: its shape, element type, fill value and
//! dimension names, and its elements slab by slab along the first
//! dimension, each slab whole chunks of the source deep so that no chunk is
//! read twice.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use object_store::aws::AmazonS3;
use object_store::prefix::PrefixStore;
use retile_plan::DType;
use retile_store::{s3_client, S3Options, StorePath};
use zarrs::array::data_type as dt;
use zarrs::array::{Array, ArrayBytes, ArraySubset, DataType};
use zarrs::filesystem::FilesystemStore;
use zarrs_object_store::AsyncObjectStore;

use crate::error::RechunkError;

/// An array in S3, read through zarrs' async API on a runtime of its own.
type S3Array = Array<AsyncObjectStore<PrefixStore<AmazonS3>>>;

/// Where the elements are read from.
enum Reader {
    Local(Array<FilesystemStore>),
    S3 {
        array: S3Array,
        runtime: tokio::runtime::Runtime,
    },
}

/// A Zarr array to re-tile, open for reading.
///
/// ```
/// use retile_rechunk::ZarrSource;
/// let err = ZarrSource::open("/no/such/array.zarr".as_ref(), &Default::default()).unwrap_err().to_string();
/// assert!(err.contains("/no/such/array.zarr"), "{err}");
/// ```
pub struct ZarrSource {
    path: String,
    reader: Reader,
    shape: Vec<u64>,
    dtype: DType,
    fill: Vec<u8>,
    dimension_names: Option<Vec<String>>,
    chunk_depth: u64,
}

impl ZarrSource {
    /// Opens the array at `path`: a directory holding `zarr.json` (or a
    /// Zarr v2 `.zarray`), or `s3://BUCKET/PREFIX` (configured by `s3` and
    /// the environment, as a stream's output is); refused, with the
    /// reason, when it is not an array of one of retile's numeric element
    /// types of rank 1 or more.
    ///
    /// ```
    /// use retile_rechunk::ZarrSource;
    /// // `path`: a u16 array (t, y, x) of shape 4 x 2 x 3 in chunks 2 x 1 x 3,
    /// // fill value 7, written by retile (hidden)
    /// # use retile_ngff::Output;
    /// # use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("a.zarr");
    /// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U16, vec![4, 2, 3], vec![2, 1, 3])?;
    /// # let names = Some(vec!["t".into(), "y".into(), "x".into()]);
    /// # let zarr = ZarrOptions { path: path.clone(), dimension_names: names, ..Default::default() };
    /// # let out = Output { zarr: Some(zarr), ..Default::default() };
    /// # let mut s = retile_ngff::open_output(spec, &[7, 0], Backend::Cpu { threads: 1 }, &out)?;
    /// # s.append(&(0..48).collect::<Vec<u8>>())?;
    /// # s.finish()?;
    /// let source = ZarrSource::open(&path, &Default::default())?;
    /// assert_eq!(source.shape(), &[4, 2, 3]);
    /// let err = ZarrSource::open(dir.path(), &Default::default()).unwrap_err();
    /// assert!(err.to_string().contains("not a Zarr array"), "{err}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: &Path, s3: &S3Options) -> Result<ZarrSource, RechunkError> {
        let name = path.display().to_string();
        let fail = |why: String| RechunkError::Source {
            path: name.clone(),
            why,
        };
        let not_array = |e: zarrs::array::ArrayCreateError| {
            fail(format!("not a Zarr array zarrs can read: {e}"))
        };
        let reader = match StorePath::classify(path)? {
            StorePath::Local(dir) if !dir.is_dir() => {
                return Err(fail(
                    "no such directory (give the path of a Zarr array)".into(),
                ))
            }
            StorePath::Local(dir) => {
                let store = FilesystemStore::new(&dir).map_err(|e| fail(e.to_string()))?;
                Reader::Local(Array::open(Arc::new(store), "/").map_err(not_array)?)
            }
            StorePath::S3 { bucket, prefix } => {
                let client = s3_client(&bucket, path, s3)?;
                let store = AsyncObjectStore::new(PrefixStore::new(client, prefix));
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(4)
                    .enable_all()
                    .build()
                    .map_err(|e| fail(format!("starting the reading threads: {e}")))?;
                let array = runtime
                    .block_on(Array::async_open(Arc::new(store), "/"))
                    .map_err(not_array)?;
                Reader::S3 { array, runtime }
            }
        };
        let described = match &reader {
            Reader::Local(array) => describe(array),
            Reader::S3 { array, .. } => describe(array),
        };
        let (shape, data_type, fill, dimension_names, chunk_depth) = described;
        let dtype = dtype_of(&data_type).ok_or_else(|| {
            fail("its element type is not one retile streams (integers of 8-64 bits, f16, bf16, f32, f64)".into())
        })?;
        if shape.is_empty() {
            return Err(fail(
                "it has no dimensions: there is nothing to tile".into(),
            ));
        }
        Ok(ZarrSource {
            path: name,
            reader,
            shape,
            dtype,
            fill,
            dimension_names,
            chunk_depth,
        })
    }

    /// The array's shape.
    ///
    /// ```
    /// use retile_rechunk::ZarrSource;
    /// // `path`: a u16 array (t, y, x) of shape 4 x 2 x 3 in chunks 2 x 1 x 3,
    /// // fill value 7, written by retile (hidden)
    /// # use retile_ngff::Output;
    /// # use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("a.zarr");
    /// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U16, vec![4, 2, 3], vec![2, 1, 3])?;
    /// # let names = Some(vec!["t".into(), "y".into(), "x".into()]);
    /// # let zarr = ZarrOptions { path: path.clone(), dimension_names: names, ..Default::default() };
    /// # let out = Output { zarr: Some(zarr), ..Default::default() };
    /// # let mut s = retile_ngff::open_output(spec, &[7, 0], Backend::Cpu { threads: 1 }, &out)?;
    /// # s.append(&(0..48).collect::<Vec<u8>>())?;
    /// # s.finish()?;
    /// let source = ZarrSource::open(&path, &Default::default())?;
    /// assert_eq!(source.shape(), &[4, 2, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The array's element type.
    ///
    /// ```
    /// use retile_rechunk::ZarrSource;
    /// // `path`: a u16 array (t, y, x) of shape 4 x 2 x 3 in chunks 2 x 1 x 3,
    /// // fill value 7, written by retile (hidden)
    /// # use retile_ngff::Output;
    /// # use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("a.zarr");
    /// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U16, vec![4, 2, 3], vec![2, 1, 3])?;
    /// # let names = Some(vec!["t".into(), "y".into(), "x".into()]);
    /// # let zarr = ZarrOptions { path: path.clone(), dimension_names: names, ..Default::default() };
    /// # let out = Output { zarr: Some(zarr), ..Default::default() };
    /// # let mut s = retile_ngff::open_output(spec, &[7, 0], Backend::Cpu { threads: 1 }, &out)?;
    /// # s.append(&(0..48).collect::<Vec<u8>>())?;
    /// # s.finish()?;
    /// let source = ZarrSource::open(&path, &Default::default())?;
    /// assert_eq!(source.dtype(), retile_plan::DType::U16);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The fill value's bytes (native byte order).
    ///
    /// ```
    /// use retile_rechunk::ZarrSource;
    /// // `path`: a u16 array (t, y, x) of shape 4 x 2 x 3 in chunks 2 x 1 x 3,
    /// // fill value 7, written by retile (hidden)
    /// # use retile_ngff::Output;
    /// # use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("a.zarr");
    /// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U16, vec![4, 2, 3], vec![2, 1, 3])?;
    /// # let names = Some(vec!["t".into(), "y".into(), "x".into()]);
    /// # let zarr = ZarrOptions { path: path.clone(), dimension_names: names, ..Default::default() };
    /// # let out = Output { zarr: Some(zarr), ..Default::default() };
    /// # let mut s = retile_ngff::open_output(spec, &[7, 0], Backend::Cpu { threads: 1 }, &out)?;
    /// # s.append(&(0..48).collect::<Vec<u8>>())?;
    /// # s.finish()?;
    /// let source = ZarrSource::open(&path, &Default::default())?;
    /// assert_eq!(source.fill(), [7, 0]); // 7 as a u16
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fill(&self) -> Vec<u8> {
        self.fill.clone()
    }

    /// The dimension names the source gives, where it names every one.
    ///
    /// ```
    /// use retile_rechunk::ZarrSource;
    /// // `path`: a u16 array (t, y, x) of shape 4 x 2 x 3 in chunks 2 x 1 x 3,
    /// // fill value 7, written by retile (hidden)
    /// # use retile_ngff::Output;
    /// # use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("a.zarr");
    /// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U16, vec![4, 2, 3], vec![2, 1, 3])?;
    /// # let names = Some(vec!["t".into(), "y".into(), "x".into()]);
    /// # let zarr = ZarrOptions { path: path.clone(), dimension_names: names, ..Default::default() };
    /// # let out = Output { zarr: Some(zarr), ..Default::default() };
    /// # let mut s = retile_ngff::open_output(spec, &[7, 0], Backend::Cpu { threads: 1 }, &out)?;
    /// # s.append(&(0..48).collect::<Vec<u8>>())?;
    /// # s.finish()?;
    /// let source = ZarrSource::open(&path, &Default::default())?;
    /// assert_eq!(source.dimension_names(), Some(vec!["t".to_string(), "y".into(), "x".into()]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dimension_names(&self) -> Option<Vec<String>> {
        self.dimension_names.clone()
    }

    /// How deep (along the first dimension) the source's chunks (its
    /// shards, when sharded) are: a slab of whole chunks is a multiple of it.
    ///
    /// ```
    /// use retile_rechunk::ZarrSource;
    /// // `path`: a u16 array (t, y, x) of shape 4 x 2 x 3 in chunks 2 x 1 x 3,
    /// // fill value 7, written by retile (hidden)
    /// # use retile_ngff::Output;
    /// # use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("a.zarr");
    /// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U16, vec![4, 2, 3], vec![2, 1, 3])?;
    /// # let names = Some(vec!["t".into(), "y".into(), "x".into()]);
    /// # let zarr = ZarrOptions { path: path.clone(), dimension_names: names, ..Default::default() };
    /// # let out = Output { zarr: Some(zarr), ..Default::default() };
    /// # let mut s = retile_ngff::open_output(spec, &[7, 0], Backend::Cpu { threads: 1 }, &out)?;
    /// # s.append(&(0..48).collect::<Vec<u8>>())?;
    /// # s.finish()?;
    /// let source = ZarrSource::open(&path, &Default::default())?;
    /// assert_eq!(source.chunk_depth(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn chunk_depth(&self) -> u64 {
        self.chunk_depth
    }

    /// The bytes of one plane (all dimensions but the first).
    ///
    /// ```
    /// use retile_rechunk::ZarrSource;
    /// // `path`: a u16 array (t, y, x) of shape 4 x 2 x 3 in chunks 2 x 1 x 3,
    /// // fill value 7, written by retile (hidden)
    /// # use retile_ngff::Output;
    /// # use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("a.zarr");
    /// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U16, vec![4, 2, 3], vec![2, 1, 3])?;
    /// # let names = Some(vec!["t".into(), "y".into(), "x".into()]);
    /// # let zarr = ZarrOptions { path: path.clone(), dimension_names: names, ..Default::default() };
    /// # let out = Output { zarr: Some(zarr), ..Default::default() };
    /// # let mut s = retile_ngff::open_output(spec, &[7, 0], Backend::Cpu { threads: 1 }, &out)?;
    /// # s.append(&(0..48).collect::<Vec<u8>>())?;
    /// # s.finish()?;
    /// let source = ZarrSource::open(&path, &Default::default())?;
    /// assert_eq!(source.plane_bytes(), 12); // 2 x 3 elements of 2 bytes
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn plane_bytes(&self) -> u64 {
        self.shape[1..].iter().product::<u64>() * self.dtype.size() as u64
    }

    /// The elements of `planes` along the first dimension, every other
    /// dimension whole, in C order and native byte order.
    ///
    /// ```
    /// use retile_rechunk::ZarrSource;
    /// // `path`: a u16 array (t, y, x) of shape 4 x 2 x 3 in chunks 2 x 1 x 3,
    /// // fill value 7, written by retile (hidden)
    /// # use retile_ngff::Output;
    /// # use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("a.zarr");
    /// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U16, vec![4, 2, 3], vec![2, 1, 3])?;
    /// # let names = Some(vec!["t".into(), "y".into(), "x".into()]);
    /// # let zarr = ZarrOptions { path: path.clone(), dimension_names: names, ..Default::default() };
    /// # let out = Output { zarr: Some(zarr), ..Default::default() };
    /// # let mut s = retile_ngff::open_output(spec, &[7, 0], Backend::Cpu { threads: 1 }, &out)?;
    /// # s.append(&(0..48).collect::<Vec<u8>>())?;
    /// # s.finish()?;
    /// let source = ZarrSource::open(&path, &Default::default())?;
    /// assert_eq!(source.read(1..3)?, (12..36).collect::<Vec<u8>>());
    /// assert!(source.read(3..5).is_err()); // past the last plane
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(&self, planes: Range<u64>) -> Result<Vec<u8>, RechunkError> {
        let mut ranges = vec![planes];
        ranges.extend(self.shape[1..].iter().map(|&n| 0..n));
        self.read_box(&ranges)
    }

    /// The elements of the box `ranges` (one range a dimension), in C order
    /// and native byte order.
    ///
    /// ```
    /// use retile_ngff::Output;
    /// use retile_pyramid::Backend;
    /// use retile_rechunk::ZarrSource;
    /// use retile_store::ZarrOptions;
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("a.zarr");
    /// let spec = retile_plan::StreamSpec::new(retile_plan::DType::U8, vec![3, 4], vec![2, 2])?;
    /// let out = Output { zarr: Some(ZarrOptions { path: path.clone(), ..Default::default() }), ..Default::default() };
    /// let mut s = retile_ngff::open_output(spec, &[0], Backend::Cpu { threads: 1 }, &out)?;
    /// s.append(&(0..12).collect::<Vec<u8>>())?;
    /// s.finish()?;
    /// let source = ZarrSource::open(&path, &Default::default())?;
    /// assert_eq!(source.read_box(&[1..3, 1..3])?, [5, 6, 9, 10]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_box(&self, ranges: &[Range<u64>]) -> Result<Vec<u8>, RechunkError> {
        let fail = |e: String| RechunkError::Source {
            path: self.path.clone(),
            why: format!("reading the box {ranges:?}: {e}"),
        };
        let inside = ranges.len() == self.shape.len()
            && ranges
                .iter()
                .zip(&self.shape)
                .all(|(r, &n)| r.start < r.end && r.end <= n);
        if !inside {
            return Err(fail(format!(
                "not a non-empty box of the array's shape {:?}",
                self.shape
            )));
        }
        let subset = ArraySubset::new_with_ranges(ranges);
        let bytes: ArrayBytes<'static> = match &self.reader {
            Reader::Local(array) => array.retrieve_array_subset(&subset),
            Reader::S3 { array, runtime } => {
                runtime.block_on(array.async_retrieve_array_subset(&subset))
            }
        }
        .map_err(|e| fail(e.to_string()))?;
        let raw = bytes.into_fixed().map_err(|e| fail(e.to_string()))?;
        Ok(raw.into_owned())
    }
}

/// What an open array says of itself: shape, data type, fill value's
/// bytes, dimension names (where every one is named), chunk depth.
fn describe<S: ?Sized>(
    array: &Array<S>,
) -> (Vec<u64>, DataType, Vec<u8>, Option<Vec<String>>, u64) {
    let origin = vec![0; array.shape().len()];
    let depth = array
        .chunk_shape(&origin)
        .ok()
        .and_then(|shape| shape.first().map(|d| d.get()))
        .unwrap_or(1);
    let names = array
        .dimension_names()
        .as_ref()
        .and_then(|names| names.iter().cloned().collect());
    (
        array.shape().to_vec(),
        array.data_type().clone(),
        array.fill_value().as_ne_bytes().to_vec(),
        names,
        depth,
    )
}

impl std::fmt::Debug for ZarrSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZarrSource")
            .field("path", &self.path)
            .field("shape", &self.shape)
            .field("dtype", &self.dtype)
            .finish()
    }
}

/// retile's element type for a zarrs data type (`None`: not one retile
/// streams).
fn dtype_of(data_type: &DataType) -> Option<DType> {
    let known = [
        (data_type.is::<dt::UInt8DataType>(), DType::U8),
        (data_type.is::<dt::UInt16DataType>(), DType::U16),
        (data_type.is::<dt::UInt32DataType>(), DType::U32),
        (data_type.is::<dt::UInt64DataType>(), DType::U64),
        (data_type.is::<dt::Int8DataType>(), DType::I8),
        (data_type.is::<dt::Int16DataType>(), DType::I16),
        (data_type.is::<dt::Int32DataType>(), DType::I32),
        (data_type.is::<dt::Int64DataType>(), DType::I64),
        (data_type.is::<dt::Float16DataType>(), DType::F16),
        (data_type.is::<dt::BFloat16DataType>(), DType::BF16),
        (data_type.is::<dt::Float32DataType>(), DType::F32),
        (data_type.is::<dt::Float64DataType>(), DType::F64),
    ];
    known.into_iter().find(|(is, _)| *is).map(|(_, d)| d)
}
