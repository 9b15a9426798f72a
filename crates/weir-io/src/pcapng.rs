//! pcapng: a sequence of blocks `type, length, body, length`. Sections (SHB)
//! set the byte order and restart interface numbering; packets (EPB, SPB,
//! obsolete OPB) refer to interfaces (IDB) of their own section. Blocks we do
//! not need (NRB, ISB, DSB, custom, ...) are skipped by their length.

use std::io::Read;

use weir_wire::{Direction, LinkType};

use crate::endian::Endian;
use crate::error::CaptureError;
use crate::input::Input;
use crate::reader::{Interface, Record};

pub(crate) const SHB: u32 = 0x0a0d_0d0a;
pub(crate) const IDB: u32 = 1;
pub(crate) const OPB: u32 = 2;
pub(crate) const SPB: u32 = 3;
pub(crate) const EPB: u32 = 6;
pub(crate) const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

pub(crate) const OPT_END: u16 = 0;
pub(crate) const OPT_COMMENT: u16 = 1;
pub(crate) const IF_NAME: u16 = 2;
pub(crate) const IF_TSRESOL: u16 = 9;
pub(crate) const IF_TSOFFSET: u16 = 14;
pub(crate) const EPB_FLAGS: u16 = 2;
pub(crate) const SHB_USERAPPL: u16 = 4;

/// Largest block we accept; bounds the read buffer against corrupt lengths.
pub(crate) const MAX_BLOCK: u32 = 16 << 20;

/// How to turn an interface's timestamp units into nanoseconds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TsScale {
    Mul(u64),
    Div(u64),
    /// Units of 2^-n seconds.
    Pow2(u32),
}

impl TsScale {
    fn from_tsresol(v: u8) -> TsScale {
        let exp = u32::from(v & 0x7f);
        if v & 0x80 != 0 {
            TsScale::Pow2(exp)
        } else if exp <= 9 {
            TsScale::Mul(10u64.pow(9 - exp))
        } else {
            // Finer than 10^-28 s overflows the divisor: 0 stands for "every
            // timestamp rounds to 0 ns".
            TsScale::Div(10u64.checked_pow(exp - 9).unwrap_or(0))
        }
    }

    fn to_ns(self, units: u64) -> u64 {
        match self {
            TsScale::Mul(m) => units.saturating_mul(m),
            TsScale::Div(d) => units.checked_div(d).unwrap_or(0),
            TsScale::Pow2(n) => {
                let ns = (u128::from(units) * 1_000_000_000) >> n;
                u64::try_from(ns).unwrap_or(u64::MAX)
            }
        }
    }
}

/// Timestamp conversion of one interface, parallel to the public list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IfClock {
    scale: TsScale,
    offset_s: i64,
}

impl IfClock {
    fn ts_ns(self, units: u64) -> u64 {
        let ns = i128::from(self.scale.to_ns(units)) + i128::from(self.offset_s) * 1_000_000_000;
        ns.clamp(0, i128::from(u64::MAX)) as u64
    }
}

pub(crate) struct NgState {
    endian: Endian,
    /// Global index of this section's interface 0.
    section_base: usize,
    pub(crate) interfaces: Vec<Interface>,
    clocks: Vec<IfClock>,
}

impl NgState {
    pub(crate) fn new() -> Self {
        NgState {
            endian: Endian::Little,
            section_base: 0,
            interfaces: Vec::new(),
            clocks: Vec::new(),
        }
    }

    fn section_len(&self) -> u32 {
        (self.interfaces.len() - self.section_base) as u32
    }
}

/// The options of a block, as `(code, value)`, in file order. Stops
/// quietly at opt_endofopt or at an option that overruns the block:
/// options only refine a packet, so a damaged list must not cost the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Options<'a> {
    pub(crate) endian: Endian,
    pub(crate) rest: &'a [u8],
}

