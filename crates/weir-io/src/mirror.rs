//! `CaptureWriter`: an output that mirrors an input capture, so pass/drop
//! files look like the file they were split from.

use std::io::{self, Write};

use weir_wire::LinkType;

use crate::reader::{Format, Frame, Interface};
use crate::writer::{PcapWriter, PcapngWriter};

/// A writer that mirrors an input capture: same format (pcap keeps link type,
/// snaplen and micro/nano resolution; pcapng copies the input's interfaces,
/// written lazily the first time a frame on that interface arrives, in a
/// stable order).
///
/// "Stable order": when a frame on input interface `k` first arrives, every
/// input interface up to `k` not yet written is written, in input order. So
/// output interface ids equal input ids, in every output split from one input.
pub enum CaptureWriter<W: Write> {
    Pcap(PcapWriter<W>),
    Pcapng(PcapngWriter<W>),
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
                Ok(CaptureWriter::Pcap(PcapWriter::new(w, lt, snap, nanos)?))
            }
            Format::Pcapng => Self::pcapng_like(w),
        }
    }

    /// Always pcapng (for `--annotate`), interfaces copied lazily as above.
    pub fn pcapng_like(w: W) -> io::Result<Self> {
        Ok(CaptureWriter::Pcapng(PcapngWriter::new(w)?))
    }

    /// Writes `frame`; `iface_info` is the reader's interface list (see
    /// `CaptureReader::next_with_interfaces`). `comment` is dropped for pcap.
    pub fn write(
        &mut self,
        frame: &Frame<'_>,
        iface_info: &[Interface],
        comment: Option<&str>,
    ) -> io::Result<()> {
        match self {
            CaptureWriter::Pcap(w) => w.write_frame(frame.ts_ns, frame.orig_len, frame.data),
            CaptureWriter::Pcapng(w) => {
                add_interfaces_through(w, frame.iface, iface_info)?;
                w.write_frame(
                    frame.iface,
                    frame.ts_ns,
                    frame.orig_len,
                    frame.data,
                    frame.direction,
                    comment,
                )
            }
        }
    }

    /// Writes every input interface not written yet (pcapng), so an output
    /// that received few or no frames still describes all of them: readers
    /// such as libpcap refuse a pcapng without interface blocks. Call it
    /// once, at the end, with the reader's final interface list.
    pub fn finish_interfaces(&mut self, iface_info: &[Interface]) -> io::Result<()> {
        match self {
            CaptureWriter::Pcap(_) => Ok(()),
            CaptureWriter::Pcapng(w) => match iface_info.len().checked_sub(1) {
                Some(last) => add_interfaces_through(w, last as u32, iface_info),
                None => Ok(()),
            },
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            CaptureWriter::Pcap(w) => w.flush(),
            CaptureWriter::Pcapng(w) => w.flush(),
        }
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(self) -> io::Result<W> {
        match self {
            CaptureWriter::Pcap(w) => w.into_inner(),
            CaptureWriter::Pcapng(w) => w.into_inner(),
        }
    }
}

/// Adds interfaces in input order until interface `last` exists.
fn add_interfaces_through<W: Write>(
    w: &mut PcapngWriter<W>,
    last: u32,
    iface_info: &[Interface],
) -> io::Result<()> {
    while w.interface_count() <= last {
        let i = w.interface_count() as usize;
        let info = iface_info.get(i).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "frame refers to an interface missing from iface_info",
            )
        })?;
        w.add_interface(info)?;
    }
    Ok(())
}
