//! Where the tiles of an epoch are stored: a grid of files over the tile
//! grid. Sharded, a file is a Zarr v3 `sharding_indexed` shard holding a
//! block of tiles as its inner chunks, followed by its index; unsharded, a
//! file holds one tile. A shard spans `depth` epochs along the append
//! dimension, so the files of one *row* (the shards of one range of
//! epochs) are open together while those epochs land.

use retile_plan::{unravel, StreamError, StreamPlan, TileMap};

/// The bytes of the shard indexes of one row that a stream may hold.
const MAX_ROW_INDEX_BYTES: u64 = 1 << 28;

/// Bytes of one index entry: `offset` and `nbytes`, little-endian u64.
pub(crate) const ENTRY_BYTES: u64 = 16;

/// The grid of chunk or shard files over a plan's tiles.
#[derive(Debug, Clone)]
pub(crate) struct ShardGrid {
    /// Tiles per dimension after the first.
    counts: Vec<u64>,
    /// Tiles per file per dimension, slowest first (all 1 unsharded).
    shape: Vec<u64>,
    /// Files per dimension after the first.
    files: Vec<u64>,
    sharded: bool,
    /// Where the tiles are in the epoch buffer.
    map: TileMap,
    /// Files of the array before the stream's first, per dimension (rows
    /// first: a slab of an array written by one task of a job; or along
    /// another dimension: a region of an input in slabs): added to every key.
    offset: Vec<u64>,
}

/// One tile of an epoch as a file holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Member {
    /// The tile's slot in the epoch buffer.
    pub slot: usize,
    /// Its inner chunk's place in the shard index (0 unsharded).
    pub inner: usize,
}

impl ShardGrid {
    /// The grid of `plan` with `shard` tiles per shard per dimension, or
    /// one tile per file without.
    pub fn new(plan: &StreamPlan, shard: Option<&[u64]>) -> Result<ShardGrid, StreamError> {
        let rank = plan.tile_counts().len();
        let counts = plan.tile_counts()[1..].to_vec();
        let shape = match shard {
            None => vec![1; rank],
            Some(k) => check_shard(plan, k)?,
        };
        let files = counts
            .iter()
            .zip(&shape[1..])
            .map(|(&t, &k)| t.div_ceil(k))
            .collect();
        let grid = ShardGrid {
            counts,
            shape,
            files,
            sharded: shard.is_some(),
            map: plan.tile_map().clone(),
            offset: vec![0; rank],
        };
        grid.check_index_memory()?;
        Ok(grid)
    }

    /// The index of every open shard of a row, at most 256 MiB.
    fn check_index_memory(&self) -> Result<(), StreamError> {
        let bytes = (self.files_per_row() as u128)
            * (self.chunks_per_file() as u128)
            * (ENTRY_BYTES as u128);
        if self.sharded && bytes > MAX_ROW_INDEX_BYTES as u128 {
            return Err(StreamError::Invalid(format!(
                "shards of {:?} tiles need {bytes} bytes of shard index for one row of shards (at most {MAX_ROW_INDEX_BYTES}); use fewer tiles per shard",
                self.shape
            )));
        }
        Ok(())
    }

    /// Whether files are shards with an index.
    pub fn sharded(&self) -> bool {
        self.sharded
    }

    /// Epochs one file spans along the append dimension.
    pub fn depth(&self) -> u64 {
        self.shape[0]
    }

    /// Tiles per file per dimension, slowest first.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Files in one row.
    pub fn files_per_row(&self) -> usize {
        self.files.iter().product::<u64>() as usize
    }

    /// Inner chunks of one file (the entries of its index).
    pub fn chunks_per_file(&self) -> usize {
        self.shape.iter().product::<u64>() as usize
    }

    /// The grid of a stream whose files along dimension `dim` start at the
    /// array's file `files` there.
    pub fn offset_files(mut self, dim: usize, files: u64) -> ShardGrid {
        self.offset[dim] = files;
        self
    }

    /// The store key of file `file` of the stream's row `row`:
    /// `c/row/y/x...`, the file counted in the array.
    pub fn key(&self, row: u64, file: usize) -> String {
        let mut key = format!("c/{}", row + self.offset[0]);
        for (c, o) in unravel(file as u64, &self.files)
            .iter()
            .zip(&self.offset[1..])
        {
            key.push_str(&format!("/{}", c + o));
        }
        key
    }

    /// The tiles of epoch position `depth_pos` (0 to `depth() - 1`) that
    /// file `file` of a row holds, in index order.
    pub fn members(&self, file: usize, depth_pos: u64) -> Vec<Member> {
        let origin: Vec<u64> = unravel(file as u64, &self.files)
            .iter()
            .zip(&self.shape[1..])
            .map(|(&f, &k)| f * k)
            .collect();
        let per_epoch: u64 = self.shape[1..].iter().product();
        (0..per_epoch)
            .filter_map(|local| {
                let local_coords = unravel(local, &self.shape[1..]);
                let tile: Vec<u64> = std::iter::once(0)
                    .chain(origin.iter().zip(&local_coords).map(|(o, l)| o + l))
                    .collect();
                let inside = tile[1..].iter().zip(&self.counts).all(|(g, c)| g < c);
                inside.then(|| Member {
                    slot: self.map.slot(&tile) as usize,
                    inner: (depth_pos * per_epoch + local) as usize,
                })
            })
            .collect()
    }
}

