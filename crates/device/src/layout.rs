//! Device layouts: host dimensions tiled into a row-major device array whose
//! last dimension is a 128-byte stick.

use std::fmt;

use retile_layout::{IntTuple, Layout};

use retile_layout::{row_major_strides, DType};

use crate::dtype::elems_per_stick;
use crate::error::DeviceError;

/// Largest device rank (host rank plus the stick dimension).
///
/// ```
/// use retile_device::{DType, DeviceLayout, MAX_DEVICE_RANK};
/// let l = DeviceLayout::default_for(&[2, 2, 2, 2, 2, 64], DType::F16)?;
/// assert_eq!(l.device_size().len(), MAX_DEVICE_RANK);
/// let err = DeviceLayout::explicit(&[64], &[1; 8], &[0; 8], DType::F16).unwrap_err();
/// assert!(err.to_string().contains("Unsupported tensor rank: 8"), "{err}");
/// # Ok::<(), retile_device::DeviceError>(())
/// ```
pub const MAX_DEVICE_RANK: usize = 7;
/// Largest host rank.
///
/// ```
/// use retile_device::{DType, DeviceLayout, MAX_HOST_RANK};
/// assert!(DeviceLayout::default_for(&[2; MAX_HOST_RANK], DType::F32).is_ok());
/// let err = DeviceLayout::default_for(&[2; MAX_HOST_RANK + 1], DType::F32).unwrap_err();
/// assert!(err.to_string().contains("Unsupported tensor rank: 7"), "{err}");
/// ```
pub const MAX_HOST_RANK: usize = 6;

/// A device layout: `device_size[j]` is the extent of device dimension `j`
/// (row-major, the last one the stick), `dim_map[j]` the host dimension it
/// belongs to (`-1` for the synthetic dimension of a sparse layout).
///
/// Device coordinates map to host coordinates by the fold rule: host
/// coordinate `h` folds the device coordinates of its occurrences left to
/// right (`acc = acc * size + c`); a position whose folded coordinate is past
/// the host size, or whose synthetic coordinate is not 0, is padding.
///
/// ```
/// use retile_device::{DType, DeviceLayout};
/// let l = DeviceLayout::default_for(&[512, 256], DType::F16).unwrap();
/// assert_eq!(l.device_size(), &[4, 512, 64]);
/// assert_eq!(l.dim_map(), &[1, 0, 1]);
/// assert_eq!(l.host_coord(&[1, 7, 3]).unwrap(), Some(vec![7, 67]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceLayout {
    host_size: Vec<u64>,
    device_size: Vec<u64>,
    dim_map: Vec<i64>,
    dtype: DType,
}

fn invalid<T>(message: String) -> Result<T, DeviceError> {
    Err(DeviceError::Invalid(message))
}

impl DeviceLayout {
    /// The default layout: dimension order `0, 1, ..., rank-1`.
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// // host dimension 1 fills 64-element sticks; dimension 0 sits between its two parts
    /// let l = DeviceLayout::default_for(&[512, 256], DType::F16)?;
    /// assert_eq!((l.device_size(), l.dim_map()), (&[4, 512, 64][..], &[1, 0, 1][..]));
    /// assert!(DeviceLayout::default_for(&[512, 0], DType::F16).is_err());
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn default_for(host_size: &[u64], dtype: DType) -> Result<DeviceLayout, DeviceError> {
        let order: Vec<i64> = (0..host_size.len() as i64).collect();
        DeviceLayout::with_dim_order(host_size, dtype, &order)
    }

