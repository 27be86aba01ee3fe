//! Zarr stores in S3-compatible object storage, through the `object_store`
//! crate: chunks and small shards go up as one `PUT` each; an object of
//! more than a part ([`PART_BYTES`], and a little) as a multipart upload fed as its epochs
//! land, a few parts in flight, completed when the object is closed (a
//! shard: with its index) and aborted if anything fails or the stream is
//! dropped first. Every request is retried (see [`crate::retry`]) on
//! throttling, server errors, dropped connections and no answer in time,
//! for up to the retry budget ([`S3Options::retry_timeout`]); one that keeps
//! failing fails the stream with its key and the server's answer, and
//! stops the store's other retries. Keys are the store's path as given
//! ([`StorePath`](crate::StorePath)), never percent-encoded.
//!
//! `object_store` is async: each store runs a small tokio runtime of its
//! own, which uploads the parts and single `PUT`s in tasks while the
//! sink's threads go on. The parts and `PUT`s uploading at once are
//! bounded store-wide ([`IN_FLIGHT_PARTS`]), those of closed objects
//! included, which bounds the memory they hold.
//! A row's completions do not hold the sink up: each multipart upload is
//! completed by a task of its own, and the next metadata document is put by
//! a task that waits for every object closed before it and for the
//! document before it (see [`Bucket::put_after_closed`]), while the next
//! rows' parts go up. At most [`ROWS_COMPLETING`] rows are being completed
//! at once; a failure of any fails the stream at the next part, `PUT` or
//! metadata, naming the object and the server's answer.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as Key;
use object_store::{
    ClientConfigKey, MultipartUpload, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig,
};
use tokio::task::JoinSet;

use retile_plan::StreamError;

use crate::error::DestError;
use crate::retry::{explain, Budget, Cancel, RetryingConnector, STOP_GRACE};
use crate::settings;

/// Bytes of one part of a multipart upload (S3 takes 5 MiB to 5 GiB, all
/// parts but the last of one size); an object smaller than one part is
/// uploaded with a single `PUT`.
///
/// ```
/// use retile_store::PART_BYTES;
/// assert_eq!(PART_BYTES, 8 << 20);
/// // within the part sizes S3 takes: 5 MiB to 5 GiB
/// assert!((5 << 20..=5 << 30).contains(&PART_BYTES));
/// ```
pub const PART_BYTES: usize = 8 << 20;

/// Parts and single `PUT`s uploading at once in one store, whichever
/// objects they belong to (open ones, and closed ones whose completion
/// waits for them): with [`PART_BYTES`], they bound the memory that uploads
/// in flight hold.
///
/// ```
/// use retile_store::{IN_FLIGHT_PARTS, PART_BYTES};
/// assert_eq!(IN_FLIGHT_PARTS * PART_BYTES, 256 << 20);
/// ```
pub const IN_FLIGHT_PARTS: usize = 32;

/// Rows of objects being completed (their metadata waiting for them)
/// while the next row uploads. A completion holds no bytes once its parts
/// are up, and a server may take long over one (S3 says a large object's
/// can take minutes; a local server copies the parts into one file):
/// several rows completing keep the stream going meanwhile.
///
/// ```
/// // with the row being written, at most this many rows have uploads open
/// assert_eq!(retile_store::ROWS_COMPLETING + 1, 5);
/// ```
pub const ROWS_COMPLETING: usize = 4;

/// Bytes past a whole part kept before the part goes up: an object of at
/// most `PART_BYTES + SLACK_BYTES` is one `PUT`.
const SLACK_BYTES: usize = 1 << 20;

/// Where an EC2 instance's metadata service answers, unless
/// `AWS_METADATA_ENDPOINT` (or the `aws_metadata_endpoint` setting) says
/// otherwise.
const METADATA_ENDPOINT: &str = "http://169.254.169.254";

/// How long the metadata service has to take a connection.
const METADATA_PROBE: Duration = Duration::from_secs(1);

/// Whether an instance metadata service takes a connection at `endpoint`
/// (`http://HOST[:PORT]`) within a second, and `AWS_EC2_METADATA_DISABLED`
/// does not turn it off: credentials then come from the instance's role.
fn metadata_service_answers(endpoint: &str) -> bool {
    use std::net::ToSocketAddrs;
    let disabled =
        std::env::var("AWS_EC2_METADATA_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    let Some(authority) = endpoint
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
    else {
        return false;
    };
    let with_port = match authority.rsplit_once(':') {
        Some((_, port)) if port.parse::<u16>().is_ok() => authority.to_string(),
        _ => format!("{authority}:80"),
    };
    !disabled
        && with_port
            .to_socket_addrs()
            .ok()
            .and_then(|mut addresses| addresses.next())
            .is_some_and(|address| {
                std::net::TcpStream::connect_timeout(&address, METADATA_PROBE).is_ok()
            })
}

/// Whether request bodies go up unsigned (`UNSIGNED-PAYLOAD`, no SHA-256 of
/// every byte): as the user set it (`aws_unsigned_payload`), else over
/// https, where TLS already protects the bytes, as the AWS SDKs do; over
/// plain http the payload's signature is its only check, so it is kept.
fn payloads_unsigned(endpoint: &str, setting: Option<&str>) -> bool {
    match setting {
        Some(v) => v.eq_ignore_ascii_case("true") || v == "1",
        None => !endpoint.starts_with("http://"),
    }
}

/// How long a failed start waits to list what it stored, to remove it.
const ABANDON_WAIT: Duration = Duration::from_secs(5);

/// The part of `key` below `prefix` (the whole key at a bucket's root).
fn relative_key<'k>(prefix: &Key, key: &'k Key) -> &'k str {
    let (prefix, key) = (prefix.as_ref(), key.as_ref());
    match prefix.is_empty() {
        true => key,
        false => key
            .strip_prefix(prefix)
            .map_or(key, |rest| rest.trim_start_matches('/')),
    }
}

