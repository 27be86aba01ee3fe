//! Streams into S3 through a proxy that fails requests at random moments
//! (`tests/s3_fault_proxy.py` in front of a moto server, both on
//! 127.0.0.1, started and stopped by each test): throttling, server
//! errors, dropped connections, lost answers and hung requests are
//! retried for the retry budget and no longer, no byte is lost when the
//! faults end in time, and a stream that cannot go on stops within about a
//! second of its budget, or of being cancelled. Without
//! moto the tests say so and return, unless `RETILE_REQUIRE_S3=1`.
//!
//! The fault schedules are drawn from a seed printed by each test
//! (`RETILE_FAULT_SEED=N` replays one).

mod s3_common;

use std::time::{Duration, Instant};

use retile_stream::*;
use s3_common::*;

/// What a paced stream did.
struct Outcome {
    /// The stream's summary, or its error as the user reads it.
    result: Result<Summary, String>,
    /// The elements streamed (those appended, failed or not).
    data: Vec<u16>,
    /// When the stream was started.
    started: Instant,
    /// When the call that ended it returned and the stream was dropped.
    ended: Instant,
}

/// Planes of `plane` u16 elements streamed one every `pace` from another
/// thread into `opts`, while this thread sets the proxy's faults at the
/// times of `schedule` (from the start of the stream).
fn paced(
    proxy: &mut FaultProxy,
    spec: StreamSpec,
    opts: ZarrOptions,
    planes: u64,
    pace: Duration,
    schedule: &[(Duration, &str)],
) -> Outcome {
    let plane = spec.plane_elements().unwrap();
    let data = values(planes * plane);
    let bytes = to_bytes(&data);
    let started = Instant::now();
    let worker = std::thread::spawn(move || {
        let mut s = TileStream::new(spec, &[0, 0], 2, Box::new(ZarrSink::new(opts)))
            .map_err(|e| e.to_string())?;
        for p in bytes.chunks(plane as usize * 2) {
            if let Err(e) = s.append(p) {
                drop(s);
                return Err(e.to_string());
            }
            std::thread::sleep(pace);
        }
        let finished = s.finish().map_err(|e| e.to_string());
        drop(s);
        finished
    });
    for (at, command) in schedule {
        std::thread::sleep((started + *at).saturating_duration_since(Instant::now()));
        proxy.set(command);
    }
    let result = worker.join().expect("the stream's thread");
    Outcome {
        result,
        data,
        started,
        ended: Instant::now(),
    }
}

/// 32 x 64 planes in 2 x 16 x 16 tiles: 8 chunks a row, each one `PUT`.
fn chunked() -> StreamSpec {
    StreamSpec::new(DType::U16, vec![0, 32, 64], vec![2, 16, 16]).unwrap()
}

/// 512 x 1024 planes of 1 MiB, each row of 10 one shard of 10 MiB: a
/// multipart upload of two parts, completed when its row is in.
fn multipart() -> (StreamSpec, Option<Vec<u64>>) {
    let spec = StreamSpec::new(DType::U16, vec![0, 512, 1024], vec![1, 512, 1024]).unwrap();
    (spec, Some(vec![10, 1, 1]))
}

fn settings(proxy: &FaultProxy, budget: Duration) -> S3Options {
    S3Options {
        retry_timeout: budget,
        ..s3(&proxy.endpoint())
    }
}

/// Asserts that the stream succeeded and that the server holds every
/// element, read back with zarrs.
fn assert_stored(moto: &Moto, prefix: &str, outcome: &Outcome, shape: &[u64]) {
    if let Err(e) = &outcome.result {
        panic!("the stream failed: {e}");
    }
    let (read_shape, read) = read_back(&moto.client(), prefix);
    assert_eq!(read_shape, shape, "the stored shape");
    assert_same(&read, &outcome.data, "read back after the faults");
}

/// A fault from a random moment for `window`, then the faults end.
fn window(dice: &mut Dice, fault: &str, window: Duration) -> Vec<(Duration, String)> {
    let from = dice.between(Duration::from_millis(200), Duration::from_millis(900));
    vec![(from, fault.to_owned()), (from + window, "pass".to_owned())]
}

fn borrowed(schedule: &[(Duration, String)]) -> Vec<(Duration, &str)> {
    schedule.iter().map(|(t, c)| (*t, c.as_str())).collect()
}

#[test]
fn a_run_of_slowdown_longer_than_ten_retries_is_ridden_out() {
    let Some(moto) = moto(false) else { return };
    let mut proxy = FaultProxy::start(moto.port, 60);
    let mut dice = Dice::new(11);
    // 3 s of SlowDown for every request, within a budget of 10 s
    let schedule = window(&mut dice, "503", Duration::from_secs(3));
    let opts = options(
        &format!("s3://{BUCKET}/slowdown"),
        settings(&proxy, Duration::from_secs(10)),
    );
    let outcome = paced(
        &mut proxy,
        chunked(),
        opts,
        40,
        Duration::from_millis(50),
        &borrowed(&schedule),
    );
    let throttled = proxy.stats().get("503").copied().unwrap_or(0);
    assert!(throttled > 10, "{throttled} requests throttled");
    assert_stored(&moto, "slowdown", &outcome, &[40, 32, 64]);
}