impl<'a> Iterator for Options<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let e = self.endian;
        if self.rest.len() < 4 {
            return None;
        }
        let code = e.u16(self.rest, 0);
        let len = usize::from(e.u16(self.rest, 2));
        let value = match self.rest.get(4..4 + len) {
            Some(v) if code != OPT_END => v,
            _ => {
                self.rest = &[];
                return None;
            }
        };
        self.rest = self.rest.get(4 + ((len + 3) & !3)..).unwrap_or(&[]);
        Some((code, value))
    }
}

/// Reads blocks until a packet or end of input.
pub(crate) fn next_record<R: Read>(
    st: &mut NgState,
    input: &mut Input<R>,
) -> Result<Option<Record>, CaptureError> {
    loop {
        match step(st, input)? {
            Step::Eof => return Ok(None),
            Step::Packet(r) => return Ok(Some(r)),
            Step::Other => {}
        }
    }
}

pub(crate) enum Step {
    Eof,
    Packet(Record),
    Other,
}

/// Reads and checks one block.
pub(crate) fn step<R: Read>(st: &mut NgState, input: &mut Input<R>) -> Result<Step, CaptureError> {
    let offset = input.offset();
    let io = |source| CaptureError::Io { offset, source };
    let n = input.fill(12).map_err(io)?;
    if n == 0 {
        return Ok(Step::Eof);
    }
    let truncated = || CaptureError::Truncated {
        offset,
        what: "block",
    };
    if n < 12 {
        return Err(truncated());
    }
    let head = input.avail();
    // The SHB type reads the same in both byte orders; its byte-order
    // magic decides how to read everything after it, its own length too.
    let btype = st.endian.u32(head, 0);
    if btype == SHB {
        st.endian = match Endian::Little.u32(head, 8) {
            BYTE_ORDER_MAGIC => Endian::Little,
            m if m.swap_bytes() == BYTE_ORDER_MAGIC => Endian::Big,
            magic => return Err(CaptureError::BadByteOrder { offset, magic }),
        };
    }
    let e = st.endian;
    let len = e.u32(head, 4);
    let min = if btype == SHB { 28 } else { 12 };
    if len < min || len & 3 != 0 {
        return Err(CaptureError::BadBlockLength { offset, len });
    }
    if len > MAX_BLOCK {
        return Err(CaptureError::BlockTooLarge {
            offset,
            len,
            limit: MAX_BLOCK,
        });
    }
    let total = len as usize;
    if input.fill(total).map_err(io)? < total {
        return Err(truncated());
    }
    let trailer = e.u32(input.avail(), total - 4);
    if trailer != len {
        return Err(CaptureError::BlockLengthMismatch {
            offset,
            len,
            trailer,
        });
    }
    let block = input.consume(total);
    let body_start = block.start + 8;
    let body_end = block.end - 4;
    let body = input.slice(body_start..body_end);
    let malformed = |what| CaptureError::Malformed { offset, what };

    match btype {
        SHB => {
            let major = e.u16(body, 4);
            let minor = e.u16(body, 6);
            if major != 1 {
                return Err(CaptureError::UnsupportedVersion {
                    offset,
                    major,
                    minor,
                });
            }
            st.section_base = st.interfaces.len();
        }
        IDB => {
            if body.len() < 8 {
                return Err(malformed("interface description block"));
            }
            let mut iface = Interface {
                link_type: LinkType(u32::from(e.u16(body, 0))),
                snaplen: e.u32(body, 4),
                name: None,
            };
            let mut clock = IfClock {
                scale: TsScale::Mul(1_000),
                offset_s: 0,
            };
            let options = Options {
                endian: e,
                rest: &body[8..],
            };
            for (code, v) in options {
                match (code, v.len()) {
                    (IF_NAME, _) => {
                        let name = v.split(|&b| b == 0).next().unwrap_or(v);
                        iface.name = Some(String::from_utf8_lossy(name).into_owned());
                    }
                    (IF_TSRESOL, 1) => clock.scale = TsScale::from_tsresol(v[0]),
                    (IF_TSOFFSET, 8) => clock.offset_s = e.u64(v, 0) as i64,
                    _ => {}
                }
            }
            st.interfaces.push(iface);
            st.clocks.push(clock);
        }
        EPB | OPB => {
            // EPB: if_id u32; OPB: if_id u16, drops u16. Then ts hi, ts lo,
            // captured length, original length, data, options.
            if body.len() < 20 {
                return Err(malformed("packet block"));
            }
            let id = if btype == EPB {
                e.u32(body, 0)
            } else {
                u32::from(e.u16(body, 0))
            };
            let units = (u64::from(e.u32(body, 4)) << 32) | u64::from(e.u32(body, 8));
            let caplen = e.u32(body, 12);
            let orig_len = e.u32(body, 16);
            let room = body.len() - 20;
            if caplen as usize > room {
                return Err(malformed("packet block (captured length exceeds block)"));
            }
            let iface = known_iface(st, id, offset)?;
            // Options start after the padded data; a block too short for
            // the padding simply has none.
            let opts_at = (20 + ((caplen as usize + 3) & !3)).min(body.len());
            let mut direction = Direction::Unknown;
            let options = Options {
                endian: e,
                rest: &body[opts_at..],
            };
            // epb_flags is read here; comments later, only by writers
            // that copy them (`Frame::comments`).
            let flags = options.filter(|&(code, v)| code == EPB_FLAGS && v.len() == 4);
            if let Some((_, v)) = flags.last() {
                direction = match e.u32(v, 0) & 3 {
                    1 => Direction::In,
                    2 => Direction::Out,
                    _ => Direction::Unknown,
                };
            }
            let data = body_start + 20..body_start + 20 + caplen as usize;
            return Ok(Step::Packet(Record {
                ts_ns: st.clocks[iface].ts_ns(units),
                iface: iface as u32,
                link_type: st.interfaces[iface].link_type,
                orig_len,
                data,
                direction,
                options: body_start + opts_at..body_end,
                endian: e,
                offset,
            }));
        }
        SPB => {
            if body.len() < 4 {
                return Err(malformed("simple packet block"));
            }
            let iface = known_iface(st, 0, offset)?;
            let orig_len = e.u32(body, 0);
            let snaplen = match st.interfaces[iface].snaplen {
                0 => u32::MAX,
                s => s,
            };
            let caplen = orig_len.min(snaplen).min((body.len() - 4) as u32);
            let data = body_start + 4..body_start + 4 + caplen as usize;
            return Ok(Step::Packet(Record {
                ts_ns: 0,
                iface: iface as u32,
                link_type: st.interfaces[iface].link_type,
                orig_len,
                data,
                direction: Direction::Unknown,
                options: body_end..body_end,
                endian: e,
                offset,
            }));
        }
        _ => {}
    }
    Ok(Step::Other)
}

