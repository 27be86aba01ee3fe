//! `retile stream --config acq.json --input cam0=FILE ...`: several arrays
//! (or an HCS plate) streamed at once, described by a settings file with
//! the keys of `retile.Stream` (JSON, or TOML for a `.toml` file), each
//! array's frames read from its own input on its own thread, so that a slow
//! input does not stall the others.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use retile_stream::{Acquisition, AcquisitionSettings, S3Options, Summary, ZarrOptions};

use crate::error::CliError;
use crate::input::{Input, InputError, Next, BUFFER_BYTES};
use crate::print::say;
use crate::signals::{interrupted, second_interrupt, stop_on_interrupt};

/// What an input's thread hands on.
enum Read {
    /// Whole planes of the array at this index.
    Frames(usize, Vec<u8>),
    /// The input ended (after `partial` bytes of a plane that were dropped).
    End(usize, u64),
    /// Reading failed.
    Failed(usize, InputError),
}

/// The settings file at `path`: TOML if its name ends in `.toml`, else JSON.
pub fn read_settings(path: &Path) -> Result<AcquisitionSettings, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read --config {}: {e}", path.display()))?;
    let toml = path.extension().is_some_and(|e| e == "toml");
    let parsed = match toml {
        true => toml::from_str(&text).map_err(|e| e.to_string()),
        false => serde_json::from_str(&text).map_err(|e| e.to_string()),
    };
    parsed.map_err(|e| format!("--config {}: {e}", path.display()).into())
}

/// Each `KEY=FILE` of `inputs`, checked against the arrays' `keys`: every
/// array has exactly one input, and every input an array.
pub fn inputs_by_key(
    inputs: &[String],
    keys: &[String],
) -> Result<BTreeMap<String, String>, CliError> {
    let mut by_key = BTreeMap::new();
    for input in inputs {
        let Some((key, file)) = input.split_once('=') else {
            return Err(format!("--input {input}: with --config, each input is KEY=FILE (e.g. --input cam0=cam0.raw)").into());
        };
        if !keys.iter().any(|k| k == key) {
            return Err(format!(
                "--input {input}: no array has the key '{key}'; the keys are {}",
                keys.join(", ")
            )
            .into());
        }
        if by_key.insert(key.to_string(), file.to_string()).is_some() {
            return Err(format!("--input names '{key}' twice: one input per array").into());
        }
    }
    let missing: Vec<&str> = keys
        .iter()
        .filter(|k| !by_key.contains_key(*k))
        .map(String::as_str)
        .collect();
    match missing.is_empty() {
        true => Ok(by_key),
        false => Err(format!(
            "every array needs its input: add --input KEY=FILE for {}",
            missing.join(", ")
        )
        .into()),
    }
}

/// Reads `input` on a thread of its own, handing on whole planes of
/// `plane` bytes (about [`BUFFER_BYTES`] at a time) as array `at`'s.
fn spawn_reader(
    at: usize,
    mut input: Input,
    plane: usize,
    out: SyncSender<Read>,
) -> Result<(), CliError> {
    let target = (BUFFER_BYTES / plane).max(1) * plane;
    let job = move || {
        let mut chunk = Vec::with_capacity(target);
        loop {
            let piece = match input.next(interrupted) {
                Ok(Next::Piece(piece)) => piece,
                Ok(Next::End | Next::Stopped) => break,
                Err(e) => return drop(out.send(Read::Failed(at, e))),
            };
            let mut bytes = piece.bytes();
            while !bytes.is_empty() {
                let take = (target - chunk.len()).min(bytes.len());
                chunk.extend_from_slice(&bytes[..take]);
                bytes = &bytes[take..];
                if chunk.len() == target {
                    let full = std::mem::replace(&mut chunk, Vec::with_capacity(target));
                    if out.send(Read::Frames(at, full)).is_err() {
                        return;
                    }
                }
            }
            input.give_back(piece);
        }
        let partial = chunk.len() % plane;
        chunk.truncate(chunk.len() - partial);
        if !chunk.is_empty() && out.send(Read::Frames(at, chunk)).is_err() {
            return;
        }
        let _ = out.send(Read::End(at, partial as u64));
    };
    std::thread::Builder::new()
        .name(format!("retile-input-{at}"))
        .spawn(job)
        .map(drop)
        .map_err(|e| format!("cannot start a thread to read an input: {e}").into())
}

