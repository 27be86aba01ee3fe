//! How an epoch's tiles are cut into the pieces nvCOMP compresses
//! ("blocks"), and how the compressed blocks become each chunk's stored
//! bytes: a zstd frame as nvCOMP wrote it, or a blosc1 frame (header, block
//! offsets, then each block as one stream: its compressed size and bytes,
//! or its shuffled bytes as they are when they do not compress).
//!
//! Pure host code: from the blocks' compressed sizes it makes the list of
//! copies that lay the chunks out back to back ([`Frames`]); the GPU's
//! gather kernel (`codec_kernel`) carries them out, so that only the
//! packed chunks cross the bus. The blosc1 format is c-blosc 1's
//! (`blosc.c`): version 2, format version 1 of LZ4 and zstd, the
//! byte-shuffle flag, the "don't split" flag (one stream per block, as
//! c-blosc writes LZ4 and zstd), and a whole chunk stored as it is (the
//! "memcpyed" flag) when its frame would be larger than that.

use retile_plan::DeviceCodec;

/// Bytes of a blosc1 header.
pub(crate) const BLOSC_HEADER: u64 = 16;

/// Bytes of each blosc block nvCOMP compresses: 64 KiB, the size nvCOMP
/// compresses fastest, at a ratio within 2% of larger blocks.
pub(crate) const BLOSC_BLOCK: u64 = 64 << 10;

/// blosc1 header flags (`blosc.h`).
const DOSHUFFLE: u8 = 0x1;
const MEMCPYED: u8 = 0x2;
const DONT_SPLIT: u8 = 0x10;

/// Where a copy of the gather takes its bytes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Source {
    /// The literal bytes made on the host (headers, offsets, sizes).
    Literal = 0,
    /// The bytes nvCOMP compressed (shuffled tiles for blosc, else the tiles).
    Input = 1,
    /// nvCOMP's output, one slot of `stride` bytes per block.
    Compressed = 2,
    /// The epoch's tiles as the scatter made them.
    Tiles = 3,
}

/// One copy of the gather: `len` bytes from `from` in `source` to `to` in
/// the packed chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CopyOp {
    pub source: Source,
    pub from: u64,
    pub to: u64,
    pub len: u64,
}

/// An epoch's chunks packed back to back: the copies that make them, the
/// literal bytes they copy from, and where each slot's chunk is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Frames {
    pub ops: Vec<CopyOp>,
    pub literals: Vec<u8>,
    /// Per slot: offset and length in the packed chunks; `None` = fill alone.
    pub chunks: Vec<Option<(u64, u64)>>,
    /// Bytes of the packed chunks.
    pub total: u64,
}

/// How one plan's epochs are compressed: the codec, the tiles, and their blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkPlan {
    pub codec: DeviceCodec,
    /// Bytes of one tile (one chunk before compression).
    pub tile_bytes: u64,
    /// Bytes between tiles in the epoch buffer.
    pub slot_bytes: u64,
    /// Tiles per epoch.
    pub tiles: u64,
    /// Bytes of a block (the last one of a tile may be shorter).
    pub block: u64,
}

impl ChunkPlan {
    /// The plan of `codec` over `tiles` tiles of `tile_bytes` bytes,
    /// `slot_bytes` apart: a zstd chunk is one block, a blosc chunk is cut
    /// into blocks of [`BLOSC_BLOCK`] bytes.
    pub fn new(codec: DeviceCodec, tile_bytes: u64, slot_bytes: u64, tiles: u64) -> ChunkPlan {
        let block = match codec {
            DeviceCodec::Zstd => tile_bytes,
            _ => BLOSC_BLOCK.min(tile_bytes),
        };
        ChunkPlan {
            codec,
            tile_bytes,
            slot_bytes,
            tiles,
            block: block.max(1),
        }
    }

    /// Blocks of one tile.
    pub fn blocks_per_tile(&self) -> u64 {
        self.tile_bytes.div_ceil(self.block).max(1)
    }

