//! One reusable read buffer over any `Read`.
//!
//! Reads go straight into the free tail of the buffer in large chunks, so a
//! file of small packets costs one `read` per megabyte, not one per packet.
//! Records are handed out as ranges into the buffer (zero-copy); when a record
//! does not fit after the current position the unread tail is moved to the
//! front, and the buffer grows only when a single record is larger than it,
//! which the callers bound.

use std::io::{self, Read};
use std::ops::Range;

/// Initial buffer size and the typical size of one `read` call.
pub(crate) const CHUNK: usize = 1 << 20;

pub(crate) struct Input<R> {
    r: R,
    buf: Vec<u8>,
    /// First unconsumed byte.
    start: usize,
    /// End of valid data.
    end: usize,
    /// Input offset of `buf[0]`.
    base: u64,
    eof: bool,
}

impl<R: Read> Input<R> {
    pub(crate) fn new(r: R) -> Self {
        Input {
            r,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            base: 0,
            eof: false,
        }
    }

    /// Input offset of the next unconsumed byte.
    #[inline]
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Makes at least `need` unconsumed bytes available unless the input ends
    /// first; returns how many are available (may be less than `need` only at
    /// end of input).
    // The check is inlined into each record's read; the refill, once per
    // megabyte, is not (callgrind: the call cost ~20 instructions a frame).
    #[inline]
    pub(crate) fn fill(&mut self, need: usize) -> io::Result<usize> {
        if self.end - self.start >= need {
            return Ok(self.end - self.start);
        }
        self.refill(need)
    }

    #[inline(never)]
    fn refill(&mut self, need: usize) -> io::Result<usize> {
        if self.start + need > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
            if need > self.buf.len() {
                self.buf.resize(need, 0);
            }
        }
        while self.end - self.start < need && !self.eof {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.end - self.start)
    }

    /// The unconsumed bytes currently buffered.
    #[inline]
    pub(crate) fn avail(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Consumes `n` bytes and returns their range in the buffer, valid until
    /// the next `fill`.
    #[inline]
    pub(crate) fn consume(&mut self, n: usize) -> Range<usize> {
        debug_assert!(n <= self.end - self.start);
        let r = self.start..self.start + n;
        self.start += n;
        r
    }

    #[inline]
    pub(crate) fn slice(&self, r: Range<usize>) -> &[u8] {
        &self.buf[r]
    }
}

impl<R> Input<R> {
    pub(crate) fn into_inner(self) -> R {
        self.r
    }
}
