//! `CaptureReader`: detects pcap or pcapng from the first four bytes and hands
//! out frames that borrow the reader's one buffer.

use std::fs::File;
use std::io::{self, Read};
use std::ops::Range;
use std::path::Path;

use weir_wire::{Direction, LinkType};

use crate::endian::Endian;
use crate::error::CaptureError;
use crate::input::Input;
use crate::pcap::{self, PcapState};
use crate::pcapng::{self, NgState, Options, OPT_COMMENT};

/// Container format of a capture, as read or to be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Pcap { nanos: bool, big_endian: bool },
    Pcapng,
}

/// A capture interface: the pcap file header, or one pcapng IDB.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub link_type: LinkType,
    /// 0 in pcapng means "no limit".
    pub snaplen: u32,
    pub name: Option<String>,
}

/// One captured frame, borrowed from the reader's buffer until the next call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Nanoseconds since the epoch.
    pub ts_ns: u64,
    /// Global interface index: always 0 for pcap; for pcapng an index over
    /// the IDBs of all sections in file order (see `CaptureReader::interfaces`).
    pub iface: u32,
    pub link_type: LinkType,
    pub orig_len: u32,
    pub data: &'a [u8],
    /// From pcapng `epb_flags` bits 0-1; `Unknown` otherwise.
    pub direction: Direction,
    /// The packet's pcapng `opt_comment`s (none for pcap), which writers
    /// copy into pcapng outputs.
    pub comments: Comments<'a>,
    /// Byte offset of this record or block in the input.
    pub offset: u64,
}

/// The `opt_comment` values of one pcapng packet block, in file order, as
/// raw bytes (the format says UTF-8; a writer copies them unchanged).
/// Walking them costs nothing unless someone iterates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comments<'a> {
    options: Options<'a>,
}

impl Comments<'_> {
    /// No comments, as for every pcap record.
    pub const NONE: Comments<'static> = Comments {
        options: Options {
            endian: Endian::Little,
            rest: &[],
        },
    };
}

impl<'a> Iterator for Comments<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        self.options
            .find(|&(code, _)| code == OPT_COMMENT)
            .map(|(_, value)| value)
    }
}

/// A frame before its data range is turned into a slice.
pub(crate) struct Record {
    pub(crate) ts_ns: u64,
    pub(crate) iface: u32,
    pub(crate) link_type: LinkType,
    pub(crate) orig_len: u32,
    pub(crate) data: Range<usize>,
    pub(crate) direction: Direction,
    /// The block's options (empty for pcap), read in `endian`.
    pub(crate) options: Range<usize>,
    pub(crate) endian: Endian,
    pub(crate) offset: u64,
}

/// Frames [`CaptureReader::next_chunk`] hands out at most at once.
pub const MAX_CHUNK: usize = 64;

/// Bytes past which a chunk ends early.
pub const CHUNK_BYTES: u64 = 1 << 19;

/// What [`CaptureReader::next_chunk`] read.
#[derive(Debug)]
pub struct Chunk<'s> {
    /// Frames written to the front of the caller's slice.
    pub len: usize,
    /// The interfaces described so far, indexed by [`Frame::iface`].
    pub interfaces: &'s [Interface],
    /// The error that ended the chunk; later calls read nothing.
    pub error: Option<CaptureError>,
}

/// Where a chunk's record lies, as input offsets.
struct Held {
    data: Range<u64>,
    options: Range<u64>,
}

impl Frame<'_> {
    /// A frame of no bytes, to fill an array [`CaptureReader::next_chunk`] writes.
    pub const EMPTY: Frame<'static> = Frame {
        ts_ns: 0,
        iface: 0,
        link_type: LinkType::RAW,
        orig_len: 0,
        data: &[],
        direction: Direction::Unknown,
        comments: Comments::NONE,
        offset: 0,
    };
}

enum Kind {
    Pcap(PcapState, [Interface; 1]),
    Pcapng(NgState),
}

/// Streaming reader of pcap and pcapng files.
///
/// After an error, further calls to [`next_frame`](Self::next_frame) return
/// `Ok(None)`: the input past a corrupt length cannot be trusted.
pub struct CaptureReader<R: Read> {
    input: Input<R>,
    kind: Kind,
    failed: bool,
    /// The records of the chunk being read, kept for the next.
    held: Vec<Held>,
}

impl<R: Read> CaptureReader<R> {
    /// Reads and checks the pcap file header or the first pcapng SHB.
    pub fn new(r: R) -> Result<Self, CaptureError> {
        let mut input = Input::new(r);
        let n = input
            .fill(4)
            .map_err(|source| CaptureError::Io { offset: 0, source })?;
        if n < 4 {
            return Err(CaptureError::Truncated {
                offset: 0,
                what: "file header",
            });
        }
        let magic = Endian::Little.u32(input.avail(), 0);
        let kind = if magic == pcapng::SHB {
            let mut st = NgState::new();
            pcapng::step(&mut st, &mut input)?;
            Kind::Pcapng(st)
        } else if let Some((endian, nanos)) = pcap::classify_magic(magic) {
            let st = pcap::read_header(&mut input, endian, nanos)?;
            let iface = Interface {
                link_type: st.link_type,
                snaplen: st.snaplen,
                name: None,
            };
            Kind::Pcap(st, [iface])
        } else {
            return Err(CaptureError::BadMagic { offset: 0, magic });
        };
        Ok(CaptureReader {
            input,
            kind,
            failed: false,
            held: Vec::with_capacity(MAX_CHUNK),
        })
    }

