//! weir-io: capture files in and out.
//!
//! pcap and pcapng are read and written by hand rather than with the
//! `pcap-file` or `pcap-parser` crates, because weir needs three things they
//! do not give together: errors that name the byte offset of the corruption;
//! zero-copy reading into one reused, bounded buffer (read in 1 MiB chunks, no
//! allocation per packet) so file-to-file replay keeps up with tcpdump; and,
//! on write, EPB flags, per-interface names and per-packet comments.
//!
//! Reading: [`open_capture`] / [`CaptureReader::new`] detect the format;
//! [`CaptureReader::next_frame`] yields [`Frame`]s borrowed from the buffer.
//! Writing: [`PcapWriter`], [`PcapngWriter`], and [`CaptureWriter`], which
//! mirrors an input's format and interfaces. [`output`] keeps outputs
//! honest: no output overwrites an input, and a file appears only when it
//! is complete.
#![forbid(unsafe_code)]

mod endian;
mod error;
mod input;
mod mirror;
pub mod output;
mod pcap;
mod pcapng;
mod reader;
mod writer;

pub use error::CaptureError;
pub use mirror::CaptureWriter;
pub use reader::{
    open_capture, open_input, CaptureReader, Chunk, Comments, Format, Frame, Interface,
    CHUNK_BYTES, MAX_CHUNK,
};
pub use writer::{PcapWriter, PcapngWriter};
