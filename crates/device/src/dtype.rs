//! How element types are stored on the device: its name for each type it
//! holds, and how many elements fit in a 128-byte stick.

use retile_layout::DType;

use crate::error::DeviceError;

/// (type, device name, elements per stick)
const TABLE: [(DType, &str, u64); 10] = [
    (DType::F16, "SEN169_FP16", 64),
    (DType::BF16, "BFLOAT16", 64),
    (DType::F32, "IEEE_FP32", 32),
    (DType::I8, "SENINT8", 128),
    (DType::I16, "SENINT16", 64),
    (DType::I32, "IEEE_INT32", 32),
    // int64 is stored as 32-bit on the device
    (DType::I64, "IEEE_INT32", 32),
    (DType::Bool, "SEN169_FP16", 64),
    (DType::F8E4M3, "SEN143_FP8", 128),
    (DType::F8E5M2, "SEN152_FP8", 128),
];

/// The element types the device holds.
///
/// ```
/// assert_eq!(retile_device::device_dtypes().count(), 10);
/// ```
pub fn device_dtypes() -> impl Iterator<Item = DType> {
    TABLE.iter().map(|e| e.0)
}

/// The device's name for `dtype`, if the device holds it.
///
/// ```
/// use retile_layout::DType;
/// assert_eq!(retile_device::device_name(DType::F32), Some("IEEE_FP32"));
/// assert_eq!(retile_device::device_name(DType::U16), None);
/// ```
pub fn device_name(dtype: DType) -> Option<&'static str> {
    TABLE.iter().find(|e| e.0 == dtype).map(|e| e.1)
}

/// Elements of `dtype` per 128-byte stick: 128 / bytes of the device
/// element; an error naming the types the device holds for any other.
///
/// ```
/// use retile_layout::DType;
/// assert_eq!(retile_device::elems_per_stick(DType::F16).unwrap(), 64);
/// assert!(retile_device::elems_per_stick(DType::F64).is_err());
/// ```
pub fn elems_per_stick(dtype: DType) -> Result<u64, DeviceError> {
    TABLE
        .iter()
        .find(|e| e.0 == dtype)
        .map(|e| e.2)
        .ok_or_else(|| {
            let held: Vec<&str> = device_dtypes().map(DType::long_name).collect();
            DeviceError::Invalid(format!(
                "the device holds no {} elements; use one of {}",
                dtype.long_name(),
                held.join(", ")
            ))
        })
}