    /// Blocks of an epoch: the batch nvCOMP compresses in one call.
    pub fn batch(&self) -> u64 {
        self.blocks_per_tile() * self.tiles
    }

    /// Bytes of block `i` of a tile.
    pub fn block_len(&self, i: u64) -> u64 {
        self.block.min(self.tile_bytes - i * self.block)
    }

    /// Offset of block `b` of the epoch (tile `b / blocks_per_tile`) in the
    /// epoch buffer, and its length.
    pub fn block_at(&self, b: u64) -> (u64, u64) {
        let per = self.blocks_per_tile();
        let (tile, i) = (b / per, b % per);
        (tile * self.slot_bytes + i * self.block, self.block_len(i))
    }

    /// The blosc element size (1 for zstd), and whether blosc wraps the blocks.
    fn blosc(&self) -> Option<(u8, u8)> {
        match self.codec {
            DeviceCodec::Zstd => None,
            // the compressor codes of the header's top bits (`blosc.h`)
            DeviceCodec::BloscLz4 { typesize } => Some((typesize, 1)),
            DeviceCodec::BloscZstd { typesize } => Some((typesize, 4)),
        }
    }

    /// Whether the blocks are byte-shuffled before they are compressed.
    pub fn shuffles(&self) -> bool {
        self.blosc().is_some_and(|(typesize, _)| typesize > 1)
    }

    /// Most bytes an epoch's packed chunks take, with `max_block_out` the
    /// most nvCOMP writes for one block.
    pub fn packed_bound(&self, max_block_out: u64) -> u64 {
        let chunk = match self.blosc() {
            None => max_block_out,
            Some(_) => BLOSC_HEADER + self.tile_bytes,
        };
        chunk * self.tiles
    }

    /// Most copies and literal bytes of an epoch's [`Frames`].
    pub fn frames_bound(&self) -> (u64, u64) {
        let per = self.blocks_per_tile();
        match self.blosc() {
            None => (self.tiles, 0),
            Some(_) => (
                self.tiles * (1 + 2 * per),
                self.tiles * (BLOSC_HEADER + 8 * per),
            ),
        }
    }

