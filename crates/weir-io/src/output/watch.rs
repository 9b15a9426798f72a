//! Keeps the first error a writer returned, for writers whose user only
//! counts failures: the engine's logger never stops the filter for a
//! failed line, but the command must still say which output failed, and
//! how (a closed pipe is quiet, a full disk is not).

use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};

/// Shared view of a [`Watched`] writer's first error.
#[derive(Clone, Default)]
pub struct ErrorWatch(Arc<Mutex<Option<io::Error>>>);

impl ErrorWatch {
    /// The first error the writer returned, if any; taken once.
    pub fn take(&self) -> Option<io::Error> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    fn record(&self, e: &io::Error) {
        let mut first = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if first.is_none() {
            *first = Some(match e.raw_os_error() {
                Some(code) => io::Error::from_raw_os_error(code),
                None => io::Error::new(e.kind(), e.to_string()),
            });
        }
    }
}

/// A writer that reports its first error to an [`ErrorWatch`]. The lock is
/// taken only when a write fails.
pub struct Watched<W> {
    inner: W,
    watch: ErrorWatch,
}

impl<W> Watched<W> {
    /// `inner`, watched by a new [`ErrorWatch`].
    pub fn new(inner: W) -> (Watched<W>, ErrorWatch) {
        let watch = ErrorWatch::default();
        (Watched::reporting_to(inner, &watch), watch)
    }

    /// `inner`, reporting to an existing watch (several writers in turn,
    /// such as the loggers of engines a reload replaces, share one).
    pub fn reporting_to(inner: W, watch: &ErrorWatch) -> Watched<W> {
        Watched {
            inner,
            watch: watch.clone(),
        }
    }
}

impl<W: Write> Write for Watched<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).inspect_err(|e| self.watch.record(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().inspect_err(|e| self.watch.record(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Failing(io::ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(self.0.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn keeps_the_first_error_only() {
        let (mut w, watch) = Watched::new(Failing(io::ErrorKind::BrokenPipe));
        assert!(w.write_all(b"a").is_err());
        w.inner.0 = io::ErrorKind::StorageFull;
        assert!(w.write_all(b"b").is_err());
        assert_eq!(watch.take().unwrap().kind(), io::ErrorKind::BrokenPipe);
        assert!(watch.take().is_none());
        let (mut ok, watch) = Watched::new(Vec::new());
        ok.write_all(b"fine").unwrap();
        assert!(watch.take().is_none());
    }
}
