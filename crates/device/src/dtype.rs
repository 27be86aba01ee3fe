//! Element types on the device and how many fit in a 128-byte stick.

use std::fmt;
use std::str::FromStr;

use crate::DeviceError;

/// Host element types and their device representation.
///
/// ```
/// use retile_device::DeviceDType;
/// let d: DeviceDType = "float32".parse().unwrap();
/// assert_eq!(d.elems_per_stick(), 32);
/// assert_eq!(d.device_name(), "IEEE_FP32");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceDType {
    /// float16.
    Float16,
    /// bfloat16.
    BFloat16,
    /// float32.
    Float32,
    /// int8.
    Int8,
    /// int16.
    Int16,
    /// int32.
    Int32,
    /// int64 (stored as 32-bit on the device).
    Int64,
    /// bool.
    Bool,
    /// float8_e4m3fn.
    Float8E4M3,
    /// float8_e5m2fnuz.
    Float8E5M2,
}

/// (type, host name, device name, elements per stick)
const TABLE: [(DeviceDType, &str, &str, u64); 10] = [
    (DeviceDType::Float16, "float16", "SEN169_FP16", 64),
    (DeviceDType::BFloat16, "bfloat16", "BFLOAT16", 64),
    (DeviceDType::Float32, "float32", "IEEE_FP32", 32),
    (DeviceDType::Int8, "int8", "SENINT8", 128),
    (DeviceDType::Int16, "int16", "SENINT16", 64),
    (DeviceDType::Int32, "int32", "IEEE_INT32", 32),
    (DeviceDType::Int64, "int64", "IEEE_INT32", 32),
    (DeviceDType::Bool, "bool", "SEN169_FP16", 64),
    (DeviceDType::Float8E4M3, "float8_e4m3fn", "SEN143_FP8", 128),
    (
        DeviceDType::Float8E5M2,
        "float8_e5m2fnuz",
        "SEN152_FP8",
        128,
    ),
];

impl DeviceDType {
    fn entry(self) -> &'static (DeviceDType, &'static str, &'static str, u64) {
        TABLE.iter().find(|e| e.0 == self).unwrap_or(&TABLE[0])
    }

    /// Every type.
    pub fn all() -> impl Iterator<Item = DeviceDType> {
        TABLE.iter().map(|e| e.0)
    }

    /// Elements per 128-byte stick: 128 / bytes of the device element.
    pub fn elems_per_stick(self) -> u64 {
        self.entry().3
    }

    /// The device's name for the type.
    pub fn device_name(self) -> &'static str {
        self.entry().2
    }
}

impl FromStr for DeviceDType {
    type Err = DeviceError;

    fn from_str(text: &str) -> Result<Self, DeviceError> {
        let name = text.strip_prefix("torch.").unwrap_or(text);
        TABLE
            .iter()
            .find(|e| e.1 == name)
            .map(|e| e.0)
            .ok_or_else(|| {
                let names: Vec<&str> = TABLE.iter().map(|e| e.1).collect();
                DeviceError::Invalid(format!(
                    "unknown dtype '{text}'; use one of {}",
                    names.join(", ")
                ))
            })
    }
}

impl fmt::Display for DeviceDType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.entry().1)
    }
}
