//! `retile stream --config acq.json --input cam0=FILE ...`: several arrays
//! (or an HCS plate) streamed at once, described by a settings file with
//! the keys of `retile.Stream` (JSON, or TOML for a `.toml` file), each
//! array's frames read from its own input on its own thread, so that a slow
//! input does not stall the others.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use retile_stream::{Acquisition, AcquisitionSettings, S3Options, Summary, ZarrOptions};

use crate::error::CliError;
use crate::input::{Buffer, Cut, Giver, Input, InputError, InputFile, Next, Pages};
use crate::print::say;
use crate::signals::{interrupted, second_interrupt, stop_on_interrupt};

/// What an input's thread hands on.
enum Read {
    /// Whole planes of the array at this index: the range of a piece of
    /// its input, whose buffer goes back to the input once appended.
    Piece(usize, Buffer, Range<usize>),
    /// A whole plane of the array at this index, gathered from pieces of
    /// its input that cut it (a pipe's, or planes over 16 MiB).
    Plane(usize, Vec<u8>),
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

/// Reads `input` on a thread of its own, handing on its pieces as array
/// `at`'s, cut to whole planes of `plane` bytes: a regular file's pieces
/// hold whole planes (up to 16 MiB each) and go on as they are; only a
/// plane that pieces cut is gathered into one of its own. Returns what
/// gives the pieces back to `input` once they are appended.
fn spawn_reader(
    at: usize,
    mut input: Input,
    plane: usize,
    out: SyncSender<Read>,
) -> Result<Giver, CliError> {
    let giver = input.giver();
    let job = move || {
        // the bytes of a plane that pieces cut, so far
        let mut cut = Vec::new();
        loop {
            let piece = match input.next(interrupted) {
                Ok(Next::Piece(piece)) => piece,
                Ok(Next::End | Next::Stopped) => break,
                Err(e) => return drop(out.send(Read::Failed(at, e))),
            };
            let bytes = piece.bytes();
            let mut start = 0;
            if !cut.is_empty() {
                start = (plane - cut.len()).min(bytes.len());
                cut.extend_from_slice(&bytes[..start]);
                if cut.len() == plane
                    && out.send(Read::Plane(at, std::mem::take(&mut cut))).is_err()
                {
                    return;
                }
            }
            let end = start + (bytes.len() - start) / plane * plane;
            cut.extend_from_slice(&bytes[end..]);
            if end == start {
                input.give_back(piece);
            } else if out.send(Read::Piece(at, piece, start..end)).is_err() {
                return;
            }
        }
        let _ = out.send(Read::End(at, cut.len() as u64));
    };
    std::thread::Builder::new()
        .name(format!("retile-input-{at}"))
        .spawn(job)
        .map(|_| giver)
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
    let opened: Vec<(String, InputFile)> = inputs
        .into_iter()
        .map(|(key, file)| Ok((key, InputFile::open(&file)?)))
        .collect::<Result<_, CliError>>()?;
    stop_on_interrupt();
    let mut acquisition = settings.open(ZarrOptions {
        s3: S3Options {
            cancel: second_interrupt(),
            ..store
        },
        direct_io_min_chunk: crate::settings::direct_io_min_chunk()?,
        ..Default::default()
    })?;
    say(format_args!("{}", acquisition.budget()))?;
    let pages = Pages::for_store(Some(&settings.output));
    let (send, receive) = sync_channel(2 * opened.len());
    let mut arrays = Vec::with_capacity(opened.len());
    for (at, (key, file)) in opened.into_iter().enumerate() {
        let plane = acquisition.plane_bytes(Some(&key))?.max(1);
        let giver = spawn_reader(
            at,
            file.read(Cut::WholePlanes(plane), pages)?,
            plane as usize,
            send.clone(),
        )?;
        arrays.push((key, giver));
    }
    drop(send);
    let started = Instant::now();
    let ending = take_frames(&mut acquisition, &arrays, receive);
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

/// Appends every frame the readers hand on (to the array named first in
/// `arrays`' entry, its pieces given back with the second) until every
/// input ends (`Ok(true)`), an interrupt (`Ok(false)`), or an error; a
/// plane cut short at the end of an input, a failed read or input past a
/// bounded shape is an error, reported once the store is closed.
fn take_frames(
    acquisition: &mut Acquisition,
    arrays: &[(String, Giver)],
    receive: Receiver<Read>,
) -> Result<bool, CliError> {
    let mut open = arrays.len();
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
            Read::Piece(at, piece, range) => {
                let appended = append(acquisition, &arrays[at].0, &piece.bytes()[range]);
                arrays[at].1.give_back(piece);
                if let Some(refused) = appended? {
                    problem.get_or_insert(refused);
                }
            }
            Read::Plane(at, plane) => {
                if let Some(refused) = append(acquisition, &arrays[at].0, &plane)? {
                    problem.get_or_insert(refused);
                }
            }
            Read::End(at, partial) => {
                open -= 1;
                if partial > 0 {
                    problem.get_or_insert_with(|| {
                        format!("the input of '{}' ended inside a plane: its last {partial} bytes were dropped; every complete plane was written", arrays[at].0).into()
                    });
                }
            }
            Read::Failed(at, e) => {
                open -= 1;
                problem.get_or_insert_with(|| {
                    format!(
                        "reading the input of '{}' failed: {e}; what was read before was written",
                        arrays[at].0
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

/// Appends `frames` to the array `key` names; the problem to report when
/// it refused some (its input is longer than its shape).
fn append(
    acquisition: &mut Acquisition,
    key: &str,
    frames: &[u8],
) -> Result<Option<CliError>, CliError> {
    let taken = acquisition.append(Some(key), frames)?;
    Ok((taken < frames.len()).then(|| {
        format!("the input of '{key}' is longer than its shape: the rest was refused").into()
    }))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_s_pieces_go_on_as_they_are_and_a_cut_last_plane_is_counted() {
        let plane = 100_000;
        let data: Vec<u8> = (0..150 * plane + 7).map(|i| (i % 251) as u8).collect();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, &data).unwrap();
        let path = file.path().to_str().unwrap();
        let input = Input::open(path, Cut::WholePlanes(plane as u64), Pages::InPlace).unwrap();
        let (send, receive) = sync_channel(2);
        let giver = spawn_reader(3, input, plane, send).unwrap();
        let (mut read, mut pieces) = (Vec::new(), 0);
        let partial = loop {
            match receive.recv().unwrap() {
                Read::Piece(3, piece, range) => {
                    read.extend_from_slice(&piece.bytes()[range]);
                    pieces += 1;
                    giver.give_back(piece);
                }
                Read::End(3, partial) => break partial,
                _ => panic!("a piece of a regular file was copied, or a read failed"),
            }
        };
        // pieces of about 4 MiB: 42 planes each, the last one short
        assert_eq!(pieces, 4);
        assert_eq!(partial, 7);
        assert!(read == data[..150 * plane]);
    }
}
