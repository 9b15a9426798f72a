//! System calls `weir run` makes for its data, counted where it makes them.
//!
//! [`CountingRead`] wraps the capture reader's source and [`CountingWrite`]
//! each output's sink, *below* every buffer, so one `read`/`write` call on
//! them is one system call for files (for stdin/stdout/stderr it is one call
//! into Rust's handle, which may split or merge). The totals go into the
//! `--json` summary as `"syscalls": {"reads", "writes"}`; a test checks them
//! against `strace -f -c -e trace=read,write`. What is not counted here:
//! start-up reads (ruleset, /etc/protocols, /etc/services, the runtime's
//! /proc reads) and the report printed at the end.
//!
//! Process-wide counters, because a run has one reader and a handful of
//! writers; relaxed atomics, touched once per 64 KiB–1 MiB of I/O.

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use weir_io::{CaptureError, CaptureReader};

static READS: AtomicU64 = AtomicU64::new(0);
static WRITES: AtomicU64 = AtomicU64::new(0);

/// Reads and writes counted so far.
pub fn counts() -> (u64, u64) {
    (READS.load(Relaxed), WRITES.load(Relaxed))
}

pub struct CountingRead<R>(pub R);

impl<R: Read> Read for CountingRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        READS.fetch_add(1, Relaxed);
        self.0.read(buf)
    }
}

pub struct CountingWrite<W>(pub W);

impl<W: Write> Write for CountingWrite<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        WRITES.fetch_add(1, Relaxed);
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Boxes `w` behind a write counter.
pub fn counted<W: Write + Send + 'static>(w: W) -> Box<dyn Write + Send> {
    Box::new(CountingWrite(w))
}

/// As [`weir_io::open_capture`], with the source's reads counted.
pub fn open_capture(path: &Path) -> Result<CaptureReader<Box<dyn Read + Send>>, CaptureError> {
    CaptureReader::new(Box::new(CountingRead(weir_io::open_input(path)?)))
}

/// What the counts in the JSON summary's `"syscalls"` cover.
pub const COUNTED: &str =
    "capture reads and output writes, below their buffers; not start-up reads or this report";
