//! N-dimensional permutes: the description shared by the GPU kernel and the
//! CPU reference it is tested against.

use retile_layout::row_major_strides;

use crate::error::{CopyError, Result};

/// A permute of a row-major tensor: output dimension `i` is input
/// dimension `perm[i]`; the output is row-major too.
///
/// ```
/// let p = retile_copy::Permute::new(&[2, 3, 4], &[2, 0, 1], 4).unwrap();
/// assert_eq!(p.output_shape(), vec![4, 2, 3]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permute {
    /// Input extents, slowest first.
    pub shape: Vec<i64>,
    /// Output dimension `i` reads input dimension `perm[i]`.
    pub perm: Vec<usize>,
    /// Bytes per element (1, 2, 4 or 8).
    pub element_bytes: usize,
}

impl Permute {
    /// Validates the shape (positive extents, total size in `i64`), the
    /// permutation, and the element size.
    ///
    /// ```
    /// assert!(retile_copy::Permute::new(&[2, 3], &[0, 0], 4).is_err());
    /// ```
    pub fn new(shape: &[i64], perm: &[usize], element_bytes: usize) -> Result<Self> {
        if shape.iter().any(|&s| s < 1) {
            return Err(CopyError::Invalid(format!(
                "every extent must be positive, got {shape:?}"
            )));
        }
        let mut seen = vec![false; shape.len()];
        if perm.len() != shape.len()
            || perm
                .iter()
                .any(|&p| p >= shape.len() || std::mem::replace(&mut seen[p], true))
        {
            return Err(CopyError::Invalid(format!(
                "{perm:?} is not a permutation of the {} dimensions",
                shape.len()
            )));
        }
        if ![1, 2, 4, 8].contains(&element_bytes) {
            return Err(CopyError::Invalid(format!(
                "element size {element_bytes} bytes is not 1, 2, 4 or 8"
            )));
        }
        let bytes = shape
            .iter()
            .try_fold(element_bytes as i64, |a, &s| a.checked_mul(s));
        if bytes.is_none() {
            return Err(CopyError::Invalid(format!(
                "a tensor of shape {shape:?} does not fit in 64-bit sizes"
            )));
        }
        Ok(Permute {
            shape: shape.to_vec(),
            perm: perm.to_vec(),
            element_bytes,
        })
    }

    /// The output's extents.
    ///
    /// ```
    /// assert_eq!(retile_copy::Permute::new(&[5, 7], &[1, 0], 2).unwrap().output_shape(), vec![7, 5]);
    /// ```
    pub fn output_shape(&self) -> Vec<i64> {
        self.perm.iter().map(|&p| self.shape[p]).collect()
    }

    /// Elements in the tensor.
    ///
    /// ```
    /// assert_eq!(retile_copy::Permute::new(&[5, 7], &[1, 0], 2).unwrap().elements(), 35);
    /// ```
    pub fn elements(&self) -> i64 {
        self.shape.iter().product()
    }

    /// Row-major input strides, in elements, of each output dimension.
    ///
    /// ```
    /// assert_eq!(retile_copy::Permute::new(&[2, 3, 4], &[2, 0, 1], 4).unwrap().input_strides_by_output(), vec![1, 12, 4]);
    /// ```
    pub fn input_strides_by_output(&self) -> Vec<i64> {
        let strides = row_major_strides(&self.shape);
        self.perm.iter().map(|&p| strides[p]).collect()
    }
}

/// The permute done one element at a time: the reference GPU results are
/// compared with.
///
/// ```
/// let p = retile_copy::Permute::new(&[2, 3], &[1, 0], 1).unwrap();
/// assert_eq!(retile_copy::permute_reference(&p, &[0, 1, 2, 3, 4, 5]).unwrap(), vec![0, 3, 1, 4, 2, 5]);
/// ```
pub fn permute_reference(p: &Permute, input: &[u8]) -> Result<Vec<u8>> {
    let e = p.element_bytes;
    let n = p.elements() as usize;
    if input.len() != n * e {
        return Err(CopyError::Invalid(format!(
            "input has {} bytes, the permute needs {}",
            input.len(),
            n * e
        )));
    }
    let out_shape = p.output_shape();
    let strides = p.input_strides_by_output();
    let mut out = vec![0u8; n * e];
    let mut coord = vec![0i64; out_shape.len()];
    for o in 0..n {
        let src = coord.iter().zip(&strides).map(|(c, s)| c * s).sum::<i64>() as usize;
        out[o * e..(o + 1) * e].copy_from_slice(&input[src * e..(src + 1) * e]);
        for d in (0..coord.len()).rev() {
            coord[d] += 1;
            if coord[d] < out_shape[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    Ok(out)
}
