//! The arguments of `retile.Stream(...)` as Python passes them, from
//! arbitrary bytes, read into the stream's options as the binding
//! (crates/python/src/stream.rs) reads them, by `ArrayOptions::resolve`
//! (the reader of every array's description, a settings file's too): the dtype's
//! name, shape, tile, fill, codec and shuffle, the pyramid's method,
//! levels and downsampling, the OME-Zarr axes (names, types, units,
//! scale), the writers, the retry budget and S3 settings, and the output
//! path (local, `file://`, `s3://` or anything else). Nothing may panic; a
//! stream that is accepted takes its whole input and its metadata claims
//! exactly the planes it took. Local stores are written only inside a
//! temporary directory; S3 stores go to a closed port of 127.0.0.1.
#![no_main]

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use retile_stream::{
    open_output, ArrayOptions, Backend, S3Options, StorePath, StreamPlan, ZarrOptions,
};

/// Reads the fuzzer's bytes as small numbers, flags and short strings.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        *first
    }

    fn flag(&mut self) -> bool {
        self.byte() % 2 == 1
    }

    /// Mostly small extents, now and then a huge one.
    fn extent(&mut self) -> u64 {
        match self.byte() {
            250..=255 => u64::MAX >> (self.byte() % 64),
            b => u64::from(b % 9),
        }
    }

    fn text(&mut self) -> String {
        let n = usize::from(self.byte() % 16).min(self.0.len());
        let (text, rest) = self.0.split_at(n);
        self.0 = rest;
        String::from_utf8_lossy(text).into_owned()
    }

    /// One of `known` mostly, else a string of the fuzzer's.
    fn pick(&mut self, known: &[&str]) -> String {
        match self.byte() {
            0..=220 => known[usize::from(self.byte()) % known.len()].to_owned(),
            _ => self.text(),
        }
    }

    fn maybe<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
        self.flag().then(|| f(self))
    }

    fn list<T>(&mut self, n: usize, mut f: impl FnMut(&mut Self) -> T) -> Vec<T> {
        (0..n).map(|_| f(self)).collect()
    }
}

const DTYPES: [&str; 10] = [
    "uint8", "u16", "int16", "uint32", "i64", "float32", "f64", "bf16", "float16", "bool",
];
const CODECS: [&str; 7] = [
    "none",
    "zstd:1",
    "gzip:1",
    "blosc-lz4:1",
    "blosc-zstd:1",
    "zstd:99",
    "blosc-zlib",
];
const SHUFFLES: [&str; 4] = ["none", "byte", "bit", "BYTE"];
const METHODS: [&str; 6] = ["mean", "min", "max", "decimate", "median", "MEAN"];
const NAMES: [&str; 6] = ["t", "c", "z", "y", "x", ""];
const KINDS: [&str; 5] = ["time", "channel", "space", "custom", ""];
const UNITS: [&str; 5] = ["second", "micrometer", "", "parsec", "furlong"];
const PATHS: [&str; 10] = [
    "out.zarr",
    "a/b.zarr",
    "file:///abs.zarr",
    "s3://retile-fuzz/p.zarr",
    "",
    "gs://b/p",
    "S3://b/p",
    "s3://b/a//b",
    "file://host/x",
    "../up.zarr",
];
const SETTINGS: [&str; 6] = [
    "aws_endpoint",
    "aws_region",
    "timeout",
    "aws_unsigned_payload",
    "nonsense",
    "aws_session_token",
];

