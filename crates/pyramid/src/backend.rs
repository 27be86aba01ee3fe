//! Choosing where the tiling runs: the CPU engine or the GPU's.

use retile_plan::{Sink, StreamError, StreamPlan, StreamSpec, Summary};
use retile_tiler::TileStream;

/// Where a stream's tiles are cut.
///
/// ```
/// use retile_plan::{DType, NullSink, StreamSpec};
/// use retile_pyramid::{AnyStream, Backend};
/// let spec = StreamSpec::new(DType::U8, vec![2, 2], vec![1, 2])?;
/// let cpu = AnyStream::open(spec.clone(), &[0], Backend::Cpu { threads: 2 }, Box::new(NullSink))?;
/// assert!(matches!(cpu, AnyStream::Cpu(_)));
/// // without the `cuda` feature, the GPU backend says how to get it
/// if !cfg!(feature = "cuda") {
///     let err = AnyStream::open(spec, &[0], Backend::Cuda, Box::new(NullSink)).err().unwrap();
///     assert!(err.to_string().contains("--features cuda"));
/// }
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// All cores (`threads` = 0) or that many threads.
    Cpu {
        /// Worker threads; 0 = one per core.
        threads: usize,
    },
    /// GPU 0, through CUDA (needs the `cuda` feature and a GPU).
    Cuda,
}

/// A tile stream on either backend, with one contract: `append` any
/// split, `finish` once, byte-identical output.
///
/// ```
/// use retile_plan::{DType, MemorySink, StreamSpec};
/// use retile_pyramid::{AnyStream, Backend};
/// let spec = StreamSpec::new(DType::U8, vec![4, 4], vec![2, 2]).unwrap();
/// let mut s = AnyStream::open(spec, &[0], Backend::Cpu { threads: 1 }, Box::new(MemorySink::default())).unwrap();
/// s.append(&[7; 16]).unwrap();
/// assert_eq!(s.finish().unwrap().planes, 4);
/// ```
pub enum AnyStream {
    /// The CPU engine.
    Cpu(Box<TileStream>),
    /// The CUDA engine.
    #[cfg(feature = "cuda")]
    Cuda(Box<retile_cuda::CudaTileStream>),
}

impl AnyStream {
    /// Opens a stream of `spec` (padding with element `fill`) on `backend`, writing to `sink`.
    ///
    /// ```
    /// use retile_plan::{DType, MemorySink, StreamSpec};
    /// use retile_pyramid::{AnyStream, Backend};
    /// let spec = StreamSpec::new(DType::U8, vec![1, 3], vec![1, 2])?;
    /// let sink = MemorySink::new();
    /// let mut s = AnyStream::open(spec, &[5], Backend::Cpu { threads: 1 }, Box::new(sink.clone()))?;
    /// s.append(&[1, 2, 3])?;
    /// s.finish()?;
    /// assert_eq!(sink.tile(&[0, 1]), Some(vec![3, 5])); // padded with the fill
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn open(
        spec: StreamSpec,
        fill: &[u8],
        backend: Backend,
        sink: Box<dyn Sink>,
    ) -> Result<AnyStream, StreamError> {
        if backend == Backend::Cuda && !spec.in_stored_order() {
            return Err(StreamError::Invalid(format!(
                "backend='cuda' reads its input in the stored order only, not the input order {:?}; use backend='cpu' or send the input in stored order",
                spec.input_order()
            )));
        }
        match backend {
            Backend::Cpu { threads } => Ok(AnyStream::Cpu(Box::new(TileStream::new(
                spec, fill, threads, sink,
            )?))),
            #[cfg(feature = "cuda")]
            Backend::Cuda => Ok(AnyStream::Cuda(Box::new(retile_cuda::CudaTileStream::new(
                spec, fill, sink,
            )?))),
            #[cfg(not(feature = "cuda"))]
            Backend::Cuda => {
                drop((spec, fill, sink));
                Err(StreamError::gpu(
                    "this retile was built without CUDA; rebuild with `--features cuda`",
                ))
            }
        }
    }

