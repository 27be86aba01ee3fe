//! The re-tiling that `retile.rechunk` and `_SlabJob.rechunk` both
//! describe: the arguments of the new array, as both take them, the job
//! they make and the source it reads.

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use retile_rechunk::{Rechunk, ZarrSource};
use retile_stream::{Backend, Codec, Output, S3Options, ZarrOptions};

use crate::error::{rechunk_err, stream_err};
use crate::stream::pyramid_options;

/// The arguments of `retile.rechunk` that describe the new array, as its
/// `_SlabJob.rechunk` also takes them.
pub(crate) struct NewArray<'a> {
    pub dst: PathBuf,
    pub tile: Vec<u64>,
    pub shard: Option<Vec<u64>>,
    pub codec: &'a str,
    pub pyramid: Option<&'a str>,
    pub levels: Option<usize>,
    pub downsample: Option<Vec<bool>>,
    pub memory: Option<u64>,
    pub overwrite: bool,
    pub threads: usize,
}

/// A re-tiling's source, opened, and its job.
pub(crate) struct ReTiling {
    pub source: ZarrSource,
    pub job: Rechunk,
}

impl NewArray<'_> {
    /// The Zarr array at `src` (v2 or v3: a directory, or
    /// `s3://BUCKET/PREFIX`) opened, and the job of re-tiling it into this
    /// new array, both with `s3`'s settings.
    pub(crate) fn re_tiling(self, src: &Path, s3: S3Options) -> PyResult<ReTiling> {
        let source = ZarrSource::open(src, &s3).map_err(rechunk_err)?;
        let job = self.job(s3)?;
        Ok(ReTiling { source, job })
    }

    /// The re-tiling job, writing with `s3`'s settings.
    fn job(self, s3: S3Options) -> PyResult<Rechunk> {
        Ok(Rechunk {
            tile: self.tile,
            output: Output {
                zarr: Some(ZarrOptions {
                    path: self.dst,
                    codec: self.codec.parse::<Codec>().map_err(stream_err)?,
                    shard: self.shard,
                    overwrite: self.overwrite,
                    s3,
                    ..Default::default()
                }),
                pyramid: pyramid_options(self.pyramid, self.levels, self.downsample)?,
                ngff: None,
            },
            backend: Backend::Cpu {
                threads: self.threads,
            },
            memory: self.memory,
        })
    }
}
