//! An existing Zarr array (v2 or v3, in a local directory) read with zarrs:
//! its shape, element type, fill value and dimension names, and its
//! elements slab by slab along the first dimension, each slab whole chunks
//! of the source deep so that no chunk is read twice.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use retile_plan::DType;
use zarrs::array::data_type as dt;
use zarrs::array::{Array, ArrayBytes, ArraySubset, DataType};
use zarrs::filesystem::FilesystemStore;

use crate::error::RechunkError;

/// A Zarr array to re-tile, open for reading.
///
/// ```
/// use retile_rechunk::ZarrSource;
/// let err = ZarrSource::open("/no/such/array.zarr".as_ref()).unwrap_err().to_string();
/// assert!(err.contains("/no/such/array.zarr"), "{err}");
/// ```
pub struct ZarrSource {
    path: String,
    array: Array<FilesystemStore>,
    dtype: DType,
}

impl ZarrSource {
    /// Opens the array at `path` (a directory holding `zarr.json`, or a
    /// Zarr v2 `.zarray`); refused, with the reason, when it is not an
    /// array of one of retile's numeric element types of rank 1 or more.
    pub fn open(path: &Path) -> Result<ZarrSource, RechunkError> {
        let name = path.display().to_string();
        let fail = |why: String| RechunkError::Source {
            path: name.clone(),
            why,
        };
        if !path.is_dir() {
            return Err(fail(
                "no such directory (give the path of a Zarr array)".into(),
            ));
        }
        let store = FilesystemStore::new(path).map_err(|e| fail(e.to_string()))?;
        let array = Array::open(Arc::new(store), "/")
            .map_err(|e| fail(format!("not a Zarr array zarrs can read: {e}")))?;
        let dtype = dtype_of(array.data_type()).ok_or_else(|| {
            fail("its element type is not one retile streams (integers of 8-64 bits, f16, bf16, f32, f64)".into())
        })?;
        if array.shape().is_empty() {
            return Err(fail(
                "it has no dimensions: there is nothing to tile".into(),
            ));
        }
        Ok(ZarrSource {
            path: name,
            array,
            dtype,
        })
    }

    /// The array's shape.
    pub fn shape(&self) -> &[u64] {
        self.array.shape()
    }

    /// The array's element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The fill value's bytes (native byte order).
    pub fn fill(&self) -> Vec<u8> {
        self.array.fill_value().as_ne_bytes().to_vec()
    }

    /// The dimension names the source gives, where it names every one.
    pub fn dimension_names(&self) -> Option<Vec<String>> {
        self.array
            .dimension_names()
            .as_ref()?
            .iter()
            .cloned()
            .collect()
    }

    /// How deep (along the first dimension) the source's chunks are: a
    /// slab of whole chunks is a multiple of it.
    pub fn chunk_depth(&self) -> u64 {
        let origin = vec![0; self.shape().len()];
        self.array
            .chunk_shape(&origin)
            .map_or(1, |shape| shape[0].get())
    }

    /// The bytes of one plane (all dimensions but the first).
    pub fn plane_bytes(&self) -> u64 {
        self.shape()[1..].iter().product::<u64>() * self.dtype.size() as u64
    }

    /// The elements of `planes` along the first dimension, every other
    /// dimension whole, in C order and native byte order.
    pub fn read(&self, planes: Range<u64>) -> Result<Vec<u8>, RechunkError> {
        let mut ranges = vec![planes.clone()];
        ranges.extend(self.shape()[1..].iter().map(|&n| 0..n));
        let subset = ArraySubset::new_with_ranges(&ranges);
        let fail = |e: String| RechunkError::Source {
            path: self.path.clone(),
            why: format!("reading planes {}..{}: {e}", planes.start, planes.end),
        };
        let bytes: ArrayBytes<'static> = self
            .array
            .retrieve_array_subset(&subset)
            .map_err(|e| fail(e.to_string()))?;
        let raw = bytes.into_fixed().map_err(|e| fail(e.to_string()))?;
        Ok(raw.into_owned())
    }
}

impl std::fmt::Debug for ZarrSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZarrSource")
            .field("path", &self.path)
            .field("shape", &self.shape())
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
