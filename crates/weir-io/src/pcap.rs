//! Classic libpcap files: a 24-byte file header, then 16-byte record headers
//! each followed by the captured bytes.

use std::io::Read;

use weir_wire::{Direction, LinkType};

use crate::endian::Endian;
use crate::error::CaptureError;
use crate::input::Input;
use crate::reader::Record;

pub(crate) const MAGIC_MICRO: u32 = 0xa1b2_c3d4;
pub(crate) const MAGIC_NANO: u32 = 0xa1b2_3c4d;
pub(crate) const FILE_HEADER_LEN: usize = 24;
pub(crate) const RECORD_HEADER_LEN: usize = 16;

/// libpcap's MAXIMUM_SNAPLEN; also our hard cap on one record, so a corrupt
/// length cannot make the buffer grow without bound.
pub(crate) const MAX_RECORD: u32 = 262_144;

pub(crate) struct PcapState {
    pub(crate) endian: Endian,
    pub(crate) nanos: bool,
    pub(crate) snaplen: u32,
    pub(crate) link_type: LinkType,
}

/// Recognises the first four bytes (read as little-endian) of a pcap file.
pub(crate) fn classify_magic(le: u32) -> Option<(Endian, bool)> {
    match le {
        MAGIC_MICRO => Some((Endian::Little, false)),
        MAGIC_NANO => Some((Endian::Little, true)),
        m if m.swap_bytes() == MAGIC_MICRO => Some((Endian::Big, false)),
        m if m.swap_bytes() == MAGIC_NANO => Some((Endian::Big, true)),
        _ => None,
    }
}

/// Parses the file header; `input` is positioned at offset 0.
pub(crate) fn read_header<R: Read>(
    input: &mut Input<R>,
    endian: Endian,
    nanos: bool,
) -> Result<PcapState, CaptureError> {
    let offset = input.offset();
    let n = input
        .fill(FILE_HEADER_LEN)
        .map_err(|source| CaptureError::Io { offset, source })?;
    if n < FILE_HEADER_LEN {
        return Err(CaptureError::Truncated {
            offset,
            what: "pcap file header",
        });
    }
    let h = input.avail();
    let snaplen = endian.u32(h, 16);
    // The upper bits carry FCS length flags; the link type is the low 16.
    let link_type = LinkType(endian.u32(h, 20) & 0xffff);
    input.consume(FILE_HEADER_LEN);
    Ok(PcapState {
        endian,
        nanos,
        snaplen,
        link_type,
    })
}

// Per packet; left out of line in a large caller, it cost about 20
// instructions a frame (callgrind).
#[inline(always)]
pub(crate) fn next_record<R: Read>(
    st: &PcapState,
    input: &mut Input<R>,
) -> Result<Option<Record>, CaptureError> {
    let offset = input.offset();
    let io = |source| CaptureError::Io { offset, source };
    let n = input.fill(RECORD_HEADER_LEN).map_err(io)?;
    if n == 0 {
        return Ok(None);
    }
    let truncated = || CaptureError::Truncated {
        offset,
        what: "record",
    };
    // A copy of fixed size (or a short record at the end of the input), so
    // the four loads below need no bounds checks.
    let h: [u8; RECORD_HEADER_LEN] = match input.avail().first_chunk() {
        Some(h) => *h,
        None => return Err(truncated()),
    };
    let h = &h[..];
    let e = st.endian;
    let sec = u64::from(e.u32(h, 0));
    let frac = u64::from(e.u32(h, 4));
    let incl = e.u32(h, 8);
    let orig_len = e.u32(h, 12);
    // libpcap allows max(snaplen, 262144); our hard cap is also 256 KiB, so
    // the limit is the cap whatever the header's snaplen says.
    let limit = MAX_RECORD;
    if incl > limit {
        return Err(CaptureError::OversizeRecord {
            offset,
            len: incl,
            limit,
        });
    }
    let total = RECORD_HEADER_LEN + incl as usize;
    if input.fill(total).map_err(io)? < total {
        return Err(truncated());
    }
    let range = input.consume(total);
    let scale = if st.nanos { 1 } else { 1_000 };
    // u32 seconds * 1e9 + u32 * 1e3 stays far below u64::MAX.
    let ts_ns = sec * 1_000_000_000 + frac * scale;
    Ok(Some(Record {
        ts_ns,
        iface: 0,
        link_type: st.link_type,
        orig_len,
        data: range.start + RECORD_HEADER_LEN..range.end,
        direction: Direction::Unknown,
        options: range.end..range.end,
        endian: e,
        offset,
    }))
}
