//! The CUDA source of GPU compression's own kernels, around nvCOMP's:
//! which tiles hold nothing but the fill value (they are left out of the
//! store), c-blosc's byte shuffle of each block, and the gather that lays
//! the compressed chunks out back to back ([`crate::frames::Frames`]).
//! Plain C++ with no CUDA header, so that the tests compile and run it on
//! the host too.

use crate::frames::ChunkPlan;

/// The kernels' names.
pub(crate) const FILL_KERNEL: &str = "retile_fill_check";
pub(crate) const SHUFFLE_KERNEL: &str = "retile_shuffle";
pub(crate) const GATHER_KERNEL: &str = "retile_gather";

/// Definitions for the GPU (NVRTC); the host harness defines its own.
const PRELUDE: &str = "#ifdef __CUDACC_RTC__\n#define GLOBAL extern \"C\" __global__\n\
#define FIRST_INDEX (blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x)\n\
#define INDEX_STEP ((unsigned long long)gridDim.x * blockDim.x)\n\
#define OUTER_FIRST ((unsigned long long)blockIdx.x)\n#define OUTER_STEP ((unsigned long long)gridDim.x)\n\
#define INNER_FIRST ((unsigned long long)threadIdx.x)\n#define INNER_STEP ((unsigned long long)blockDim.x)\n#endif\n\
typedef unsigned long long ull;\ntypedef unsigned char uchar;\n";

/// The word the fill check compares at a time: 8 bytes where tiles and
/// slots allow, else one element.
pub(crate) fn fill_word(plan: &ChunkPlan, element: usize) -> usize {
    match plan.tile_bytes.is_multiple_of(8) && plan.slot_bytes.is_multiple_of(8) {
        true => 8,
        false => element,
    }
}

/// `retile_fill_check(tiles, holds, fill, count)`: `holds[t]` is set to 1
/// for each of `count` tiles holding a word other than `fill` (the fill
/// value repeated over a word); `holds` starts zeroed.
pub(crate) fn fill_source(plan: &ChunkPlan, word: usize) -> String {
    format!(
        "{PRELUDE}typedef {w} word_t;\n\
         GLOBAL void {FILL_KERNEL}(const word_t* tiles, unsigned int* holds, ull fill, ull count) {{\n\
         \x20 const ull words = {tile}ull / sizeof(word_t), slot = {slot}ull / sizeof(word_t);\n\
         \x20 for (ull u = FIRST_INDEX; u < words * count; u += INDEX_STEP) {{\n\
         \x20   ull t = u / words, w = u % words;\n\
         \x20   if (tiles[t * slot + w] != (word_t)fill) holds[t] = 1u;\n\
         \x20 }}\n}}\n",
        w = retile_gpu::c_type(word),
        tile = plan.tile_bytes,
        slot = plan.slot_bytes,
    )
}

/// `retile_shuffle(tiles, out, count)`: c-blosc's byte shuffle of every
/// block of `count` tiles, each block in its own place (elements of
/// `typesize` bytes: the k-th bytes of the block's elements together).
pub(crate) fn shuffle_source(plan: &ChunkPlan, typesize: u8) -> String {
    format!(
        "{PRELUDE}GLOBAL void {SHUFFLE_KERNEL}(const uchar* tiles, uchar* out, ull count) {{\n\
         \x20 const ull T = {typesize}ull, TILE = {tile}ull, SLOT = {slot}ull, BLOCK = {block}ull;\n\
         \x20 const ull elems = TILE / T;\n\
         \x20 for (ull u = FIRST_INDEX; u < elems * count; u += INDEX_STEP) {{\n\
         \x20   ull t = u / elems, byte = (u % elems) * T;\n\
         \x20   ull b = byte / BLOCK, i = (byte % BLOCK) / T;\n\
         \x20   ull len = TILE - b * BLOCK < BLOCK ? TILE - b * BLOCK : BLOCK;\n\
         \x20   ull n = len / T;\n\
         \x20   const uchar* src = tiles + t * SLOT + byte;\n\
         \x20   uchar* dst = out + t * SLOT + b * BLOCK + i;\n\
         \x20   for (ull j = 0; j < T; ++j) dst[j * n] = src[j];\n\
         \x20 }}\n}}\n",
        tile = plan.tile_bytes,
        slot = plan.slot_bytes,
        block = plan.block,
    )
}

