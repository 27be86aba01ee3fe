//! The permute kernels' CUDA source, generated from the permute's shape
//! with every extent and stride baked in.

use retile_layout::row_major_strides;

use retile_gpu::c_type;

use crate::permute::Permute;
use crate::transpose::TransposeRequest;

/// Drops size-1 dimensions and merges input dimensions that stay adjacent
/// and in order in the output; returns (input shape, permutation).
fn simplify(p: &Permute) -> (Vec<i64>, Vec<usize>) {
    let kept: Vec<usize> = (0..p.shape.len()).filter(|&d| p.shape[d] > 1).collect();
    if kept.is_empty() {
        return (vec![1], vec![0]);
    }
    let rank_of = |d: usize| kept.iter().position(|&k| k == d).unwrap_or(0);
    let mut runs: Vec<Vec<usize>> = Vec::new();
    for r in p
        .perm
        .iter()
        .filter(|&&d| p.shape[d] > 1)
        .map(|&d| rank_of(d))
    {
        match runs.last_mut() {
            Some(run) if run.last() == Some(&(r.wrapping_sub(1))) => run.push(r),
            _ => runs.push(vec![r]),
        }
    }
    let mut by_input: Vec<usize> = (0..runs.len()).collect();
    by_input.sort_by_key(|&i| runs[i][0]);
    let shape = by_input
        .iter()
        .map(|&i| runs[i].iter().map(|&r| p.shape[kept[r]]).product())
        .collect();
    let perm = (0..runs.len())
        .map(|i| by_input.iter().position(|&j| j == i).unwrap_or(0))
        .collect();
    (shape, perm)
}

/// A generated kernel: its name, CUDA source, and launch shape.
///
/// Generating one needs no GPU: this example runs wherever the `cuda`
/// feature is on.
///
/// ```
/// use retile_copy::{gpu::permute_kernel, Permute};
/// let k = permute_kernel(&Permute::new(&[64, 32], &[1, 0], 4)?, 132);
/// assert_eq!((k.name, k.threads), ("retile_transpose", 256));
/// assert!(k.source.contains("retile_transpose(") && k.blocks >= 1);
/// // the fastest dimension stays the fastest: rows are copied whole
/// assert_eq!(permute_kernel(&Permute::new(&[4, 64, 32], &[1, 0, 2], 4)?, 132).name, "retile_rows");
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
pub struct Kernel {
    /// The `extern "C"` entry point.
    pub name: &'static str,
    /// CUDA C++ source with the permute's constants baked in.
    pub source: String,
    /// Blocks to launch (a grid-stride loop covers the rest).
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
}

/// C code that turns `index` (row-major over `extents`) into an offset with
/// `strides`, accumulated into `target`.
fn decompose(index: &str, extents: &[i64], strides: &[i64], target: &str) -> String {
    let mut code = format!("{{ idx_t rest = {index};\n");
    for (e, s) in extents.iter().zip(strides).rev() {
        code += &format!("  {{ idx_t c = rest % {e}; rest /= {e}; {target} += c * {s}; }}\n");
    }
    code + "}\n"
}

/// The kernel for permute `p` (`sms`: multiprocessors, to size the grid).
///
/// ```
/// let p = retile_copy::Permute::new(&[64, 32], &[1, 0], 4).unwrap();
/// let k = retile_copy::gpu::permute_kernel(&p, 132);
/// assert_eq!(k.name, "retile_transpose");
/// ```
pub fn permute_kernel(p: &Permute, sms: u32) -> Kernel {
    let (shape, perm) = simplify(p);
    let e = p.element_bytes;
    let n = shape.len();
    let total: i64 = shape.iter().product();
    let in_strides = row_major_strides(&shape);
    let out_shape: Vec<i64> = perm.iter().map(|&d| shape[d]).collect();
    let out_strides_by_out = row_major_strides(&out_shape);
    let mut os = vec![0i64; n];
    for (i, &d) in perm.iter().enumerate() {
        os[d] = out_strides_by_out[i];
    }
    if n <= 1 || perm[n - 1] == n - 1 {
        rows_kernel(&shape, &perm, e, &in_strides, total, sms)
    } else {
        transpose_kernel(&shape, &perm, e, &in_strides, &os, header(total, e))
    }
}

