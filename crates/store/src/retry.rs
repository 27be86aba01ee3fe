//! How requests to object storage are retried. Every HTTP request the S3
//! client makes (`PUT`s, parts, completions, aborts, listings, deletions,
//! credentials) goes through [`Retrying`], which tries it again on
//! throttling (429, 503 `SlowDown`), server errors (5xx but 501),
//! `200 OK` answers that hold an S3 `<Error>`, dropped connections and
//! tries that got no answer in time, with exponential backoff and jitter,
//! until the request's retry budget ([`Budget`]) runs out; the last try
//! is cut where the budget ends. `object_store`'s own retries are off:
//! they stop after a count, not a time, and do not retry a hung `PUT`.
//!
//! A store that failed or was dropped unfinished, and a [`Cancel`]led
//! stream, stop retrying: a request failing then fails at once, and a try
//! under way is given [`STOP_GRACE`] to finish.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::DestError;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpService,
    ReqwestConnector,
};
use object_store::ClientOptions;

/// How long a try under way is given to finish once the store stops
/// retrying (it failed, was dropped, or the stream was cancelled).
///
/// ```
/// use std::time::Duration;
/// use retile_store::{S3Options, STOP_GRACE};
/// assert_eq!(STOP_GRACE, Duration::from_secs(1));
/// assert!(STOP_GRACE < S3Options::default().retry_timeout); // far less than a retry budget
/// ```
pub const STOP_GRACE: Duration = Duration::from_secs(1);

/// How often a request waiting on the network or a backoff looks whether
/// the store stopped.
const STOP_POLL: Duration = Duration::from_millis(25);

/// The least time worth a retry: with less of the budget left, the
/// request is given up.
const MIN_TRY: Duration = Duration::from_millis(100);

/// The longest backoff between two tries.
const MAX_BACKOFF: Duration = Duration::from_secs(15);

/// The bounds of the time a try is given before its bytes are counted
/// (a quarter of the budget, within these): a healthy server answers a
/// small request, a completion included, well within the least.
const TRY_TIME: (Duration, Duration) = (Duration::from_secs(2), Duration::from_secs(30));

/// The slowest upload a try waits for: it is given a second more per this
/// many bytes it carries (a try is cut by its total time, not by a lack of
/// progress, which the HTTP client does not show: a slow link must not
/// look hung).
const SLOWEST_BYTES_PER_SECOND: f64 = (1 << 20) as f64;

/// Stops the retries of the stores written with the
/// [`S3Options`](crate::S3Options) holding it (a pyramid's levels share
/// it): once cancelled, a request that fails is not tried again, a
/// backoff under way ends, and a try under way is given a second to
/// finish. Requests that succeed still do, so a stream finished after a
/// cancel (an interrupted recording) stores what the server takes at once.
///
/// ```
/// use std::sync::atomic::AtomicBool;
/// use retile_store::Cancel;
/// let token = Cancel::new();
/// assert!(!token.is_cancelled());
/// token.clone().cancel();
/// assert!(token.is_cancelled());
/// // a flag a signal handler sets
/// static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// let on_signal = Cancel::watching(&INTERRUPTED);
/// INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
/// assert!(on_signal.is_cancelled());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Cancel(Flag);

#[derive(Debug, Clone)]
enum Flag {
    Owned(Arc<AtomicBool>),
    Watching(&'static AtomicBool),
}

impl Default for Flag {
    fn default() -> Self {
        Flag::Owned(Arc::default())
    }
}

impl Cancel {
    /// A token of its own, not cancelled; its clones share it.
    ///
    /// ```
    /// use retile_store::Cancel;
    /// let (first, second) = (Cancel::new(), Cancel::new());
    /// first.cancel();
    /// assert!(first.is_cancelled() && !second.is_cancelled()); // each its own
    /// ```
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// A token cancelled once `flag` is set (by a signal handler, say).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use retile_store::Cancel;
    /// static STOP: AtomicBool = AtomicBool::new(false);
    /// let token = Cancel::watching(&STOP);
    /// assert!(!token.is_cancelled());
    /// STOP.store(true, Ordering::Relaxed); // e.g. in a SIGINT handler
    /// assert!(token.is_cancelled());
    /// ```
    pub fn watching(flag: &'static AtomicBool) -> Cancel {
        Cancel(Flag::Watching(flag))
    }

