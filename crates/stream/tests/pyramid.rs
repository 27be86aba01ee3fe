//! Every level of a pyramid made while streaming equals a naive reference
//! computed from the whole array at once: random ragged shapes of rank 2
//! to 5, every element type, every method, the first dimension halved or
//! not, appends split anywhere.

use proptest::prelude::*;
use retile_stream::{
    Backend, DType, MemorySink, Method, MultiscaleStream, PyramidOptions, StreamSpec,
};

/// One element as the reference computes with it: integers exactly,
/// floats in f64 (every element type's values are exact there).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Value {
    Int(i128),
    Float(f64),
}

fn decode(dtype: DType, bytes: &[u8]) -> Vec<Value> {
    let n = dtype.size();
    bytes
        .chunks_exact(n)
        .map(|b| match dtype {
            DType::U8 => Value::Int(b[0] as i128),
            DType::I8 => Value::Int(b[0] as i8 as i128),
            DType::U16 => Value::Int(u16::from_le_bytes([b[0], b[1]]) as i128),
            DType::I16 => Value::Int(i16::from_le_bytes([b[0], b[1]]) as i128),
            DType::U32 => Value::Int(u32::from_le_bytes(b.try_into().unwrap()) as i128),
            DType::I32 => Value::Int(i32::from_le_bytes(b.try_into().unwrap()) as i128),
            DType::U64 => Value::Int(u64::from_le_bytes(b.try_into().unwrap()) as i128),
            DType::I64 => Value::Int(i64::from_le_bytes(b.try_into().unwrap()) as i128),
            DType::F16 => Value::Float(half::f16::from_le_bytes([b[0], b[1]]).to_f64()),
            DType::BF16 => Value::Float(half::bf16::from_le_bytes([b[0], b[1]]).to_f64()),
            DType::F32 => Value::Float(f32::from_le_bytes(b.try_into().unwrap()) as f64),
            DType::F64 => Value::Float(f64::from_le_bytes(b.try_into().unwrap())),
            other => panic!("streams hold no {other} elements"),
        })
        .collect()
}

fn encode(dtype: DType, values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        match (dtype, *v) {
            (DType::U8, Value::Int(i)) => out.push(i as u8),
            (DType::I8, Value::Int(i)) => out.push(i as i8 as u8),
            (DType::U16, Value::Int(i)) => out.extend((i as u16).to_le_bytes()),
            (DType::I16, Value::Int(i)) => out.extend((i as i16).to_le_bytes()),
            (DType::U32, Value::Int(i)) => out.extend((i as u32).to_le_bytes()),
            (DType::I32, Value::Int(i)) => out.extend((i as i32).to_le_bytes()),
            (DType::U64, Value::Int(i)) => out.extend((i as u64).to_le_bytes()),
            (DType::I64, Value::Int(i)) => out.extend((i as i64).to_le_bytes()),
            (DType::F16, Value::Float(f)) => {
                out.extend(nearest_16(f, F16, half::f16::from_f64(f).to_bits()).to_le_bytes())
            }
            (DType::BF16, Value::Float(f)) => {
                out.extend(nearest_16(f, BF16, half::bf16::from_f64(f).to_bits()).to_le_bytes())
            }
            (DType::F32, Value::Float(f)) if f.is_nan() => out.extend(f32::NAN.to_le_bytes()),
            (DType::F32, Value::Float(f)) => out.extend((f as f32).to_le_bytes()),
            (DType::F64, Value::Float(f)) if f.is_nan() => out.extend(f64::NAN.to_le_bytes()),
            (DType::F64, Value::Float(f)) => out.extend(f.to_le_bytes()),
            _ => unreachable!("value of the wrong kind"),
        }
    }
    out
}

