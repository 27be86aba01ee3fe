//! `retile eval` and `retile show`: the layout calculator on the command line.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use clap::Args;
use retile_calc::{evaluate, CalcError, Value};

/// Arguments of `retile eval`.
#[derive(Args)]
pub struct EvalArgs {
    /// Expressions to evaluate, one result line each.
    expressions: Vec<String>,
    /// Read one expression per line from stdin; write one line per input line.
    #[arg(long)]
    batch: bool,
}

/// Arguments of `retile show`.
#[derive(Args)]
pub struct ShowArgs {
    /// The layout expression to draw.
    expression: String,
}

/// One output line for an expression: the value or `error: ...`.
fn result_line(text: &str) -> (String, bool) {
    match evaluate(text) {
        Ok(value) => (value.to_string(), true),
        Err(e) => (format!("error: {e}"), false),
    }
}

/// `retile eval`: one line per expression; `--batch` reads stdin and always
/// exits 0 unless stdin cannot be read.
pub fn eval(args: &EvalArgs) -> Result<ExitCode, String> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut all_ok = true;
    if args.batch {
        for line in io::stdin().lock().lines() {
            let line = line.map_err(|e| format!("cannot read stdin: {e}"))?;
            writeln!(out, "{}", result_line(&line).0).map_err(|e| e.to_string())?;
        }
        out.flush().map_err(|e| e.to_string())?;
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
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())?;
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Renders a value as a drawing: a layout as a grid of offsets, a device
/// layout as its sticks.
fn drawing(value: &Value) -> Result<String, CalcError> {
    match value {
        Value::Device(l) => l.render_sticks().map_err(|e| CalcError::new(e.to_string())),
        Value::Register(l) => Ok(format!("{}\n", l.visualize()?)),
        other => Ok(retile_layout::render_grid(&other.to_layout()?)?),
    }
}

/// `retile show`: draw a layout; on an error, point at the column.
pub fn show(args: &ShowArgs) -> Result<ExitCode, String> {
    match evaluate(&args.expression).and_then(|v| drawing(&v)) {
        Ok(text) => {
            print!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(pointed(&args.expression, &e)),
    }
}

/// The error message with the expression and a caret under the column.
fn pointed(text: &str, e: &CalcError) -> String {
    match e.column() {
        Some(c) => format!("{e}\n  {text}\n  {}^", " ".repeat(c.saturating_sub(1))),
        None => e.to_string(),
    }
}
