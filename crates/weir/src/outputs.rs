//! The command line's side of honest outputs (`weir_io::output` does the
//! work): clashing names refused up front, files that appear only when a
//! command succeeds, and every print that can fail returning the failure
//! instead of panicking.

use crate::cli::TableArgs;
use crate::counting::counted;
use crate::Failure;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use weir_io::output::{self, Endpoint, OutputError, Pending};

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

/// One output being written: `w` takes the bytes; the file appears under
/// its name only through [`commit`](Self::commit).
pub struct Output<W> {
    pub w: W,
    pending: Pending,
}

/// Opens an output (`-` is stdout), its writes counted for `--json`.
pub fn open(path: &Path) -> Result<Output<Box<dyn Write + Send>>, Failure> {
    let (sink, pending) = output::create(path).map_err(Failure::Output)?;
    Ok(Output {
        w: counted(sink),
        pending,
    })
}

impl<W> Output<W> {
    pub fn name(&self) -> &str {
        self.pending.name()
    }

    /// A failed write to this output.
    #[cold]
    pub fn fail(&self, e: io::Error) -> Failure {
        Failure::Output(OutputError::new(self.pending.name(), e))
    }

    /// Wraps the writer (a capture writer around the file, say); a failure
    /// is this output's.
    pub fn map<V>(self, f: impl FnOnce(W) -> io::Result<V>) -> Result<Output<V>, Failure> {
        let Output { w, pending } = self;
        match f(w) {
            Ok(w) => Ok(Output { w, pending }),
            Err(e) => Err(Failure::Output(OutputError::new(pending.name(), e))),
        }
    }

    /// Separates the writer from what makes its file appear, for a writer
    /// handed to someone else (the engine's logger).
    pub fn split(self) -> (W, Output<()>) {
        (
            self.w,
            Output {
                w: (),
                pending: self.pending,
            },
        )
    }

    /// Makes the file visible. Flush the writer first.
    pub fn commit(self) -> Result<(), Failure> {
        self.pending.commit().map_err(Failure::Output)
    }

    /// Gives the output up; says the file's name when one was left unmade.
    pub fn discard(self) -> Option<String> {
        self.pending
            .is_staged()
            .then(|| self.pending.name().to_owned())
    }
}

impl<W: Write> Output<W> {
    /// Writes `text` whole and flushes it.
    pub fn write_text(&mut self, text: &str) -> Result<(), Failure> {
        let res = self
            .w
            .write_all(text.as_bytes())
            .and_then(|()| self.w.flush());
        res.map_err(|e| self.fail(e))
    }
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
    let mut err = io::stderr().lock();
    err.write_all(line.as_bytes())
        .and_then(|()| err.write_all(b"\n"))
        .map_err(|e| Failure::Output(OutputError::new("stderr", e)))
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