    /// Cancels the retries of every store holding this token.
    ///
    /// ```
    /// use retile_store::{Cancel, S3Options};
    /// let token = Cancel::new();
    /// let s3 = S3Options { cancel: token.clone(), ..Default::default() };
    /// token.cancel(); // e.g. when the user interrupts the recording
    /// assert!(s3.cancel.is_cancelled());
    /// ```
    pub fn cancel(&self) {
        self.flag().store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called (or the watched flag set).
    ///
    /// ```
    /// use retile_store::Cancel;
    /// let token = Cancel::default();
    /// assert!(!token.is_cancelled());
    /// token.clone().cancel();
    /// assert!(token.is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.flag().load(Ordering::Relaxed)
    }

    fn flag(&self) -> &AtomicBool {
        match &self.0 {
            Flag::Owned(flag) => flag,
            Flag::Watching(flag) => flag,
        }
    }
}

/// One store's retry budget: how long a request is retried, from its first
/// try; and whether the store stopped retrying.
#[derive(Debug)]
pub(crate) struct Budget {
    seconds: Duration,
    first_backoff: Duration,
    cancel: Cancel,
    stopped: AtomicBool,
}

impl Budget {
    /// A budget of `seconds` a request, backing off `first_backoff` first.
    pub fn new(seconds: Duration, first_backoff: Duration, cancel: Cancel) -> Budget {
        Budget {
            seconds,
            first_backoff: first_backoff.min(MAX_BACKOFF),
            cancel,
            stopped: AtomicBool::new(false),
        }
    }

    /// Stops the store's retries (it failed, or is being dropped).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// Whether the store stopped retrying or the stream was cancelled.
    fn stopping(&self) -> bool {
        self.stopped.load(Ordering::Relaxed) || self.cancel.is_cancelled()
    }

    /// The time one try of `request` is given: a quarter of the budget
    /// (2 to 30 s) and a second per MiB it carries; a completion of a
    /// multipart upload, which the server may take long over (it joins the
    /// parts), half the budget if that is more.
    fn try_time(&self, request: &HttpRequest) -> Duration {
        let base = (self.seconds / 4).clamp(TRY_TIME.0, TRY_TIME.1);
        let bytes = request.body().content_length() as f64;
        let time = base + Duration::from_secs_f64(bytes / SLOWEST_BYTES_PER_SECOND);
        match is_completion(request) {
            true => time.max(self.seconds / 2),
            false => time,
        }
    }

    /// The longest backoff: a quarter of the budget, at most 15 s.
    fn max_backoff(&self) -> Duration {
        (self.seconds / 4).clamp(self.first_backoff, MAX_BACKOFF)
    }

    /// Resolves once the store stops retrying.
    async fn stopped(&self) {
        while !self.stopping() {
            tokio::time::sleep(STOP_POLL).await;
        }
    }

    /// `work`, given `limit`, and [`STOP_GRACE`] once the store stops;
    /// `None` where it did not finish in time.
    async fn bounded<T>(&self, limit: Duration, work: impl Future<Output = T>) -> Option<T> {
        let work = std::pin::pin!(tokio::time::timeout(limit, work));
        let stopped = std::pin::pin!(self.stopped());
        match futures::future::select(work, stopped).await {
            futures::future::Either::Left((done, _)) => done.ok(),
            futures::future::Either::Right(((), work)) => {
                tokio::time::timeout(STOP_GRACE, work).await.ok()?.ok()
            }
        }
    }

