//! Choosing where the tiling runs: the CPU engine or the GPU's.

use retile_plan::{Sink, StreamError, StreamPlan, StreamSpec, Summary};
use retile_tiler::TileStream;

/// Where a stream's tiles are cut.
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
    pub fn plan(&self) -> &StreamPlan {
        match self {
            AnyStream::Cpu(s) => s.plan(),
            #[cfg(feature = "cuda")]
            AnyStream::Cuda(s) => s.plan(),
        }
    }

    /// Input bytes taken so far.
    pub fn bytes_taken(&self) -> u64 {
        match self {
            AnyStream::Cpu(s) => s.bytes_taken(),
            #[cfg(feature = "cuda")]
            AnyStream::Cuda(s) => s.bytes_taken(),
        }
    }

    /// How many of `len` bytes [`AnyStream::append`] takes now: all of
    /// them, or what is left of a bounded stream; an error once finished.
    pub fn accepts(&self, len: usize) -> Result<usize, StreamError> {
        match self {
            AnyStream::Cpu(s) => s.accepts(len),
            #[cfg(feature = "cuda")]
            AnyStream::Cuda(s) => s.accepts(len),
        }
    }

    /// Appends input; returns how many bytes were taken.
    pub fn append(&mut self, data: &[u8]) -> Result<usize, StreamError> {
        match self {
            AnyStream::Cpu(s) => s.append(data),
            #[cfg(feature = "cuda")]
            AnyStream::Cuda(s) => s.append(data),
        }
    }

    /// Flushes, finalises the sink, returns the summary.
    pub fn finish(&mut self) -> Result<Summary, StreamError> {
        match self {
            AnyStream::Cpu(s) => s.finish(),
            #[cfg(feature = "cuda")]
            AnyStream::Cuda(s) => s.finish(),
        }
    }
}
