//! pcap and pcapng writers. Output is little-endian; each writer buffers
//! internally so one packet costs a memcpy, not a system call.

use std::io::{self, BufWriter, Write};

use weir_wire::{Direction, LinkType};

use crate::pcap::{MAGIC_MICRO, MAGIC_NANO};
use crate::pcapng::{
    BYTE_ORDER_MAGIC, EPB, EPB_FLAGS, IDB, IF_NAME, IF_TSRESOL, OPT_COMMENT, OPT_END, SHB,
    SHB_USERAPPL,
};
use crate::reader::Interface;

const OUT_BUF: usize = 1 << 20;
const NS: u64 = 1_000_000_000;

fn invalid(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn len_u32(n: usize) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| invalid("frame too large for a capture record"))
}

/// Writes a classic pcap file.
pub struct PcapWriter<W: Write> {
    w: BufWriter<W>,
    nanos: bool,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header. `nanos` selects nanosecond timestamps.
    pub fn new(w: W, link_type: LinkType, snaplen: u32, nanos: bool) -> io::Result<Self> {
        let mut w = BufWriter::with_capacity(OUT_BUF, w);
        let magic = if nanos { MAGIC_NANO } else { MAGIC_MICRO };
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&magic.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&link_type.0.to_le_bytes());
        w.write_all(&h)?;
        Ok(PcapWriter { w, nanos })
    }

    /// Writes one record; seconds past 2106 saturate.
    pub fn write_frame(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let incl = len_u32(data.len())?;
        let (sec, frac) = match u32::try_from(ts_ns / NS) {
            Ok(s) => (s, ts_ns % NS),
            Err(_) => (u32::MAX, NS - 1),
        };
        let frac = if self.nanos { frac } else { frac / 1_000 } as u32;
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&sec.to_le_bytes());
        h[4..8].copy_from_slice(&frac.to_le_bytes());
        h[8..12].copy_from_slice(&incl.to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.w.write_all(&h)?;
        self.w.write_all(data)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(self) -> io::Result<W> {
        self.w.into_inner().map_err(|e| e.into_error())
    }
}

/// Writes a pcapng file: one section, interfaces added explicitly.
pub struct PcapngWriter<W: Write> {
    w: BufWriter<W>,
    interfaces: u32,
    /// Scratch for one block, reused so writing allocates nothing per packet.
    block: Vec<u8>,
}

const PAD: [u8; 3] = [0; 3];

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// Longest option value; `opt_comment` longer than this is cut at a char
/// boundary rather than failing the packet.
const MAX_OPT: usize = 0xfffc;

impl<W: Write> PcapngWriter<W> {
    /// Writes a Section Header Block naming "weir" as the application.
    pub fn new(w: W) -> io::Result<Self> {
        let mut me = PcapngWriter {
            w: BufWriter::with_capacity(OUT_BUF, w),
            interfaces: 0,
            block: Vec::with_capacity(512),
        };
        me.begin(SHB);
        me.put_u32(BYTE_ORDER_MAGIC);
        me.put_u16(1);
        me.put_u16(0);
        me.block.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
        me.put_opt(SHB_USERAPPL, b"weir");
        me.end_opts();
        me.finish()?;
        Ok(me)
    }

    /// Writes an Interface Description Block with nanosecond timestamps and
    /// returns the interface id to pass to [`write_frame`](Self::write_frame).
    pub fn add_interface(&mut self, iface: &Interface) -> io::Result<u32> {
        let lt = u16::try_from(iface.link_type.0)
            .map_err(|_| invalid("link type does not fit pcapng's 16 bits"))?;
        self.begin(IDB);
        self.put_u16(lt);
        self.put_u16(0);
        self.put_u32(iface.snaplen);
        if let Some(name) = &iface.name {
            self.put_opt(IF_NAME, clip(name.as_bytes()));
        }
        self.put_opt(IF_TSRESOL, &[9]);
        self.end_opts();
        self.finish()?;
        self.interfaces += 1;
        Ok(self.interfaces - 1)
    }