    /// The blosc1 header of a chunk of this plan.
    fn header(&self, flags: u8, typesize: u8, cbytes: u64) -> [u8; 16] {
        let mut h = [0u8; 16];
        h[0] = 2; // the blosc format version
        h[1] = 1; // the LZ4 and zstd formats' version inside blosc
        h[2] = flags;
        h[3] = typesize;
        h[4..8].copy_from_slice(&(self.tile_bytes as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(self.block as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(cbytes as u32).to_le_bytes());
        h
    }

    /// The packed chunks of an epoch whose blocks compressed to `sizes`
    /// bytes (block `b` at `b * stride` in nvCOMP's output), with
    /// `holds_data[t]` false for a tile of fill alone (left out).
    pub fn frames(
        &self,
        sizes: &[u64],
        holds_data: &[bool],
        stride: u64,
    ) -> Result<Frames, String> {
        let per = self.blocks_per_tile();
        if sizes.len() as u64 != self.batch() || holds_data.len() as u64 != self.tiles {
            return Err(format!(
                "{} block sizes and {} tile flags for an epoch of {} blocks in {} tiles",
                sizes.len(),
                holds_data.len(),
                self.batch(),
                self.tiles
            ));
        }
        if let Some(&bad) = sizes.iter().find(|&&s| s > stride) {
            return Err(format!(
                "nvCOMP reported a block of {bad} compressed bytes, more than the {stride} it may write"
            ));
        }
        let mut frames = Frames::default();
        for tile in 0..self.tiles {
            if !holds_data[tile as usize] {
                frames.chunks.push(None);
                continue;
            }
            let first = tile * per;
            let at = frames.total;
            let len = match self.blosc() {
                None => {
                    let len = sizes[first as usize];
                    let from = first * stride;
                    frames.copy(Source::Compressed, from, len);
                    len
                }
                Some((typesize, compressor)) => {
                    let blocks = &sizes[first as usize..(first + per) as usize];
                    self.blosc_frame(&mut frames, tile, blocks, stride, typesize, compressor)
                }
            };
            frames.chunks.push(Some((at, len)));
        }
        Ok(frames)
    }

    /// Appends tile `tile`'s blosc1 frame; returns its length.
    fn blosc_frame(
        &self,
        frames: &mut Frames,
        tile: u64,
        sizes: &[u64],
        stride: u64,
        typesize: u8,
        compressor: u8,
    ) -> u64 {
        let per = sizes.len() as u64;
        // a block that does not shrink is stored as it is (c-blosc's rule)
        let shrank = |i: u64| (1..self.block_len(i)).contains(&sizes[i as usize]);
        let stored: Vec<u64> = (0..per)
            .map(|i| match shrank(i) {
                true => sizes[i as usize],
                false => self.block_len(i),
            })
            .collect();
        let streams: u64 = stored.iter().map(|s| 4 + s).sum();
        let framed = BLOSC_HEADER + 4 * per + streams;
        let flags = DOSHUFFLE | DONT_SPLIT | (compressor << 5);
        if framed > BLOSC_HEADER + self.tile_bytes {
            let len = BLOSC_HEADER + self.tile_bytes;
            frames.literal(&self.header(flags | MEMCPYED, typesize, len));
            frames.copy(Source::Tiles, tile * self.slot_bytes, self.tile_bytes);
            return len;
        }
        let mut head = self.header(flags, typesize, framed).to_vec();
        let mut start = BLOSC_HEADER + 4 * per;
        for s in &stored {
            head.extend_from_slice(&(start as u32).to_le_bytes());
            start += 4 + s;
        }
        frames.literal(&head);
        for i in 0..per {
            let len = stored[i as usize];
            frames.literal(&(len as u32).to_le_bytes());
            let b = tile * per + i;
            match shrank(i) {
                true => frames.copy(Source::Compressed, b * stride, len),
                false => frames.copy(Source::Input, self.block_at(b).0, len),
            }
        }
        framed
    }
}

impl Frames {
    /// Appends a copy of `len` bytes from `from` in `source`.
    fn copy(&mut self, source: Source, from: u64, len: u64) {
        if len > 0 {
            self.ops.push(CopyOp {
                source,
                from,
                to: self.total,
                len,
            });
        }
        self.total += len;
    }

    /// Appends `bytes` made on the host.
    fn literal(&mut self, bytes: &[u8]) {
        let from = self.literals.len() as u64;
        self.literals.extend_from_slice(bytes);
        self.copy(Source::Literal, from, bytes.len() as u64);
    }

    /// Runs the copies on the host (what the gather kernel does on the
    /// GPU), from `input`, `compressed` and `tiles`.
    #[cfg(test)]
    pub fn gather(&self, input: &[u8], compressed: &[u8], tiles: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; self.total as usize];
        for op in &self.ops {
            let from = match op.source {
                Source::Literal => &self.literals[..],
                Source::Input => input,
                Source::Compressed => compressed,
                Source::Tiles => tiles,
            };
            let (f, t, n) = (op.from as usize, op.to as usize, op.len as usize);
            out[t..t + n].copy_from_slice(&from[f..f + n]);
        }
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Frames made from blocks the CPU compressed (lz4_flex, zstd) and
    //! decoded by c-blosc (through zarrs' blosc codec) and libzstd: the
    //! framing is checked byte for byte on every machine.
    use super::*;
    use std::borrow::Cow;
    use zarrs::array::codec::api::{BytesToBytesCodecTraits, CodecOptions};
    use zarrs::array::codec::{
        BloscCodec, BloscCompressionLevel, BloscCompressor, BloscShuffleMode,
    };
    use zarrs::array::BytesRepresentation;

    /// c-blosc's byte shuffle of one block (`shuffle.c`'s generic path).
    pub fn shuffle_block(block: &[u8], typesize: usize) -> Vec<u8> {
        let n = block.len() / typesize;
        let mut out = block.to_vec();
        for i in 0..n {
            for j in 0..typesize {
                out[j * n + i] = block[i * typesize + j];
            }
        }
        out
    }

    /// Decodes a blosc chunk with c-blosc.
    pub fn blosc_decode(codec: DeviceCodec, stored: &[u8], len: u64) -> Vec<u8> {
        let (compressor, typesize) = match codec {
            DeviceCodec::BloscLz4 { typesize } => (BloscCompressor::LZ4, typesize),
            DeviceCodec::BloscZstd { typesize } => (BloscCompressor::Zstd, typesize),
            DeviceCodec::Zstd => {
                return zstd::bulk::decompress(stored, len as usize).expect("a zstd frame")
            }
        };
        let level = BloscCompressionLevel::try_from(1u8).unwrap();
        let c = BloscCodec::new(
            compressor,
            level,
            None,
            BloscShuffleMode::Shuffle,
            Some(typesize as usize),
        )
        .unwrap();
        c.decode(
            Cow::Borrowed(stored),
            &BytesRepresentation::FixedSize(len),
            &CodecOptions::default(),
        )
        .expect("c-blosc decodes the frame")
        .into_owned()
    }

    /// Compresses one block on the CPU as nvCOMP would (raw LZ4 block, or
    /// a zstd frame).
    fn compress(codec: DeviceCodec, block: &[u8]) -> Vec<u8> {
        match codec {
            DeviceCodec::BloscLz4 { .. } => lz4_flex::block::compress(block),
            _ => zstd::bulk::compress(block, 1).unwrap(),
        }
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n.max(1)
        }
    }

    /// Tiles of camera-like values, some of noise that does not compress,
    /// and some of fill alone; slots padded past the tile.
    fn epoch(rng: &mut Rng, tiles: u64, tile_bytes: u64, slot_bytes: u64) -> (Vec<u8>, Vec<bool>) {
        let mut buffer = vec![0xEEu8; (tiles * slot_bytes) as usize];
        let mut holds = vec![];
        for t in 0..tiles {
            let kind = rng.next(4);
            let at = (t * slot_bytes) as usize;
            for (i, b) in buffer[at..at + tile_bytes as usize].iter_mut().enumerate() {
                *b = match kind {
                    0 => 0,
                    1 => rng.next(256) as u8,
                    _ => ((i / 97) as u8).wrapping_add(rng.next(4) as u8),
                };
            }
            holds.push(kind != 0);
        }
        (buffer, holds)
    }

    /// The epoch compressed on the CPU, framed, gathered and decoded again.
    pub fn round_trip(codec: DeviceCodec, tiles: u64, tile_bytes: u64, pad: u64, seed: u64) {
        let mut rng = Rng(seed | 1);
        let slot_bytes = tile_bytes + pad;
        let plan = ChunkPlan::new(codec, tile_bytes, slot_bytes, tiles);
        let (buffer, holds) = epoch(&mut rng, tiles, tile_bytes, slot_bytes);
        let typesize = match codec {
            DeviceCodec::BloscLz4 { typesize } | DeviceCodec::BloscZstd { typesize } => typesize,
            DeviceCodec::Zstd => 1,
        } as usize;
        // the input nvCOMP sees: each block shuffled in place
        let mut input = buffer.clone();
        if plan.shuffles() {
            for b in 0..plan.batch() {
                let (at, len) = plan.block_at(b);
                let (at, len) = (at as usize, len as usize);
                let shuffled = shuffle_block(&buffer[at..at + len], typesize);
                input[at..at + len].copy_from_slice(&shuffled);
            }
        }
        let stride = plan.block + plan.block / 8 + 1024;
        let mut compressed = vec![0u8; (plan.batch() * stride) as usize];
        let mut sizes = vec![];
        for b in 0..plan.batch() {
            let (at, len) = plan.block_at(b);
            let out = compress(codec, &input[at as usize..(at + len) as usize]);
            let to = (b * stride) as usize;
            compressed[to..to + out.len()].copy_from_slice(&out);
            sizes.push(out.len() as u64);
        }
        let frames = plan.frames(&sizes, &holds, stride).unwrap();
        let (ops, literals) = plan.frames_bound();
        assert!(frames.ops.len() as u64 <= ops && frames.literals.len() as u64 <= literals);
        assert!(frames.total <= plan.packed_bound(stride));
        let packed = frames.gather(&input, &compressed, &buffer);
        assert_eq!(packed.len() as u64, frames.total);
        for (t, chunk) in frames.chunks.iter().enumerate() {
            let Some((at, len)) = *chunk else {
                assert!(!holds[t]);
                continue;
            };
            let stored = &packed[at as usize..(at + len) as usize];
            let tile = &buffer[t * slot_bytes as usize..][..tile_bytes as usize];
            assert_eq!(
                blosc_decode(codec, stored, tile_bytes),
                tile,
                "{codec:?} tile {t} of {tiles}, {tile_bytes} bytes"
            );
        }
    }

    #[test]
    fn cpu_compressed_blocks_framed_here_decode_with_c_blosc_and_zstd() {
        let mut seed = 11;
        for codec in [
            DeviceCodec::Zstd,
            DeviceCodec::BloscLz4 { typesize: 1 },
            DeviceCodec::BloscLz4 { typesize: 2 },
            DeviceCodec::BloscZstd { typesize: 2 },
            DeviceCodec::BloscZstd { typesize: 4 },
            DeviceCodec::BloscLz4 { typesize: 8 },
        ] {
            // one small tile, a tile of exactly one block, ragged last blocks, padded slots
            for (tiles, tile_bytes, pad) in [
                (1, 64, 0),
                (3, BLOSC_BLOCK, 0),
                (5, 3 * BLOSC_BLOCK + 8 * 17, 24),
                (2, 24, 8),
                (4, 2 * BLOSC_BLOCK + 4096, 0),
            ] {
                seed += 1;
                round_trip(codec, tiles, tile_bytes, pad, seed);
            }
        }
    }

    #[test]
    fn a_chunk_that_does_not_shrink_is_stored_as_it_is() {
        let codec = DeviceCodec::BloscLz4 { typesize: 2 };
        let plan = ChunkPlan::new(codec, 2 * BLOSC_BLOCK, 2 * BLOSC_BLOCK, 1);
        // both blocks "compressed" to as much as they hold, or more
        let sizes = [BLOSC_BLOCK + 9, BLOSC_BLOCK];
        let frames = plan.frames(&sizes, &[true], 2 * BLOSC_BLOCK).unwrap();
        assert_eq!(frames.total, BLOSC_HEADER + 2 * BLOSC_BLOCK);
        assert_eq!(frames.literals[2] & MEMCPYED, MEMCPYED);
        let tiles: Vec<u8> = (0..2 * BLOSC_BLOCK).map(|i| (i * 7) as u8).collect();
        let packed = frames.gather(&[], &[], &tiles);
        assert_eq!(blosc_decode(codec, &packed, tiles.len() as u64), tiles);
    }

    #[test]
    fn wrong_counts_and_oversized_blocks_are_errors() {
        let plan = ChunkPlan::new(DeviceCodec::Zstd, 100, 100, 2);
        assert!(plan.frames(&[1], &[true, true], 200).is_err());
        assert!(plan.frames(&[1, 2], &[true], 200).is_err());
        assert!(plan.frames(&[1, 201], &[true, true], 200).is_err());
        let frames = plan.frames(&[5, 7], &[true, false], 200).unwrap();
        assert_eq!(frames.chunks, vec![Some((0, 5)), None]);
    }
}
