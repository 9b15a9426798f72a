//! One output being written: the writer, and what makes its file appear
//! ([`Pending`]) only when the run that wrote it succeeded.

use std::io::{self, Write};
use weir_io::output::{OutputError, Pending};

/// An output: `w` takes the bytes; the file appears under its name only
/// through [`commit`](Self::commit).
pub struct Output<W> {
    pub w: W,
    pending: Pending,
}

impl<W> Output<W> {
    pub fn new(w: W, pending: Pending) -> Output<W> {
        Output { w, pending }
    }

    pub fn name(&self) -> &str {
        self.pending.name()
    }

    /// A failed write to this output.
    #[cold]
    pub fn fail(&self, e: io::Error) -> OutputError {
        OutputError::new(self.pending.name(), e)
    }

    /// Wraps the writer (a capture writer around the file, say); a failure
    /// is this output's.
    pub fn map<V>(self, f: impl FnOnce(W) -> io::Result<V>) -> Result<Output<V>, OutputError> {
        let Output { w, pending } = self;
        match f(w) {
            Ok(w) => Ok(Output { w, pending }),
            Err(e) => Err(OutputError::new(pending.name(), e)),
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
    pub fn commit(self) -> Result<(), OutputError> {
        self.pending.commit()
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
    pub fn write_text(&mut self, text: &str) -> Result<(), OutputError> {
        let res = self
            .w
            .write_all(text.as_bytes())
            .and_then(|()| self.w.flush());
        res.map_err(|e| self.fail(e))
    }
}