/// `retile_gather(ops, count, literal, input, compressed, tiles, out)`:
/// each block of threads carries out copies (`{source, from, to, len}`,
/// [`crate::frames::CopyOp`]) into `out`, four bytes at a time where
/// source and destination are aligned alike.
pub(crate) fn gather_source() -> String {
    format!(
        "{PRELUDE}struct op_t {{ ull source, from, to, len; }};\n\
         GLOBAL void {GATHER_KERNEL}(const op_t* ops, ull count, const uchar* literal, const uchar* input,\n\
         \x20   const uchar* compressed, const uchar* tiles, uchar* out) {{\n\
         \x20 for (ull k = OUTER_FIRST; k < count; k += OUTER_STEP) {{\n\
         \x20   const op_t op = ops[k];\n\
         \x20   const uchar* src = (op.source == 0 ? literal : op.source == 1 ? input : op.source == 2 ? compressed : tiles) + op.from;\n\
         \x20   uchar* dst = out + op.to;\n\
         \x20   const ull n = op.len;\n\
         \x20   if ((((ull)src ^ (ull)dst) & 3) == 0) {{\n\
         \x20     ull head = (4 - ((ull)dst & 3)) & 3;\n\
         \x20     if (head > n) head = n;\n\
         \x20     const ull words = (n - head) / 4;\n\
         \x20     for (ull i = INNER_FIRST; i < head; i += INNER_STEP) dst[i] = src[i];\n\
         \x20     const unsigned int* s4 = (const unsigned int*)(src + head);\n\
         \x20     unsigned int* d4 = (unsigned int*)(dst + head);\n\
         \x20     for (ull i = INNER_FIRST; i < words; i += INNER_STEP) d4[i] = s4[i];\n\
         \x20     for (ull i = head + words * 4 + INNER_FIRST; i < n; i += INNER_STEP) dst[i] = src[i];\n\
         \x20   }} else {{\n\
         \x20     for (ull i = INNER_FIRST; i < n; i += INNER_STEP) dst[i] = src[i];\n\
         \x20   }}\n\
         \x20 }}\n}}\n"
    )
}

#[cfg(test)]
mod tests {
    //! The kernels compiled for the host with the system's C++ compiler and
    //! run on an epoch whose blocks the CPU compresses: the chunks they
    //! make decode with c-blosc and libzstd to the tiles, and the fill
    //! check finds the tiles of fill alone.
    use super::*;
    use crate::frames::tests::{blosc_decode, shuffle_block};
    use crate::frames::{CopyOp, BLOSC_BLOCK};
    use retile_plan::DeviceCodec;
    use std::path::Path;
    use std::process::Command;