    /// The CUDA engine's stream, if it is one.
    #[cfg(feature = "cuda")]
    pub(crate) fn as_cuda_mut(&mut self) -> Option<&mut retile_cuda::CudaTileStream> {
        match self {
            AnyStream::Cuda(s) => Some(s),
            AnyStream::Cpu(_) => None,
        }
    }

    /// The plan the stream follows.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{AnyStream, Backend};
    /// let spec = StreamSpec::new(DType::U8, vec![4, 6], vec![2, 4])?;
    /// let s = AnyStream::open(spec, &[0], Backend::Cpu { threads: 1 }, Box::new(NullSink))?;
    /// assert_eq!(s.plan().tile_counts(), &[2, 2]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn plan(&self) -> &StreamPlan {
        match self {
            AnyStream::Cpu(s) => s.plan(),
            #[cfg(feature = "cuda")]
            AnyStream::Cuda(s) => s.plan(),
        }
    }

    /// Input bytes taken so far.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{AnyStream, Backend};
    /// let spec = StreamSpec::new(DType::U16, vec![0, 4], vec![1, 4])?;
    /// let mut s = AnyStream::open(spec, &[0, 0], Backend::Cpu { threads: 1 }, Box::new(NullSink))?;
    /// s.append(&[0; 5])?;
    /// assert_eq!(s.bytes_taken(), 5);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn bytes_taken(&self) -> u64 {
        match self {
            AnyStream::Cpu(s) => s.bytes_taken(),
            #[cfg(feature = "cuda")]
            AnyStream::Cuda(s) => s.bytes_taken(),
        }
    }

    /// How many of `len` bytes [`AnyStream::append`] takes now: all of
    /// them, or what is left of a bounded stream; an error once finished.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{AnyStream, Backend};
    /// let spec = StreamSpec::new(DType::U8, vec![2, 4], vec![1, 4])?;
    /// let mut s = AnyStream::open(spec, &[0], Backend::Cpu { threads: 1 }, Box::new(NullSink))?;
    /// s.append(&[1; 6])?;
    /// assert_eq!(s.accepts(100)?, 2); // two bytes of the 8 are left
    /// s.append(&[1; 2])?;
    /// s.finish()?;
    /// assert!(s.accepts(1).is_err());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn accepts(&self, len: usize) -> Result<usize, StreamError> {
        match self {
            AnyStream::Cpu(s) => s.accepts(len),
            #[cfg(feature = "cuda")]
            AnyStream::Cuda(s) => s.accepts(len),
        }
    }

    /// Appends input; returns how many bytes were taken.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{AnyStream, Backend};
    /// let spec = StreamSpec::new(DType::U8, vec![1, 4], vec![1, 4])?;
    /// let mut s = AnyStream::open(spec, &[0], Backend::Cpu { threads: 1 }, Box::new(NullSink))?;
    /// assert_eq!(s.append(&[3; 10])?, 4); // a bounded stream takes its capacity
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn append(&mut self, data: &[u8]) -> Result<usize, StreamError> {
        match self {
            AnyStream::Cpu(s) => s.append(data),
            #[cfg(feature = "cuda")]
            AnyStream::Cuda(s) => s.append(data),
        }
    }

    /// Flushes, finalises the sink, returns the summary.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{AnyStream, Backend};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 2, 2], vec![2, 2, 2])?;
    /// let mut s = AnyStream::open(spec, &[0], Backend::Cpu { threads: 1 }, Box::new(NullSink))?;
    /// s.append(&[1; 12])?;
    /// let summary = s.finish()?;
    /// assert_eq!((summary.planes, summary.tiles, summary.bytes), (3, 2, 12));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn finish(&mut self) -> Result<Summary, StreamError> {
        match self {
            AnyStream::Cpu(s) => s.finish(),
            #[cfg(feature = "cuda")]
            AnyStream::Cuda(s) => s.finish(),
        }
    }
}