/// Type definitions: 32-bit indices when every index the kernel forms
/// (below `limit`, plus a grid step past it) fits.
fn header(limit: i64, element_bytes: usize) -> String {
    let idx = if limit <= i32::MAX as i64 {
        "unsigned int"
    } else {
        "unsigned long long"
    };
    format!(
        "typedef {idx} idx_t;\ntypedef {} elem_t;\n",
        c_type(element_bytes)
    )
}

fn rows_kernel(
    shape: &[i64],
    perm: &[usize],
    e: usize,
    in_strides: &[i64],
    total: i64,
    sms: u32,
) -> Kernel {
    let row = shape.last().copied().unwrap_or(1);
    let unit = [16usize, 8, 4, 2, 1]
        .into_iter()
        .find(|&u| u >= e && (row as usize * e).is_multiple_of(u))
        .unwrap_or(e);
    let units_per_row = row as usize * e / unit;
    let units = total as usize * e / unit;
    let header = header(units as i64, e);
    let outer: Vec<usize> = perm[..perm.len().saturating_sub(1)].to_vec();
    let extents: Vec<i64> = outer.iter().map(|&d| shape[d]).collect();
    let strides: Vec<i64> = outer
        .iter()
        .map(|&d| in_strides[d] * e as i64 / unit as i64)
        .collect();
    let source = format!(
        r#"{header}typedef {vec} vec_t;
extern "C" __global__ void __launch_bounds__(256) retile_rows(const vec_t* __restrict__ in, vec_t* __restrict__ out) {{
  const idx_t step = (idx_t)gridDim.x * blockDim.x;
  for (idx_t base = (idx_t)blockIdx.x * blockDim.x * 4 + threadIdx.x; base < {units}ull; base += step * 4) {{
    vec_t v[4];
    #pragma unroll
    for (int k = 0; k < 4; ++k) {{
      idx_t u = base + (idx_t)k * blockDim.x;
      if (u < {units}ull) {{
        idx_t row = u / {units_per_row}; idx_t col = u - row * {units_per_row};
        idx_t src = col;
        {decomp}        v[k] = __ldg(in + src);
      }}
    }}
    #pragma unroll
    for (int k = 0; k < 4; ++k) {{
      idx_t u = base + (idx_t)k * blockDim.x;
      if (u < {units}ull) out[u] = v[k];
    }}
  }}
}}
"#,
        vec = c_type(unit),
        decomp = decompose("row", &extents, &strides, "src"),
    );
    let blocks = (units.div_ceil(256 * 4) as u64).clamp(1, sms as u64 * 16) as u32;
    Kernel {
        name: "retile_rows",
        source,
        blocks,
        threads: 256,
    }
}

/// Whether units of `p` elements of `e` bytes fit the kernel's 8-byte
/// registers and the copy planner transposes a `p x p` block of them in one
/// thread as `p` loads and `p` stores of one unit (the in-thread transpose).
fn in_registers(p: usize, e: usize) -> bool {
    let bits = 8 * (p * e) as i64;
    bits <= 64 && TransposeRequest::square_in_registers(p as i64, 8 * e as i64, bits)
}

/// The most rows a transpose tile has: 32 units of up to 8 elements.
const MAX_TILE_ROWS: i64 = 32 * 8;