#[test]
fn dropped_connections_are_retried_until_the_budget() {
    let Some(moto) = moto(false) else { return };
    let mut proxy = FaultProxy::start(moto.port, 60);
    let mut dice = Dice::new(23);
    let schedule = window(&mut dice, "drop", Duration::from_millis(2500));
    let opts = options(
        &format!("s3://{BUCKET}/dropped"),
        settings(&proxy, Duration::from_secs(10)),
    );
    let outcome = paced(
        &mut proxy,
        chunked(),
        opts,
        40,
        Duration::from_millis(50),
        &borrowed(&schedule),
    );
    assert!(proxy.stats().get("drop").copied().unwrap_or(0) > 0);
    assert_stored(&moto, "dropped", &outcome, &[40, 32, 64]);
}

#[test]
fn answers_lost_after_the_server_acted_are_retried_parts_and_completions_included() {
    let Some(moto) = moto(false) else { return };
    let mut proxy = FaultProxy::start(moto.port, 60);
    let mut dice = Dice::new(37);
    let (spec, shard) = multipart();
    let from = dice.between(Duration::from_millis(300), Duration::from_millis(1500));
    // every answer lost for 2 s: parts, completions and metadata done twice
    let schedule = [(from, "lose"), (from + Duration::from_secs(2), "pass")];
    let opts = ZarrOptions {
        shard,
        ..options(
            &format!("s3://{BUCKET}/lost"),
            settings(&proxy, Duration::from_secs(10)),
        )
    };
    let outcome = paced(
        &mut proxy,
        spec,
        opts,
        40,
        Duration::from_millis(60),
        &schedule,
    );
    assert!(proxy.stats().get("lose").copied().unwrap_or(0) > 0);
    assert_stored(&moto, "lost", &outcome, &[40, 512, 1024]);
}

#[test]
fn a_hung_server_is_retried_once_a_try_times_out() {
    let Some(moto) = moto(false) else { return };
    let mut proxy = FaultProxy::start(moto.port, 60);
    let mut dice = Dice::new(41);
    // every request hangs for 3 s; a budget of 12 s gives each try 3 s
    let schedule = window(&mut dice, "hang", Duration::from_secs(3));
    let opts = options(
        &format!("s3://{BUCKET}/hung"),
        settings(&proxy, Duration::from_secs(12)),
    );
    let outcome = paced(
        &mut proxy,
        chunked(),
        opts,
        40,
        Duration::from_millis(50),
        &borrowed(&schedule),
    );
    assert!(proxy.stats().get("hang").copied().unwrap_or(0) > 0);
    let took = outcome.ended - outcome.started;
    assert!(
        took < Duration::from_secs(12),
        "a hang of 3 s held the stream {took:?}"
    );
    assert_stored(&moto, "hung", &outcome, &[40, 32, 64]);
}

/// Streams until `fault` starts at a random moment and never ends: the
/// stream must fail, naming the store, after retrying for its budget of
/// 3 s and within about a second more (its drop included).
fn fails_within_the_budget(fault: &str, seed: u64) {
    let Some(moto) = moto(false) else { return };
    let mut proxy = FaultProxy::start(moto.port, 60);
    let mut dice = Dice::new(seed);
    let budget = Duration::from_secs(3);
    let from = dice.between(Duration::from_millis(300), Duration::from_millis(900));
    let url = format!("s3://{BUCKET}/failing-{fault}");
    let opts = options(&url, settings(&proxy, budget));
    let outcome = paced(
        &mut proxy,
        chunked(),
        opts,
        400,
        Duration::from_millis(20),
        &[(from, fault)],
    );
    let err = outcome
        .result
        .expect_err("the stream went on without its server");
    eprintln!("the stream's error: {err}");
    assert!(err.contains(&url), "{err}");
    assert!(!err.contains('\n'), "{err}");
    let failing = outcome.ended - (outcome.started + from);
    assert!(
        failing >= budget - Duration::from_millis(300),
        "{fault}: the stream gave up {failing:?} after the server failed, within its budget of {budget:?}"
    );
    assert!(
        failing <= budget + Duration::from_millis(2000),
        "{fault}: the stream took {failing:?} to stop after the server failed, with a budget of {budget:?}"
    );
}

#[test]
fn a_server_that_keeps_throttling_fails_the_stream_at_the_end_of_the_budget() {
    fails_within_the_budget("503", 53);
}

#[test]
fn a_server_that_keeps_failing_fails_the_stream_at_the_end_of_the_budget() {
    fails_within_the_budget("500", 59);
}

#[test]
fn a_server_that_keeps_dropping_connections_fails_the_stream_at_the_end_of_the_budget() {
    fails_within_the_budget("drop", 61);
}

#[test]
fn a_server_that_keeps_hanging_fails_the_stream_at_the_end_of_the_budget() {
    fails_within_the_budget("hang", 67);
}