/// How long an abandoned multipart upload may take to abort before it is
/// left to the bucket's lifecycle rules (the abort is tried once: the
/// store stopped retrying).
const ABORT_WAIT: Duration = STOP_GRACE;

/// Threads of each store's runtime: they only wait on the network.
const RUNTIME_THREADS: usize = 4;

/// How long a store dropped unfinished (a failed or abandoned stream) waits
/// for the completions and aborts under way before it stops them: they
/// stop retrying when it is dropped, so they end within [`STOP_GRACE`].
const DRAIN_WAIT: Duration = Duration::from_secs(3);

/// How a store in object storage is reached; the endpoint, region and
/// credentials come from the standard `AWS_*` environment variables
/// (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_ALLOW_HTTP`, ...).
///
/// ```
/// let s3 = retile_store::S3Options { allow_http: true, ..Default::default() };
/// assert_eq!(s3.retry_timeout.as_secs(), 120);
/// ```
#[derive(Debug, Clone)]
pub struct S3Options {
    /// Allow a plain `http://` endpoint (data and signatures unencrypted);
    /// also allowed by `AWS_ALLOW_HTTP=true`.
    pub allow_http: bool,
    /// The retry budget: how long a request is retried, from its first
    /// try, when it is throttled (429, 503 `SlowDown`), meets a server
    /// error, loses its connection or its answer, or gets no answer in
    /// time (a try is given a quarter of the budget, 2 to 30 s, and a
    /// second per MiB it carries, a completion half the budget; a retry
    /// ends where the budget does).
    /// When it is spent the request fails the stream, and the store's
    /// other requests stop within a second.
    pub retry_timeout: Duration,
    /// The first backoff between tries (it doubles, up to a quarter of the
    /// budget and at most 15 s, each pause drawn from its upper half).
    pub backoff: Duration,
    /// Stops the retries when cancelled (a signal handler's flag, a
    /// program's own stop): see [`Cancel`]. Shared by the stores written
    /// with these options.
    pub cancel: Cancel,
    /// Settings that take the place of the environment's, as
    /// `object_store`'s S3 configuration keys name them (`aws_endpoint`,
    /// `aws_region`, `aws_access_key_id`, `aws_secret_access_key`, ...):
    /// for a program that writes to several stores, or takes its
    /// settings from elsewhere.
    pub config: Vec<(String, String)>,
    /// Counters of the bytes uploaded and requests made, added to as they
    /// happen (for a progress display); shared by every store written
    /// with these options (the levels of a pyramid).
    pub traffic: Option<Arc<S3Traffic>>,
}

impl S3Options {
    /// Checks the settings a client would be made of (the `AWS_*`
    /// variables, then [`S3Options::config`]) without sending anything:
    /// the setting names, the endpoint (`http[s]://HOST[:PORT][/PATH]`,
    /// no spaces, a port from 1 to 65535), the region, the key id and
    /// session token (they go in headers). A refusal is one line naming
    /// the variable or setting.
    ///
    /// ```
    /// use retile_store::S3Options;
    /// let mut s3 = S3Options::default();
    /// s3.config.push(("aws_endpoint".into(), "localhost:9000".into()));
    /// let err = s3.check().unwrap_err().to_string();
    /// assert!(err.contains("'aws_endpoint'") && err.contains("http://localhost:9000"), "{err}");
    /// ```
    pub fn check(&self) -> Result<(), StreamError> {
        let budget = Arc::new(Budget::new(
            self.retry_timeout,
            self.backoff,
            self.cancel.clone(),
        ));
        settings::check(&configure("bucket", self, &budget)?, &self.config)
    }
}

/// Bytes uploaded and requests made so far, read while a stream runs.
///
/// ```
/// let t = retile_store::S3Traffic::default();
/// assert_eq!(t.uploaded_bytes(), 0);
/// ```
#[derive(Debug, Default)]
pub struct S3Traffic {
    uploaded: AtomicU64,
    requests: AtomicU64,
}

