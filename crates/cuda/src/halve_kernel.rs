//! The CUDA source of a pyramid halving: the block reductions of
//! `retile_halving`'s reduction written once more for the GPU, step for step,
//! so that both backends store the same bytes.
//!
//! One thread makes one child element: it visits its block's parent rows
//! in the CPU's order (the group's planes, then the rows in row-major
//! order, each row's one or two elements), sums a mean in the same wide
//! type in the same order, and rounds it the same way (`narrow` for 16-bit
//! floats, the quiet NaN for a NaN mean). The source is plain C++ with no
//! CUDA header, so it also compiles on the host.

use retile_halving::{Halving, Method};
use retile_plan::DType;

/// The name of the generated kernel.
pub(crate) const HALVE_KERNEL: &str = "retile_halve";

/// The element's storage type, its sum type, and its operations.
fn element_source(dtype: DType) -> String {
    let int = |t: &str, s: &str| {
        format!(
            "typedef {t} T;\ntypedef {s} S;\n\
             DEVICE bool is_nan(T) {{ return false; }}\n\
             DEVICE bool sign_bit(T) {{ return false; }}\n\
             DEVICE bool lt(T a, T b) {{ return a < b; }}\n\
             DEVICE S widen(T v) {{ return (S)v; }}\n\
             DEVICE bool is_finite(T) {{ return true; }}\n\
             DEVICE S add(S a, S b) {{ return a + b; }}\n\
             DEVICE T mean(S s, int k) {{\n  if (k == 0) return (T)s;\n  \
             return (T)((s + ((((S)1) << (k - 1)) - 1) + ((s >> k) & 1)) >> k);\n}}\n"
        )
    };
    let wide = |t: &str, signed: bool| {
        format!(
            "typedef {t} T;\nstruct S {{ unsigned long long lo, hi; }};\n\
             DEVICE bool is_nan(T) {{ return false; }}\n\
             DEVICE bool sign_bit(T) {{ return false; }}\n\
             DEVICE bool lt(T a, T b) {{ return a < b; }}\n\
             DEVICE S widen(T v) {{ S s; s.lo = (unsigned long long)v; s.hi = {hi}; return s; }}\n\
             DEVICE bool is_finite(T) {{ return true; }}\n\
             DEVICE S add(S a, S b) {{ S s; s.lo = a.lo + b.lo; s.hi = a.hi + b.hi + (s.lo < a.lo); return s; }}\n\
             DEVICE S shift(S s, int k) {{\n  if (k == 0) return s;\n  S r; r.lo = (s.lo >> k) | (s.hi << (64 - k));\n  \
             r.hi = {shift_hi};\n  return r;\n}}\n\
             DEVICE T mean(S s, int k) {{\n  if (k == 0) return (T)s.lo;\n  \
             S half; half.lo = (1ull << (k - 1)) - 1; half.hi = 0;\n  \
             S odd; odd.lo = shift(s, k).lo & 1; odd.hi = 0;\n  \
             return (T)shift(add(add(s, half), odd), k).lo;\n}}\n",
            hi = if signed { "v < 0 ? ~0ull : 0ull" } else { "0ull" },
            shift_hi = if signed {
                "(unsigned long long)((long long)s.hi >> k)"
            } else {
                "s.hi >> k"
            },
        )
    };
    let float = |t: &str, value: &str, nan: &str, sign: &str, round: &str| {
        format!(
            "typedef {t} T;\ntypedef double S;\n\
             DEVICE double value(T v) {{ {value} }}\n\
             DEVICE bool is_nan(T v) {{ {nan} }}\n\
             DEVICE bool sign_bit(T v) {{ {sign} }}\n\
             DEVICE bool lt(T a, T b) {{ return value(a) < value(b); }}\n\
             DEVICE S widen(T v) {{ return value(v); }}\n\
             DEVICE bool is_finite(T v) {{ double w = value(v); return w - w == 0.0; }}\n\
             DEVICE S add(S a, S b) {{ return a + b; }}\n\
             DEVICE T mean(S s, int k) {{\n  double v = s / (double)(1ull << k);\n  {round}\n}}\n"
        )
    };
    match dtype {
        DType::U8 => int("unsigned char", "unsigned int"),
        DType::U16 => int("unsigned short", "unsigned int"),
        DType::U32 => int("unsigned int", "unsigned long long"),
        DType::I8 => int("signed char", "int"),
        DType::I16 => int("short", "int"),
        DType::I32 => int("int", "long long"),
        DType::U64 => wide("unsigned long long", false),
        DType::I64 => wide("long long", true),
        DType::F16 => float(
            "unsigned short",
            "return half_value(v, 10, 5);",
            "return (v & 0x7C00) == 0x7C00 && (v & 0x3FF) != 0;",
            "return (v >> 15) != 0;",
            "return narrow(v, 10, 5);",
        ),
        DType::BF16 => float(
            "unsigned short",
            "return half_value(v, 7, 8);",
            "return (v & 0x7F80) == 0x7F80 && (v & 0x7F) != 0;",
            "return (v >> 15) != 0;",
            "return narrow(v, 7, 8);",
        ),
        DType::F32 => float(
            "float",
            "return (double)v;",
            "return v != v;",
            "return (bits_of((double)v) >> 63) != 0;",
            "if (v != v) return from_bits32(0x7FC00000u);\n  return (float)v;",
        ),
        DType::F64 => {
            float(
                "double",
                "return v;",
                "return v != v;",
                "return (bits_of(v) >> 63) != 0;",
                "if (v != v) return from_bits(0x7FF8000000000000ull);\n  return v;",
            ) + F64_RESCUE
        }
        // streams refuse these before a kernel is made; NVRTC would say so
        DType::Bool | DType::F8E4M3 | DType::F8E5M2 => {
            format!("#error \"{dtype} elements cannot be reduced\"\n")
        }
    }
}

