//! Log lines of several workers into one output. Each worker's logger
//! buffers its own lines; [`LineSink`] passes on only whole lines, under
//! the lock, so lines from different workers never interleave mid-line.
//! Locked once per logger buffer flush (64 KiB), not per line.

use crate::run::lock;
use crate::sink::Out;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

pub struct LineSink {
    shared: Arc<Mutex<Out>>,
    partial: Vec<u8>,
}

impl LineSink {
    /// A worker's end of `shared`.
    pub fn new(shared: &Arc<Mutex<Out>>) -> LineSink {
        LineSink {
            shared: Arc::clone(shared),
            partial: Vec::new(),
        }
    }
}

impl Write for LineSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match buf.iter().rposition(|&b| b == b'\n') {
            Some(end) => {
                let mut w = lock(&self.shared);
                w.write_all(&self.partial)?;
                w.write_all(&buf[..=end])?;
                self.partial.clear();
                self.partial.extend_from_slice(&buf[end + 1..]);
            }
            None => self.partial.extend_from_slice(buf),
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut w = lock(&self.shared);
        w.write_all(&self.partial)?;
        self.partial.clear();
        w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            lock(&self.0).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn only_whole_lines_pass_until_a_flush() {
        let bytes = Shared::default();
        let out: Arc<Mutex<Out>> = Arc::new(Mutex::new(Box::new(bytes.clone())));
        let (mut a, mut b) = (LineSink::new(&out), LineSink::new(&out));
        a.write_all(b"a1\na2-").unwrap();
        b.write_all(b"b1-").unwrap();
        assert_eq!(&*lock(&bytes.0), b"a1\n");
        b.write_all(b"end\n").unwrap();
        a.write_all(b"end\n").unwrap();
        assert_eq!(&*lock(&bytes.0), b"a1\nb1-end\na2-end\n");
        a.write_all(b"tail").unwrap();
        a.flush().unwrap();
        assert_eq!(&*lock(&bytes.0), b"a1\nb1-end\na2-end\ntail");
    }
}