fuzz_target!(|data: &[u8]| {
    let mut input = Bytes(data);
    let dtype = input.pick(&DTYPES);
    let rank = 1 + usize::from(input.byte() % 5);
    let tile_rank = match input.byte() {
        0..=240 => rank,
        b => 1 + usize::from(b % 5),
    };
    let shape = input.list(rank, Bytes::extent);
    let tile = input.list(tile_rank, Bytes::extent);
    let fill_text = input.maybe(|i| i.pick(&["0", "1", "-1", "nan", "1e9", "0x10"]));
    let codec_text = input.pick(&CODECS);
    let shuffle_text = input.maybe(|i| i.pick(&SHUFFLES));
    let shard = input.maybe(|i| i.list(rank, Bytes::extent));
    let pyramid_text = input.maybe(|i| i.pick(&METHODS));
    let levels = input.maybe(|i| usize::from(i.byte() % 12));
    let downsample = input.maybe(|i| {
        let n = if i.flag() {
            rank
        } else {
            usize::from(i.byte() % 6)
        };
        i.list(n, Bytes::flag)
    });
    let ngff = input.flag();
    let axes_given = input.list(4, Bytes::flag);
    let names = axes_given[0].then(|| input.list(rank, |i| i.pick(&NAMES)));
    let kinds = axes_given[1].then(|| input.list(rank, |i| i.pick(&KINDS)));
    let units = axes_given[2].then(|| input.list(rank, |i| i.maybe(|i| i.pick(&UNITS))));
    let scale = axes_given[3].then(|| input.list(rank, |i| f64::from(i.byte()) / 16.0 - 1.0));
    let writers = input.maybe(|i| usize::from(i.byte()));
    let threads = usize::from(input.byte() % 3);
    let retry_seconds = match input.byte() {
        0..=200 => f64::from(input.byte()) / 10.0,
        b => [f64::NAN, f64::INFINITY, -1.0, 1e30, 0.0][usize::from(b) % 5],
    };
    let s3_config: Vec<(String, String)> = (0..input.byte() % 3)
        .map(|_| (input.pick(&SETTINGS), input.text()))
        .collect();
    let path_text = input.pick(&PATHS);
    let planes = u64::from(input.byte() % 6);
    let cuts = input.list(8, |i| usize::from(i.byte()));

    let Ok(retry_timeout) = Duration::try_from_secs_f64(retry_seconds) else {
        return;
    };
    let s3 = S3Options {
        allow_http: true,
        // a closed port answers at once; the budget is the fuzzer's, briefly
        retry_timeout: retry_timeout.min(Duration::from_millis(50)),
        config: [
            ("aws_endpoint", "http://127.0.0.1:9"),
            ("aws_access_key_id", "fuzz"),
            ("aws_secret_access_key", "fuzz"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain(s3_config.into_iter().filter(|(k, _)| !names_a_url(k)))
        .collect(),
        ..Default::default()
    };

    // the output: refused, S3 (a closed port), or local inside a temporary directory
    let Ok(dir) = tempfile::tempdir() else { return };
    let given = PathBuf::from(&path_text);
    let path = match StorePath::classify(&given) {
        Err(_) => return,
        Ok(StorePath::S3 { .. }) => given,
        Ok(StorePath::Local(local)) => match confined(&local) {
            Some(relative) => dir.path().join(relative),
            None => dir.path().join("elsewhere.zarr"),
        },
    };
    // `sync=` as the binding passes it: "end", "rows", or the fuzzer's text
    let sync = input.pick(&["end", "rows"]);
    // as the binding reads them: one array's description, resolved by the library
    let options = ArrayOptions {
        shape: shape.clone(),
        tile,
        dtype,
        shard,
        codec: Some(codec_text),
        fill: fill_text.map(serde_json::Value::String),
        dim_names: names,
        shuffle: shuffle_text,
        // the counts refused stay; those taken are kept to a few threads
        writers: writers.map(|w| if (9..=256).contains(&w) { 8 } else { w }),
        buffered_io: true,
        pyramid: pyramid_text,
        levels,
        downsample,
        ngff,
        dim_types: kinds,
        units,
        scale,
        codec_on: None,
        memory: None,
        sync: Some(sync),
        // attributes as JSON text gives them: objects, retile's own keys, not objects
        attributes: serde_json::from_str(&input.pick(&["{}", r#"{"a": [1, 2]}"#, r#"{"ome": {}}"#, "[1]", "null"])).ok(),
    };
    let store = ZarrOptions {
        path: path.clone(),
        s3,
        ..Default::default()
    };
    let backend = Backend::Cpu { threads };
    let Ok(array) = options.resolve(Some(store), backend) else {
        return;
    };
    let is_ngff = array.output.ngff.is_some();
    let spec = &array.spec;
    let Ok(plan) = StreamPlan::new(spec) else {
        return;
    };
    if plan.epoch_buffer_bytes() > 1 << 20 {
        return; // a real allocation, refused only when it exceeds the machine
    }
    let Ok(plane) = spec.plane_elements() else {
        return;
    };
    let planes = if spec.is_unbounded() {
        planes
    } else {
        shape[0]
    };
    let bytes = (plane * planes).saturating_mul(spec.dtype().size() as u64);
    if bytes > 1 << 16 {
        return;
    }
    let Ok(mut stream) = open_output(array.spec, &array.fill, backend, &array.output) else {
        return;
    };
    let payload: Vec<u8> = (0..bytes).map(|i| (i * 31 + 7) as u8).collect();
    let mut rest = payload.as_slice();
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
    if stream.append(rest).is_err() {
        return;
    }
    let Ok(summary) = stream.finish() else { return };
    assert_eq!(summary.bytes, bytes, "the stream took all its input");
    assert_eq!(summary.planes, planes);
    if path.starts_with(dir.path()) {
        let level0 = if is_ngff {
            path.join("0")
        } else {
            path.clone()
        };
        let meta: serde_json::Value = serde_json::from_slice(
            &std::fs::read(level0.join("zarr.json")).expect("an accepted stream's metadata"),
        )
        .expect("JSON metadata");
        assert_eq!(
            meta["shape"][0].as_u64(),
            Some(planes),
            "the planes claimed"
        );
    }
});

/// Whether `key` is a setting naming a URL: those would send requests to
/// hosts the fuzzer names (a DNS lookup each); they are fuzzed by the
/// `store_path` target instead.
fn names_a_url(key: &str) -> bool {
    use object_store::aws::AmazonS3ConfigKey as K;
    matches!(
        key.to_ascii_lowercase().parse::<K>(),
        Ok(K::Endpoint | K::S3Endpoint | K::MetadataEndpoint | K::StsEndpoint)
    ) || key.to_ascii_lowercase().contains("proxy")
}

/// `path` if it stays below the directory it is joined to (relative, no `..`).
fn confined(path: &Path) -> Option<&Path> {
    let plain = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    (plain && path.components().next().is_some()).then_some(path)
}