    /// Sleeps `pause`; false where the store stopped meanwhile.
    async fn pause(&self, pause: Duration) -> bool {
        let sleep = std::pin::pin!(tokio::time::sleep(pause));
        let stopped = std::pin::pin!(self.stopped());
        matches!(
            futures::future::select(sleep, stopped).await,
            futures::future::Either::Left(_)
        )
    }
}

/// Connects the S3 client through [`Retrying`] (reqwest underneath).
#[derive(Debug)]
pub(crate) struct RetryingConnector(pub Arc<Budget>);

impl HttpConnector for RetryingConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let client = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Retrying {
            client,
            budget: self.0.clone(),
        }))
    }
}

/// The HTTP client that retries a request until its budget runs out.
#[derive(Debug)]
struct Retrying {
    client: HttpClient,
    budget: Arc<Budget>,
}

/// A try that may succeed when tried again: what went wrong, in words.
struct Failure {
    what: String,
    kind: HttpErrorKind,
}

/// How one try ended.
enum Tried {
    /// With an answer to hand back, good or bad (a 404, a refused key).
    Answered(Result<HttpResponse, HttpError>),
    /// With a failure worth another try.
    Failed(Failure),
}

#[async_trait::async_trait]
impl HttpService for Retrying {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let budget = &*self.budget;
        let started = Instant::now();
        let deadline = started + budget.seconds;
        let try_time = budget.try_time(&request);
        let mut backoff = budget.first_backoff;
        let mut tries = 0;
        let mut last: Option<Failure> = None;
        loop {
            tries += 1;
            // the first try has its own time; a retry ends with the budget
            let left = deadline.saturating_duration_since(Instant::now());
            let limit = match tries {
                1 => try_time,
                _ => try_time.min(left),
            };
            let failure = match self.try_once(request.clone(), limit).await {
                Tried::Answered(answer) => return answer,
                Tried::Failed(failure) => failure,
            };
            // a try cut short by the budget's end says less than the one before
            let cut_short = failure.kind == HttpErrorKind::Timeout && limit < try_time;
            let failure = match (cut_short, last.take()) {
                (true, Some(before)) => before,
                (_, _) => failure,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if budget.stopping() || left < MIN_TRY * 2 {
                return Err(gave_up(budget, &failure, tries, started));
            }
            // the last pause leaves the last try some time
            let pause = backoff
                .mul_f64(0.5 + 0.5 * fastrand::f64())
                .min(left - MIN_TRY);
            if !budget.pause(pause).await {
                return Err(gave_up(budget, &failure, tries, started));
            }
            last = Some(failure);
            backoff = (backoff * 2).min(budget.max_backoff());
        }
    }
}

impl Retrying {
    /// One try of `request`, its answer read whole, given `limit`.
    async fn try_once(&self, request: HttpRequest, limit: Duration) -> Tried {
        let post = request.method() == http::Method::POST;
        let attempt = async {
            let answer = self.client.execute(request).await?;
            let (parts, body) = answer.into_parts();
            Ok::<_, HttpError>((parts, body.bytes().await?))
        };
        match self.budget.bounded(limit, attempt).await {
            None => Tried::Failed(Failure {
                what: format!("no answer within {:.1} s", limit.as_secs_f64()),
                kind: HttpErrorKind::Timeout,
            }),
            Some(Err(e)) if e.kind() == HttpErrorKind::Decode => Tried::Answered(Err(e)),
            Some(Err(e)) => Tried::Failed(Failure {
                what: one_line(&error_chain(&e)),
                kind: e.kind(),
            }),
            Some(Ok((parts, body))) => judge(parts, body, post),
        }
    }
}

