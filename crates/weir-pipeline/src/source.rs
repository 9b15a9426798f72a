//! Where frames come from. A [`Source`] hands out one batch of frames at a
//! time, each with what its capture knows (timestamp, interface,
//! direction, original length, link type: a [`weir_io::Frame`]), and
//! takes each frame's verdict back (NFQUEUE sends it; the others ignore
//! it). The file source is here; the AF_PACKET ring and NFQUEUE adapters
//! are in `ring` and `queue`.

use crate::place::Placement;
use crate::stop::Budget;
use std::io::Read;
use weir_engine::Verdict;
use weir_io::{CaptureError, CaptureReader, Format, Frame, Interface};
use weir_wire::{decode, Packet};

/// A stream of frame batches.
pub trait Source {
    /// Hands the next batch's frames, no more than `budget` grants, to
    /// `each`, with the interfaces described so far (a frame's `iface`
    /// indexes them). `Ok(None)`: the input ended. `Ok(Some(0))`: nothing
    /// arrived this time (live sources wait a little for it). `Err`: the
    /// input failed, after every frame before the failure was handed out.
    fn next_batch<F>(&mut self, budget: &Budget, each: F) -> Result<Option<usize>, String>
    where
        F: FnMut(&Frame<'_>, &[Interface]) -> Verdict;

    /// The interfaces described so far (a pcapng file may add more as it goes).
    fn interfaces(&self) -> &[Interface];

    /// The container format outputs of passed and dropped packets mirror.
    fn format(&self) -> Format;
}

/// Frames read per batch from a file: enough to make the batch's lock and
/// bookkeeping vanish, few enough that a failed output stops soon.
pub const FILE_BATCH: u64 = 256;

/// Decodes and places up to `limit` frames of a capture into memory (for
/// `weir bench`, which then times only the engine).
pub fn decode_all<R: Read>(
    reader: &mut CaptureReader<R>,
    place: &Placement,
    limit: u64,
) -> Result<Vec<Packet>, CaptureError> {
    let mut packets = Vec::new();
    while (packets.len() as u64) < limit {
        let Some((frame, _)) = reader.next_with_interfaces()? else {
            break;
        };
        let mut p = decode(frame.link_type, frame.data, frame.orig_len);
        place.place(&mut p, &frame);
        packets.push(p);
    }
    Ok(packets)
}

/// A pcap or pcapng file (or stdin), read in order.
pub struct FileSource<R: Read> {
    reader: CaptureReader<R>,
    /// The input's name, for errors.
    name: String,
}

impl<R: Read> FileSource<R> {
    pub fn new(reader: CaptureReader<R>, name: String) -> FileSource<R> {
        FileSource { reader, name }
    }

    /// Bytes consumed so far (for a progress bar).
    pub fn bytes_read(&self) -> u64 {
        self.reader.bytes_read()
    }
}

impl<R: Read> Source for FileSource<R> {
    fn next_batch<F>(&mut self, budget: &Budget, mut each: F) -> Result<Option<usize>, String>
    where
        F: FnMut(&Frame<'_>, &[Interface]) -> Verdict,
    {
        let want = budget.claim(FILE_BATCH);
        let mut n = 0u64;
        let result = loop {
            if n == want {
                break Ok(Some(n as usize));
            }
            match self.reader.next_with_interfaces() {
                Ok(Some((frame, ifaces))) => {
                    each(&frame, ifaces);
                    n += 1;
                }
                Ok(None) if n == 0 => break Ok(None),
                Ok(None) => break Ok(Some(n as usize)),
                Err(e) => break Err(format!("{}: {e}", self.name)),
            }
        };
        budget.give_back(want - n);
        result
    }

    fn interfaces(&self) -> &[Interface] {
        self.reader.interfaces()
    }

    fn format(&self) -> Format {
        self.reader.format()
    }
}