/// A 16-bit float format: bits to value, its quiet NaN, and the value its
/// infinity stands for when rounding (the next binade's first value).
struct Format16 {
    value: fn(u16) -> f64,
    nan: u16,
    beyond: f64,
}
const F16: Format16 = Format16 {
    value: |b| half::f16::from_bits(b).to_f64(),
    nan: 0x7E00,
    beyond: 65536.0,
};
const BF16: Format16 = Format16 {
    value: |b| half::bf16::from_bits(b).to_f64(),
    nan: 0x7FC0,
    beyond: 3.402823669209385e38, // 2^128
};

/// The 16-bit value nearest `v`, ties to the even one, found by measuring
/// the distance to the values around `guess` (independent of how retile rounds).
fn nearest_16(v: f64, format: Format16, guess: u16) -> u16 {
    if v.is_nan() {
        return format.nan;
    }
    let sign: u16 = if v.is_sign_negative() { 0x8000 } else { 0 };
    let magnitude = |bits: u16| match (format.value)(bits) {
        x if x.is_infinite() => format.beyond,
        x => x,
    };
    let mut best = sign;
    let guess = guess & 0x7FFF;
    for bits in guess.saturating_sub(2)..(guess + 3).min(0x7FFF) {
        let x = (format.value)(bits);
        if x.is_nan() {
            continue;
        }
        let (d, best_d) = (
            (magnitude(bits) - v.abs()).abs(),
            (magnitude(best & 0x7FFF) - v.abs()).abs(),
        );
        if d < best_d || (d == best_d && bits % 2 == 0 && best % 2 == 1) {
            best = sign | bits;
        }
    }
    best
}

/// `sum / count` rounded half to even (count > 0).
fn divide_half_even(sum: i128, count: i128) -> i128 {
    let q = sum.div_euclid(count);
    let r = sum.rem_euclid(count);
    match (2 * r).cmp(&count) {
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal if q % 2 != 0 => q + 1,
        _ => q,
    }
}

/// The mean of `a` and `b` in the reference's arithmetic, or of a block's
/// rows: `rows[i]` holds one row's one or two elements.
fn mean(rows: &[Vec<Value>]) -> Value {
    let count: usize = rows.iter().map(Vec::len).sum();
    match rows[0][0] {
        Value::Int(_) => {
            let sum: i128 = rows
                .iter()
                .flatten()
                .map(|v| match v {
                    Value::Int(i) => *i,
                    Value::Float(_) => unreachable!(),
                })
                .sum();
            Value::Int(divide_half_even(sum, count as i128))
        }
        Value::Float(_) => {
            let f = |v: &Value| match v {
                Value::Float(f) => *f,
                Value::Int(_) => unreachable!(),
            };
            // pairs along the last dimension first, then rows in order
            let mut sum = 0.0;
            for row in rows {
                let pair = row.iter().map(f).reduce(|a, b| a + b).unwrap();
                sum += pair;
            }
            Value::Float(sum / count as f64)
        }
    }
}

fn is_nan(v: &Value) -> bool {
    matches!(v, Value::Float(f) if f.is_nan())
}

fn order(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Int(a), Value::Int(b)) => a.cmp(b),
        (Value::Float(a), Value::Float(b)) => a.partial_cmp(b).unwrap(),
        _ => unreachable!(),
    }
}

fn reduce(method: Method, rows: &[Vec<Value>]) -> Value {
    let all: Vec<Value> = rows.iter().flatten().copied().collect();
    if method != Method::Mean && method != Method::Decimate {
        if let Some(nan) = all.iter().find(|v| is_nan(v)) {
            return *nan;
        }
    }
    match method {
        Method::Decimate => all[0],
        Method::Mean => mean(rows),
        Method::Min => *all.iter().min_by(|a, b| order(a, b)).unwrap(),
        Method::Max => *all.iter().rev().max_by(|a, b| order(a, b)).unwrap(),
        Method::Median => {
            let mut sorted = all.clone();
            sorted.sort_by(order);
            match sorted.len() {
                1 => sorted[0],
                n => mean(&[vec![sorted[n / 2 - 1], sorted[n / 2]]]),
            }
        }
    }
}

