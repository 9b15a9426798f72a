//! Errors from reading captures. Every format error names the byte offset of
//! the record or block where the input went wrong, so a user can open the file
//! in a hex editor at that spot.

use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    #[error("cannot open {}: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("byte offset {offset}: read error: {source}")]
    Io {
        offset: u64,
        #[source]
        source: io::Error,
    },
    #[error("byte offset {offset}: not a pcap or pcapng file (magic {magic:#010x})")]
    BadMagic { offset: u64, magic: u32 },
    /// The input ended inside a header, record or block.
    #[error("byte offset {offset}: truncated {what}")]
    Truncated { offset: u64, what: &'static str },
    #[error("byte offset {offset}: record captured length {len} exceeds limit {limit}")]
    OversizeRecord { offset: u64, len: u32, limit: u32 },
    #[error("byte offset {offset}: bad pcapng block length {len}")]
    BadBlockLength { offset: u64, len: u32 },
    #[error("byte offset {offset}: pcapng block length {len} exceeds limit {limit}")]
    BlockTooLarge { offset: u64, len: u32, limit: u32 },
    #[error(
        "byte offset {offset}: pcapng block length {len} does not match trailing copy {trailer}"
    )]
    BlockLengthMismatch { offset: u64, len: u32, trailer: u32 },
    #[error("byte offset {offset}: bad pcapng byte-order magic {magic:#010x}")]
    BadByteOrder { offset: u64, magic: u32 },
    #[error("byte offset {offset}: unsupported pcapng version {major}.{minor}")]
    UnsupportedVersion { offset: u64, major: u16, minor: u16 },
    #[error("byte offset {offset}: packet refers to interface {id} but the section has {known}")]
    UnknownInterface { offset: u64, id: u32, known: u32 },
    /// A block whose fixed fields do not fit its length.
    #[error("byte offset {offset}: malformed pcapng {what}")]
    Malformed { offset: u64, what: &'static str },
}

impl CaptureError {
    /// Byte offset in the input of the record or block at fault; `None` when
    /// the input could not be opened at all.
    pub fn offset(&self) -> Option<u64> {
        use CaptureError::*;
        match *self {
            Open { .. } => None,
            Io { offset, .. }
            | BadMagic { offset, .. }
            | Truncated { offset, .. }
            | OversizeRecord { offset, .. }
            | BadBlockLength { offset, .. }
            | BlockTooLarge { offset, .. }
            | BlockLengthMismatch { offset, .. }
            | BadByteOrder { offset, .. }
            | UnsupportedVersion { offset, .. }
            | UnknownInterface { offset, .. }
            | Malformed { offset, .. } => Some(offset),
        }
    }
}