/// How an `f64` mean whose sum overflowed is made again (as
/// `reduce::Element::scaled_mean` makes it): every element scaled by
/// `1 / 2^k` before it is added, the largest finite value where rounding
/// carries a mean of finite elements past it, the quiet NaN for a NaN.
const F64_RESCUE: &str = r#"#define SUM_MAY_OVERFLOW 1
DEVICE S scaled(T v, double f, bool* finite) { *finite = *finite && is_finite(v); return v * f; }
DEVICE T scaled_result(S s, bool finite) {
  if (s != s) return from_bits(0x7FF8000000000000ull);
  if (s - s != 0.0 && finite) return from_bits(0x7FEFFFFFFFFFFFFFull | (bits_of(s) & 0x8000000000000000ull));
  return s;
}
"#;

/// Bit casts and the 16-bit float conversions, the same steps as
/// `reduce::narrow` (one rounding from the exact value, ties to even).
const FLOAT_HELPERS: &str = r#"
DEVICE unsigned long long bits_of(double v) { union { double d; unsigned long long u; } x; x.d = v; return x.u; }
DEVICE double from_bits(unsigned long long u) { union { double d; unsigned long long u; } x; x.u = u; return x.d; }
DEVICE float from_bits32(unsigned int u) { union { float f; unsigned int u; } x; x.u = u; return x.f; }
DEVICE double power_of_two(int n) { return from_bits((unsigned long long)(n + 1023) << 52); }
DEVICE double half_value(unsigned short v, int m, int e) {
  int bias = (1 << (e - 1)) - 1;
  unsigned int exponent = (v & 0x7FFF) >> m, mantissa = v & ((1u << m) - 1);
  double a;
  if (exponent == (1u << e) - 1) a = mantissa ? from_bits(0x7FF8000000000000ull) : from_bits(0x7FF0000000000000ull);
  else if (exponent == 0) a = (double)mantissa * power_of_two(1 - bias - m);
  else a = (double)(mantissa | (1u << m)) * power_of_two((int)exponent - bias - m);
  return (v >> 15) ? -a : a;
}
DEVICE unsigned short narrow(double v, int m, int e) {
  unsigned short sign = (unsigned short)((bits_of(v) >> 63) << 15);
  int bias = (1 << (e - 1)) - 1;
  unsigned int infinity = ((1u << e) - 1) << m;
  if (v != v) return (unsigned short)(infinity | (1u << (m - 1)));
  double a = from_bits(bits_of(v) & 0x7FFFFFFFFFFFFFFFull);
  int x = (int)(bits_of(a) >> 52) - 1023;
  if (x < 1 - bias) x = 1 - bias;
  if (x > bias) return (unsigned short)(sign | infinity);
  // to an integer, ties to even (q < 2^12: adding 2^52 leaves no fraction bits)
  double scaled = a * power_of_two(m - x);
  unsigned int q = (unsigned int)((scaled + 4503599627370496.0) - 4503599627370496.0);
  unsigned int bits = ((unsigned int)(x + bias - 1) << m) + q;
  if (bits > infinity) bits = infinity;
  return (unsigned short)(sign | bits);
}
"#;

