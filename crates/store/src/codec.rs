//! Chunk compression: the codecs a user picks, as `zarrs` codec objects, so
//! that the bytes written and the metadata describing them come from one
//! place.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use zarrs::array::codec::api::{BytesToBytesCodecTraits, CodecOptions};
use zarrs::array::codec::{
    BloscCodec, BloscCompressionLevel, BloscCompressor, BloscShuffleMode, GzipCodec, ZstdCodec,
};

use retile_plan::{DeviceCodec, StreamError};

/// How blosc rearranges the bytes of each block before compressing it.
///
/// ```
/// use retile_store::Shuffle;
/// assert_eq!("bit".parse::<Shuffle>().unwrap(), Shuffle::Bit);
/// assert!("bits".parse::<Shuffle>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shuffle {
    /// Bytes as they are.
    None,
    /// The k-th bytes of all elements together (the default).
    #[default]
    Byte,
    /// The k-th bits of all elements together.
    Bit,
}

impl FromStr for Shuffle {
    type Err = StreamError;

    fn from_str(text: &str) -> Result<Self, StreamError> {
        match text {
            "none" => Ok(Shuffle::None),
            "byte" => Ok(Shuffle::Byte),
            "bit" => Ok(Shuffle::Bit),
            _ => Err(StreamError::Invalid(format!(
                "unknown shuffle '{text}'; use none, byte or bit"
            ))),
        }
    }
}

/// The compressor inside a blosc container.
///
/// ```
/// use retile_store::{BloscKind, Codec};
/// let codec: Codec = "blosc-lz4hc:9".parse()?;
/// assert!(matches!(codec, Codec::Blosc { kind: BloscKind::Lz4hc, level: 9, .. }));
/// assert_eq!(codec.to_string(), "blosc-lz4hc:9");
/// assert_eq!(codec.device_codec(2), None); // a GPU writes blosc with lz4 or zstd only
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BloscKind {
    /// LZ4: fast.
    Lz4,
    /// LZ4HC: LZ4's format, smaller and slower to write.
    Lz4hc,
    /// Zstandard.
    Zstd,
    /// zlib (deflate).
    Zlib,
}

/// How chunks are compressed.
///
/// ```
/// use retile_store::{BloscKind, Codec, Shuffle};
/// assert_eq!("zstd:3".parse::<Codec>().unwrap(), Codec::Zstd(3));
/// assert_eq!("none".parse::<Codec>().unwrap(), Codec::None);
/// assert_eq!(
///     "blosc-lz4:1".parse::<Codec>().unwrap(),
///     Codec::Blosc { kind: BloscKind::Lz4, level: 1, shuffle: Shuffle::Byte }
/// );
/// assert_eq!("gzip".parse::<Codec>().unwrap().to_string(), "gzip:6");
/// assert!("lz4".parse::<Codec>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// Raw little-endian bytes.
    #[default]
    None,
    /// zstd at the given level (1 to 22).
    Zstd(i32),
    /// gzip at the given level (0 to 9).
    Gzip(u32),
    /// blosc with the given compressor, level (0 to 9) and shuffle.
    Blosc {
        /// The compressor.
        kind: BloscKind,
        /// The compression level.
        level: u8,
        /// The shuffle applied first.
        shuffle: Shuffle,
    },
}

const CODEC_HELP: &str = "use none, zstd[:1-22], gzip[:0-9], blosc-lz4[:0-9], blosc-lz4hc[:0-9], blosc-zstd[:0-9] or blosc-zlib[:0-9]";

impl FromStr for Codec {
    type Err = StreamError;