/// `retile stream --config FILE`: the acquisition the file describes, each
/// array's frames from its `--input KEY=FILE`.
pub fn stream(
    config: &Path,
    inputs: &[String],
    store: S3Options,
    overwrite: bool,
) -> Result<ExitCode, CliError> {
    let mut settings = read_settings(config)?;
    settings.overwrite |= overwrite;
    let keys = settings.keys()?;
    let inputs = inputs_by_key(inputs, &keys)?;
    let opened: Vec<(String, Input)> = inputs
        .into_iter()
        .map(|(key, file)| Ok((key, Input::open(&file, 0)?)))
        .collect::<Result<_, CliError>>()?;
    stop_on_interrupt();
    let mut acquisition = settings.open(ZarrOptions {
        s3: S3Options {
            cancel: second_interrupt(),
            ..store
        },
        ..Default::default()
    })?;
    say(format_args!("{}", acquisition.budget()))?;
    let (send, receive) = sync_channel(2 * opened.len());
    let mut names = Vec::with_capacity(opened.len());
    for (at, (key, input)) in opened.into_iter().enumerate() {
        let plane = acquisition.plane_bytes(Some(&key))?.max(1) as usize;
        spawn_reader(at, input, plane, send.clone())?;
        names.push(key);
    }
    drop(send);
    let started = Instant::now();
    let ending = take_frames(&mut acquisition, &names, receive);
    let finished = acquisition.finish();
    let seconds = started.elapsed().as_secs_f64();
    let summaries = match (ending, finished) {
        (Err(e), _) => return Err(e),
        (Ok(_), Err(e)) => return Err(e.into()),
        (Ok(ending), Ok(summaries)) => (ending, summaries),
    };
    report(&summaries.1, seconds, &settings.output)?;
    match summaries.0 {
        true => Ok(ExitCode::SUCCESS),
        false => {
            let _ = say(format_args!("retile: interrupted: every complete plane taken was written and the store closed\n"));
            Ok(ExitCode::from(130))
        }
    }
}

/// Appends every frame the readers hand on until every input ends
/// (`Ok(true)`), an interrupt (`Ok(false)`), or an error; a plane cut short
/// at the end of an input, a failed read or input past a bounded shape is
/// an error, reported once the store is closed.
fn take_frames(
    acquisition: &mut Acquisition,
    names: &[String],
    receive: Receiver<Read>,
) -> Result<bool, CliError> {
    let mut open = names.len();
    let mut problem: Option<CliError> = None;
    while open > 0 {
        if interrupted() {
            return Ok(false);
        }
        let read = match receive.recv_timeout(Duration::from_millis(100)) {
            Ok(read) => read,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match read {
            Read::Frames(at, frames) => {
                let taken = acquisition.append(Some(&names[at]), &frames)?;
                if taken < frames.len() {
                    problem.get_or_insert_with(|| {
                        format!(
                            "the input of '{}' is longer than its shape: the rest was refused",
                            names[at]
                        )
                        .into()
                    });
                }
            }
            Read::End(at, partial) => {
                open -= 1;
                if partial > 0 {
                    problem.get_or_insert_with(|| {
                        format!("the input of '{}' ended inside a plane: its last {partial} bytes were dropped; every complete plane was written", names[at]).into()
                    });
                }
            }
            Read::Failed(at, e) => {
                open -= 1;
                problem.get_or_insert_with(|| {
                    format!(
                        "reading the input of '{}' failed: {e}; what was read before was written",
                        names[at]
                    )
                    .into()
                });
            }
        }
    }
    match problem {
        Some(e) => Err(e),
        None => Ok(true),
    }
}

/// One line per array of what it stored, and the total.
fn report(summaries: &[(String, Summary)], seconds: f64, output: &Path) -> Result<(), CliError> {
    let bytes: u64 = summaries.iter().map(|(_, s)| s.bytes).sum();
    say(format_args!(
        "retile: {:.3} GB into {} arrays in {seconds:.2} s: {:.2} GB/s of input\n",
        bytes as f64 / 1e9,
        summaries.len(),
        bytes as f64 / 1e9 / seconds.max(1e-9)
    ))?;
    for (key, s) in summaries {
        say(format_args!(
            "  {key}: {} planes, {} tiles, stored {:.3} GB in {} files\n",
            s.planes,
            s.tiles,
            s.sink.stored_bytes as f64 / 1e9,
            s.sink.files
        ))?;
    }
    say(format_args!("  wrote {}\n", output.display()))
}