fn transpose_kernel(
    shape: &[i64],
    perm: &[usize],
    e: usize,
    in_strides: &[i64],
    os: &[i64],
    header: String,
) -> Kernel {
    let n = shape.len();
    let (b, a) = (n - 1, perm[n - 1]);
    let nb = shape[b];
    // the output holds the dimension just slower than `a` right after it, so
    // when `a` is too short to fill a tile, tile rows run on into it
    let a2 = perm[..n - 1]
        .last()
        .copied()
        .filter(|&d| d != b && shape[a] < MAX_TILE_ROWS);
    let (na, in_row) = match a2 {
        Some(d) => (
            shape[a] * shape[d],
            format!(
                "((ga) % {n}) * {} + ((ga) / {n}) * {}",
                in_strides[a],
                in_strides[d],
                n = shape[a]
            ),
        ),
        None => (shape[a], format!("(ga) * {}", in_strides[a])),
    };
    // P elements per unit: whole units in both extents, and P x P blocks
    // that the copy planner transposes in one thread's registers
    let p = [8usize, 4, 2]
        .into_iter()
        .find(|&p| na % p as i64 == 0 && nb % p as i64 == 0 && in_registers(p, e))
        .unwrap_or(1);
    // units per tile along a and b: up to 32, fewer when the extent is
    // smaller; along a also few enough that the tile fits in 32 KB of shared
    // memory (UA * P rows of UB units of P * e bytes)
    let units = |n: i64| ((n as u64).div_ceil(p as u64)).next_power_of_two().min(32) as i64;
    let ub = units(nb);
    let fit = (32 * 1024 / (p as i64 * ub * (p * e) as i64)).max(1);
    let ua = units(na).min(1 << (63 - fit.leading_zeros()));
    let (ta_len, tb_len) = (ua * p as i64, ub * p as i64);
    let batch: Vec<usize> = (0..n)
        .filter(|&d| d != a && d != b && Some(d) != a2)
        .collect();
    let bx: Vec<i64> = batch.iter().map(|&d| shape[d]).collect();
    let (tiles_a, tiles_b) = ((na + ta_len - 1) / ta_len, (nb + tb_len - 1) / tb_len);
    let tiles = tiles_a * tiles_b * bx.iter().product::<i64>();
    let source = format!(
        r#"{header}typedef {unit} unit_t;
#define P {p}
#define UA {ua}
#define UB {ub}
#define LOADS ((UA * P * UB + 255) / 256)
// the input offset of tile row `ga`
#define IN_ROW(ga) ({in_row})
// tile `bid`'s position along b and a, and its index over the batch dimensions
#define TILE_COORDS(bid) \
  const idx_t tb = (bid) % {tiles_b}, rest = (bid) / {tiles_b}; \
  const idx_t ta = rest % {tiles_a}, bi = rest / {tiles_a};
union pack_t {{ unit_t u; elem_t e[P]; }};
extern "C" __global__ void __launch_bounds__(256) retile_transpose(const elem_t* __restrict__ in, elem_t* __restrict__ out) {{
  __shared__ unit_t tile[UA * P][UB];
  const int c_load = threadIdx.x % UB, u_store = threadIdx.x % UA;
  for (idx_t bid = blockIdx.x; bid < {tiles}ull; bid += gridDim.x) {{
    TILE_COORDS(bid)
    idx_t in_base = 0, out_base = 0;
    {decomp_in}    {decomp_out}    const idx_t a0 = ta * (UA * P), b0 = tb * (UB * P), gb = b0 + (idx_t)c_load * P;
    // every load of the tile in flight at once, then into shared memory
    unit_t v[LOADS];
    #pragma unroll
    for (int i = 0; i < LOADS; ++i) {{
      const int a = threadIdx.x / UB + i * (256 / UB);
      const idx_t ga = a0 + a;
      v[i] = 0;
      if (a < UA * P && ga < {na}ull && gb < {nb}ull) v[i] = __ldg((const unit_t*)(in + in_base + IN_ROW(ga) + gb));
    }}
    #pragma unroll
    for (int i = 0; i < LOADS; ++i) {{
      const int a = threadIdx.x / UB + i * (256 / UB);
      if (a < UA * P) tile[a][c_load ^ ((a / P) % UB)] = v[i];
    }}
    __syncthreads();
    #pragma unroll
    for (int c = threadIdx.x / UA; c < UB; c += 256 / UA) {{
      const int u = u_store;
      pack_t r[P];
      #pragma unroll
      for (int k = 0; k < P; ++k) r[k].u = tile[u * P + k][c ^ (u % UB)];
      #pragma unroll
      for (int j = 0; j < P; ++j) {{
        pack_t o;
        #pragma unroll
        for (int k = 0; k < P; ++k) o.e[k] = r[k].e[j];
        idx_t gb = b0 + (idx_t)c * P + j, ga = a0 + (idx_t)u * P;
        if (gb < {nb}ull && ga < {na}ull) *(unit_t*)(out + out_base + gb * {tb_stride} + ga) = o.u;
      }}
    }}
    __syncthreads();
  }}
}}
"#,
        unit = c_type(p * e),
        tb_stride = os[b],
        decomp_in = decompose(
            "bi",
            &bx,
            &batch.iter().map(|&d| in_strides[d]).collect::<Vec<_>>(),
            "in_base"
        ),
        decomp_out = decompose(
            "bi",
            &bx,
            &batch.iter().map(|&d| os[d]).collect::<Vec<_>>(),
            "out_base"
        ),
    );
    // one block per tile: more blocks than the GPU holds at once balance
    // best (the last wave is short); the grid-stride loop covers grids
    // beyond CUDA's limit
    let blocks = (tiles as u64).clamp(1, i32::MAX as u64) as u32;
    Kernel {
        name: "retile_transpose",
        source,
        blocks,
        threads: 256,
    }
}