    fn from_str(text: &str) -> Result<Self, StreamError> {
        let bad = || StreamError::Invalid(format!("unknown codec '{text}'; {CODEC_HELP}"));
        let (name, level) = match text.split_once(':') {
            Some((name, level)) => (name, Some(level.parse::<i64>().map_err(|_| bad())?)),
            None => (text, None),
        };
        let in_range = |default: i64, low: i64, high: i64| {
            let level = level.unwrap_or(default);
            (low..=high)
                .contains(&level)
                .then_some(level)
                .ok_or_else(bad)
        };
        let blosc = |kind| {
            in_range(5, 0, 9).map(|level| Codec::Blosc {
                kind,
                level: level as u8,
                shuffle: Shuffle::Byte,
            })
        };
        match name {
            "none" if level.is_none() => Ok(Codec::None),
            "zstd" => in_range(3, 1, 22).map(|l| Codec::Zstd(l as i32)),
            "gzip" => in_range(6, 0, 9).map(|l| Codec::Gzip(l as u32)),
            "blosc-lz4" => blosc(BloscKind::Lz4),
            "blosc-lz4hc" => blosc(BloscKind::Lz4hc),
            "blosc-zstd" => blosc(BloscKind::Zstd),
            "blosc-zlib" => blosc(BloscKind::Zlib),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Codec::None => write!(f, "none"),
            Codec::Zstd(level) => write!(f, "zstd:{level}"),
            Codec::Gzip(level) => write!(f, "gzip:{level}"),
            Codec::Blosc { kind, level, .. } => {
                let name = match kind {
                    BloscKind::Lz4 => "lz4",
                    BloscKind::Lz4hc => "lz4hc",
                    BloscKind::Zstd => "zstd",
                    BloscKind::Zlib => "zlib",
                };
                write!(f, "blosc-{name}:{level}")
            }
        }
    }
}

impl Codec {
    /// The same codec with blosc's shuffle set to `shuffle`; an error for a
    /// codec that is not blosc (only blosc shuffles).
    ///
    /// ```
    /// use retile_store::{Codec, Shuffle};
    /// let codec: Codec = "blosc-zstd:1".parse().unwrap();
    /// assert!(codec.with_shuffle(Shuffle::Bit).is_ok());
    /// assert!(Codec::Zstd(1).with_shuffle(Shuffle::Bit).is_err());
    /// ```
    pub fn with_shuffle(self, shuffle: Shuffle) -> Result<Codec, StreamError> {
        match self {
            Codec::Blosc { kind, level, .. } => Ok(Codec::Blosc {
                kind,
                level,
                shuffle,
            }),
            other => Err(StreamError::Invalid(format!(
                "a shuffle applies to the blosc codecs only, not to {other}"
            ))),
        }
    }

    /// The codec a GPU can write in this codec's format for elements of
    /// `element_bytes` bytes (nvCOMP's zstd and LZ4: `zstd`, and
    /// `blosc-lz4` / `blosc-zstd` with byte shuffle and a level above 0);
    /// `None` for the others, which the CPU encodes.
    ///
    /// ```
    /// use retile_plan::DeviceCodec;
    /// use retile_store::Codec;
    /// let codec: Codec = "blosc-lz4:1".parse().unwrap();
    /// assert_eq!(codec.device_codec(2), Some(DeviceCodec::BloscLz4 { typesize: 2 }));
    /// assert_eq!(Codec::Zstd(5).device_codec(4), Some(DeviceCodec::Zstd));
    /// assert_eq!("gzip:1".parse::<Codec>().unwrap().device_codec(2), None);
    /// ```
    pub fn device_codec(self, element_bytes: usize) -> Option<DeviceCodec> {
        let typesize = u8::try_from(element_bytes).ok()?;
        match self {
            Codec::Zstd(_) => Some(DeviceCodec::Zstd),
            Codec::Blosc {
                kind,
                level: 1..,
                shuffle: Shuffle::Byte,
            } => match kind {
                BloscKind::Lz4 => Some(DeviceCodec::BloscLz4 { typesize }),
                BloscKind::Zstd => Some(DeviceCodec::BloscZstd { typesize }),
                _ => None,
            },
            _ => None,
        }
    }