/// Whether an answer is final, or a failure worth another try: 408, 429,
/// 5xx (but 501, a feature the server lacks) and a `POST` answered `200`
/// with an S3 `<Error>` document (a completion the server gave up on).
fn judge<B>(parts: http::response::Parts, body: B, post: bool) -> Tried
where
    B: AsRef<[u8]> + Into<object_store::client::HttpResponseBody>,
{
    let status = parts.status;
    let transient = status.as_u16() == 408
        || status.as_u16() == 429
        || (status.is_server_error() && status.as_u16() != 501)
        || (status.is_success() && post && is_error_document(body.as_ref()));
    if !transient {
        return Tried::Answered(Ok(HttpResponse::from_parts(parts, body.into())));
    }
    let said = server_said(&String::from_utf8_lossy(body.as_ref()));
    Tried::Failed(Failure {
        what: match said {
            Some(said) => format!("{status}, {said}"),
            None => status.to_string(),
        },
        kind: HttpErrorKind::Unknown,
    })
}

/// Whether `request` completes a multipart upload (`POST ?uploadId=`).
fn is_completion(request: &HttpRequest) -> bool {
    let query = request.uri().query().unwrap_or_default();
    request.method() == http::Method::POST && query.split('&').any(|p| p.starts_with("uploadId="))
}

/// Whether `body` is an S3 error document (`<Error>` its root element).
fn is_error_document(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    let mut rest = text.trim_start();
    while let Some(declaration) = rest.strip_prefix("<?") {
        rest = declaration
            .split_once("?>")
            .map_or("", |(_, after)| after)
            .trim_start();
    }
    rest.starts_with("<Error>")
}

/// What an S3 error document says: `Code: Message`, if it is one.
pub(crate) fn server_said(text: &str) -> Option<String> {
    let between = |open: &str, close: &str| {
        let from = text.find(open)? + open.len();
        let len = text[from..].find(close)?;
        Some(text[from..from + len].trim().to_owned())
    };
    let code = between("<Code>", "</Code>")?;
    let message = between("<Message>", "</Message>").unwrap_or_default();
    Some(one_line(&format!("the server said {code}: {message}")))
}

/// `e` and its sources, as one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text = format!("{text}: {next}");
        }
        source = s.source();
    }
    text
}

/// `text` with every run of whitespace one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The error of a request given up: its tries, the time they took, the
/// budget, and the last failure.
fn gave_up(budget: &Budget, last: &Failure, tries: usize, started: Instant) -> HttpError {
    let why = match budget.cancel.is_cancelled() {
        true => "the stream was cancelled".to_owned(),
        false if budget.stopped.load(Ordering::Relaxed) => {
            "the store stopped retrying (another request failed, or the stream was dropped)".into()
        }
        false => format!(
            "the retry budget of {:.1} s is spent",
            budget.seconds.as_secs_f64()
        ),
    };
    let text = format!(
        "gave up after {tries} {} in {:.1} s ({why}); the last: {}",
        if tries == 1 { "try" } else { "tries" },
        started.elapsed().as_secs_f64(),
        last.what
    );
    HttpError::new(last.kind, std::io::Error::other(text))
}

/// What the server said, as one line (its XML answer cut to its code and
/// message), saying what to change where it refused the credentials.
pub(crate) fn explain(e: object_store::Error) -> DestError {
    use object_store::Error as E;
    let denied = matches!(e, E::PermissionDenied { .. } | E::Unauthenticated { .. });
    let text = e.to_string();
    let said = server_said(&text);
    let mut line = match text.find("<?xml").or_else(|| text.find("<Error>")) {
        Some(at) => text[..at].trim_end().trim_end_matches(':').to_owned(),
        None => text.clone(),
    };
    if let Some(said) = &said {
        line = format!("{line}; {said}");
    }
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    let credentials = [
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "ExpiredToken",
        "InvalidToken",
        "InvalidSecurity",
    ];
    let refused = denied
        || text.contains("403 Forbidden")
        || text.contains("401 Unauthorized")
        || credentials
            .iter()
            .any(|c| text.contains(&format!("<Code>{c}</Code>")));
    match refused {
        true => format!("the server refused the credentials (check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and the bucket's policy): {line}").into(),
        false => line.into(),
    }
}