    pub fn format(&self) -> Format {
        match &self.kind {
            Kind::Pcap(st, _) => Format::Pcap {
                nanos: st.nanos,
                big_endian: st.endian == Endian::Big,
            },
            Kind::Pcapng(_) => Format::Pcapng,
        }
    }

    /// Interfaces seen so far, indexed by [`Frame::iface`]. For pcap this is
    /// the one file header; for pcapng it grows as IDBs are read.
    pub fn interfaces(&self) -> &[Interface] {
        match &self.kind {
            Kind::Pcap(_, i) => i,
            Kind::Pcapng(st) => &st.interfaces,
        }
    }

    /// Bytes of input consumed so far: the offset just past the last record
    /// or block read.
    pub fn bytes_read(&self) -> u64 {
        self.input.offset()
    }

    /// The next frame, or `None` at the end of input.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        Ok(self.next_with_interfaces()?.map(|(f, _)| f))
    }

    /// Like [`next_frame`](Self::next_frame), also returning the interface
    /// list: a frame borrows the reader, so `interfaces()` cannot be called
    /// while it is alive, yet writers need both.
    pub fn next_with_interfaces(
        &mut self,
    ) -> Result<Option<(Frame<'_>, &[Interface])>, CaptureError> {
        if self.failed {
            return Ok(None);
        }
        let rec = match &mut self.kind {
            Kind::Pcap(st, _) => pcap::next_record(st, &mut self.input),
            Kind::Pcapng(st) => pcapng::next_record(st, &mut self.input),
        };
        let rec = match rec {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(None),
            Err(e) => {
                self.failed = true;
                return Err(e);
            }
        };
        let frame = Self::frame(
            &rec,
            self.input.slice(rec.data.clone()),
            self.input.slice(rec.options.clone()),
        );
        Ok(Some((frame, self.interfaces())))
    }

    /// Up to `frames.len()` (at most [`MAX_CHUNK`]) next frames at once,
    /// written to the front of `frames`, all borrowing the reader's buffer
    /// until the next call; for deciding a batch before writing it. A
    /// chunk ends early once its frames span [`CHUNK_BYTES`], so the
    /// buffer grows by at most that. An error ends the chunk after the
    /// frames before it; an empty chunk without error is the end of input.
    pub fn next_chunk<'s>(&'s mut self, frames: &mut [Frame<'s>]) -> Chunk<'s> {
        let max = frames.len().min(MAX_CHUNK);
        self.held.clear();
        let mut error = None;
        self.input.pin();
        while self.held.len() < max && !self.failed && self.input.pinned_len() < CHUNK_BYTES {
            let rec = match &mut self.kind {
                Kind::Pcap(st, _) => pcap::next_record(st, &mut self.input),
                Kind::Pcapng(st) => pcapng::next_record(st, &mut self.input),
            };
            match rec {
                Ok(Some(rec)) => {
                    // Written in place; the bytes are lent once the chunk is read.
                    frames[self.held.len()] = Self::frame(&rec, &[], &[]);
                    self.held.push(Held {
                        data: self.input.absolute(rec.data),
                        options: self.input.absolute(rec.options),
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    self.failed = true;
                    error = Some(e);
                }
            }
        }
        self.input.unpin();
        let this: &'s Self = self;
        for (f, h) in frames.iter_mut().zip(&this.held) {
            f.data = this.input.slice_absolute(&h.data);
            f.comments.options.rest = this.input.slice_absolute(&h.options);
        }
        Chunk {
            len: this.held.len(),
            interfaces: this.interfaces(),
            error,
        }
    }

    fn frame<'s>(rec: &Record, data: &'s [u8], options: &'s [u8]) -> Frame<'s> {
        Frame {
            ts_ns: rec.ts_ns,
            iface: rec.iface,
            link_type: rec.link_type,
            orig_len: rec.orig_len,
            data,
            direction: rec.direction,
            comments: Comments {
                options: Options {
                    endian: rec.endian,
                    rest: options,
                },
            },
            offset: rec.offset,
        }
    }

    /// Gives back the underlying reader; buffered unread bytes are lost.
    pub fn into_inner(self) -> R {
        self.input.into_inner()
    }
}

/// Opens a capture file; `-` reads standard input.
pub fn open_capture(path: &Path) -> Result<CaptureReader<Box<dyn Read + Send>>, CaptureError> {
    CaptureReader::new(open_input(path)?)
}

/// The byte source behind [`open_capture`], for callers that wrap it
/// (e.g. to count reads) before handing it to [`CaptureReader::new`].
pub fn open_input(path: &Path) -> Result<Box<dyn Read + Send>, CaptureError> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(io::stdin()));
    }
    let f = File::open(path).map_err(|source| CaptureError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Box::new(f))
}