/// Level `k + 1` of a whole array of `shape`, naively: for each element,
/// its block's elements gathered row by row.
fn halve(
    values: &[Value],
    shape: &[usize],
    halve: &[bool],
    method: Method,
) -> (Vec<Value>, Vec<usize>) {
    let rank = shape.len();
    let child: Vec<usize> = shape
        .iter()
        .zip(halve)
        .map(|(&n, &h)| if h { n.div_ceil(2) } else { n })
        .collect();
    let total: usize = child.iter().product();
    let mut out = Vec::with_capacity(total);
    for i in 0..total {
        let mut rest = i;
        let mut at = vec![0; rank];
        for d in (0..rank).rev() {
            at[d] = rest % child[d];
            rest /= child[d];
        }
        // every block row (all coordinates but the last), in row-major order
        let span = |d: usize| -> Vec<usize> {
            match halve[d] {
                true => (2 * at[d]..(2 * at[d] + 2).min(shape[d])).collect(),
                false => vec![at[d]],
            }
        };
        let mut row_starts: Vec<Vec<usize>> = vec![vec![]];
        for d in 0..rank - 1 {
            row_starts = row_starts
                .into_iter()
                .flat_map(|p| {
                    span(d)
                        .into_iter()
                        .map(move |c| [p.clone(), vec![c]].concat())
                })
                .collect();
        }
        let rows: Vec<Vec<Value>> = row_starts
            .iter()
            .map(|coords| {
                span(rank - 1)
                    .into_iter()
                    .map(|x| {
                        let full = [coords.clone(), vec![x]].concat();
                        let flat = full.iter().zip(shape).fold(0, |a, (&c, &n)| a * n + c);
                        values[flat]
                    })
                    .collect()
            })
            .collect();
        out.push(reduce(method, &rows));
    }
    (out, child)
}

fn random_values(dtype: DType, count: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let values: Vec<Value> = (0..count)
        .map(|_| match dtype {
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
                Value::Float((next() % 2001) as f64 / 8.0 - 125.0)
            }
            _ => {
                let bits = dtype.size() * 8;
                let raw = next() as i128 & ((1i128 << bits) - 1);
                let signed = matches!(dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64);
                Value::Int(if signed && raw >= 1i128 << (bits - 1) {
                    raw - (1i128 << bits)
                } else {
                    raw
                })
            }
        })
        .collect();
    encode(dtype, &values)
}

/// dtype, shape, tile, unbounded, halved, method, levels, append cuts, seed.
type Case = (
    DType,
    Vec<usize>,
    Vec<usize>,
    bool,
    Vec<bool>,
    Method,
    Option<usize>,
    Vec<usize>,
    u64,
);