    const HARNESS: &str = r#"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#define GLOBAL static
#define FIRST_INDEX 0ull
#define INDEX_STEP 1ull
#define OUTER_FIRST 0ull
#define OUTER_STEP 1ull
#define INNER_FIRST 0ull
#define INNER_STEP 1ull
FILL
namespace s {
SHUFFLE
}
namespace g {
GATHER
}
static std::vector<unsigned char> load(const char* path) {
  FILE* f = fopen(path, "rb");
  fseek(f, 0, SEEK_END); long size = ftell(f); fseek(f, 0, SEEK_SET);
  std::vector<unsigned char> v(size + 16);
  if (fread(v.data(), 1, size, f) != (size_t)size) exit(2);
  fclose(f);
  v.resize(size);
  return v;
}
static void save(const char* path, const void* p, size_t n) {
  FILE* f = fopen(path, "wb"); fwrite(p, 1, n, f); fclose(f);
}
int main(int argc, char** argv) {
  // argv: dir tiles count fill total
  std::string dir = argv[1];
  auto tiles = load((dir + "/tiles").c_str());
  ull count = strtoull(argv[2], 0, 10), fill = strtoull(argv[3], 0, 10), total = strtoull(argv[4], 0, 10);
  std::vector<unsigned int> holds(count, 0);
  retile_fill_check((const word_t*)tiles.data(), holds.data(), fill, count);
  save((dir + "/holds").c_str(), holds.data(), holds.size() * 4);
  std::vector<unsigned char> shuffled(tiles);
  s::retile_shuffle(tiles.data(), shuffled.data(), count);
  save((dir + "/shuffled").c_str(), shuffled.data(), shuffled.size());
  if (total == 0) return 0;
  auto ops = load((dir + "/ops").c_str());
  auto literal = load((dir + "/literal").c_str());
  auto compressed = load((dir + "/compressed").c_str());
  auto input = load((dir + "/input").c_str());
  std::vector<unsigned char> out(total);
  g::retile_gather((const g::op_t*)ops.data(), ops.size() / 32, literal.data(), input.data(),
                   compressed.data(), tiles.data(), out.data());
  save((dir + "/out").c_str(), out.data(), out.size());
  return 0;
}
"#;

