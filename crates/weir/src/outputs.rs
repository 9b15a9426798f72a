//! The command line's side of honest outputs (`weir_io::output` does the
//! work): clashing names refused up front, files that appear only when a
//! command succeeds, and every print that can fail returning the failure
//! instead of panicking.

use crate::cli::{OutputArgs, TableArgs};
use crate::counting::counted;
use crate::Failure;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use weir_engine::Engine;
use weir_io::output::{self, Endpoint, OutputError};
use weir_pipeline::report::{self, Report};
use weir_pipeline::{FileOutputs, Files};
use weir_rules::Names;

/// Refuses, before anything is opened for writing, an output that is one
/// of the inputs or another output under any name (exit 2).
pub fn refuse_clashes(inputs: &[Endpoint<'_>], outputs: &[Endpoint<'_>]) -> Result<(), Failure> {
    output::check_clashes(inputs, outputs).map_err(|c| Failure::Usage(c.to_string()))
}

/// The outputs given among `files` (flag, path), as endpoints.
pub fn given<'a>(files: &[(&'a str, &'a Option<PathBuf>)]) -> Vec<Endpoint<'a>> {
    files
        .iter()
        .filter_map(|(role, p)| p.as_deref().map(|p| Endpoint::new(role, p)))
        .collect()
}

/// Checks a filtering command's outputs (`run`, `capture`) before anything
/// is opened: at most one capture or file on stdout, not beside a report
/// that prints there (`reports`: flag, whether given); then, by device and
/// inode, none that is the ruleset, a table file, `capture` (the input
/// capture), or another output.
pub fn check_filter_outputs(
    rules: &Path,
    tables: &TableArgs,
    capture: Option<&Path>,
    files: &[(&str, &Option<PathBuf>)],
    reports: &[(bool, &str)],
) -> Result<(), Failure> {
    let mut outs = given(files);
    let on_stdout: Vec<&str> = outs
        .iter()
        .filter(|e| e.path.as_os_str() == "-")
        .map(|e| e.role)
        .collect();
    let report = reports.iter().find(|(on, _)| *on).map(|(_, flag)| *flag);
    match (&on_stdout[..], report) {
        ([_, _, ..], _) => {
            return Err(Failure::Usage(
                "only one output can go to stdout (-)".into(),
            ))
        }
        ([flag], Some(report)) => {
            return Err(Failure::Usage(format!(
                "{flag} - cannot share stdout with {report}"
            )))
        }
        _ => {}
    }
    outs.extend(report.map(|r| Endpoint::new(r, Path::new("-"))));
    let table_roles: Vec<String> = tables
        .specs
        .iter()
        .map(|(name, _)| format!("--table {name}"))
        .collect();
    let mut ins = vec![Endpoint::new("the ruleset", rules)];
    ins.extend(capture.map(|c| Endpoint::new("-r", c)));
    for (role, (_, path)) in table_roles.iter().zip(&tables.specs) {
        ins.push(Endpoint::new(role, path));
    }
    refuse_clashes(&ins, &outs)
}

/// Checks a filtering mode's outputs (see [`check_filter_outputs`]);
/// `capture` is the input capture file, if the mode reads one.
pub fn check_mode_outputs(
    rules: &Path,
    tables: &TableArgs,
    capture: Option<&Path>,
    out: &OutputArgs,
) -> Result<(), Failure> {
    check_filter_outputs(
        rules,
        tables,
        capture,
        &[
            ("-w", &out.write),
            ("--drop-out", &out.drop_out),
            ("--annotate", &out.annotate),
            ("--verdicts", &out.verdicts),
            ("--log-file", &out.log_file),
        ],
        &[
            (out.counters, "--counters"),
            (out.json, "--json"),
            (out.unmatched, "--unmatched"),
            (out.states, "--states"),
        ],
    )
}

/// Opens the per-packet files `out` names (staged until committed).
pub fn open_files(out: &OutputArgs) -> Result<FileOutputs, Failure> {
    let opened = |p: &Option<PathBuf>| p.as_deref().map(open).transpose();
    Ok(FileOutputs {
        pass: opened(&out.write)?,
        drop: opened(&out.drop_out)?,
        annotate: opened(&out.annotate)?,
        verdicts: opened(&out.verdicts)?,
    })
}

/// Makes the per-packet files appear, noting pcapng files left unmade.
pub fn commit_files(files: Files) -> Result<(), Failure> {
    for name in files.commit()? {
        note(&format!(
            "weir: {name} not written: the capture described no interface"
        ))?;
    }
    Ok(())
}

/// Prints the end-of-run reports `out` asks for, in this order: counters,
/// unmatched rules, states, JSON (made by `json` only when asked).
pub fn print_reports(
    out: &OutputArgs,
    engine: &Engine,
    names: &Names,
    json: impl FnOnce() -> Report,
) -> Result<(), Failure> {
    let mut text = String::new();
    if out.counters {
        text += &report::counters_table(engine);
    }
    if out.unmatched {
        text += &report::unmatched(engine);
    }
    if out.states {
        text += &report::states_table(engine, names);
    }
    if out.json {
        text += &json().to_line();
    }
    print(&text)
}

pub use weir_pipeline::Output;

/// Opens an output (`-` is stdout), its writes counted for `--json`.
pub fn open(path: &Path) -> Result<Output<Box<dyn Write + Send>>, Failure> {
    let (sink, pending) = output::create(path).map_err(Failure::Output)?;
    Ok(Output::new(counted(sink), pending))
}

/// An output holding `text`, yet to be committed (so several appear
/// together, or none).
pub fn written(path: &Path, text: &str) -> Result<Output<Box<dyn Write + Send>>, Failure> {
    let mut out = open(path)?;
    out.write_text(text)?;
    Ok(out)
}

/// Writes `text` to stdout and flushes it; a closed pipe or a full disk
/// comes back as a failure naming stdout, never a panic.
pub fn print(text: &str) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Failure::Output(OutputError::new("stdout", e)))
}

/// Writes one line to stderr (the closing summary, notes).
pub fn note(line: &str) -> Result<(), Failure> {
    write_note(line).map_err(|e| Failure::Output(OutputError::new("stderr", e)))
}

/// [`note`] as the loader takes its notes.
pub fn write_note(line: &str) -> io::Result<()> {
    let mut err = io::stderr().lock();
    err.write_all(line.as_bytes())
        .and_then(|()| err.write_all(b"\n"))
}

/// A line to stderr from a live loop, which must not stop for it.
pub fn note_quietly(line: &str) {
    let _ = note(line);
}

/// Says which files a failed run did not make, if any.
pub fn say_discarded(names: Vec<String>) -> Result<(), Failure> {
    if names.is_empty() {
        return Ok(());
    }
    note(&format!(
        "weir: not written, as the run did not finish: {}",
        names.join(", ")
    ))
}