/// The block walk: for child element `i`, visit its parent rows in order.
const KERNEL_BODY: &str = r#"
DEVICE bool pick_nan_first(T a, T b, T* out) {
  if (is_nan(a)) { *out = a; return true; }
  if (is_nan(b)) { *out = b; return true; }
  return false;
}
DEVICE T pick(T a, T b) {
  T n;
  if (pick_nan_first(a, b, &n)) return n;
#if METHOD_MIN
  return lt(b, a) ? b : a;
#else
  return lt(a, b) ? b : a;
#endif
}
DEVICE bool before(T a, T b) { return lt(a, b) || (!lt(b, a) && sign_bit(a) && !sign_bit(b)); }

extern "C" GLOBAL void retile_halve(const T* a, const T* b, unsigned long long stride,
                                    T* out, unsigned long long count) {
  const unsigned long long parent[PRANK] = PARENT;
  const unsigned long long child[PRANK] = CHILD;
  const int halve[PRANK] = HALVE;
  for (unsigned long long i = FIRST_INDEX; i < count; i += INDEX_STEP) {
    unsigned long long group = i / CHILD_PLANE, rest = i % CHILD_PLANE;
    unsigned long long c[PRANK];
    for (int d = PRANK - 1; d >= 0; d--) { c[d] = rest % child[d]; rest /= child[d]; }
    const T* planes[2] = { a + group * stride, b ? b + group * stride : 0 };
    unsigned long long x0 = halve[PRANK - 1] ? 2 * c[PRANK - 1] : c[PRANK - 1];
    bool second = halve[PRANK - 1] && x0 + 1 < parent[PRANK - 1];
    int rows = 0;
    S sum; T folded = 0; T block[32]; int n = 0;
    // a mean: a second pass, of scaled elements, where the sum overflowed
    double scale = 1.0; bool finite = true; int k = 0; T result = 0;
    for (int pass = 0; pass < 1 + RESCUE; pass++) {
#if RESCUE
      if (pass == 1) {
        if (is_finite(result)) break;
        scale = power_of_two(-k);
        rows = 0;
      }
#endif
      for (int p = 0; p < 2; p++) {
        if (!planes[p]) continue;
        for (int pick_bits = 0; pick_bits < (1 << HALVED_ROWS); pick_bits++) {
          unsigned long long offset = 0;
          int bit = 1 << HALVED_ROWS;
          bool inside = true;
          for (int d = 0; d < PRANK - 1; d++) {
            unsigned long long s = c[d];
            if (halve[d]) { bit >>= 1; s = 2 * c[d] + ((pick_bits & bit) != 0); }
            inside = inside && s < parent[d];
            offset = offset * parent[d] + s;
          }
          if (!inside) continue;
          const T* row = planes[p] + offset * parent[PRANK - 1] + x0;
#if METHOD_MEAN
#if RESCUE
          S here = pass ? scaled(row[0], scale, &finite) : widen(row[0]);
          if (second) here = add(here, pass ? scaled(row[1], scale, &finite) : widen(row[1]));
#else
          S here = widen(row[0]);
          if (second) here = add(here, widen(row[1]));
#endif
          // from zero, as the CPU sums (0 + -0 is +0)
          sum = add(rows == 0 ? widen((T)0) : sum, here);
#elif METHOD_MIN || METHOD_MAX
          T v = second ? pick(row[0], row[1]) : row[0];
          folded = rows == 0 ? v : pick(folded, v);
#elif METHOD_DECIMATE
          if (rows == 0) folded = row[0];
#else
          block[n++] = row[0];
          if (second) block[n++] = row[1];
#endif
          rows++;
        }
      }
#if METHOD_MEAN
      if (pass == 0) {
        k = second ? 1 : 0;
        while ((1 << k) < rows * (second ? 2 : 1)) k++;
        result = mean(sum, k);
      }
#if RESCUE
      else result = scaled_result(sum, finite);
#endif
#endif
    }
#if METHOD_MEAN
    out[i] = result;
#elif METHOD_MEDIAN
    int nan = -1;
    for (int j = n - 1; j >= 0; j--) if (is_nan(block[j])) nan = j;
    if (nan >= 0) { out[i] = block[nan]; continue; }
    for (int j = 1; j < n; j++) {
      T v = block[j]; int m = j;
      while (m > 0 && before(v, block[m - 1])) { block[m] = block[m - 1]; m--; }
      block[m] = v;
    }
    T middle = n == 1 ? block[0] : mean(add(widen(block[n / 2 - 1]), widen(block[n / 2])), 1);
#if SUM_MAY_OVERFLOW
    if (n > 1 && !is_finite(middle)) {
      bool f = true;
      S halves = add(scaled(block[n / 2 - 1], 0.5, &f), scaled(block[n / 2], 0.5, &f));
      middle = scaled_result(add(widen((T)0), halves), f);
    }
#endif
    out[i] = middle;
#else
    out[i] = folded;
#endif
    (void)sum; (void)block; (void)n; (void)folded; (void)scale; (void)finite; (void)k; (void)result;
  }
}
"#;