    /// The layout for a dimension order (a permutation of the host
    /// dimensions, slowest first, with a trailing `-1` for a sparse layout).
    /// Size-1 dimensions are dropped first; the last remaining dimension is
    /// the stick dimension.
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let l = DeviceLayout::with_dim_order(&[512, 256], DType::F16, &[0, 1, -1]).unwrap();
    /// assert_eq!((l.device_size(), l.dim_map()), (&[256, 512, 64][..], &[1, 0, -1][..]));
    /// ```
    pub fn with_dim_order(
        host_size: &[u64],
        dtype: DType,
        order: &[i64],
    ) -> Result<DeviceLayout, DeviceError> {
        if host_size.len() > MAX_HOST_RANK || order.len() > MAX_HOST_RANK {
            return invalid(format!(
                "Unsupported tensor rank: {}",
                host_size.len().max(order.len())
            ));
        }
        let sparse = order.last() == Some(&-1);
        let dense = &order[..order.len() - usize::from(sparse)];
        let mut seen = vec![false; host_size.len()];
        let permutation = dense.len() == host_size.len()
            && dense.iter().all(|&h| {
                usize::try_from(h)
                    .is_ok_and(|h| h < seen.len() && !std::mem::replace(&mut seen[h], true))
            });
        if !permutation {
            return invalid(format!("Incompatible host_size and dim_order: {order:?} is not an order of the {} host dimensions (with an optional trailing -1)", host_size.len()));
        }
        if host_size.is_empty() {
            return invalid(
                "a host tensor needs at least one dimension; give a 0-d tensor as size [1]".into(),
            );
        }
        if host_size.contains(&0) {
            return invalid("a host dimension has size 0".into());
        }
        let mut d: Vec<usize> = dense
            .iter()
            .map(|&h| h as usize)
            .filter(|&h| host_size[h] != 1)
            .collect();
        if d.is_empty() {
            d.push(0);
        }
        let stick = d[d.len() - 1];
        let e = elems_per_stick(dtype)?;
        let mut dim_map: Vec<i64> = d[1..]
            .iter()
            .chain([&d[0], &stick])
            .map(|&h| h as i64)
            .collect();
        let last = dim_map.len() - 1;
        let device_size = dim_map
            .iter()
            .enumerate()
            .map(|(j, &h)| match (j == last, h as usize == stick) {
                (true, _) => e,
                (false, true) if sparse => host_size[stick],
                (false, true) => host_size[stick].div_ceil(e),
                (false, false) => host_size[h as usize],
            })
            .collect();
        if sparse {
            dim_map[last] = -1;
        }
        let layout = DeviceLayout {
            host_size: host_size.to_vec(),
            device_size,
            dim_map,
            dtype,
        };
        layout.check_size()?;
        Ok(layout)
    }

    /// Host and device element counts and the device bytes fit in 63 bits.
    fn check_size(&self) -> Result<(), DeviceError> {
        let fits = |v: &[u64], scale: u64| {
            v.iter()
                .try_fold(scale, |a, &x| a.checked_mul(x))
                .is_some_and(|t| t <= i64::MAX as u64)
        };
        if fits(&self.host_size, 1) && fits(&self.device_size, 128) {
            Ok(())
        } else {
            invalid("the tensor is too large: element counts must fit in 63 bits".into())
        }
    }

    /// An explicitly given layout, validated: equal lengths, every host
    /// dimension of size above 1 present, `-1` only last, the stick extent
    /// equal to the elements per stick, and enough device positions for
    /// every host coordinate.
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let ok = DeviceLayout::explicit(&[512, 256], &[4, 512, 64], &[1, 0, 1], DType::F16);
    /// assert!(ok.is_ok());
    /// let bad = DeviceLayout::explicit(&[512, 256], &[4, 512, 32], &[1, 0, 1], DType::F16);
    /// assert!(bad.unwrap_err().to_string().contains("stick"));
    /// ```
    pub fn explicit(
        host_size: &[u64],
        device_size: &[u64],
        dim_map: &[i64],
        dtype: DType,
    ) -> Result<DeviceLayout, DeviceError> {
        let rank = host_size.len();
        if rank > MAX_HOST_RANK || device_size.len() > MAX_DEVICE_RANK {
            return invalid(format!(
                "Unsupported tensor rank: {}",
                rank.max(device_size.len())
            ));
        }
        if device_size.len() != dim_map.len() || dim_map.is_empty() {
            return invalid(format!("device_size has {} entries but dim_map has {}; give one host dimension per device dimension", device_size.len(), dim_map.len()));
        }
        if let Some(&h) = dim_map.iter().find(|&&h| h < -1 || h >= rank as i64) {
            return invalid(format!(
                "dim_map entry {h} is not a host dimension (0 to {}) or -1",
                rank as i64 - 1
            ));
        }
        if dim_map[..dim_map.len() - 1].contains(&-1) {
            return invalid(
                "the synthetic dimension -1 may only be the last (stick) dimension".into(),
            );
        }
        if device_size.contains(&0) || host_size.contains(&0) {
            return invalid("sizes must be at least 1".into());
        }
        let e = elems_per_stick(dtype)?;
        if device_size[device_size.len() - 1] != e {
            return invalid(format!(
                "the stick dimension has extent {} but a {} stick holds {e} elements",
                device_size[device_size.len() - 1],
                dtype.long_name()
            ));
        }
        let layout = DeviceLayout {
            host_size: host_size.to_vec(),
            device_size: device_size.to_vec(),
            dim_map: dim_map.to_vec(),
            dtype,
        };
        layout.check_size()?;
        for (h, &s) in host_size.iter().enumerate() {
            let covered = layout
                .positions(h)
                .map(|j| device_size[j])
                .try_fold(1u64, |a, z| a.checked_mul(z))
                .unwrap_or(u64::MAX);
            if covered < s {
                return invalid(format!("host dimension {h} has size {s} but its device dimensions hold only {covered} coordinates"));
            }
        }
        Ok(layout)
    }

