//! PyTorch-style strided layouts: a size and a stride per dimension.

use retile_layout::{IntTuple, Layout};

use crate::error::DeviceError;

/// A strided layout `(size, stride)`, dimensions slowest first as PyTorch
/// writes them.
///
/// ```
/// use retile_device::StridedLayout;
/// let t = StridedLayout::new(vec![512, 1, 256], vec![256, 256, 1]).unwrap();
/// assert_eq!(t.canonical().size(), &[512, 256]);
/// assert!(t.is_contiguous());
/// assert_eq!(t.to_cute().unwrap().to_string(), "(512,1,256):(256,256,1)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StridedLayout {
    size: Vec<u64>,
    stride: Vec<i64>,
}

impl StridedLayout {
    /// A layout; size and stride must have the same length.
    ///
    /// ```
    /// use retile_device::StridedLayout;
    /// let t = StridedLayout::new(vec![4, 8], vec![1, 4])?;
    /// assert_eq!((t.size(), t.stride()), (&[4, 8][..], &[1, 4][..]));
    /// let err = StridedLayout::new(vec![4, 8], vec![1]).unwrap_err();
    /// assert!(err.to_string().contains("size has 2 dimensions but stride has 1"), "{err}");
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn new(size: Vec<u64>, stride: Vec<i64>) -> Result<StridedLayout, DeviceError> {
        if size.len() != stride.len() {
            return Err(DeviceError::Invalid(format!(
                "size has {} dimensions but stride has {}",
                size.len(),
                stride.len()
            )));
        }
        Ok(StridedLayout { size, stride })
    }

    /// The contiguous (row-major) layout of `size`.
    ///
    /// ```
    /// use retile_device::StridedLayout;
    /// assert_eq!(StridedLayout::contiguous(vec![2, 3, 4]).stride(), &[12, 4, 1]);
    /// ```
    pub fn contiguous(size: Vec<u64>) -> StridedLayout {
        let mut stride = vec![1i64; size.len()];
        for d in (0..size.len().saturating_sub(1)).rev() {
            stride[d] = stride[d + 1].saturating_mul(size[d + 1].max(1) as i64);
        }
        StridedLayout { size, stride }
    }

    /// Sizes, slowest first.
    ///
    /// ```
    /// use retile_device::StridedLayout;
    /// let t = StridedLayout::new(vec![512, 1, 256], vec![256, 256, 1])?;
    /// assert_eq!(t.size(), &[512, 1, 256]);
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn size(&self) -> &[u64] {
        &self.size
    }

    /// Strides, slowest first.
    ///
    /// ```
    /// use retile_device::StridedLayout;
    /// assert_eq!(StridedLayout::contiguous(vec![2, 3, 4]).stride(), &[12, 4, 1]);
    /// let t = StridedLayout::new(vec![3, 4], vec![1, 3])?; // column-major
    /// assert_eq!(t.stride(), &[1, 3]);
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn stride(&self) -> &[i64] {
        &self.stride
    }

    /// Canonical form: dimensions of size 1 removed.
    ///
    /// ```
    /// use retile_device::StridedLayout;
    /// let t = StridedLayout::new(vec![1, 512, 1, 256], vec![7, 256, 9, 1])?;
    /// let c = t.canonical();
    /// assert_eq!((c.size(), c.stride()), (&[512, 256][..], &[256, 1][..]));
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn canonical(&self) -> StridedLayout {
        let (size, stride) = self
            .size
            .iter()
            .zip(&self.stride)
            .filter(|(&s, _)| s != 1)
            .map(|(&s, &d)| (s, d))
            .unzip();
        StridedLayout { size, stride }
    }

    /// Row-major contiguous once size-1 dimensions are ignored.
    ///
    /// ```
    /// use retile_device::StridedLayout;
    /// assert!(StridedLayout::contiguous(vec![4, 8]).is_contiguous());
    /// assert!(StridedLayout::new(vec![4, 1, 8], vec![8, 99, 1])?.is_contiguous());
    /// assert!(!StridedLayout::new(vec![4, 8], vec![1, 4])?.is_contiguous()); // column-major
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn is_contiguous(&self) -> bool {
        self.canonical() == StridedLayout::contiguous(self.canonical().size)
    }

    /// The offset of a coordinate.
    ///
    /// ```
    /// use retile_device::StridedLayout;
    /// assert_eq!(StridedLayout::contiguous(vec![3, 5]).offset(&[2, 1]), Some(11));
    /// ```
    pub fn offset(&self, coord: &[u64]) -> Option<i64> {
        if coord.len() != self.size.len() {
            return None;
        }
        coord
            .iter()
            .zip(&self.stride)
            .try_fold(0i64, |acc, (&c, &d)| {
                acc.checked_add(i64::try_from(c).ok()?.checked_mul(d)?)
            })
    }

    /// The same function as a CuTe layout (mode `i` = dimension `i`).
    ///
    /// ```
    /// use retile_device::StridedLayout;
    /// let t = StridedLayout::new(vec![4, 8], vec![1, 4])?;
    /// let l = t.to_cute()?;
    /// assert_eq!(l.to_string(), "(4,8):(1,4)");
    /// assert_eq!(l.eval(5).ok(), t.offset(&[1, 1])); // colexicographic index 5 is (1, 1)
    /// # Ok::<(), retile_device::DeviceError>(())
    /// ```
    pub fn to_cute(&self) -> Result<Layout, DeviceError> {
        let size: Vec<i64> = self.size.iter().map(|&s| s as i64).collect();
        let (shape, stride) = (IntTuple::from(&size[..]), IntTuple::from(&self.stride[..]));
        Ok(Layout::new(shape, stride)?)
    }

    /// The strided layout of a CuTe layout's flattened modes (exact: a
    /// strided layout is a flat layout read in the other index order).
    ///
    /// ```
    /// use retile_device::StridedLayout;
    /// let l: retile_layout::Layout = "((2,3),4):((12,4),1)".parse().unwrap();
    /// let t = StridedLayout::from_cute(&l);
    /// assert_eq!((t.size(), t.stride()), (&[2, 3, 4][..], &[12, 4, 1][..]));
    /// ```
    pub fn from_cute(layout: &Layout) -> StridedLayout {
        let (size, stride) = layout
            .flat_modes()
            .iter()
            .map(|&(s, d)| (s as u64, d))
            .unzip();
        StridedLayout { size, stride }
    }
}