fn list(values: impl Iterator<Item = String>) -> String {
    format!("{{{}}}", values.collect::<Vec<_>>().join(", "))
}

/// The CUDA source that halves groups of parent planes with `method`:
/// `retile_halve(a, b, stride, out, count)` makes `count` child elements;
/// group `g` reads the plane at `a + g * stride` and, where `b` is not
/// null, the plane at `b + g * stride` (strides in elements). The unit
/// tests below compile it for the host and check it against the CPU's
/// reductions, for every method and element type.
pub(crate) fn halve_source(method: Method, dtype: DType, halving: &Halving) -> String {
    let (parent, child, halve) = (halving.parent(), halving.child(), halving.halves());
    let rank = parent.len();
    let halved_rows = halve[..rank - 1].iter().filter(|&&h| h).count();
    let flag = |m: Method| u8::from(method == m);
    format!(
        "#ifdef __CUDACC_RTC__\n#define DEVICE __device__ inline\n#define GLOBAL __global__\n\
         #define FIRST_INDEX (blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x)\n\
         #define INDEX_STEP ((unsigned long long)gridDim.x * blockDim.x)\n#endif\n\
         #define METHOD_MEAN {}\n#define METHOD_MIN {}\n#define METHOD_MAX {}\n\
         #define METHOD_DECIMATE {}\n#define METHOD_MEDIAN {}\n\
         #define PRANK {rank}\n#define HALVED_ROWS {halved_rows}\n#define CHILD_PLANE {}ull\n\
         #define PARENT {}\n#define CHILD {}\n#define HALVE {}\n{FLOAT_HELPERS}{}\n\
         #ifndef SUM_MAY_OVERFLOW\n#define SUM_MAY_OVERFLOW 0\n#endif\n\
         #define RESCUE (METHOD_MEAN && SUM_MAY_OVERFLOW)\n{KERNEL_BODY}",
        flag(Method::Mean),
        flag(Method::Min),
        flag(Method::Max),
        flag(Method::Decimate),
        flag(Method::Median),
        child.iter().product::<u64>(),
        list(parent.iter().map(|n| format!("{n}ull"))),
        list(child.iter().map(|n| format!("{n}ull"))),
        list(halve.iter().map(|&h| u8::from(h).to_string())),
        element_source(dtype),
    )
}

#[cfg(test)]
mod tests {
    //! The kernel's source compiled for the host with the system's C++
    //! compiler and run against the CPU's reductions: the GPU's logic is
    //! checked on every machine, not only where there is a GPU.
    use super::*;
    use retile_halving::halve_planes;
    use std::path::Path;
    use std::process::Command;

    /// The little-endian bytes of `value` in `dtype` (floats rounded to
    /// nearest; only floats are asked for).
    fn encode(dtype: DType, value: f64) -> Vec<u8> {
        match dtype {
            DType::F16 => half::f16::from_f64(value).to_le_bytes().to_vec(),
            DType::BF16 => half::bf16::from_f64(value).to_le_bytes().to_vec(),
            DType::F32 => (value as f32).to_le_bytes().to_vec(),
            _ => value.to_le_bytes().to_vec(),
        }
    }

