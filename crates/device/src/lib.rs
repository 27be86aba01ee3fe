//! # retile-device: strided and device (stick) layouts
//!
//! PyTorch-style strided layouts ([`StridedLayout`]) and tiled device layouts
//! with 128-byte sticks ([`DeviceLayout`]): host dimensions split over a
//! row-major device array whose last dimension is one stick. Both convert to
//! CuTe [`retile_layout::Layout`]s.
//!
//! ```
//! use retile_device::{DType, DeviceLayout};
//! let l = DeviceLayout::with_dim_order(&[512, 256], DType::F16, &[0, 1, -1])?;
//! assert_eq!(l.to_string(), "DeviceLayout(host_size=[512, 256], device_size=[256, 512, 64], dim_map=[1, 0, -1], dtype=float16)");
//! assert_eq!(l.host_coord(&[3, 7, 0])?, Some(vec![7, 3]));
//! assert_eq!(l.host_coord(&[3, 7, 1])?, None);
//! # Ok::<(), retile_device::DeviceError>(())
//! ```

mod dtype;
mod error;
mod layout;
mod strided;
mod view;

pub use dtype::{device_dtypes, device_name, elems_per_stick};
pub use error::DeviceError;
pub use layout::{DeviceLayout, MAX_DEVICE_RANK, MAX_HOST_RANK};
pub use retile_layout::DType;
pub use strided::StridedLayout;