    /// Host sizes (as given, size-1 dimensions included).
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let l = DeviceLayout::default_for(&[1, 512, 256], DType::F16)?;
    /// assert_eq!(l.host_size(), &[1, 512, 256]);
    /// assert_eq!(l.device_size().len(), 3); // the size-1 dimension is dropped
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn host_size(&self) -> &[u64] {
        &self.host_size
    }

    /// Device sizes, row-major; the last is the stick.
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// // 250 f16 elements need 4 sticks of 64 (6 elements of padding)
    /// let l = DeviceLayout::default_for(&[512, 250], DType::F16)?;
    /// assert_eq!(l.device_size(), &[4, 512, 64]);
    /// assert_eq!(DeviceLayout::default_for(&[8, 100], DType::F32)?.device_size(), &[4, 8, 32]);
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn device_size(&self) -> &[u64] {
        &self.device_size
    }

    /// The host dimension of each device dimension (`-1`: synthetic).
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let l = DeviceLayout::default_for(&[2, 3, 64], DType::F16)?;
    /// assert_eq!(l.dim_map(), &[1, 2, 0, 2]);
    /// let sparse = DeviceLayout::with_dim_order(&[2, 64], DType::F16, &[0, 1, -1])?;
    /// assert_eq!(sparse.dim_map().last(), Some(&-1));
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn dim_map(&self) -> &[i64] {
        &self.dim_map
    }

    /// The element type.
    ///
    /// ```
    /// use retile_device::{elems_per_stick, DType, DeviceLayout};
    /// let l = DeviceLayout::default_for(&[8, 256], DType::F32)?;
    /// assert_eq!(l.dtype(), DType::F32);
    /// assert_eq!(l.device_size().last(), Some(&elems_per_stick(l.dtype())?));
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The layout has a synthetic dimension (one element per stick).
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// assert!(!DeviceLayout::default_for(&[512, 256], DType::F16)?.is_sparse());
    /// let sparse = DeviceLayout::with_dim_order(&[512, 256], DType::F16, &[0, 1, -1])?;
    /// assert!(sparse.is_sparse());
    /// assert_eq!(sparse.host_coord(&[0, 0, 1])?, None); // only element 0 of a stick is used
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn is_sparse(&self) -> bool {
        self.dim_map.last() == Some(&-1)
    }

