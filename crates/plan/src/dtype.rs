//! What a stream needs of its element type beyond the layout crate's
//! [`DType`]: which types it takes, their Zarr names, and fill values
//! parsed from text.

pub use retile_layout::DType;

use crate::error::StreamError;

/// The element-type questions a stream asks: implemented for [`DType`].
///
/// ```
/// use retile_plan::{DType, StreamDType};
/// assert_eq!(DType::U16.zarr_name(), "uint16");
/// assert_eq!(DType::U16.parse_value("258").unwrap(), vec![2, 1]);
/// ```
pub trait StreamDType: Sized {
    /// Refuses a type a stream cannot hold: streams hold the numeric types.
    ///
    /// ```
    /// use retile_plan::{DType, StreamDType};
    /// assert!(DType::F32.check_streamable().is_ok());
    /// assert!(DType::Bool.check_streamable().is_err());
    /// ```
    fn check_streamable(self) -> Result<Self, StreamError>;

    /// The Zarr v3 data type name.
    ///
    /// ```
    /// use retile_plan::{DType, StreamDType};
    /// assert_eq!(DType::F32.zarr_name(), "float32");
    /// ```
    fn zarr_name(self) -> &'static str;

    /// The little-endian bytes of `text` read as a value of this type:
    /// integers exactly (out of range, or with a fraction, is an error),
    /// floats rounded to nearest in the type itself (`nan`, `inf` and
    /// `-inf` allowed).
    ///
    /// ```
    /// use retile_plan::{DType, StreamDType};
    /// assert_eq!(DType::U16.parse_value("258").unwrap(), vec![2, 1]);
    /// assert_eq!(DType::U64.parse_value("9007199254740993").unwrap(), 9007199254740993u64.to_le_bytes());
    /// assert_eq!(DType::F16.parse_value("1.5").unwrap(), half::f16::from_f32(1.5).to_le_bytes());
    /// assert!(DType::U16.parse_value("-1").is_err());
    /// assert!(DType::U16.parse_value("70000").is_err());
    /// assert!(DType::U8.parse_value("1.7").is_err());
    /// ```
    fn parse_value(self, text: &str) -> Result<Vec<u8>, StreamError>;
}

impl StreamDType for DType {
    fn check_streamable(self) -> Result<DType, StreamError> {
        match self.is_numeric() {
            true => Ok(self),
            false => Err(StreamError::Invalid(format!(
                "a stream cannot hold {self} elements; use one of {}",
                DType::numeric()
                    .map(DType::name)
                    .collect::<Vec<_>>()
                    .join(" ")
            ))),
        }
    }

    fn zarr_name(self) -> &'static str {
        // the numeric types' Zarr names are NumPy's
        self.long_name()
    }

    fn parse_value(self, text: &str) -> Result<Vec<u8>, StreamError> {
        parse_numeric(self.check_streamable()?, text)
    }
}

/// [`StreamDType::parse_value`] of a numeric type.
fn parse_numeric(dtype: DType, text: &str) -> Result<Vec<u8>, StreamError> {
    let bad = || {
        StreamError::Invalid(format!(
            "'{text}' is not a {dtype} value{}",
            match dtype {
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
    match dtype {
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
        DType::Bool | DType::F8E4M3 | DType::F8E5M2 => Err(bad()),
    }
}