    /// The `zarrs` bytes-to-bytes codecs of this codec for elements of
    /// `element_bytes` bytes (empty for [`Codec::None`]).
    pub(crate) fn zarrs_codecs(
        self,
        element_bytes: usize,
    ) -> Result<Vec<Arc<dyn BytesToBytesCodecTraits>>, StreamError> {
        let invalid = |e: &dyn fmt::Display| StreamError::Invalid(format!("codec {self}: {e}"));
        Ok(match self {
            Codec::None => vec![],
            Codec::Zstd(level) => vec![Arc::new(ZstdCodec::new(level, false))],
            Codec::Gzip(level) => vec![Arc::new(GzipCodec::new(level).map_err(|e| invalid(&e))?)],
            Codec::Blosc {
                kind,
                level,
                shuffle,
            } => {
                let compressor = match kind {
                    BloscKind::Lz4 => BloscCompressor::LZ4,
                    BloscKind::Lz4hc => BloscCompressor::LZ4HC,
                    BloscKind::Zstd => BloscCompressor::Zstd,
                    BloscKind::Zlib => BloscCompressor::Zlib,
                };
                let shuffle = match shuffle {
                    Shuffle::None => BloscShuffleMode::NoShuffle,
                    Shuffle::Byte => BloscShuffleMode::Shuffle,
                    Shuffle::Bit => BloscShuffleMode::BitShuffle,
                };
                let level = BloscCompressionLevel::try_from(level)
                    .map_err(|l| invalid(&format!("level {l} is not 0 to 9")))?;
                let codec = BloscCodec::new(compressor, level, None, shuffle, Some(element_bytes))
                    .map_err(|e| invalid(&e))?;
                vec![Arc::new(codec)]
            }
        })
    }
}

/// Encodes tiles with one codec chain: the chunk bytes as the store holds them.
#[derive(Clone)]
pub(crate) struct Encoder {
    codecs: Vec<Arc<dyn BytesToBytesCodecTraits>>,
    options: CodecOptions,
    codec: Codec,
    element_bytes: usize,
}

impl Encoder {
    /// The encoder of `codec` for elements of `element_bytes` bytes.
    pub fn new(codec: Codec, element_bytes: usize) -> Result<Encoder, StreamError> {
        Ok(Encoder {
            codecs: codec.zarrs_codecs(element_bytes)?,
            options: CodecOptions::default(),
            codec,
            element_bytes,
        })
    }

    /// Checks that chunks a backend encoded with `device` are this
    /// encoder's format, so that the store holds what its metadata says.
    pub fn check_device(&self, device: DeviceCodec) -> Result<(), StreamError> {
        match self.codec.device_codec(self.element_bytes) == Some(device) {
            true => Ok(()),
            false => Err(StreamError::Sink(format!(
                "an epoch arrived encoded as {device:?}, but the array's codec is {}: its chunks would not decode",
                self.codec
            ))),
        }
    }

    /// The codecs, for the array's metadata.
    pub fn codecs(&self) -> &[Arc<dyn BytesToBytesCodecTraits>] {
        &self.codecs
    }

    /// The stored bytes of `tile` (borrowed when nothing compresses).
    pub fn encode<'a>(&self, tile: &'a [u8]) -> Result<Cow<'a, [u8]>, StreamError> {
        let mut bytes = Cow::Borrowed(tile);
        for codec in &self.codecs {
            bytes = codec
                .encode(bytes, &self.options)
                .map_err(|e| StreamError::Sink(format!("encoding a chunk: {e}")))?;
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_parses_prints_and_round_trips_its_name() {
        for text in [
            "none",
            "zstd:1",
            "zstd:22",
            "gzip:0",
            "gzip:9",
            "blosc-lz4:1",
            "blosc-lz4hc:9",
            "blosc-zstd:0",
            "blosc-zlib:5",
        ] {
            let codec: Codec = text.parse().unwrap();
            assert_eq!(codec.to_string(), text);
            assert!(Encoder::new(codec, 2).is_ok(), "{text}");
        }
        for bad in [
            "zstd:0",
            "zstd:23",
            "gzip:10",
            "blosc-lz4:10",
            "blosc",
            "none:1",
            "zstd:x",
            "blosc-snappy",
        ] {
            assert!(bad.parse::<Codec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn encoding_shrinks_repetitive_tiles_and_none_borrows() {
        let tile: Vec<u8> = (0..65536u32).map(|i| (i / 512) as u8).collect();
        let none = Encoder::new(Codec::None, 1).unwrap();
        assert!(matches!(none.encode(&tile).unwrap(), Cow::Borrowed(_)));
        for text in [
            "zstd:1",
            "gzip:1",
            "blosc-lz4:1",
            "blosc-zstd:1",
            "blosc-lz4hc:1",
            "blosc-zlib:1",
        ] {
            let encoder = Encoder::new(text.parse().unwrap(), 4).unwrap();
            let stored = encoder.encode(&tile).unwrap();
            assert!(stored.len() < tile.len() / 4, "{text}: {}", stored.len());
        }
    }
}
