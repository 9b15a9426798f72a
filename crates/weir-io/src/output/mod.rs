//! Outputs that never clobber an input and never look complete when they
//! are not.
//!
//! - [`check_clashes`]: before anything is opened for writing, every output
//!   is compared with every input and with the other outputs by device and
//!   inode, so hard links, symlinks and `/dev/stdout` cannot hide that two
//!   names are one file.
//! - [`create`]: a regular file is written under a temporary name beside
//!   its target and renamed over it only by [`Pending::commit`]; dropped
//!   uncommitted, the temporary file is removed. stdout, pipes and devices
//!   are written directly.
//! - [`OutputError`]: a failed write with the name of the output, the one
//!   error type the command line maps to an exit code; [`ErrorWatch`] keeps
//!   the first error of a writer whose user only counts failures (the log).

mod clash;
mod staged;
mod watch;

use std::fmt;
use std::io;

pub use clash::{check_clashes, Clash, Endpoint};
pub use staged::{create, Pending, Sink};
pub use watch::{ErrorWatch, Watched};

/// A write to an output failed: which output, and why.
#[derive(Debug)]
pub struct OutputError {
    name: String,
    source: io::Error,
}

impl OutputError {
    /// `name` as the user gave it (a path, or `stdout` / `stderr`).
    pub fn new(name: impl Into<String>, source: io::Error) -> OutputError {
        OutputError {
            name: name.into(),
            source,
        }
    }

    /// The reader went away (`EPIPE`): a pipeline such as `| head` is done
    /// with us, which is not a failure.
    pub fn is_closed_pipe(&self) -> bool {
        self.source.kind() == io::ErrorKind::BrokenPipe
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// `pass.pcap: No space left on device`: the system's message without
/// Rust's ` (os error 28)` suffix, as other Unix tools print it.
impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.source.to_string();
        let text = match text.rfind(" (os error ") {
            Some(at) if text.ends_with(')') => &text[..at],
            _ => &text,
        };
        write!(f, "{}: {text}", self.name)
    }
}

impl std::error::Error for OutputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_the_output_without_the_errno() {
        let e = OutputError::new("pass.pcap", io::Error::from_raw_os_error(28));
        assert_eq!(e.to_string(), "pass.pcap: No space left on device");
        assert!(!e.is_closed_pipe());
        let pipe = OutputError::new("stdout", io::Error::from_raw_os_error(32));
        assert!(pipe.is_closed_pipe());
        let custom = OutputError::new("x", io::Error::other("odd (thing)"));
        assert_eq!(custom.to_string(), "x: odd (thing)");
    }
}