    /// Device positions of host dimension `h`, in order.
    fn positions(&self, h: usize) -> impl Iterator<Item = usize> + '_ {
        self.dim_map
            .iter()
            .enumerate()
            .filter(move |(_, &m)| m == h as i64)
            .map(|(j, _)| j)
    }

    /// The host dimension whose elements fill the sticks: the dimension of
    /// the last device position, or for a sparse layout the one the dense
    /// default places last but for the stick (`None` if every host dimension
    /// has size 1 and none is mapped).
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let l = DeviceLayout::with_dim_order(&[2, 3, 4], DType::F32, &[0, 1, 2, -1]).unwrap();
    /// assert_eq!(l.host_stick_dim(), Some(2));
    /// ```
    pub fn host_stick_dim(&self) -> Option<usize> {
        let n = self.dim_map.len();
        let at = if self.is_sparse() {
            n.saturating_sub(3)
        } else {
            n - 1
        };
        usize::try_from(self.dim_map[at]).ok()
    }

    /// Bytes on the device: 128 per stick.
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let l = DeviceLayout::default_for(&[512, 256], DType::F16)?;
    /// assert_eq!(l.device_bytes(), 512 * 256 * 2);
    /// // padding counts: 250 elements still take 4 whole sticks per row
    /// assert_eq!(DeviceLayout::default_for(&[512, 250], DType::F16)?.device_bytes(), 4 * 512 * 128);
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn device_bytes(&self) -> u64 {
        128 * self.device_size[..self.device_size.len() - 1]
            .iter()
            .product::<u64>()
    }

    fn check_device_coord(&self, coord: &[u64]) -> Result<(), DeviceError> {
        if coord.len() != self.device_size.len() {
            return invalid(format!(
                "a device coordinate has {} entries, not {}",
                self.device_size.len(),
                coord.len()
            ));
        }
        match coord
            .iter()
            .zip(&self.device_size)
            .position(|(c, s)| c >= s)
        {
            Some(j) => invalid(format!(
                "device coordinate {} of dimension {j} is not below its size {}",
                coord[j], self.device_size[j]
            )),
            None => Ok(()),
        }
    }

    /// The host coordinate of a device coordinate, or `None` for padding.
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let l = DeviceLayout::default_for(&[512, 250], DType::F16)?;
    /// assert_eq!(l.host_coord(&[1, 7, 3])?, Some(vec![7, 67]));
    /// assert_eq!(l.host_coord(&[3, 0, 63])?, None); // column 255 is padding
    /// assert!(l.host_coord(&[4, 0, 0]).is_err());
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn host_coord(&self, coord: &[u64]) -> Result<Option<Vec<u64>>, DeviceError> {
        self.check_device_coord(coord)?;
        let mut host = vec![0u64; self.host_size.len()];
        for (j, &h) in self.dim_map.iter().enumerate() {
            match usize::try_from(h) {
                Ok(h) => host[h] = host[h] * self.device_size[j] + coord[j],
                Err(_) if coord[j] != 0 => return Ok(None),
                Err(_) => {}
            }
        }
        Ok(host
            .iter()
            .zip(&self.host_size)
            .all(|(x, s)| x < s)
            .then_some(host))
    }

    /// The device coordinate holding a host coordinate.
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let l = DeviceLayout::default_for(&[512, 256], DType::F16).unwrap();
    /// assert_eq!(l.device_coord(&[7, 67]).unwrap(), vec![1, 7, 3]);
    /// ```
    pub fn device_coord(&self, host: &[u64]) -> Result<Vec<u64>, DeviceError> {
        if host.len() != self.host_size.len()
            || host.iter().zip(&self.host_size).any(|(x, s)| x >= s)
        {
            return invalid(format!(
                "{host:?} is not a coordinate of a host tensor of size {:?}",
                self.host_size
            ));
        }
        let mut coord = vec![0u64; self.device_size.len()];
        let mut rest = host.to_vec();
        for j in (0..self.dim_map.len()).rev() {
            if let Ok(h) = usize::try_from(self.dim_map[j]) {
                coord[j] = rest[h] % self.device_size[j];
                rest[h] /= self.device_size[j];
            }
        }
        Ok(coord)
    }

    /// The element offset of a device coordinate (row-major over device_size).
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let l = DeviceLayout::default_for(&[512, 256], DType::F16)?;
    /// assert_eq!(l.device_offset(&[0, 0, 5])?, 5);
    /// assert_eq!(l.device_offset(&[1, 7, 3])?, (512 + 7) * 64 + 3);
    /// assert!(l.device_offset(&[1, 7]).is_err());
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn device_offset(&self, coord: &[u64]) -> Result<u64, DeviceError> {
        self.check_device_coord(coord)?;
        Ok(coord
            .iter()
            .zip(&self.device_size)
            .fold(0, |acc, (c, s)| acc * s + c))
    }

    /// The fold weight of each device position within its host dimension:
    /// the product of the sizes of its later positions.
    pub(crate) fn fold_weights(&self) -> Vec<u64> {
        let mut weights = vec![0u64; self.dim_map.len()];
        let mut running = vec![1u64; self.host_size.len()];
        for j in (0..self.dim_map.len()).rev() {
            if let Ok(h) = usize::try_from(self.dim_map[j]) {
                weights[j] = running[h];
                running[h] = running[h].saturating_mul(self.device_size[j]);
            }
        }
        weights
    }

    /// The CuTe layout from device element offsets to host offsets for a host
    /// tensor with `host_stride`: mode `k` is device dimension `rank-1-k`
    /// (fastest first), with stride `fold weight × host stride` (0 for the
    /// synthetic dimension). It agrees with the fold rule on every
    /// non-padding position.
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let l = DeviceLayout::default_for(&[512, 256], DType::F16).unwrap();
    /// assert_eq!(l.to_cute(&[256, 1]).unwrap().to_string(), "(64,512,4):(1,256,64)");
    /// ```
    pub fn to_cute(&self, host_stride: &[i64]) -> Result<Layout, DeviceError> {
        if host_stride.len() != self.host_size.len() {
            return invalid(format!(
                "{} host strides for {} host dimensions",
                host_stride.len(),
                self.host_size.len()
            ));
        }
        let weights = self.fold_weights();
        let mut shape = Vec::new();
        let mut stride = Vec::new();
        for j in (0..self.dim_map.len()).rev() {
            shape.push(IntTuple::Int(self.device_size[j] as i64));
            let d = match usize::try_from(self.dim_map[j]) {
                Ok(h) => (weights[j] as i64)
                    .checked_mul(host_stride[h])
                    .ok_or_else(|| DeviceError::Invalid("a stride overflows".into()))?,
                Err(_) => 0,
            };
            stride.push(IntTuple::Int(d));
        }
        Ok(Layout::new(
            IntTuple::Tuple(shape),
            IntTuple::Tuple(stride),
        )?)
    }

    /// A drawing of the sticks: one row per stick (its device coordinate),
    /// one column per element, each cell the host coordinate's row-major
    /// index, `.` for padding. At most 64 sticks of 128 elements.
    ///
    /// ```
    /// use retile_device::{DType, DeviceLayout};
    /// let l = DeviceLayout::default_for(&[2, 40], DType::F32)?; // 2 x 2 sticks of 32
    /// let text = l.render_sticks()?;
    /// let lines: Vec<&str> = text.lines().collect();
    /// assert_eq!(lines.len(), 5); // the layout, then one line per stick
    /// assert!(lines[3].starts_with("stick (1,0): 32 33"), "{text}");
    /// assert_eq!(lines[3].matches('.').count(), 24); // columns 40..63 are padding
    /// assert!(DeviceLayout::default_for(&[512, 256], DType::F16)?.render_sticks().is_err());
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn render_sticks(&self) -> Result<String, DeviceError> {
        let e = self.device_size[self.device_size.len() - 1];
        let sticks: u64 = self.device_size[..self.device_size.len() - 1]
            .iter()
            .product();
        if sticks > 64 {
            return invalid(format!("{sticks} sticks are too many to draw; at most 64"));
        }
        let host_strides = row_major_strides(&self.host_size);
        let width = (self.host_size.iter().product::<u64>().max(1) - 1)
            .to_string()
            .len();
        let mut out = format!("{self}\n");
        let mut coord = vec![0u64; self.device_size.len()];
        for s in 0..sticks {
            let mut rest = s;
            for j in (0..self.device_size.len() - 1).rev() {
                coord[j] = rest % self.device_size[j];
                rest /= self.device_size[j];
            }
            let label: Vec<String> = coord[..coord.len() - 1]
                .iter()
                .map(u64::to_string)
                .collect();
            out.push_str(&format!("stick ({}):", label.join(",")));
            for c in 0..e {
                coord[self.device_size.len() - 1] = c;
                let cell = match self.host_coord(&coord)? {
                    Some(h) => h
                        .iter()
                        .zip(&host_strides)
                        .map(|(x, s)| x * s)
                        .sum::<u64>()
                        .to_string(),
                    None => ".".into(),
                };
                out.push_str(&format!(" {cell:>width$}"));
            }
            out.push('\n');
        }
        Ok(out)
    }
}

fn list<T: fmt::Display>(items: &[T]) -> String {
    let parts: Vec<String> = items.iter().map(T::to_string).collect();
    format!("[{}]", parts.join(", "))
}

impl fmt::Display for DeviceLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DeviceLayout(host_size={}, device_size={}, dim_map={}, dtype={})",
            list(&self.host_size),
            list(&self.device_size),
            list(&self.dim_map),
            self.dtype.long_name()
        )
    }
}