    /// Number of interfaces written so far.
    pub fn interface_count(&self) -> u32 {
        self.interfaces
    }

    /// Writes an Enhanced Packet Block on interface `iface` (an id returned
    /// by [`add_interface`](Self::add_interface)). `epb_flags` is written when
    /// the direction is known, an `opt_comment` for each of `comments`, in
    /// order (Wireshark shows them all).
    pub fn write_frame<C: AsRef<[u8]>>(
        &mut self,
        iface: u32,
        ts_ns: u64,
        orig_len: u32,
        data: &[u8],
        direction: Direction,
        comments: impl IntoIterator<Item = C>,
    ) -> io::Result<()> {
        if iface >= self.interfaces {
            return Err(invalid("pcapng frame on an interface not yet added"));
        }
        let caplen = len_u32(data.len())?;
        self.begin(EPB);
        self.put_u32(iface);
        self.put_u32((ts_ns >> 32) as u32);
        self.put_u32(ts_ns as u32);
        self.put_u32(caplen);
        self.put_u32(orig_len);
        // Data is written straight from the caller's slice, not copied into
        // the scratch block; only the header and options go through it.
        let head = self.block.len();
        let data_padded = pad4(data.len());
        let flags = match direction {
            Direction::In => Some(1u32),
            Direction::Out => Some(2u32),
            Direction::Unknown => None,
        };
        if let Some(f) = flags {
            self.put_opt(EPB_FLAGS, &f.to_le_bytes());
        }
        for c in comments {
            self.put_opt(OPT_COMMENT, clip(c.as_ref()));
        }
        if self.block.len() > head {
            self.end_opts();
        }
        let total = len_u32(self.block.len() + data_padded + 4)?;
        self.block[4..8].copy_from_slice(&total.to_le_bytes());
        self.w.write_all(&self.block[..head])?;
        self.w.write_all(data)?;
        self.w.write_all(&PAD[..data_padded - data.len()])?;
        self.w.write_all(&self.block[head..])?;
        self.w.write_all(&total.to_le_bytes())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(self) -> io::Result<W> {
        self.w.into_inner().map_err(|e| e.into_error())
    }

    fn begin(&mut self, btype: u32) {
        self.block.clear();
        self.put_u32(btype);
        self.put_u32(0); // length, patched in finish
    }

    fn finish(&mut self) -> io::Result<()> {
        let total = len_u32(self.block.len() + 4)?;
        self.block[4..8].copy_from_slice(&total.to_le_bytes());
        self.put_u32(total);
        self.w.write_all(&self.block)
    }

    fn put_u16(&mut self, v: u16) {
        self.block.extend_from_slice(&v.to_le_bytes());
    }

    fn put_u32(&mut self, v: u32) {
        self.block.extend_from_slice(&v.to_le_bytes());
    }

    fn end_opts(&mut self) {
        self.put_u16(OPT_END);
        self.put_u16(0);
    }

    /// `value` must be at most `MAX_OPT` bytes (callers clip).
    fn put_opt(&mut self, code: u16, value: &[u8]) {
        debug_assert!(value.len() <= MAX_OPT);
        self.put_u16(code);
        self.put_u16(value.len() as u16);
        self.block.extend_from_slice(value);
        self.block
            .extend_from_slice(&PAD[..pad4(value.len()) - value.len()]);
    }
}

/// Cuts an option value to fit. The cut backs off (at most 3 bytes) to the
/// start of a UTF-8 character, so text is not split inside one.
fn clip(v: &[u8]) -> &[u8] {
    if v.len() <= MAX_OPT {
        return v;
    }
    let mut end = MAX_OPT;
    while end > MAX_OPT - 3 && v[end] & 0xc0 == 0x80 {
        end -= 1;
    }
    &v[..end]
}
