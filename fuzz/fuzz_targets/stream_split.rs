//! The streaming tiler's arguments and input split points, from arbitrary
//! bytes: a shape, a tile, a shard, a codec, a fill value (as text, parsed
//! as the command parses them) and the points where the input is cut into
//! appends. Nothing may panic; a stream that is accepted must hand back
//! exactly its input, through memory and through a Zarr store.
#![no_main]

use libfuzzer_sys::fuzz_target;
use retile_stream::{
    Codec, DType, MemorySink, StreamDType, StreamPlan, StreamSpec, TileStream, ZarrOptions, ZarrSink,
};

/// Reads the fuzzer's bytes as small numbers and short strings.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        *first
    }

    /// Mostly small extents, now and then a huge one.
    fn extent(&mut self) -> u64 {
        match self.byte() {
            250..=255 => u64::MAX >> (self.byte() % 64),
            b => u64::from(b % 9),
        }
    }

    fn text(&mut self) -> String {
        let n = usize::from(self.byte() % 12).min(self.0.len());
        let (text, rest) = self.0.split_at(n);
        self.0 = rest;
        String::from_utf8_lossy(text).into_owned()
    }
}

const CODECS: [&str; 5] = ["none", "zstd:1", "blosc-lz4:1", "gzip:1", "blosc-zstd:1"];

fuzz_target!(|data: &[u8]| {
    let mut input = Bytes(data);
    let dtype = DType::all().nth(usize::from(input.byte() % 15)).unwrap_or(DType::U8);
    let rank = 1 + usize::from(input.byte() % 4);
    let shape: Vec<u64> = (0..rank).map(|_| input.extent()).collect();
    let tile: Vec<u64> = (0..rank).map(|_| input.extent()).collect();
    let shard: Option<Vec<u64>> = (input.byte() % 2 == 1).then(|| (0..rank).map(|_| input.extent()).collect());
    let codec_text = match input.byte() {
        0..=200 => CODECS[usize::from(input.byte()) % CODECS.len()].to_owned(),
        _ => input.text(),
    };
    let fill_text = match input.byte() {
        0..=200 => "0".to_owned(),
        _ => input.text(),
    };
    let planes = u64::from(input.byte() % 7);
    let Ok(codec) = codec_text.parse::<Codec>() else { return };
    let Ok(fill) = dtype.parse_value(&fill_text) else { return };
    let Ok(spec) = StreamSpec::new(dtype, shape.clone(), tile) else { return };
    let Ok(plan) = StreamPlan::new(&spec) else { return };
    if plan.epoch_buffer_bytes() > 1 << 20 {
        return; // a real allocation, refused only when it exceeds the machine
    }
    let Ok(plane) = spec.plane_elements() else { return };
    let planes = if spec.is_unbounded() { planes } else { shape[0] };
    let bytes = (plane * planes).saturating_mul(dtype.size() as u64);
    if bytes > 1 << 16 {
        return;
    }
    let payload: Vec<u8> = (0..bytes).map(|i| (i * 31 + 7) as u8).collect();
    let cuts: Vec<usize> = (0..8).map(|_| usize::from(input.byte())).collect();

    let memory = MemorySink::new();
    if let Ok(mut stream) = TileStream::new(spec.clone(), &fill, 1, Box::new(memory.clone())) {
        append_in_pieces(&mut stream, &payload, &cuts);
        if stream.finish().is_ok() {
            assert_eq!(memory.assemble().unwrap_or_default(), payload);
        }
    }
    let Ok(dir) = tempfile::tempdir() else { return };
    let options = ZarrOptions {
        path: dir.path().join("f.zarr"),
        codec,
        shard,
        writers: Some(2),
        buffered_io: true,
        ..Default::default()
    };
    if let Ok(mut stream) = TileStream::new(spec, &fill, 1, Box::new(ZarrSink::new(options))) {
        append_in_pieces(&mut stream, &payload, &cuts);
        let _ = stream.finish();
    }
});

/// Appends `payload` cut at the fuzzer's points.
fn append_in_pieces(stream: &mut TileStream, payload: &[u8], cuts: &[usize]) {
    let mut rest = payload;
    for &cut in cuts.iter().cycle().take(64) {
        if rest.is_empty() {
            break;
        }
        let n = (cut % 97 + 1).min(rest.len());
        if stream.append(&rest[..n]).is_err() {
            return;
        }
        rest = &rest[n..];
    }
    let _ = stream.append(rest);
}