/// Faults of every kind at random moments (each request faulted with
/// probability `p`): the stream rides them out and stores every byte.
fn rides_out_random_faults(seed: u64, p: f64) {
    let Some(moto) = moto(false) else { return };
    let mut proxy = FaultProxy::start(moto.port, 60);
    let seed = Dice::new(seed).seed();
    let command = format!("random {p} {seed}");
    // chunks of one PUT each, then shards of two parts
    let prefix = format!("random-{seed}");
    let opts = options(
        &format!("s3://{BUCKET}/{prefix}"),
        settings(&proxy, Duration::from_secs(8)),
    );
    let outcome = paced(
        &mut proxy,
        chunked(),
        opts,
        60,
        Duration::from_millis(10),
        &[(Duration::ZERO, &command)],
    );
    assert_stored(&moto, &prefix, &outcome, &[60, 32, 64]);
    // a part of 8 MiB is given 1 s per MiB more than a chunk: a hang on its
    // first try takes 10 s of an 8 s budget and leaves none to retry it,
    // so the shards' budget holds two such tries (a quarter of 40 s + 8 s)
    let (spec, shard) = multipart();
    let opts = ZarrOptions {
        shard,
        ..options(
            &format!("s3://{BUCKET}/{prefix}-shards"),
            settings(&proxy, Duration::from_secs(40)),
        )
    };
    let outcome = paced(&mut proxy, spec, opts, 30, Duration::ZERO, &[]);
    assert_stored(
        &moto,
        &format!("{prefix}-shards"),
        &outcome,
        &[30, 512, 1024],
    );
    let stats = proxy.stats();
    eprintln!("requests met: {stats:?}");
    for kind in ["503", "500", "drop", "lose", "hang"] {
        assert!(
            stats.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} met: {stats:?}"
        );
    }
}

#[test]
fn random_faults_at_random_moments_lose_no_data() {
    rides_out_random_faults(71, 0.15);
}

#[test]
fn random_faults_at_random_moments_lose_no_data_with_another_seed() {
    rides_out_random_faults(1_000_003, 0.15);
}

/// Streams a row, then `fault` for every request and a second row (its
/// uploads retrying in the background), and cancels the stream half a
/// second later: `finish` must fail, saying so, within about a second of
/// the cancel though the budget is 30 s.
fn cancelled_while(fault: &str) {
    let Some(moto) = moto(false) else { return };
    let mut proxy = FaultProxy::start(moto.port, 60);
    let url = format!("s3://{BUCKET}/cancelled-{fault}");
    let s3 = settings(&proxy, Duration::from_secs(30));
    let cancel = s3.cancel.clone();
    let sink = ZarrSink::new(options(&url, s3));
    let mut s = TileStream::new(chunked(), &[0, 0], 2, Box::new(sink)).unwrap();
    let data = to_bytes(&values(4 * 32 * 64));
    s.append(&data[..2 * 32 * 64 * 2]).unwrap();
    proxy.set(fault);
    s.append(&data[2 * 32 * 64 * 2..]).unwrap();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        cancel.cancel();
        Instant::now()
    });
    let err = s
        .finish()
        .expect_err("a stream cancelled while its server fails")
        .to_string();
    drop(s);
    let ended = Instant::now();
    let cancelled = canceller.join().unwrap();
    eprintln!("the stream's error: {err}");
    assert!(err.contains("cancelled"), "{err}");
    let took = ended.saturating_duration_since(cancelled);
    assert!(
        took <= STOP_GRACE + Duration::from_millis(1500),
        "{fault}: {took:?} from the cancel to the stream's end"
    );
}

#[test]
fn a_stream_cancelled_while_its_server_throttles_it_stops_within_a_second() {
    cancelled_while("503");
}

#[test]
fn a_stream_cancelled_while_its_server_hangs_stops_within_a_second_or_two() {
    cancelled_while("hang");
}

#[test]
fn a_cancelled_stream_still_stores_what_the_server_takes() {
    let Some(moto) = moto(false) else { return };
    let proxy = FaultProxy::start(moto.port, 60);
    let s3 = settings(&proxy, Duration::from_secs(30));
    let cancel = s3.cancel.clone();
    let url = format!("s3://{BUCKET}/interrupted");
    let mut s = TileStream::new(
        chunked(),
        &[0, 0],
        2,
        Box::new(ZarrSink::new(options(&url, s3))),
    )
    .unwrap();
    let data = values(6 * 32 * 64);
    let bytes = to_bytes(&data);
    s.append(&bytes[..4 * 32 * 64 * 2]).unwrap();
    // an interrupted recording: no retries from here, but what goes up goes up
    cancel.cancel();
    s.append(&bytes[4 * 32 * 64 * 2..]).unwrap();
    let summary = s.finish().expect("a healthy server after a cancel");
    assert_eq!(summary.planes, 6);
    let (shape, read) = read_back(&moto.client(), "interrupted");
    assert_eq!(shape, vec![6, 32, 64]);
    assert_same(&read, &data, "read back after a cancel");
}