/// Maps a section-local interface id to the global index.
fn known_iface(st: &NgState, id: u32, offset: u64) -> Result<usize, CaptureError> {
    if id >= st.section_len() {
        return Err(CaptureError::UnknownInterface {
            offset,
            id,
            known: st.section_len(),
        });
    }
    Ok(st.section_base + id as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsresol_conversions() {
        let ns = |v: u8, units: u64| TsScale::from_tsresol(v).to_ns(units);
        assert_eq!(ns(6, 5), 5_000);
        assert_eq!(ns(9, 5), 5);
        assert_eq!(ns(0, 2), 2_000_000_000);
        assert_eq!(ns(12, 5_000), 5);
        assert_eq!(ns(127, u64::MAX), 0);
        assert_eq!(ns(0x80 | 10, 1024), 1_000_000_000);
        assert_eq!(ns(0x80, u64::MAX), u64::MAX); // saturates
        assert_eq!(ns(0x80 | 127, u64::MAX), 0);
        assert_eq!(ns(0, u64::MAX), u64::MAX);
    }

    #[test]
    fn tsoffset_saturates_both_ways() {
        let c = |offset_s| IfClock {
            scale: TsScale::Mul(1),
            offset_s,
        };
        assert_eq!(c(-5).ts_ns(1), 0);
        assert_eq!(c(i64::MAX).ts_ns(1), u64::MAX);
        assert_eq!(c(2).ts_ns(1), 2_000_000_001);
    }
}