impl S3Traffic {
    /// Bytes of objects completed (metadata included).
    ///
    /// The example needs an S3-compatible server (here at `localhost:9000`,
    /// its bucket and credentials in the `AWS_*` variables): it is
    /// compiled, not run.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use retile_plan::{DType, Epoch, Sink, StreamPlan, StreamSpec};
    /// use retile_store::{S3Options, S3Traffic, ZarrOptions, ZarrSink};
    /// let traffic = Arc::new(S3Traffic::default());
    /// let endpoint = ("aws_endpoint".to_string(), "http://localhost:9000".to_string());
    /// let s3 = S3Options { allow_http: true, config: vec![endpoint], traffic: Some(traffic.clone()), ..Default::default() };
    /// let mut sink = ZarrSink::new(ZarrOptions { path: "s3://bucket/run.zarr".into(), s3, ..Default::default() });
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 4])?)?;
    /// sink.begin(&plan, &[0])?;
    /// sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &[1; 8], plan: &plan })?;
    /// sink.finish(2)?;
    /// assert!(traffic.uploaded_bytes() > 8); // the chunk's 8 bytes and the zarr.json
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn uploaded_bytes(&self) -> u64 {
        self.uploaded.load(Ordering::Relaxed)
    }

    /// Requests made.
    ///
    /// The example needs an S3-compatible server (here at `localhost:9000`,
    /// its bucket and credentials in the `AWS_*` variables): it is
    /// compiled, not run.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use retile_plan::{DType, Epoch, Sink, StreamPlan, StreamSpec};
    /// use retile_store::{S3Options, S3Traffic, ZarrOptions, ZarrSink};
    /// let traffic = Arc::new(S3Traffic::default());
    /// let endpoint = ("aws_endpoint".to_string(), "http://localhost:9000".to_string());
    /// let s3 = S3Options { allow_http: true, config: vec![endpoint], traffic: Some(traffic.clone()), ..Default::default() };
    /// let mut sink = ZarrSink::new(ZarrOptions { path: "s3://bucket/run.zarr".into(), s3, ..Default::default() });
    /// # let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 4])?)?;
    /// # sink.begin(&plan, &[0])?;
    /// # sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &[1; 8], plan: &plan })?;
    /// # sink.finish(2)?;
    /// // ... a stream written with `sink` ...
    /// assert!(traffic.requests() >= 2); // at least the chunk's PUT and the zarr.json's
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

impl Default for S3Options {
    fn default() -> Self {
        S3Options {
            allow_http: false,
            retry_timeout: Duration::from_secs(120),
            backoff: Duration::from_millis(100),
            cancel: Cancel::new(),
            config: Vec::new(),
            traffic: None,
        }
    }
}

/// A store's prefix in a bucket, its client and its runtime.
pub(crate) struct Bucket {
    /// The store's lock (taken by `prepare`), dropped before the runtime.
    lock: std::sync::OnceLock<crate::lock::ObjectLock>,
    shared: Arc<Shared>,
    prefix: String,
    url: PathBuf,
    runtime: tokio::runtime::Runtime,
    rows: std::sync::Mutex<Rows>,
}

/// What the store's upload tasks share with it: the client, the counters
/// and the first failure of a task that no caller waits on.
struct Shared {
    store: AmazonS3,
    uploaded: AtomicU64,
    requests: AtomicU64,
    traffic: Option<Arc<S3Traffic>>,
    failure: std::sync::Mutex<Option<Failed>>,
    /// Permits for [`IN_FLIGHT_PARTS`] parts uploading at once.
    parts: Arc<tokio::sync::Semaphore>,
    /// The retry budget of the store's requests, stopped when it fails.
    budget: Arc<Budget>,
}

/// A metadata document being put by a task: awaited by the next document's
/// task (rows are claimed in order) and by the store (rows completing are
/// bounded), so shared.
type Claim = futures::future::Shared<futures::future::BoxFuture<'static, Result<(), Failed>>>;

/// The completions under way: those of the objects closed since the last
/// metadata document, and the documents being put, oldest first; and the
/// aborts of abandoned uploads.
#[derive(Default)]
struct Rows {
    closing: Vec<tokio::task::JoinHandle<Result<(), Failed>>>,
    claims: std::collections::VecDeque<Claim>,
    aborting: Vec<tokio::task::JoinHandle<()>>,
}

/// An upload finished by a task of the store's runtime that failed: what
/// it was doing (naming the object) and the server's answer.
///
/// It fails the stream at the sink's next request to the store.
#[derive(Debug, Clone)]
pub(crate) struct Failed {
    doing: String,
    answer: String,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.doing, self.answer)
    }
}

impl std::error::Error for Failed {}