/// Checks a shard shape against the plan: one positive count per
/// dimension, and shards whose extents and index fit in 64 bits.
fn check_shard(plan: &StreamPlan, shard: &[u64]) -> Result<Vec<u64>, StreamError> {
    let tile = plan.spec().tile();
    if shard.len() != tile.len() || shard.contains(&0) {
        return Err(StreamError::Invalid(format!(
            "a shard needs {} positive tile counts (one per dimension), got {shard:?}",
            tile.len()
        )));
    }
    let overflow = || {
        StreamError::Invalid(format!(
            "shards of {shard:?} tiles of {tile:?} elements are too large to address; use fewer tiles per shard"
        ))
    };
    for (&n, &k) in tile.iter().zip(shard) {
        n.checked_mul(k).ok_or_else(overflow)?;
    }
    shard
        .iter()
        .try_fold(ENTRY_BYTES, |acc, &k| acc.checked_mul(k))
        .ok_or_else(overflow)?;
    Ok(shard.to_vec())
}

/// Bytes of the index of a shard of `entries` chunks (see [`index_bytes`]).
pub(crate) fn index_len(entries: u64) -> u64 {
    entries.saturating_mul(ENTRY_BYTES).saturating_add(4)
}

/// The index of a shard: `offset`, `nbytes` pairs (all ones for a chunk
/// not stored), little-endian, then their crc32c, as the `sharding_indexed`
/// codec with index codecs `bytes` + `crc32c` stores it.
pub(crate) fn index_bytes(entries: &[[u64; 2]]) -> Vec<u8> {
    let mut out: Vec<u8> = entries
        .iter()
        .flat_map(|e| e.iter().flat_map(|v| v.to_le_bytes()))
        .collect();
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The entry of a chunk left out of a shard.
pub(crate) const MISSING: [u64; 2] = [u64::MAX, u64::MAX];

#[cfg(test)]
mod tests {
    use super::*;
    use retile_plan::{DType, StreamSpec};

    fn plan(shape: Vec<u64>, tile: Vec<u64>) -> StreamPlan {
        StreamPlan::new(&StreamSpec::new(DType::U8, shape, tile).unwrap()).unwrap()
    }

    #[test]
    fn every_tile_of_every_epoch_lands_in_exactly_one_place() {
        let plan = plan(vec![0, 7, 10], vec![2, 2, 3]);
        for shard in [vec![1, 1, 1], vec![2, 2, 3], vec![3, 4, 1], vec![1, 5, 5]] {
            let grid = ShardGrid::new(&plan, Some(&shard)).unwrap();
            for pos in 0..grid.depth() {
                let mut seen = vec![0; plan.m() as usize];
                let mut inners = std::collections::HashSet::new();
                for file in 0..grid.files_per_row() {
                    for m in grid.members(file, pos) {
                        seen[m.slot] += 1;
                        assert!(m.inner < grid.chunks_per_file());
                        assert!(inners.insert((file, m.inner)));
                    }
                }
                assert!(seen.iter().all(|&n| n == 1), "{shard:?} {seen:?}");
            }
        }
    }

    #[test]
    fn members_follow_the_tile_coordinates() {
        // 4 x 4 tiles per epoch, shards of 1 x 2 x 2: file 3 (shard (1,1)) holds tiles (2..4, 2..4).
        let grid = ShardGrid::new(&plan(vec![0, 8, 8], vec![1, 2, 2]), Some(&[1, 2, 2])).unwrap();
        let slots: Vec<usize> = grid.members(3, 0).iter().map(|m| m.slot).collect();
        assert_eq!(slots, vec![10, 11, 14, 15]);
        assert_eq!(grid.key(5, 3), "c/5/1/1");
        assert_eq!(grid.clone().offset_files(0, 7).key(5, 3), "c/12/1/1");
        assert_eq!(grid.clone().offset_files(2, 4).key(5, 3), "c/5/1/5");
    }

    #[test]
    fn impossible_shards_are_refused_with_a_reason() {
        let p = plan(vec![0, 8, 8], vec![1, 2, 2]);
        for shard in [
            vec![1, 2],
            vec![0, 1, 1],
            vec![1, 4294967296, 4294967296],
            vec![u64::MAX, 1, 1],
        ] {
            let err = ShardGrid::new(&p, Some(&shard)).unwrap_err().to_string();
            assert!(err.contains("shard"), "{shard:?}: {err}");
        }
    }

    #[test]
    fn the_index_ends_with_the_crc32c_of_its_entries() {
        let bytes = index_bytes(&[[0, 10], MISSING]);
        assert_eq!(bytes.len(), 2 * 16 + 4);
        assert_eq!(index_len(2), bytes.len() as u64);
        assert_eq!(&bytes[8..16], &10u64.to_le_bytes());
        assert_eq!(&bytes[16..24], &[0xff; 8]);
        assert_eq!(bytes[32..], crc32c::crc32c(&bytes[..32]).to_le_bytes());
    }
}
