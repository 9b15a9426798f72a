//! Where frames come from. A [`Source`] hands out one batch of frames at a
//! time, a chunk of up to [`CHUNK`] frames at once, each with what its
//! capture knows (timestamp, interface, direction, original length, link
//! type: a [`weir_io::Frame`]), and takes each frame's verdict back
//! (NFQUEUE sends it; the others ignore it). The file source is here; the
//! AF_PACKET ring and NFQUEUE adapters are in `ring` and `queue`.

use crate::place::Placement;
use crate::stop::Budget;
use std::io::Read;
use weir_engine::Verdict;
use weir_io::{CaptureError, CaptureReader, Format, Frame, Interface};
use weir_wire::{decode, Packet};

/// Most frames handed out at once: enough for the engine's batched walk
/// (`Engine::decide_batch`) to overlap its cache misses.
pub const CHUNK: usize = weir_io::MAX_CHUNK;

/// A stream of frame batches.
pub trait Source {
    /// Hands the next batch's frames, no more than `budget` grants, to
    /// `each` a chunk at a time (at most [`CHUNK`] frames), with the
    /// interfaces described so far (a frame's `iface` indexes them);
    /// `each` sets every frame's verdict in its third argument.
    /// `Ok(None)`: the input ended. `Ok(Some(0))`: nothing arrived this
    /// time (live sources wait a little for it). `Err`: the input failed,
    /// after every frame before the failure was handed out.
    fn next_batch<F>(&mut self, budget: &Budget, each: F) -> Result<Option<usize>, String>
    where
        F: FnMut(&[Frame<'_>], &[Interface], &mut [Verdict]);

    /// The interfaces described so far (a pcapng file may add more as it goes).
    fn interfaces(&self) -> &[Interface];

    /// The container format outputs of passed and dropped packets mirror.
    fn format(&self) -> Format;
}

/// Collects frames into chunks of [`CHUNK`] for a source whose frames
/// come one at a time, handing each chunk on as it fills; the verdicts
/// are not kept (AF_PACKET does not need them).
pub struct Chunker<'f> {
    frames: [Frame<'f>; CHUNK],
    len: usize,
    verdicts: [Verdict; CHUNK],
}

impl<'f> Chunker<'f> {
    pub fn new() -> Chunker<'f> {
        Chunker {
            frames: [Frame::EMPTY; CHUNK],
            len: 0,
            verdicts: [Verdict::Pass; CHUNK],
        }
    }

    /// Adds `frame`; a full chunk goes to `each`.
    #[inline]
    pub fn push<F>(&mut self, frame: Frame<'f>, ifaces: &[Interface], each: &mut F)
    where
        F: FnMut(&[Frame<'_>], &[Interface], &mut [Verdict]),
    {
        self.frames[self.len] = frame;
        self.len += 1;
        if self.len == CHUNK {
            self.flush(ifaces, each);
        }
    }

    /// Hands what is left to `each`.
    pub fn flush<F>(&mut self, ifaces: &[Interface], each: &mut F)
    where
        F: FnMut(&[Frame<'_>], &[Interface], &mut [Verdict]),
    {
        if self.len > 0 {
            each(
                &self.frames[..self.len],
                ifaces,
                &mut self.verdicts[..self.len],
            );
            self.len = 0;
        }
    }
}

impl Default for Chunker<'_> {
    fn default() -> Self {
        Chunker::new()
    }
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
        F: FnMut(&[Frame<'_>], &[Interface], &mut [Verdict]),
    {
        let want = budget.claim(FILE_BATCH);
        let mut n = 0u64;
        let mut verdicts = [Verdict::Pass; CHUNK];
        let result = loop {
            if n == want {
                break Ok(Some(n as usize));
            }
            // The frames borrow the reader until its next call.
            let mut frames = [Frame::EMPTY; CHUNK];
            let room = (want - n).min(CHUNK as u64) as usize;
            let chunk = self.reader.next_chunk(&mut frames[..room]);
            let got = chunk.len;
            if got > 0 {
                each(&frames[..got], chunk.interfaces, &mut verdicts[..got]);
                n += got as u64;
            }
            if let Some(e) = chunk.error {
                break Err(format!("{}: {e}", self.name));
            }
            if got == 0 {
                break Ok((n > 0).then_some(n as usize));
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