fn case() -> impl Strategy<Value = Case> {
    (2usize..=5).prop_flat_map(|rank| {
        (
            prop::sample::select(DType::numeric().collect::<Vec<_>>()),
            prop::collection::vec(1usize..=7, rank),
            prop::collection::vec(1usize..=4, rank),
            any::<bool>(),
            prop::collection::vec(any::<bool>(), rank),
            prop::sample::select(vec![
                Method::Mean,
                Method::Min,
                Method::Max,
                Method::Decimate,
                Method::Median,
            ]),
            prop::option::of(1usize..=4),
            prop::collection::vec(1usize..4000, 0..4),
            any::<u64>(),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]
    #[test]
    fn every_level_equals_the_reference((dtype, shape, tile, unbounded, mut halved, method, levels, cuts, seed) in case()) {
        if !halved.contains(&true) {
            halved[shape.len() - 1] = true;
        }
        let mut spec_shape: Vec<u64> = shape.iter().map(|&n| n as u64).collect();
        if unbounded {
            spec_shape[0] = 0;
        }
        let spec = StreamSpec::new(dtype, spec_shape, tile.iter().map(|&n| n as u64).collect()).unwrap();
        let pyramid = PyramidOptions { method, downsample: Some(halved.clone()), levels };
        let specs = match pyramid.level_specs(&spec) {
            Ok(specs) => specs,
            Err(e) => {
                // the only refusals: asking for levels past extent 1, or an
                // unbounded stream halved only along its first dimension without a count
                let text = e.to_string();
                prop_assert!(text.contains("would be the same") || text.contains("give the number of levels"), "{}", text);
                return Ok(());
            }
        };
        let sinks: Vec<MemorySink> = specs.iter().map(|_| MemorySink::new()).collect();
        let fill = vec![0u8; dtype.size()];
        let mut stream = MultiscaleStream::new(spec, &fill, Backend::Cpu { threads: 2 }, &pyramid, |k, _| Ok(Box::new(sinks[k].clone()))).unwrap();
        let count: usize = shape.iter().product();
        let data = random_values(dtype, count, seed);
        let mut at = 0;
        for cut in cuts {
            let end = (at + cut).min(data.len());
            prop_assert_eq!(stream.append(&data[at..end]).unwrap(), end - at);
            at = end;
        }
        stream.append(&data[at..]).unwrap();
        let summary = stream.finish().unwrap();
        prop_assert_eq!(summary.levels.len(), specs.len());

        let mut values = decode(dtype, &data);
        let mut level_shape = shape.clone();
        for (k, sink) in sinks.iter().enumerate() {
            if k > 0 {
                let (next, next_shape) = halve(&values, &level_shape, &halved, method);
                // each level is stored in the element type, and the next is made from that
                values = decode(dtype, &encode(dtype, &next));
                level_shape = next_shape;
            }
            prop_assert_eq!(sink.planes(), Some(level_shape[0] as u64), "level {} planes", k);
            let got = sink.assemble().unwrap();
            prop_assert_eq!(got, encode(dtype, &values), "level {} of {:?} {:?}", k, level_shape, method);
        }
    }
}

#[test]
fn a_nan_in_a_block_wins_min_max_and_median_as_itself_and_a_mean_as_the_quiet_nan() {
    let spec = StreamSpec::new(DType::F32, vec![1, 2, 2], vec![1, 2, 2]).unwrap();
    // a NaN with a sign and a payload: what a mean's sum would carry depends
    // on how the adds were ordered, so a mean gives the quiet NaN instead
    let odd_nan = f32::from_bits(0xFFC0_0001);
    for (method, expect) in [
        (Method::Min, odd_nan),
        (Method::Max, odd_nan),
        (Method::Median, odd_nan),
        (Method::Mean, f32::NAN),
        (Method::Decimate, 1.0),
    ] {
        let sinks = [MemorySink::new(), MemorySink::new()];
        let pyramid = PyramidOptions {
            method,
            downsample: None,
            levels: Some(2),
        };
        let mut s = MultiscaleStream::new(
            spec.clone(),
            &[0; 4],
            Backend::Cpu { threads: 1 },
            &pyramid,
            |k, _| Ok(Box::new(sinks[k].clone())),
        )
        .unwrap();
        let data: Vec<u8> = [1.0f32, odd_nan, 3.0, 4.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        s.append(&data).unwrap();
        s.finish().unwrap();
        let got = f32::from_le_bytes(sinks[1].assemble().unwrap()[..4].try_into().unwrap());
        assert_eq!(got.to_bits(), expect.to_bits(), "{method}");
    }
}

#[test]
fn a_partial_plane_at_the_end_is_an_error_after_every_level_is_written() {
    let spec = StreamSpec::new(DType::U8, vec![0, 4, 4], vec![1, 2, 2]).unwrap();
    let sinks = [MemorySink::new(), MemorySink::new(), MemorySink::new()];
    let pyramid = PyramidOptions {
        method: Method::Mean,
        downsample: Some(vec![true, true, true]),
        levels: Some(3),
    };
    let mut s = MultiscaleStream::new(spec, &[0], Backend::Cpu { threads: 1 }, &pyramid, |k, _| {
        Ok(Box::new(sinks[k].clone()))
    })
    .unwrap();
    s.append(&[10u8; 3 * 16 + 5]).unwrap();
    let error = s.finish().unwrap_err().to_string();
    assert!(error.contains("inside a plane"), "{error}");
    // 3 planes; level 1 pairs (0,1) and (2); level 2 pairs level 1's two planes
    assert_eq!(
        sinks.iter().map(|s| s.planes()).collect::<Vec<_>>(),
        [Some(3), Some(2), Some(1)]
    );
    assert!(sinks[2].assemble().unwrap().iter().all(|&v| v == 10));
}

#[test]
fn appends_that_leave_the_input_misaligned_are_reduced_through_the_pending_planes() {
    // one byte, then the rest: after the first plane is completed from the
    // second piece, the remaining input starts at an odd address
    let spec = StreamSpec::new(DType::U16, vec![0, 3, 5], vec![2, 2, 2]).unwrap();
    let data: Vec<u8> = (0..40 * 15u16).flat_map(|v| v.to_le_bytes()).collect();
    let mut levels = vec![];
    for split in [None, Some(1)] {
        let sinks = [MemorySink::new(), MemorySink::new()];
        let pyramid = PyramidOptions {
            method: Method::Mean,
            downsample: None,
            levels: Some(2),
        };
        let mut s = MultiscaleStream::new(
            spec.clone(),
            &[0; 2],
            Backend::Cpu { threads: 2 },
            &pyramid,
            |k, _| Ok(Box::new(sinks[k].clone())),
        )
        .unwrap();
        match split {
            Some(at) => {
                s.append(&data[..at]).unwrap();
                s.append(&data[at..]).unwrap();
            }
            None => {
                s.append(&data).unwrap();
            }
        }
        s.finish().unwrap();
        levels.push(sinks[1].assemble().unwrap());
    }
    assert_eq!(levels[0], levels[1]);
}

/// Two levels, the second the max of each 2 x 2 block of a plane.
fn max_of_2x2_blocks() -> PyramidOptions {
    PyramidOptions {
        method: Method::Max,
        downsample: Some(vec![false, true, true]),
        levels: Some(2),
    }
}

/// Level 1 of `planes` 4 x 4 u8 planes, plane `p` holding `16 p + i` at
/// byte `i`: the max of each 2 x 2 block is its bottom-right element.
fn block_maxima(planes: u8) -> Vec<u8> {
    (0..planes)
        .flat_map(|p| [5, 7, 13, 15].map(|k| p * 16 + k))
        .collect()
}

#[test]
fn a_bounded_pyramid_takes_its_planes_and_no_more_on_one_thread_or_several() {
    // the levels below are halved from exactly the planes level 0 took
    for threads in [1, 2, 4] {
        let spec = StreamSpec::new(DType::U8, vec![3, 4, 4], vec![1, 2, 2]).unwrap();
        let sinks = [MemorySink::new(), MemorySink::new()];
        let pyramid = max_of_2x2_blocks();
        let mut s =
            MultiscaleStream::new(spec, &[0], Backend::Cpu { threads }, &pyramid, |k, _| {
                Ok(Box::new(sinks[k].clone()))
            })
            .unwrap();
        let data: Vec<u8> = (0..5 * 16).map(|i| i as u8).collect();
        assert_eq!(s.append(&data).unwrap(), 3 * 16, "{threads} threads");
        assert_eq!(s.append(&data).unwrap(), 0, "{threads} threads");
        s.finish().unwrap();
        assert_eq!(sinks[1].planes(), Some(3), "{threads} threads");
        let expected = block_maxima(3);
        assert_eq!(sinks[1].assemble().unwrap(), expected, "{threads} threads");
    }
}

/// Every level of a pyramid of `planes` planes of 2048 x 1024 u8 (2 MiB:
/// each level below takes whole batches), plane `p` of stream `k` holding
/// `(i * 7 + p * 3 + k) % 251` at byte `i`.
fn large_plane_pyramid(k: u8, planes: u8, threads: usize) -> Vec<Vec<u8>> {
    let spec = StreamSpec::new(DType::U8, vec![0, 2048, 1024], vec![2, 256, 256])
        .unwrap()
        .with_epoch_buffers(2)
        .unwrap();
    let sinks = [MemorySink::new(), MemorySink::new(), MemorySink::new()];
    let pyramid = PyramidOptions {
        method: Method::Mean,
        downsample: None,
        levels: Some(3),
    };
    let mut s = MultiscaleStream::new(
        spec,
        &[0],
        Backend::Cpu { threads },
        &pyramid,
        |level, _| Ok(Box::new(sinks[level].clone())),
    )
    .unwrap();
    for p in 0..planes {
        let plane: Vec<u8> = (0..2048 * 1024usize)
            .map(|i| ((i * 7 + p as usize * 3 + k as usize) % 251) as u8)
            .collect();
        s.append(&plane).unwrap();
    }
    s.finish().unwrap();
    sinks.iter().map(|s| s.assemble().unwrap()).collect()
}

#[test]
fn pyramids_streamed_at_once_from_several_threads_equal_each_one_made_alone() {
    // every stream of two tiling threads shares one pool of two (streams
    // in one process share their tiling threads); a level that waits for
    // its sink or for a buffer the pool makes waits on its caller's thread,
    // never on one of the pool's, so no stream can hold up another, and
    // each equals the same stream made on one thread
    let (done, finished) = std::sync::mpsc::channel();
    for k in 0..3u8 {
        let done = done.clone();
        std::thread::spawn(move || {
            let _ = done.send((k, large_plane_pyramid(k, 3, 2)));
        });
    }
    for _ in 0..3 {
        let (k, levels) = finished
            .recv_timeout(std::time::Duration::from_secs(300))
            .expect("a stream did not finish within five minutes");
        assert!(levels == large_plane_pyramid(k, 3, 1), "stream {k}");
        assert_eq!(levels[2].len(), 3 * 512 * 256, "stream {k}");
    }
}

/// A sink that fails from its second epoch on, as a full disk would.
struct FailingSink(u32);

impl retile_stream::Sink for FailingSink {
    fn begin(
        &mut self,
        _: &retile_stream::StreamPlan,
        _: &[u8],
    ) -> Result<(), retile_stream::StreamError> {
        Ok(())
    }
    fn write_epoch(
        &mut self,
        _: &retile_stream::Epoch<'_>,
    ) -> Result<(), retile_stream::StreamError> {
        self.0 += 1;
        match self.0 {
            1 => Ok(()),
            _ => Err(retile_stream::StreamError::Sink(
                "no space left on device".into(),
            )),
        }
    }
    fn finish(&mut self, _: u64) -> Result<(), retile_stream::StreamError> {
        Ok(())
    }
}

#[test]
fn a_level_below_holds_only_the_planes_level_0_took_when_level_0_fails() {
    // level 1 is reduced beside level 0's tiling; an append level 0 refuses
    // with an error leaves level 1 as if it had never been made
    for threads in [1, 2, 4] {
        let spec = StreamSpec::new(DType::U8, vec![0, 4, 4], vec![1, 2, 2]).unwrap();
        let below = MemorySink::new();
        let pyramid = max_of_2x2_blocks();
        let mut s =
            MultiscaleStream::new(spec, &[0], Backend::Cpu { threads }, &pyramid, |k, _| {
                Ok(match k {
                    0 => Box::new(FailingSink(0)) as Box<dyn retile_stream::Sink>,
                    _ => Box::new(below.clone()),
                })
            })
            .unwrap();
        let mut took = 0u8;
        while took < 8 {
            let plane: Vec<u8> = (0..16).map(|i| took * 16 + i).collect();
            match s.append(&plane) {
                Ok(n) => assert_eq!(n, 16),
                Err(_) => break,
            }
            took += 1;
        }
        assert!(
            took < 8,
            "level 0's sink failed, and an append said so ({threads} threads)"
        );
        assert!(s.finish().is_err(), "{threads} threads");
        let expected = block_maxima(took);
        assert_eq!(
            below.assemble().unwrap_or_default(),
            expected,
            "{threads} threads"
        );
    }
}