    const HARNESS: &str = r#"
#include <cstdio>
#include <cstdlib>
#include <vector>
#define DEVICE static inline
#define GLOBAL
#define FIRST_INDEX 0ull
#define INDEX_STEP 1ull
SOURCE
int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "rb");
  fseek(f, 0, SEEK_END); long size = ftell(f); fseek(f, 0, SEEK_SET);
  std::vector<unsigned long long> in(size / 8 + 1);
  if (fread(in.data(), 1, size, f) != (size_t)size) return 2;
  fclose(f);
  unsigned long long count = strtoull(argv[3], 0, 10), stride = strtoull(argv[4], 0, 10);
  long long second = strtoll(argv[5], 0, 10);
  std::vector<unsigned long long> out(count * sizeof(T) / 8 + 1);
  const T* a = (const T*)in.data();
  retile_halve(a, second < 0 ? 0 : a + second, stride, (T*)out.data(), count);
  FILE* o = fopen(argv[2], "wb");
  fwrite(out.data(), sizeof(T), count, o);
  fclose(o);
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

    /// Runs the kernel on the host over `groups` groups of `per_group` planes.
    fn run_on_host(cxx: &str, dir: &Path, source: &str, input: &[u8], args: [u64; 3]) -> Vec<u8> {
        let (cpp, exe) = (dir.join("k.cpp"), dir.join("k"));
        std::fs::write(&cpp, HARNESS.replace("SOURCE", source)).unwrap();
        let built = Command::new(cxx)
            .args(["-O1", "-w", "-o"])
            .arg(&exe)
            .arg(&cpp)
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "{}\n{source}",
            String::from_utf8_lossy(&built.stderr)
        );
        std::fs::write(dir.join("in"), input).unwrap();
        let [count, stride, second] = args;
        let ran = Command::new(&exe)
            .arg(dir.join("in"))
            .arg(dir.join("out"))
            .args([
                count.to_string(),
                stride.to_string(),
                (second as i64).to_string(),
            ])
            .output()
            .unwrap();
        assert!(ran.status.success());
        std::fs::read(dir.join("out")).unwrap()
    }

    #[test]
    fn the_kernel_source_run_on_the_host_matches_the_cpu_reductions() {
        let Some(cxx) = compiler() else {
            assert!(
                std::env::var_os("RETILE_REQUIRE_CXX").is_none(),
                "RETILE_REQUIRE_CXX is set and no C++ compiler was found"
            );
            eprintln!("the halving kernel was NOT checked on the host: no C++ compiler (c++, g++, clang++)");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let dtypes: Vec<DType> = DType::numeric().collect();
        let methods = [
            Method::Mean,
            Method::Min,
            Method::Max,
            Method::Decimate,
            Method::Median,
        ];
        for case in 0..60 {
            let dtype = dtypes[case % dtypes.len()];
            let method = methods[case % methods.len()];
            let rank = 1 + next(4) as usize;
            let parent: Vec<u64> = (0..rank).map(|_| 1 + next(6)).collect();
            let mut halve: Vec<bool> = (0..rank).map(|_| next(2) == 1).collect();
            halve[rank - 1] |= !halve.contains(&true);
            let halving = Halving::new(&parent, &halve);
            let per_group = 1 + next(2) as usize;
            let groups = 1 + next(3) as usize;
            let planes = groups * per_group;
            let elements = planes * halving.parent_elements();
            let esize = dtype.size();
            let mut input: Vec<u8> = (0..elements * esize).map(|_| next(256) as u8).collect();
            if matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64) {
                // small exact values, some negative zeros and, now and then, a NaN
                for (i, e) in input.chunks_exact_mut(esize).enumerate() {
                    let v = match next(40) {
                        0 => f64::NAN,
                        1 => -0.0,
                        // f64s so large that their sums overflow, now and then infinite
                        r if dtype == DType::F64 && r < 20 => match next(30) {
                            0 => f64::INFINITY,
                            s => {
                                f64::MAX
                                    * (1.0 - s as f64 / 64.0)
                                    * if r % 2 == 0 { 1.0 } else { -1.0 }
                            }
                        },
                        r => (next(2001) as f64 / 8.0 - 125.0) * f64::from(r as u32 % 3),
                    };
                    let v = if i % 7 == 3 { v + 1e-9 } else { v };
                    e.copy_from_slice(&encode(dtype, v));
                }
            }
            let mut cpu = vec![0u8; groups * halving.child_elements() * esize];
            // aligned copies for the CPU's typed view
            let aligned_in: Vec<u64> = bytemuck::pod_collect_to_vec(&input);
            let mut aligned_out = vec![0u64; cpu.len().div_ceil(8)];
            halve_planes(
                method,
                dtype,
                &halving,
                per_group,
                &bytemuck::cast_slice(&aligned_in)[..input.len()],
                &mut bytemuck::cast_slice_mut(&mut aligned_out)[..cpu.len()],
            )
            .unwrap();
            let n = cpu.len();
            cpu.copy_from_slice(&bytemuck::cast_slice(&aligned_out)[..n]);
            let plane = halving.parent_elements() as u64;
            let second = if per_group == 2 { plane } else { u64::MAX };
            let count = (groups * halving.child_elements()) as u64;
            let source = halve_source(method, dtype, &halving);
            let host = run_on_host(
                cxx,
                dir.path(),
                &source,
                &input,
                [count, per_group as u64 * plane, second],
            );
            assert_eq!(
                host, cpu,
                "case {case}: {dtype} {method} {parent:?} {halve:?} x{per_group}"
            );
        }
    }
}
