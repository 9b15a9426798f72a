//! `CaptureWriter`: an output that mirrors an input capture, so pass/drop
//! files look like the file they were split from.

use std::io::{self, Write};

use weir_wire::LinkType;

use crate::pcap::MAX_RECORD;
use crate::reader::{Format, Frame, Interface};
use crate::writer::{PcapWriter, PcapngWriter};

/// A writer that mirrors an input capture: same format (pcap keeps link type,
/// snaplen and micro/nano resolution; pcapng copies the input's interfaces,
/// written lazily the first time a frame on that interface arrives, in a
/// stable order, and each packet's comments).
///
/// "Stable order": when a frame on input interface `k` first arrives, every
/// input interface up to `k` not yet written is written, in input order. So
/// output interface ids equal input ids, in every output split from one input.
pub struct CaptureWriter<W: Write> {
    inner: Inner<W>,
}

enum Inner<W: Write> {
    Pcap(PcapWriter<W>),
    Pcapng {
        w: PcapngWriter<W>,
        /// The smallest snap length an interface block may declare: libpcap
        /// holds pcapng packets to their interface's snap length, but not
        /// pcap records to the file header's, so a pcap input's records may
        /// be longer than its header says.
        snaplen_floor: u32,
    },
}

impl<W: Write> CaptureWriter<W> {
    /// A writer in the input's `format`. For pcap the first interface (the
    /// input's file header) gives link type and snaplen; byte order is always
    /// little-endian.
    pub fn mirror(w: W, format: Format, interfaces: &[Interface]) -> io::Result<Self> {
        match format {
            Format::Pcap { nanos, .. } => {
                let (lt, snap) = interfaces
                    .first()
                    .map_or((LinkType(1), 262_144), |i| (i.link_type, i.snaplen));
                Ok(CaptureWriter {
                    inner: Inner::Pcap(PcapWriter::new(w, lt, snap, nanos)?),
                })
            }
            Format::Pcapng => Self::pcapng_like(w, format),
        }
    }

    /// Always pcapng (for `--annotate`), interfaces copied lazily as above
    /// from an input in `input` format. A pcap input's interface declares a
    /// snap length of at least 262,144 bytes (libpcap's largest record), so
    /// no packet is longer than its interface allows; libpcap refuses such
    /// a pcapng although it reads the pcap it came from.
    pub fn pcapng_like(w: W, input: Format) -> io::Result<Self> {
        let snaplen_floor = match input {
            Format::Pcap { .. } => MAX_RECORD,
            Format::Pcapng => 0,
        };
        Ok(CaptureWriter {
            inner: Inner::Pcapng {
                w: PcapngWriter::new(w)?,
                snaplen_floor,
            },
        })
    }

    /// Writes `frame`; `iface_info` is the reader's interface list (see
    /// `CaptureReader::next_with_interfaces`). pcapng keeps the frame's own
    /// comments and adds `comment` after them; pcap has no room for either.
    // Per packet: a call here cost the run loop about 25 instructions a
    // frame (callgrind); inlined, the pipeline's sinks cost what a
    // hand-written loop does.
    #[inline(always)]
    pub fn write(
        &mut self,
        frame: &Frame<'_>,
        iface_info: &[Interface],
        comment: Option<&str>,
    ) -> io::Result<()> {
        match &mut self.inner {
            Inner::Pcap(w) => w.write_frame(frame.ts_ns, frame.orig_len, frame.data),
            Inner::Pcapng { w, snaplen_floor } => {
                add_interfaces_through(w, frame.iface, iface_info, *snaplen_floor)?;
                let comments = frame.comments.chain(comment.map(str::as_bytes));
                w.write_frame(
                    frame.iface,
                    frame.ts_ns,
                    frame.orig_len,
                    frame.data,
                    frame.direction,
                    comments,
                )
            }
        }
    }

    /// Writes every input interface not written yet (pcapng), so an output
    /// that received few or no frames still describes all of them: readers
    /// such as libpcap refuse a pcapng without interface blocks. Call it
    /// once, at the end, with the reader's final interface list.
    pub fn finish_interfaces(&mut self, iface_info: &[Interface]) -> io::Result<()> {
        match &mut self.inner {
            Inner::Pcap(_) => Ok(()),
            Inner::Pcapng { w, snaplen_floor } => match iface_info.len().checked_sub(1) {
                Some(last) => add_interfaces_through(w, last as u32, iface_info, *snaplen_floor),
                None => Ok(()),
            },
        }
    }

    /// Whether the output describes its link layer: always for pcap; for
    /// pcapng once an interface block is written. libpcap refuses a pcapng
    /// without one, so an input that never described an interface leaves
    /// nothing worth keeping.
    pub fn has_interfaces(&self) -> bool {
        match &self.inner {
            Inner::Pcap(_) => true,
            Inner::Pcapng { w, .. } => w.interface_count() > 0,
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::Pcap(w) => w.flush(),
            Inner::Pcapng { w, .. } => w.flush(),
        }
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(self) -> io::Result<W> {
        match self.inner {
            Inner::Pcap(w) => w.into_inner(),
            Inner::Pcapng { w, .. } => w.into_inner(),
        }
    }
}

/// Adds interfaces in input order until interface `last` exists, each
/// declaring at least `snaplen_floor` (0, "no limit", stays 0).
fn add_interfaces_through<W: Write>(
    w: &mut PcapngWriter<W>,
    last: u32,
    iface_info: &[Interface],
    snaplen_floor: u32,
) -> io::Result<()> {
    while w.interface_count() <= last {
        let i = w.interface_count() as usize;
        let info = iface_info.get(i).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "frame refers to an interface missing from iface_info",
            )
        })?;
        let snaplen = match info.snaplen {
            0 => 0,
            s => s.max(snaplen_floor),
        };
        w.add_interface(&Interface {
            snaplen,
            ..info.clone()
        })?;
    }
    Ok(())
}
