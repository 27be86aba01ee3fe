//! What a finished stream reports: bytes, planes, tiles, where the time
//! went, what its sinks stored, and each level of a pyramid.

use crate::sink::SinkStats;

/// What a finished stream did.
///
/// ```
/// use retile_plan::{SinkStats, Summary};
/// let summary = Summary { planes: 8, tiles: 32, sink: SinkStats { files: 32, ..Default::default() }, ..Default::default() };
/// assert_eq!(summary.sink.files, summary.tiles); // one file a tile
/// assert!(summary.levels.is_empty()); // not a pyramid
/// assert_eq!(summary.codec_on, None); // the sink compressed
/// ```
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Input bytes taken.
    pub bytes: u64,
    /// Complete planes written.
    pub planes: u64,
    /// Planes of the fill value added for dropped frames (`skip`),
    /// counted in `planes` too.
    pub skipped_planes: u64,
    /// Epochs handed to the sink.
    pub epochs: u64,
    /// Tiles handed to the sink.
    pub tiles: u64,
    /// Wall time from creation to the end of `finish`.
    pub seconds: f64,
    /// Time spent copying input into tiles.
    pub scatter_seconds: f64,
    /// Time `append` waited for the sink to return a buffer.
    pub wait_seconds: f64,
    /// Time the sink spent writing epochs.
    pub sink_seconds: f64,
    /// Bytes of tile buffers held at the peak (at most two epochs).
    pub buffer_bytes: u64,
    /// Time from the stream's start until it could take the first append
    /// (included in `seconds`). On the CPU backend: the sink begun and the
    /// first epoch's tile buffer made and filled (the others are made on
    /// the tiling threads while it fills). On the CUDA backend: the GPU
    /// opened, the kernels compiled, the device buffers and nvCOMP ready
    /// (`setup_detail` names each part).
    pub setup_seconds: f64,
    /// Where the setup went, part by part, when the backend says (the CUDA
    /// backend: opening the GPU, compiling kernels, buffers, nvCOMP).
    pub setup_detail: Option<String>,
    /// What the sink did: bytes stored, compression and write times (of
    /// every level, added up, for a pyramid).
    pub sink: SinkStats,
    /// Every level of a pyramid, level 0 first (empty for a plain stream).
    pub levels: Vec<LevelSummary>,
    /// Where the chunks were compressed when the backend could have done it
    /// itself, and why (e.g. "gpu (nvCOMP 6.0.0)", or "cpu: nvCOMP was not
    /// found ..."); `None` when the sink compressed as always.
    pub codec_on: Option<String>,
}

impl Summary {
    /// Input throughput in GB/s (10^9 bytes per second).
    ///
    /// ```
    /// let s = retile_plan::Summary { bytes: 2_000_000_000, seconds: 2.0, ..Default::default() };
    /// assert_eq!(s.gigabytes_per_second(), 1.0);
    /// ```
    pub fn gigabytes_per_second(&self) -> f64 {
        self.bytes as f64 / self.seconds.max(1e-12) / 1e9
    }
}

/// What one level of a finished pyramid holds.
///
/// ```
/// let level = retile_plan::LevelSummary { shape: vec![8, 32, 32], ..Default::default() };
/// assert_eq!(level.tiles, 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LevelSummary {
    /// The level's shape (planes written first).
    pub shape: Vec<u64>,
    /// Tiles written.
    pub tiles: u64,
    /// What its sink stored.
    pub sink: SinkStats,
}