impl Shared {
    fn count(&self, requests: u64, bytes: u64) {
        self.requests.fetch_add(requests, Ordering::Relaxed);
        self.uploaded.fetch_add(bytes, Ordering::Relaxed);
        if let Some(shared) = &self.traffic {
            shared.requests.fetch_add(requests, Ordering::Relaxed);
            shared.uploaded.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Keeps the first failure of a task; the store's other requests stop
    /// retrying (the stream has failed).
    fn record(&self, failed: &Failed) {
        self.budget.stop();
        let mut first = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        first.get_or_insert_with(|| failed.clone());
    }

    /// Puts `bytes` at `key` (`name` in messages) with one `PUT`, counted.
    async fn put(&self, key: &Key, name: &str, bytes: Vec<u8>) -> Result<(), Failed> {
        let len = bytes.len() as u64;
        self.count(1, 0);
        let put = self.store.put(key, PutPayload::from(bytes)).await;
        put.map_err(|e| Failed {
            doing: format!("putting {name}"),
            answer: explain(e).to_string(),
        })?;
        self.count(0, len);
        Ok(())
    }

    /// The first failure of a task, as the error of whatever comes next.
    fn check(&self) -> Result<(), Failed> {
        let first = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        first.clone().map_or(Ok(()), Err)
    }
}

/// The client's builder: the environment's settings, then `options`'s,
/// every request retried within `budget` (by [`RetryingConnector`];
/// `object_store`'s own retries are off).
fn configure(
    bucket: &str,
    options: &S3Options,
    budget: &Arc<Budget>,
) -> Result<AmazonS3Builder, StreamError> {
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_retry(RetryConfig {
            max_retries: 0,
            retry_timeout: options.retry_timeout,
            ..Default::default()
        })
        .with_http_connector(RetryingConnector(budget.clone()));
    for (key, value) in &options.config {
        let key: AmazonS3ConfigKey = key.to_ascii_lowercase().parse().map_err(|_| {
            StreamError::Invalid(format!(
                "'{key}' is not an S3 setting (use e.g. aws_endpoint, aws_region, aws_access_key_id)"
            ))
        })?;
        builder = builder.with_config(key, value);
    }
    if options.allow_http {
        builder = builder.with_config(
            AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp),
            "true",
        );
    }
    // a try is cut by the budget: the client's own limit (30 s) must not come first
    let timeout = AmazonS3ConfigKey::Client(ClientConfigKey::Timeout);
    if builder.get_config_value(&timeout).is_none() {
        let seconds = options.retry_timeout.as_secs().saturating_add(60);
        builder = builder.with_config(timeout, format!("{seconds}s"));
    }
    Ok(builder)
}

/// Refuses a plain http endpoint not allowed, and a client without
/// credentials where no instance metadata service answers.
fn check_reachable(builder: &AmazonS3Builder, url: &Path) -> Result<(), StreamError> {
    let invalid = |m: String| Err(StreamError::Invalid(m));
    let endpoint = settings::endpoint(builder).unwrap_or_default();
    let http_allowed = builder
        .get_config_value(&AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp))
        .is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    if endpoint.starts_with("http://") && !http_allowed {
        return invalid(format!(
            "the endpoint {endpoint} is plain http (unencrypted): allow plain http in the S3 options (allow_http) or with AWS_ALLOW_HTTP=true, or use https"
        ));
    }
    let signed = builder
        .get_config_value(&AmazonS3ConfigKey::SkipSignature)
        .is_none_or(|v| !v.eq_ignore_ascii_case("true"));
    let has_key = builder
        .get_config_value(&AmazonS3ConfigKey::AccessKeyId)
        .is_some();
    let other_credentials = [
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some());
    if signed && !has_key && !other_credentials {
        // an EC2 instance's role, from its metadata service, when it answers
        let metadata = builder
            .get_config_value(&AmazonS3ConfigKey::MetadataEndpoint)
            .unwrap_or_else(|| METADATA_ENDPOINT.into());
        if !metadata_service_answers(&metadata) {
            return invalid(format!(
                "{}: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_ENDPOINT_URL for a server other than AWS); no instance metadata service answered at {metadata} either",
                url.display()
            ));
        }
    }
    Ok(())
}

/// `builder` with request bodies unsigned where [`payloads_unsigned`] says.
fn sign_payloads(builder: AmazonS3Builder, options: &S3Options) -> AmazonS3Builder {
    let endpoint = settings::endpoint(&builder).unwrap_or_default();
    let setting = options
        .config
        .iter()
        .rev()
        .find(|(k, _)| {
            k.to_ascii_lowercase().parse::<AmazonS3ConfigKey>().ok()
                == Some(AmazonS3ConfigKey::UnsignedPayload)
        })
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("AWS_UNSIGNED_PAYLOAD").ok());
    match payloads_unsigned(&endpoint, setting.as_deref()) {
        true => builder.with_config(AmazonS3ConfigKey::UnsignedPayload, "true"),
        false => builder,
    }
}

/// A client of `bucket` (`url` as the user wrote it, for messages),
/// configured from the environment and `options` as a store's is (its
/// settings checked, the endpoint reached), every request retried within
/// the budget it returns.
fn client(
    bucket: &str,
    url: &Path,
    options: &S3Options,
) -> Result<(AmazonS3, Arc<Budget>), StreamError> {
    let budget = Arc::new(Budget::new(
        options.retry_timeout,
        options.backoff,
        options.cancel.clone(),
    ));
    let builder = configure(bucket, options, &budget)?;
    settings::check(&builder, &options.config)?;
    check_reachable(&builder, url)?;
    let builder = sign_payloads(builder, options);
    let store = builder.build().map_err(|e| StreamError::Store {
        doing: "configuring the S3 client".into(),
        path: url.to_owned(),
        source: explain(e),
    })?;
    Ok((store, budget))
}

/// A client for reading `s3://BUCKET/...` (`url`), configured as a
/// store's is: the environment's settings, then `options`'s, every request
/// retried within `options.retry_timeout`. For readers of existing arrays
/// (re-tiling); a stream's own store makes its client itself.
///
/// ```
/// use retile_store::{s3_client, S3Options};
/// // a setting that is not one is refused before any request
/// let options = S3Options { config: vec![("aws_colour".into(), "blue".into())], ..Default::default() };
/// let err = s3_client("bucket", "s3://bucket/a.zarr".as_ref(), &options).unwrap_err().to_string();
/// assert!(err.contains("aws_colour"), "{err}");
/// ```
pub fn s3_client(bucket: &str, url: &Path, options: &S3Options) -> Result<AmazonS3, StreamError> {
    client(bucket, url, options).map(|(store, _)| store)
}

