//! Element types of a stream.

use std::fmt;
use std::str::FromStr;

use crate::StreamError;

/// The element type of a stream; only its size and Zarr name matter to tiling.
///
/// ```
/// use retile_stream::DType;
/// let d: DType = "u16".parse().unwrap();
/// assert_eq!(d.size(), 2);
/// assert_eq!(d.zarr_name(), "uint16");
/// assert!("u24".parse::<DType>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// Unsigned 8-bit.
    U8,
    /// Unsigned 16-bit.
    U16,
    /// Unsigned 32-bit.
    U32,
    /// Unsigned 64-bit.
    U64,
    /// Signed 8-bit.
    I8,
    /// Signed 16-bit.
    I16,
    /// Signed 32-bit.
    I32,
    /// Signed 64-bit.
    I64,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
}

const ALL: [(DType, &str, &str); 12] = [
    (DType::U8, "u8", "uint8"),
    (DType::U16, "u16", "uint16"),
    (DType::U32, "u32", "uint32"),
    (DType::U64, "u64", "uint64"),
    (DType::I8, "i8", "int8"),
    (DType::I16, "i16", "int16"),
    (DType::I32, "i32", "int32"),
    (DType::I64, "i64", "int64"),
    (DType::F16, "f16", "float16"),
    (DType::BF16, "bf16", "bfloat16"),
    (DType::F32, "f32", "float32"),
    (DType::F64, "f64", "float64"),
];

impl DType {
    /// Every dtype.
    ///
    /// ```
    /// assert_eq!(retile_stream::DType::all().count(), 12);
    /// ```
    pub fn all() -> impl Iterator<Item = DType> {
        ALL.iter().map(|e| e.0)
    }

    /// Bytes per element.
    ///
    /// ```
    /// assert_eq!(retile_stream::DType::BF16.size(), 2);
    /// ```
    pub fn size(self) -> usize {
        match self {
            DType::U8 | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    /// The Zarr v3 data type name.
    ///
    /// ```
    /// assert_eq!(retile_stream::DType::F32.zarr_name(), "float32");
    /// ```
    pub fn zarr_name(self) -> &'static str {
        ALL.iter().find(|e| e.0 == self).map_or("uint8", |e| e.2)
    }

    /// The little-endian bytes of `value` in this type (integers saturate,
    /// floats round to nearest).
    ///
    /// ```
    /// use retile_stream::DType;
    /// assert_eq!(DType::U16.encode(258.0), vec![2, 1]);
    /// assert_eq!(DType::F32.encode(1.0), 1.0f32.to_le_bytes().to_vec());
    /// ```
    pub fn encode(self, value: f64) -> Vec<u8> {
        match self {
            DType::U8 => vec![value as u8],
            DType::I8 => (value as i8).to_le_bytes().to_vec(),
            DType::U16 => (value as u16).to_le_bytes().to_vec(),
            DType::I16 => (value as i16).to_le_bytes().to_vec(),
            DType::U32 => (value as u32).to_le_bytes().to_vec(),
            DType::I32 => (value as i32).to_le_bytes().to_vec(),
            DType::U64 => (value as u64).to_le_bytes().to_vec(),
            DType::I64 => (value as i64).to_le_bytes().to_vec(),
            DType::F16 => half::f16::from_f64(value).to_le_bytes().to_vec(),
            DType::BF16 => half::bf16::from_f64(value).to_le_bytes().to_vec(),
            DType::F32 => (value as f32).to_le_bytes().to_vec(),
            DType::F64 => value.to_le_bytes().to_vec(),
        }
    }
}

impl DType {
    /// The little-endian bytes of `text` read as a value of this type:
    /// integers exactly (out of range, or with a fraction, is an error),
    /// floats rounded to nearest in the type itself (`nan`, `inf` and
    /// `-inf` allowed).
    ///
    /// ```
    /// use retile_stream::DType;
    /// assert_eq!(DType::U16.parse_value("258").unwrap(), vec![2, 1]);
    /// assert_eq!(DType::U64.parse_value("9007199254740993").unwrap(), 9007199254740993u64.to_le_bytes());
    /// assert_eq!(DType::F16.parse_value("1.5").unwrap(), half::f16::from_f32(1.5).to_le_bytes());
    /// assert!(DType::U16.parse_value("-1").is_err());
    /// assert!(DType::U16.parse_value("70000").is_err());
    /// assert!(DType::U8.parse_value("1.7").is_err());
    /// ```
    pub fn parse_value(self, text: &str) -> Result<Vec<u8>, StreamError> {
        let bad = || {
            StreamError::Invalid(format!(
                "'{text}' is not a {self} value{}",
                match self {
                    DType::F16 | DType::BF16 | DType::F32 | DType::F64 => "",
                    _ => " (an integer in the type's range)",
                }
            ))
        };
        let t = text.trim();
        macro_rules! exact {
            ($ty:ty) => {
                t.parse::<$ty>()
                    .map(|v| v.to_le_bytes().to_vec())
                    .map_err(|_| bad())
            };
        }
        match self {
            DType::U8 => exact!(u8),
            DType::I8 => exact!(i8),
            DType::U16 => exact!(u16),
            DType::I16 => exact!(i16),
            DType::U32 => exact!(u32),
            DType::I32 => exact!(i32),
            DType::U64 => exact!(u64),
            DType::I64 => exact!(i64),
            DType::F16 => exact!(half::f16),
            DType::BF16 => exact!(half::bf16),
            DType::F32 => exact!(f32),
            DType::F64 => exact!(f64),
        }
    }
}

impl FromStr for DType {
    type Err = StreamError;

    fn from_str(text: &str) -> Result<Self, StreamError> {
        ALL.iter()
            .find(|e| e.1 == text || e.2 == text)
            .map(|e| e.0)
            .ok_or_else(|| {
                let names: Vec<&str> = ALL.iter().map(|e| e.1).collect();
                StreamError::Invalid(format!(
                    "unknown dtype '{text}'; use one of {}",
                    names.join(" ")
                ))
            })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(ALL.iter().find(|e| e.0 == *self).map_or("?", |e| e.1))
    }
}
