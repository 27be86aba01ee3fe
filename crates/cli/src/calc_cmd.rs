//! `retile eval` and `retile show`: the layout calculator on the command line.

use crate::error::CliError;
use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use clap::Args;
use retile_calc::show::{drawing, Format};
use retile_calc::{evaluate, CalcError, MAX_LEN};

/// Arguments of `retile eval`.
#[derive(Args)]
pub struct EvalArgs {
    /// Expressions to evaluate, one result line each.
    expressions: Vec<String>,
    /// Read one expression per line from stdin; write one line per input
    /// line (`error: ...` for a bad one, a line over 1 MiB or one that is
    /// not UTF-8 included).
    #[arg(long)]
    batch: bool,
}

/// Arguments of `retile show`.
#[derive(Args)]
pub struct ShowArgs {
    /// The layout expression to draw.
    expression: String,
    /// Draw an SVG picture instead of a text grid (implied by an `--output` ending in `.svg`).
    #[arg(long)]
    svg: bool,
    /// Write the drawing to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    /// Draw the layout as a thread-value layout `(thread, value) -> element` over a tile of
    /// ROWS,COLS (SVG only), e.g. `--tile 16,8`.
    #[arg(long, value_name = "ROWS,COLS", value_parser = parse_tile)]
    tile: Option<(i64, i64)>,
}

/// `ROWS,COLS` as two positive integers.
fn parse_tile(text: &str) -> Result<(i64, i64), String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let [rows, cols] = parts[..] else {
        return Err(format!(
            "give the tile as ROWS,COLS, e.g. 16,8; got {text:?}"
        ));
    };
    let number = |t: &str| match t.parse::<i64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("tile extents must be positive integers, got {t:?}")),
    };
    Ok((number(rows)?, number(cols)?))
}

/// One output line for an expression: the value or `error: ...`.
fn result_line(text: &str) -> (String, bool) {
    match evaluate(text) {
        Ok(value) => (value.to_string(), true),
        Err(e) => (format!("error: {e}"), false),
    }
}

/// Why writing the output failed, for the one-line error.
pub(crate) fn write_error(e: io::Error) -> String {
    format!("cannot write the output: {e}")
}

/// Writes `text` to stdout and flushes it, returning an error instead of
/// panicking when stdout is full or closed.
pub(crate) fn write_stdout(text: &str) -> Result<(), String> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(write_error)
}

/// One line of input, read with a cap on what is kept in memory.
enum Line {
    /// The line's bytes, its `\n` (and a `\r` before it) removed.
    Bytes(Vec<u8>),
    /// A line longer than the cap: its length in bytes; the rest was skipped.
    TooLong(usize),
}

/// Reads one line keeping at most `cap` bytes of it: a longer line is
/// skipped to its end and reported by length. `None` at the end of input.
fn read_line(input: &mut impl BufRead, cap: usize) -> io::Result<Option<Line>> {
    let mut kept = Vec::new();
    let mut length = 0usize;
    let mut any = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        any = true;
        let newline = chunk.iter().position(|&b| b == b'\n');
        let part = &chunk[..newline.unwrap_or(chunk.len())];
        // one byte over the cap is kept, so that a '\r' ending a line of
        // exactly `cap` bytes can be told from a longer line
        let room = (cap + 1).saturating_sub(kept.len());
        kept.extend_from_slice(&part[..part.len().min(room)]);
        length = length.saturating_add(part.len());
        let used = newline.map_or(chunk.len(), |i| i + 1);
        input.consume(used);
        if newline.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if length == kept.len() && kept.last() == Some(&b'\r') {
        kept.pop();
        length -= 1;
    }
    Ok(Some(if length > cap {
        Line::TooLong(length)
    } else {
        Line::Bytes(kept)
    }))
}

/// The output line for one line of `--batch` input.
fn batch_line(line: Line) -> String {
    match line {
        Line::TooLong(length) => format!(
            "error: the line is {length} bytes long, more than the limit of {MAX_LEN} bytes (1 MiB); split the expression"
        ),
        Line::Bytes(bytes) => match std::str::from_utf8(&bytes) {
            Ok(text) => result_line(text).0,
            Err(e) => format!(
                "error: the line is not UTF-8 text (byte 0x{:02X} at column {}); write expressions in ASCII",
                bytes[e.valid_up_to()],
                e.valid_up_to() + 1
            ),
        },
    }
}

/// `retile eval`: one line per expression; `--batch` reads stdin and always
/// exits 0 unless stdin cannot be read or stdout written.
pub fn eval(args: &EvalArgs) -> Result<ExitCode, CliError> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut all_ok = true;
    if args.batch {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        while let Some(line) =
            read_line(&mut input, MAX_LEN).map_err(|e| format!("cannot read stdin: {e}"))?
        {
            writeln!(out, "{}", batch_line(line)).map_err(write_error)?;
        }
        out.flush().map_err(write_error)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.expressions.is_empty() {
        return Err(
            "give an expression, e.g. retile eval 'coalesce((2,(1,6)):(1,(6,2)))', or --batch"
                .into(),
        );
    }
    for text in &args.expressions {
        let (line, ok) = result_line(text);
        all_ok &= ok;
        writeln!(out, "{line}").map_err(write_error)?;
    }
    out.flush().map_err(write_error)?;
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `retile show`: draw a layout as text or SVG, to stdout or a file; on an
/// error, point at the column.
pub fn show(args: &ShowArgs) -> Result<ExitCode, CliError> {
    let svg = args.svg
        || args
            .output
            .as_ref()
            .is_some_and(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg")));
    let format = if svg { Format::Svg } else { Format::Text };
    let text = evaluate(&args.expression)
        .and_then(|v| drawing(&v, format, args.tile))
        .map_err(|e| pointed(&args.expression, &e))?;
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => write_stdout(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The error message with the expression and a caret under the column
/// (the expression only when it is one printable line).
fn pointed(text: &str, e: &CalcError) -> String {
    let printable = text.len() <= 200 && text.chars().all(|c| c == ' ' || c.is_ascii_graphic());
    match e.column() {
        Some(c) if printable => format!("{e}\n  {text}\n  {}^", " ".repeat(c.saturating_sub(1))),
        _ => e.to_string(),
    }
}
