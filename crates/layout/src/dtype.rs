//! Element types: the one vocabulary of what a layout's elements are, shared
//! by the stream (which needs their size and Zarr name) and the device
//! layouts (which need how many fit in a stick).

use std::fmt;
use std::str::FromStr;

use crate::error::LayoutError;

/// The type of a tensor's elements.
///
/// Names parse in three spellings: short (`u16`), long as NumPy, PyTorch
/// and Zarr write it (`uint16`), and PyTorch's (`torch.uint16`).
///
/// ```
/// use retile_layout::DType;
/// let d: DType = "u16".parse().unwrap();
/// assert_eq!((d.size(), d.long_name()), (2, "uint16"));
/// assert_eq!("torch.float8_e4m3fn".parse::<DType>().unwrap(), DType::F8E4M3);
/// assert_eq!(DType::F16.to_string(), "f16");
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
    /// Boolean, one byte.
    Bool,
    /// 8-bit float, 4 exponent and 3 mantissa bits, finite (`float8_e4m3fn`).
    F8E4M3,
    /// 8-bit float, 5 exponent and 2 mantissa bits (`float8_e5m2fnuz`).
    F8E5M2,
}

/// (type, short name, long name, bytes)
const TABLE: [(DType, &str, &str, usize); 15] = [
    (DType::U8, "u8", "uint8", 1),
    (DType::U16, "u16", "uint16", 2),
    (DType::U32, "u32", "uint32", 4),
    (DType::U64, "u64", "uint64", 8),
    (DType::I8, "i8", "int8", 1),
    (DType::I16, "i16", "int16", 2),
    (DType::I32, "i32", "int32", 4),
    (DType::I64, "i64", "int64", 8),
    (DType::F16, "f16", "float16", 2),
    (DType::BF16, "bf16", "bfloat16", 2),
    (DType::F32, "f32", "float32", 4),
    (DType::F64, "f64", "float64", 8),
    (DType::Bool, "bool", "bool", 1),
    (DType::F8E4M3, "f8e4m3", "float8_e4m3fn", 1),
    (DType::F8E5M2, "f8e5m2", "float8_e5m2fnuz", 1),
];

impl DType {
    fn entry(self) -> &'static (DType, &'static str, &'static str, usize) {
        // every variant has its row
        TABLE.iter().find(|e| e.0 == self).unwrap_or(&TABLE[0])
    }

    /// Every type.
    ///
    /// ```
    /// assert_eq!(retile_layout::DType::all().count(), 15);
    /// ```
    pub fn all() -> impl Iterator<Item = DType> {
        TABLE.iter().map(|e| e.0)
    }

    /// The numeric types: integers of 8 to 64 bits and the 16-, 32- and
    /// 64-bit floats (not `bool`, not the 8-bit floats).
    ///
    /// ```
    /// assert_eq!(retile_layout::DType::numeric().count(), 12);
    /// ```
    pub fn numeric() -> impl Iterator<Item = DType> {
        DType::all().filter(|d| d.is_numeric())
    }

    /// Whether this is one of [`DType::numeric`].
    ///
    /// ```
    /// use retile_layout::DType;
    /// assert!(DType::BF16.is_numeric() && !DType::Bool.is_numeric());
    /// ```
    pub fn is_numeric(self) -> bool {
        !matches!(self, DType::Bool | DType::F8E4M3 | DType::F8E5M2)
    }

    /// Bytes per element.
    ///
    /// ```
    /// assert_eq!(retile_layout::DType::BF16.size(), 2);
    /// ```
    pub fn size(self) -> usize {
        self.entry().3
    }

    /// The short name (`u16`), as retile prints it.
    ///
    /// ```
    /// assert_eq!(retile_layout::DType::U16.name(), "u16");
    /// ```
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// The name NumPy and PyTorch give it (`uint16`, `float8_e4m3fn`),
    /// which is also the Zarr v3 data type name of the numeric types and
    /// of `bool`.
    ///
    /// ```
    /// assert_eq!(retile_layout::DType::F32.long_name(), "float32");
    /// ```
    pub fn long_name(self) -> &'static str {
        self.entry().2
    }
}

impl FromStr for DType {
    type Err = LayoutError;

    fn from_str(text: &str) -> Result<Self, LayoutError> {
        let name = text.strip_prefix("torch.").unwrap_or(text);
        TABLE
            .iter()
            .find(|e| e.1 == name || e.2 == name)
            .map(|e| e.0)
            .ok_or_else(|| LayoutError::UnknownDType {
                name: text.to_string(),
                known: TABLE.iter().map(|e| e.1).collect::<Vec<_>>().join(" "),
            })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