    fn compiler() -> Option<&'static str> {
        ["c++", "g++", "clang++"].into_iter().find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
    }

    fn build(cxx: &str, dir: &Path, plan: &ChunkPlan, word: usize, typesize: u8) {
        let source = HARNESS
            .replace("FILL", &fill_source(plan, word))
            .replace(
                "SHUFFLE",
                &shuffle_source(plan, typesize).replace(PRELUDE, ""),
            )
            .replace("GATHER", &gather_source().replace(PRELUDE, ""));
        let cpp = dir.join("k.cpp");
        std::fs::write(&cpp, source).unwrap();
        let built = Command::new(cxx)
            .args(["-O1", "-w", "-o"])
            .arg(dir.join("k"))
            .arg(&cpp)
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
    }

    fn run(dir: &Path, args: [u64; 3]) {
        let ran = Command::new(dir.join("k"))
            .arg(dir)
            .args(args.map(|a| a.to_string()))
            .output()
            .unwrap();
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
    }

    /// The fill value of `esize` bytes repeated over a word of `word` bytes.
    fn fill_word_value(fill: &[u8], word: usize) -> u64 {
        let mut w = [0u8; 8];
        for (i, b) in w.iter_mut().take(word).enumerate() {
            *b = fill[i % fill.len()];
        }
        u64::from_le_bytes(w)
    }

    #[test]
    fn the_kernels_run_on_the_host_make_chunks_that_decode_to_the_tiles() {
        let Some(cxx) = compiler() else {
            assert!(
                std::env::var_os("RETILE_REQUIRE_CXX").is_none(),
                "RETILE_REQUIRE_CXX is set and no C++ compiler was found"
            );
            eprintln!("the codec kernels were NOT checked on the host: no C++ compiler (c++, g++, clang++)");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n.max(1)
        };
        for case in 0..12 {
            let esize = [1usize, 2, 4, 8][case % 4];
            let codec = match case % 3 {
                0 => DeviceCodec::Zstd,
                1 => DeviceCodec::BloscLz4 {
                    typesize: esize as u8,
                },
                _ => DeviceCodec::BloscZstd {
                    typesize: esize as u8,
                },
            };
            let elements = [7u64, 4096, BLOSC_BLOCK / 2 + 3, 40_000][next(4) as usize];
            let tile_bytes = elements * esize as u64;
            let slot_bytes = tile_bytes + esize as u64 * next(3);
            let tiles = 1 + next(5);
            let plan = ChunkPlan::new(codec, tile_bytes, slot_bytes, tiles);
            let fill: Vec<u8> = (0..esize).map(|b| 0x50 + b as u8).collect();
            // tiles of fill alone, of fill but one element, and of smooth values
            let mut buffer = vec![0u8; (tiles * slot_bytes) as usize];
            let mut expect_holds = vec![];
            for t in 0..tiles as usize {
                let kind = next(3);
                let tile = &mut buffer[t * slot_bytes as usize..][..tile_bytes as usize];
                for (e, element) in tile.chunks_exact_mut(esize).enumerate() {
                    match kind {
                        2 => element
                            .iter_mut()
                            .enumerate()
                            .for_each(|(j, b)| *b = ((e / 13) as u8).wrapping_add(j as u8 * 3)),
                        _ => element.copy_from_slice(&fill),
                    }
                }
                if kind == 1 {
                    let e = next(elements) as usize * esize;
                    tile[e] ^= 1;
                }
                expect_holds.push(kind != 0);
            }
            let word = fill_word(&plan, esize);
            build(cxx, dir.path(), &plan, word, esize as u8);
            std::fs::write(dir.path().join("tiles"), &buffer).unwrap();
            let fill_value = fill_word_value(&fill, word);
            run(dir.path(), [tiles, fill_value, 0]);
            let holds: Vec<bool> = std::fs::read(dir.path().join("holds"))
                .unwrap()
                .chunks_exact(4)
                .map(|w| w != [0, 0, 0, 0])
                .collect();
            assert_eq!(holds, expect_holds, "case {case}: the tiles holding data");
            let shuffled = std::fs::read(dir.path().join("shuffled")).unwrap();
            let input = match plan.shuffles() {
                true => shuffled.clone(),
                false => buffer.clone(),
            };
            for b in 0..plan.batch() {
                let (at, len) = plan.block_at(b);
                let block = &buffer[at as usize..(at + len) as usize];
                assert_eq!(
                    &shuffled[at as usize..(at + len) as usize],
                    &shuffle_block(block, esize)[..],
                    "case {case}: block {b} shuffled as c-blosc does"
                );
            }
            // the blocks compressed on the CPU, as nvCOMP would, 16-byte aligned
            let stride = (plan.block + plan.block / 8 + 1024).next_multiple_of(16);
            let mut compressed = vec![0u8; (plan.batch() * stride) as usize];
            let mut sizes = vec![];
            for b in 0..plan.batch() {
                let (at, len) = plan.block_at(b);
                let block = &input[at as usize..(at + len) as usize];
                let out = match codec {
                    DeviceCodec::BloscLz4 { .. } => lz4_flex::block::compress(block),
                    _ => zstd::bulk::compress(block, 1).unwrap(),
                };
                compressed[(b * stride) as usize..][..out.len()].copy_from_slice(&out);
                sizes.push(out.len() as u64);
            }
            let frames = plan.frames(&sizes, &holds, stride).unwrap();
            let ops: Vec<u8> = frames
                .ops
                .iter()
                .flat_map(|op: &CopyOp| {
                    [op.source as u64, op.from, op.to, op.len]
                        .into_iter()
                        .flat_map(u64::to_le_bytes)
                })
                .collect();
            for (name, bytes) in [
                ("ops", &ops),
                ("literal", &frames.literals),
                ("compressed", &compressed),
                ("input", &input),
            ] {
                std::fs::write(dir.path().join(name), bytes).unwrap();
            }
            run(dir.path(), [tiles, fill_value, frames.total.max(1)]);
            let out = std::fs::read(dir.path().join("out")).unwrap();
            assert_eq!(
                &out[..frames.total as usize],
                &frames.gather(&input, &compressed, &buffer)[..],
                "case {case}: the gather kernel does what the copies say"
            );
            for (t, chunk) in frames.chunks.iter().enumerate() {
                if let Some((at, len)) = *chunk {
                    let tile = &buffer[t * slot_bytes as usize..][..tile_bytes as usize];
                    let stored = &out[at as usize..(at + len) as usize];
                    assert_eq!(
                        blosc_decode(codec, stored, tile_bytes),
                        tile,
                        "case {case}: tile {t}"
                    );
                }
            }
        }
    }
}
