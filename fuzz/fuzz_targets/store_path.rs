//! Store paths and S3 settings from arbitrary bytes: what
//! `StorePath::classify` (crates/store/src/dest.rs) makes of any path, and
//! what `S3Options::check` takes as an endpoint, a region, a key id and a
//! session token. Nothing may panic; what is taken must be usable as it
//! is: an S3 prefix is a key object_store keeps byte for byte and reads
//! back the same, a file URL is an absolute path, a plain path is itself,
//! and an endpoint makes request URLs the HTTP client and the signer parse
//! (the values object_store would otherwise panic over).
#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use retile_stream::{S3Options, StorePath, MAX_PREFIX_BYTES};

/// Settings whose values the fuzzer writes.
const KEYS: [&str; 8] = [
    "aws_endpoint",
    "endpoint_url",
    "aws_endpoint_url_s3",
    "aws_metadata_endpoint",
    "aws_region",
    "aws_default_region",
    "aws_access_key_id",
    "aws_session_token",
];

/// Beginnings that steer the fuzzer towards the schemes.
const PREFIXES: [&str; 8] = [
    "",
    "s3://",
    "s3://bucket/",
    "file://",
    "file:///",
    "S3://",
    "gs://",
    " s3://b/",
];

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    match first % 2 {
        0 => classify(PREFIXES[usize::from(first / 2) % PREFIXES.len()], rest),
        _ => settings(KEYS[usize::from(first / 2) % KEYS.len()], rest),
    }
});

fn classify(prefix: &str, rest: &[u8]) {
    let mut bytes = prefix.as_bytes().to_vec();
    bytes.extend_from_slice(rest);
    let path = PathBuf::from(OsString::from_vec(bytes.clone()));
    let Ok(classified) = StorePath::classify(&path) else {
        return;
    };
    match classified {
        StorePath::S3 { bucket, prefix } => {
            let text = path.to_str().expect("an S3 URL taken is UTF-8");
            assert!(!bucket.is_empty());
            assert!(bucket
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-_".contains(c)));
            assert!(prefix.len() <= MAX_PREFIX_BYTES);
            assert!(!prefix.ends_with('/') && !prefix.starts_with('/'));
            assert!(!prefix.chars().any(char::is_control));
            // the exact bytes given, as the object's key
            assert!(text.starts_with(&format!("s3://{bucket}/{prefix}")) || prefix.is_empty());
            if !prefix.is_empty() {
                let key =
                    object_store::path::Path::parse(&prefix).expect("a prefix taken is a key");
                assert_eq!(key.as_ref(), prefix, "the key is not the prefix as given");
                let chunk = object_store::path::Path::parse(format!("{prefix}/c/0/1"))
                    .expect("a chunk's key");
                assert_eq!(chunk.as_ref(), format!("{prefix}/c/0/1"));
            }
            // the same URL, written again, is the same store
            let again = StorePath::classify(Path::new(&format!("s3://{bucket}/{prefix}")));
            assert_eq!(again.ok(), Some(StorePath::S3 { bucket, prefix }));
        }
        StorePath::Local(local) => {
            let lower = String::from_utf8_lossy(&bytes)
                .trim_start()
                .to_ascii_lowercase();
            if lower.starts_with("file:") {
                assert!(local.is_absolute(), "{local:?} from a file URL");
                assert!(!local.as_os_str().as_encoded_bytes().contains(&0));
            } else {
                assert_eq!(local, path, "a plain path is itself");
                assert!(!bytes.is_empty());
            }
        }
    }
}

fn settings(key: &str, value: &[u8]) {
    let value = String::from_utf8_lossy(value).into_owned();
    let mut s3 = S3Options::default();
    s3.config = vec![
        ("aws_access_key_id".into(), "testing".into()),
        ("aws_secret_access_key".into(), "testing".into()),
        ("aws_region".into(), "us-east-1".into()),
        (key.into(), value.clone()),
    ];
    if key == "aws_default_region" {
        // a default region is used only where no region is set
        s3.config.retain(|(k, _)| k != "aws_region");
    }
    if s3.check().is_err() {
        return;
    }
    match key {
        "aws_region" | "aws_default_region" | "aws_access_key_id" | "aws_session_token" => {
            http::HeaderValue::from_str(&value).expect("a header value taken goes in a header");
        }
        _ => {
            // the URLs object_store makes of it: one the HTTP client
            // builds a request of, which the signer and reqwest parse again
            let url = format!(
                "{}/bucket/c/0/1?uploadId=x&partNumber=1",
                value.trim_end_matches('/')
            );
            let uri: http::Uri = url.parse().expect("an endpoint taken makes request URIs");
            url::Url::parse(&uri.to_string()).expect("and URLs");
            let scheme = uri.scheme_str().unwrap_or_default();
            assert!(scheme == "http" || scheme == "https", "{value:?}");
            let port = uri.port_u16().unwrap_or(80);
            assert!(port > 0, "{value:?}");
        }
    }
}