impl Bucket {
    /// A client for the objects under `prefix` in `bucket` (`url` as the
    /// user wrote it, for messages), configured from the environment and
    /// `options`, its settings checked first.
    pub fn connect(
        bucket: &str,
        prefix: &str,
        url: &Path,
        options: &S3Options,
    ) -> Result<Bucket, StreamError> {
        let (store, budget) = client(bucket, url, options)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_THREADS)
            .thread_name("retile-s3")
            .enable_all()
            .build()
            .map_err(|e| StreamError::Store {
                doing: "starting the upload threads".into(),
                path: url.to_owned(),
                source: e.into(),
            })?;
        let shared = Shared {
            store,
            uploaded: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            traffic: options.traffic.clone(),
            failure: std::sync::Mutex::new(None),
            parts: Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT_PARTS)),
            budget,
        };
        Ok(Bucket {
            lock: std::sync::OnceLock::new(),
            shared: Arc::new(shared),
            prefix: prefix.to_owned(),
            url: url.to_owned(),
            runtime,
            rows: std::sync::Mutex::new(Rows::default()),
        })
    }

    /// `s3://BUCKET/PREFIX`.
    pub fn url(&self) -> &Path {
        &self.url
    }

    /// The object key of `key` under the prefix, byte for byte as given
    /// (the prefix was checked by [`StorePath::classify`](crate::StorePath::classify);
    /// the store's own names are plain).
    fn key(&self, key: &str) -> Result<Key, DestError> {
        let full = match (self.prefix.is_empty(), key.is_empty()) {
            (true, _) => key.to_owned(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{key}", self.prefix),
        };
        Key::parse(&full)
            .map_err(|e| format!("the object key '{full}' cannot be stored: {e}").into())
    }

    fn fail(&self, doing: String, e: DestError) -> StreamError {
        StreamError::Store {
            doing,
            path: self.url.clone(),
            source: e,
        }
    }

    fn count(&self, requests: u64, bytes: u64) {
        self.shared.count(requests, bytes);
    }

    /// `e`, a request's failure that fails the stream: the store's other
    /// requests stop retrying.
    fn stopped_by(&self, e: DestError) -> DestError {
        self.shared.budget.stop();
        e
    }

    /// Bytes uploaded (objects completed) and requests made.
    pub fn traffic(&self) -> (u64, u64) {
        (
            self.shared.uploaded.load(Ordering::Relaxed),
            self.shared.requests.load(Ordering::Relaxed),
        )
    }

    /// Checks that nothing is stored under the prefix, or deletes the
    /// Zarr store there with `overwrite` (refusing to delete what is not one).
    pub fn prepare(&self, overwrite: bool) -> Result<(), StreamError> {
        let prefix = self
            .key("")
            .map_err(|e| self.fail("naming the store".into(), e))?;
        let metadata = self
            .key("zarr.json")
            .map_err(|e| self.fail("naming the store".into(), e))?;
        let store = &self.shared.store;
        let listing = |doing: &str, e| self.fail(doing.into(), explain(e));
        let lock = crate::lock::ObjectLock::acquire(store, &self.runtime, &prefix, &self.url)?;
        let _ = self.lock.set(lock);
        let not_lock = |m: &object_store::ObjectMeta| {
            futures::future::ready(!crate::lock::ObjectLock::is_lock(&m.location))
        };
        self.count(1, 0);
        let first = self
            .runtime
            .block_on(async {
                store
                    .list(Some(&prefix))
                    .try_filter(not_lock)
                    .try_next()
                    .await
            })
            .map_err(|e| listing("looking for a store already there", e))?;
        if first.is_none() {
            return Ok(());
        }
        let url = self.url.display();
        if !overwrite {
            return Err(StreamError::Invalid(format!(
                "{url} already holds objects; choose a new prefix, or ask to overwrite it (the old store is deleted)"
            )));
        }
        self.count(1, 0);
        let is_zarr = self
            .runtime
            .block_on(store.head(&metadata))
            .map(|_| true)
            .or_else(|e| match e {
                object_store::Error::NotFound { .. } => Ok(false),
                e => Err(e),
            })
            .map_err(|e| listing("looking for the old store's zarr.json", e))?;
        if !is_zarr {
            return Err(StreamError::Invalid(format!(
                "{url} is not a Zarr store (it has no zarr.json); refusing to delete it"
            )));
        }
        let keys = self
            .runtime
            .block_on(async { store.list(Some(&prefix)).try_collect::<Vec<_>>().await })
            .map_err(|e| listing("listing the old store", e))?;
        self.count(1, 0);
        let keys: Vec<Key> = keys.into_iter().map(|m| m.location).collect();
        self.check_deletable(&prefix, &keys)?;
        self.delete_all_but_locks(keys)
    }

    /// Refuses to delete the store under `prefix` when one of its `keys` is
    /// not part of a Zarr store, or is the lock of an array inside that a
    /// live stream writes (a level, or an array streamed there alone).
    fn check_deletable(&self, prefix: &Key, keys: &[Key]) -> Result<(), StreamError> {
        let url = self.url.display();
        let own_lock = prefix.clone().join(crate::lock::LOCK_NAME);
        for key in keys {
            let relative = relative_key(prefix, key);
            if !crate::directory::is_store_key(relative) {
                return Err(StreamError::Invalid(format!(
                    "{url} is not a Zarr store alone: it holds the object {relative}, which is not part of a Zarr store; refusing to delete anything there (move it away, or write elsewhere)"
                )));
            }
            if crate::lock::ObjectLock::is_lock(key) && *key != own_lock {
                let array = self
                    .url
                    .join(relative.trim_end_matches(crate::lock::LOCK_NAME));
                let live = crate::lock::ObjectLock::live_owner(
                    &self.shared.store,
                    &self.runtime,
                    key,
                    &array,
                )?;
                self.count(1, 0);
                if let Some(owner) = live {
                    return Err(crate::lock::refusal(&array, &owner));
                }
            }
        }
        Ok(())
    }

    /// Deletes every object of `keys` but the locks (a lock is its owner's
    /// to delete).
    fn delete_all_but_locks(&self, keys: Vec<Key>) -> Result<(), StreamError> {
        let keys: Vec<Key> = keys
            .into_iter()
            .filter(|k| !crate::lock::ObjectLock::is_lock(k))
            .collect();
        let deleted = self
            .runtime
            .block_on(async {
                let keys = futures::stream::iter(keys.into_iter().map(Ok));
                let deleted: Vec<Key> = self
                    .shared
                    .store
                    .delete_stream(Box::pin(keys))
                    .try_collect()
                    .await?;
                Ok::<_, object_store::Error>(deleted.len())
            })
            .map_err(|e| self.fail("deleting the old store".into(), explain(e)))?;
        self.count(deleted as u64, 0);
        Ok(())
    }

    /// Removes what a start that failed stored under the prefix (it held
    /// nothing but locks when the start made it ready), so that the same
    /// start can be tried again; a failure to remove is passed over, as the
    /// start's own error is the one reported.
    pub fn abandon(&self) {
        let Ok(prefix) = self.key("") else { return };
        let listed = self.runtime.block_on(async {
            let all = self
                .shared
                .store
                .list(Some(&prefix))
                .try_collect::<Vec<_>>();
            tokio::time::timeout(ABANDON_WAIT, all).await
        });
        if let Ok(Ok(objects)) = listed {
            let keys = objects.into_iter().map(|m| m.location).collect();
            let _ = self.delete_all_but_locks(keys);
        }
    }

    /// A permit of the store's [`IN_FLIGHT_PARTS`], waiting for one;
    /// refused once an upload of the store failed.
    fn permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, DestError> {
        self.shared.check()?;
        let permits = self.shared.parts.clone();
        Ok(self.runtime.block_on(permits.acquire_owned())?)
    }

    /// Uploads `key` whole with one `PUT` by a task, as one of the store's
    /// parts in flight; the next metadata document waits for it, and its
    /// failure fails the next request.
    fn put_closing(&self, key: &str, bytes: Vec<u8>) -> Result<(), DestError> {
        let (key, name) = (self.key(key)?, key.to_owned());
        let permit = self.permit()?;
        let shared = self.shared.clone();
        self.closing(async move {
            let put = shared.put(&key, &name, bytes).await;
            drop(permit);
            if let Err(failed) = &put {
                shared.record(failed);
            }
            put
        });
        Ok(())
    }

    /// Puts `key` (a metadata document) once every object closed before
    /// this call is complete, and after the document put before it: a
    /// reader never sees a claim of an object not yet there, nor a row
    /// claimed before the rows above it. With `wait` this returns when it
    /// is stored; without, it goes on in a task while the caller uploads
    /// the next rows, and a failure fails the next request. Waits first
    /// while [`ROWS_COMPLETING`] documents are under way.
    pub fn put_after_closed(&self, key: &str, bytes: Vec<u8>, wait: bool) -> Result<(), DestError> {
        self.lock
            .get()
            .map_or(Ok(()), crate::lock::ObjectLock::check)?;
        let (key, name) = (self.key(key)?, key.to_owned());
        let mut rows = self.lock_rows();
        self.settle(&mut rows, ROWS_COMPLETING - 1)?;
        let closing = std::mem::take(&mut rows.closing);
        let previous = rows.claims.back().cloned();
        let shared = self.shared.clone();
        let claim = async move {
            // every completion is waited for, failed or not, so that none
            // is still aborting when the store is dropped
            for completed in futures::future::join_all(closing).await {
                completed.map_err(|e| Failed {
                    doing: "completing an upload".into(),
                    answer: e.to_string(),
                })??;
            }
            if let Some(previous) = previous {
                previous.await?;
            }
            shared.check()?;
            shared.put(&key, &name, bytes).await
        };
        let task = self.runtime.spawn(claim);
        let claim = async move {
            task.await.unwrap_or_else(|e| {
                Err(Failed {
                    doing: "completing the uploads of a row".into(),
                    answer: e.to_string(),
                })
            })
        };
        let claim: Claim =
            futures::FutureExt::shared(Box::pin(claim) as futures::future::BoxFuture<'static, _>);
        match wait {
            true => self.wait_for(claim).map_err(DestError::from),
            false => {
                rows.claims.push_back(claim);
                Ok(())
            }
        }
    }

    /// Waits until every object closed so far is complete (and every
    /// metadata document put), putting no document after them: a slab of
    /// a store written by one task of a job, whose caller writes the
    /// metadata. Fails if any upload of the store failed.
    pub fn wait_closed(&self) -> Result<(), DestError> {
        let mut rows = self.lock_rows();
        self.settle(&mut rows, 0)?;
        let closing = std::mem::take(&mut rows.closing);
        for completed in self.runtime.block_on(futures::future::join_all(closing)) {
            completed.map_err(|e| Failed {
                doing: "completing an upload".into(),
                answer: e.to_string(),
            })??;
        }
        Ok(self.shared.check()?)
    }

    fn lock_rows(&self) -> std::sync::MutexGuard<'_, Rows> {
        self.rows.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the oldest metadata documents being put until at most
    /// `keep` are; then fails if any task of the store failed.
    fn settle(&self, rows: &mut Rows, keep: usize) -> Result<(), Failed> {
        while rows.claims.len() > keep {
            if let Some(oldest) = rows.claims.pop_front() {
                // a failure is recorded by `wait_for`, and reported just below
                let _ = self.wait_for(oldest);
            }
        }
        self.shared.check()
    }

    /// Waits for `claim`, keeping its failure as the store's.
    fn wait_for(&self, claim: Claim) -> Result<(), Failed> {
        let result = self.runtime.block_on(claim);
        if let Err(failed) = &result {
            self.shared.record(failed);
        }
        result
    }

    /// Hands the completion of a closed object to the store's runtime; the
    /// next metadata document waits for it.
    fn closing(
        &self,
        completion: impl std::future::Future<Output = Result<(), Failed>> + Send + 'static,
    ) {
        let task = self.runtime.spawn(completion);
        self.lock_rows().closing.push(task);
    }
}

impl Drop for Bucket {
    /// A store dropped with completions or aborts under way (a failed or
    /// abandoned stream) stops retrying and waits a little for them: an
    /// object completed is whole, one that fails is aborted by its task;
    /// after [`DRAIN_WAIT`] the rest are stopped and left to the bucket's
    /// lifecycle rules.
    fn drop(&mut self) {
        use futures::FutureExt;
        self.shared.budget.stop();
        let rows = std::mem::take(&mut *self.lock_rows());
        let closing = rows.closing.into_iter().map(|t| t.map(drop).boxed());
        let aborting = rows.aborting.into_iter().map(|t| t.map(drop).boxed());
        let tasks: Vec<_> = closing
            .chain(aborting)
            .chain(rows.claims.into_iter().map(|c| c.map(drop).boxed()))
            .collect();
        if tasks.is_empty() || tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        let all = futures::future::join_all(tasks);
        let _ = self
            .runtime
            .block_on(async { tokio::time::timeout(DRAIN_WAIT, all).await });
    }
}

/// One object being written: the bytes of its unfinished part, and its
/// multipart upload once it has a whole part.
pub(crate) struct Upload {
    bucket: Arc<Bucket>,
    key: String,
    pending: Vec<u8>,
    offset: u64,
    /// The object's expected length (a hint: it may end shorter or longer).
    expected: u64,
    multipart: Option<Multipart>,
    in_flight: usize,
}

/// A multipart upload and its parts in flight.
struct Multipart {
    /// In a mutex only to be `Sync` (the sink's store is shared by its
    /// writer threads); always reached through `&mut`, never locked.
    upload: std::sync::Mutex<Box<dyn MultipartUpload>>,
    parts: JoinSet<object_store::Result<()>>,
}

impl Upload {
    /// An empty object at `key` of about `expected` bytes, keeping at most
    /// `in_flight` parts uploading at once.
    pub fn new(bucket: &Arc<Bucket>, key: &str, in_flight: usize, expected: u64) -> Upload {
        Upload {
            bucket: bucket.clone(),
            key: key.to_owned(),
            pending: Vec::new(),
            offset: 0,
            expected,
            multipart: None,
            in_flight: in_flight.max(1),
        }
    }

    /// The offset the next pushed byte lands at.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Appends `bytes`; a whole part goes up once [`SLACK_BYTES`] more
    /// follow it, so that an object of a part and a little more (a shard
    /// of 8 MiB of chunks and its index) is one `PUT`, not a multipart
    /// upload of two parts.
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<(), DestError> {
        while !bytes.is_empty() {
            if self.pending.len() == PART_BYTES + SLACK_BYTES {
                self.send_first_part()?;
            }
            let n = (PART_BYTES + SLACK_BYTES - self.pending.len()).min(bytes.len());
            if self.pending.capacity() == 0 {
                self.pending = Vec::with_capacity(self.room(self.offset, n));
            }
            self.pending.extend_from_slice(&bytes[..n]);
            self.offset += n as u64;
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// Bytes to allocate for a part that starts at `start` in the object
    /// and is about to take `n` bytes: the rest of the object as expected,
    /// at least `n`, at most a part and its slack, so that the part is
    /// filled in place rather than grown and copied.
    fn room(&self, start: u64, n: usize) -> usize {
        let left = self.expected.saturating_sub(start);
        usize::try_from(left)
            .unwrap_or(usize::MAX)
            .min(PART_BYTES + SLACK_BYTES)
            .max(n)
    }

    /// Sends the first [`PART_BYTES`] of the pending bytes as a part; the
    /// rest starts the next part, in room of its own.
    fn send_first_part(&mut self) -> Result<(), DestError> {
        let cut = PART_BYTES.min(self.pending.len());
        let rest = self.pending.len() - cut;
        let start = self.offset - rest as u64;
        let mut next = Vec::with_capacity(self.room(start, rest));
        next.extend_from_slice(&self.pending[cut..]);
        self.pending.truncate(cut);
        let part = std::mem::replace(&mut self.pending, next);
        self.send(part)
    }

    /// Starts uploading `part`, the multipart upload first if need be, and
    /// waits while more than `in_flight` parts are uploading.
    fn send(&mut self, part: Vec<u8>) -> Result<(), DestError> {
        let bucket = &*self.bucket;
        // a permit of the store's parts in flight, held until the part is up
        let permit = bucket.permit()?;
        if self.multipart.is_none() {
            let key = bucket.key(&self.key)?;
            bucket.count(1, 0);
            let upload = bucket
                .runtime
                .block_on(bucket.shared.store.put_multipart(&key))
                .map_err(|e| bucket.stopped_by(explain(e)))?;
            self.multipart = Some(Multipart {
                upload: std::sync::Mutex::new(upload),
                parts: JoinSet::new(),
            });
        }
        let Some(multipart) = self.multipart.as_mut() else {
            return Err("the multipart upload was not started".into());
        };
        bucket.count(1, 0);
        let uploading = upload_of(&mut multipart.upload).put_part(PutPayload::from(part));
        let uploading = async move {
            let done = uploading.await;
            drop(permit);
            done
        };
        multipart.parts.spawn_on(uploading, bucket.runtime.handle());
        while multipart.parts.len() > self.in_flight {
            bucket
                .runtime
                .block_on(multipart.parts.join_next())
                .map_or(Ok(()), |joined| {
                    joined.map_err(DestError::from)?.map_err(explain)
                })
                .map_err(|e| bucket.stopped_by(e))?;
        }
        Ok(())
    }

    /// Ends the object: one `PUT` of its bytes, or the last part; the
    /// multipart upload is then completed by a task (aborted if a part or
    /// the completion fails), which the next metadata document waits for.
    /// Returns its length.
    pub fn close(&mut self) -> Result<u64, DestError> {
        let bytes = std::mem::take(&mut self.pending);
        if self.multipart.is_none() {
            self.bucket.put_closing(&self.key, bytes)?;
            return Ok(self.offset);
        }
        // every part but the last of one size, the last no larger
        self.pending = bytes;
        if self.pending.len() > PART_BYTES {
            self.send_first_part()?;
        }
        let last = std::mem::take(&mut self.pending);
        if !last.is_empty() {
            self.send(last)?;
        }
        // a failure here leaves the upload to `Drop`, which aborts it
        self.bucket.shared.check()?;
        let object = self.bucket.key(&self.key)?;
        let Some(multipart) = self.multipart.take() else {
            return Err("the multipart upload was not started".into());
        };
        let completion = complete(multipart, self.bucket.shared.clone(), object, self.offset);
        self.bucket.closing(completion);
        Ok(self.offset)
    }

    /// Stops the parts in flight and aborts the multipart upload in a task
    /// of the store, which the store waits for when it is dropped (aborts
    /// of several objects go on at once; a dead server is not waited for).
    fn abort(&mut self) {
        let Some(mut multipart) = self.multipart.take() else {
            return;
        };
        multipart.parts.abort_all();
        let bucket = &*self.bucket;
        bucket.count(1, 0);
        let aborting = async move {
            let _ =
                tokio::time::timeout(ABORT_WAIT, upload_of(&mut multipart.upload).abort()).await;
        };
        let task = bucket.runtime.spawn(aborting);
        bucket.lock_rows().aborting.push(task);
    }
}

/// Waits for the parts of `multipart` and completes it as the object
/// `key`, counting `len` bytes uploaded; aborts it if a part or the
/// completion failed.
fn complete(
    mut multipart: Multipart,
    shared: Arc<Shared>,
    key: Key,
    len: u64,
) -> impl std::future::Future<Output = Result<(), Failed>> + Send + 'static {
    let doing = format!("completing the multipart upload of {key}");
    async move {
        let finished = async {
            while let Some(joined) = multipart.parts.join_next().await {
                joined.map_err(DestError::from)?.map_err(explain)?;
            }
            shared.count(1, 0);
            let upload = upload_of(&mut multipart.upload);
            match upload.complete().await {
                Err(object_store::Error::NotFound { .. }) => {
                    completed_unheard(&shared, &key, len).await
                }
                done => done.map(drop).map_err(explain),
            }
        };
        match finished.await {
            Ok(_) => {
                shared.count(0, len);
                Ok(())
            }
            Err(answer) => {
                // recorded first: the store stops retrying, the abort is tried once
                let failed = Failed {
                    doing,
                    answer: answer.to_string(),
                };
                shared.record(&failed);
                multipart.parts.abort_all();
                shared.count(1, 0);
                let aborting = upload_of(&mut multipart.upload).abort();
                let _ = tokio::time::timeout(ABORT_WAIT, aborting).await;
                Err(failed)
            }
        }
    }
}

/// Whether a completion answered "no such upload" went through all the
/// same: a retried completion whose first answer was lost (the server
/// completed it; the connection dropped) finds the upload gone and the
/// object there, `len` bytes long.
async fn completed_unheard(shared: &Shared, key: &Key, len: u64) -> Result<(), DestError> {
    shared.count(1, 0);
    match shared.store.head(key).await {
        Ok(meta) if meta.size == len => Ok(()),
        Ok(meta) => Err(format!(
            "the server lost the multipart upload: the object holds {} bytes, not {len}",
            meta.size
        )
        .into()),
        Err(e) => Err(format!("the server lost the multipart upload ({})", explain(e)).into()),
    }
}

/// The upload in `m`, whether or not a thread panicked holding it.
fn upload_of(m: &mut std::sync::Mutex<Box<dyn MultipartUpload>>) -> &mut Box<dyn MultipartUpload> {
    m.get_mut()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Drop for Upload {
    fn drop(&mut self) {
        self.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::payloads_unsigned;

    #[test]
    fn payloads_go_unsigned_over_https_unless_the_user_says_otherwise() {
        // AWS itself (no endpoint) and https endpoints: TLS checks the bytes
        assert!(payloads_unsigned("", None));
        assert!(payloads_unsigned("https://s3.example.org", None));
        // plain http: the signature is the only check
        assert!(!payloads_unsigned("http://127.0.0.1:9000", None));
        // the user's setting wins either way
        assert!(payloads_unsigned("http://127.0.0.1:9000", Some("true")));
        assert!(payloads_unsigned("http://127.0.0.1:9000", Some("1")));
        assert!(!payloads_unsigned("https://s3.example.org", Some("false")));
    }
}
