//! The probe payload: a 32-byte, versioned header at the front of every
//! datagram, then padding up to the probe size.
//!
//! ```text
//!  0..3   magic "WPR"
//!  3      version (1)
//!  4      flags: ECHO, KERNEL_RX, FILTERED (server sets them)
//!  5      position in the train (0 = first)
//!  6..8   train length
//!  8..12  sequence number (client's)
//! 12..16  engine time, ns (server, with a filter; saturates)
//! 16..24  kernel software receive time at the server, ns since the epoch
//! 24..32  server's CLOCK_REALTIME right after recvmsg, ns since the epoch
//! ```
//!
//! All integers are big-endian. Datagrams come from the network, so
//! [`parse`] checks everything once and returns a reason, never panics.

/// Bytes of the header, and so the smallest probe.
pub const HEADER_LEN: usize = 32;
pub const MAGIC: [u8; 3] = *b"WPR";
pub const VERSION: u8 = 1;

/// Bits of [`Header::flags`].
pub mod flags {
    /// Set by the server on the echo.
    pub const ECHO: u8 = 1;
    /// The server had a kernel receive timestamp (`kernel_rx_ns` is valid).
    pub const KERNEL_RX: u8 = 2;
    /// The server ran the datagram through a filter (`engine_ns` is valid).
    pub const FILTERED: u8 = 4;
    /// Every bit a version-1 header may carry.
    pub const ALL: u8 = ECHO | KERNEL_RX | FILTERED;
}

/// The decoded header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub flags: u8,
    pub pos: u8,
    pub train_len: u16,
    pub seq: u32,
    pub engine_ns: u32,
    pub kernel_rx_ns: u64,
    pub user_rx_ns: u64,
}

/// Why a datagram is not a probe. A small `Copy` reason indexing a counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Bad {
    /// Fewer than [`HEADER_LEN`] bytes.
    Short = 0,
    /// The first three bytes are not the magic.
    Magic,
    /// A version this build does not read.
    Version,
    /// Flag bits that are unknown, or wrong for the direction (a request
    /// with ECHO set, an echo without it).
    Flags,
    /// Position not inside the train, or a train of length 0.
    Train,
    /// Longer than the receive buffer: the kernel cut it.
    Truncated,
}

impl Bad {
    pub const COUNT: usize = 6;
    pub const ALL: [Bad; Bad::COUNT] = [
        Bad::Short,
        Bad::Magic,
        Bad::Version,
        Bad::Flags,
        Bad::Train,
        Bad::Truncated,
    ];

    /// Stable name for summaries and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Bad::Short => "short",
            Bad::Magic => "bad-magic",
            Bad::Version => "bad-version",
            Bad::Flags => "bad-flags",
            Bad::Train => "bad-train",
            Bad::Truncated => "truncated",
        }
    }
}

/// Which side is reading: requests go to the server, echoes to the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Request,
    Echo,
}

#[inline]
fn be_u16(b: &[u8], at: usize) -> u16 {
    let mut a = [0u8; 2];
    a.copy_from_slice(&b[at..at + 2]);
    u16::from_be_bytes(a)
}

#[inline]
fn be_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(a)
}

#[inline]
fn be_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

/// Checks and decodes the header of an untrusted datagram.
#[inline]
pub fn parse(buf: &[u8], kind: Kind) -> Result<Header, Bad> {
    // One length check; after it every fixed offset below is in range.
    let Some(b) = buf.get(..HEADER_LEN) else {
        return Err(Bad::Short);
    };
    if b[..3] != MAGIC {
        return Err(Bad::Magic);
    }
    if b[3] != VERSION {
        return Err(Bad::Version);
    }
    let h = Header {
        flags: b[4],
        pos: b[5],
        train_len: be_u16(b, 6),
        seq: be_u32(b, 8),
        engine_ns: be_u32(b, 12),
        kernel_rx_ns: be_u64(b, 16),
        user_rx_ns: be_u64(b, 24),
    };
    let ok_flags = match kind {
        Kind::Request => h.flags == 0,
        Kind::Echo => h.flags & !flags::ALL == 0 && h.flags & flags::ECHO != 0,
    };
    if !ok_flags {
        return Err(Bad::Flags);
    }
    if h.train_len == 0 || u16::from(h.pos) >= h.train_len {
        return Err(Bad::Train);
    }
    Ok(h)
}

/// Writes a request header (flags and server fields zero) at the front of
/// `buf`, which must hold at least [`HEADER_LEN`] bytes.
pub fn emit_request(buf: &mut [u8], seq: u32, pos: u8, train_len: u16) {
    let h = Header {
        pos,
        train_len,
        seq,
        ..Header::default()
    };
    emit(buf, &h);
}

/// Writes `h` at the front of `buf` (at least [`HEADER_LEN`] bytes).
#[inline]
pub fn emit(buf: &mut [u8], h: &Header) {
    let b = &mut buf[..HEADER_LEN];
    b[..3].copy_from_slice(&MAGIC);
    b[3] = VERSION;
    b[4] = h.flags;
    b[5] = h.pos;
    b[6..8].copy_from_slice(&h.train_len.to_be_bytes());
    b[8..12].copy_from_slice(&h.seq.to_be_bytes());
    b[12..16].copy_from_slice(&h.engine_ns.to_be_bytes());
    b[16..24].copy_from_slice(&h.kernel_rx_ns.to_be_bytes());
    b[24..32].copy_from_slice(&h.user_rx_ns.to_be_bytes());
}

/// Turns a parsed request into the echo in place: sets the server's flags
/// and times. `buf` was parsed, so it holds a header.
#[inline]
pub fn stamp_echo(
    buf: &mut [u8],
    kernel_rx_ns: Option<u64>,
    user_rx_ns: u64,
    engine_ns: Option<u32>,
) {
    let b = &mut buf[..HEADER_LEN];
    let mut f = flags::ECHO;
    if kernel_rx_ns.is_some() {
        f |= flags::KERNEL_RX;
    }
    if engine_ns.is_some() {
        f |= flags::FILTERED;
    }
    b[4] = f;
    b[12..16].copy_from_slice(&engine_ns.unwrap_or(0).to_be_bytes());
    b[16..24].copy_from_slice(&kernel_rx_ns.unwrap_or(0).to_be_bytes());
    b[24..32].copy_from_slice(&user_rx_ns.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQ: [u8; 32] = [
        b'W', b'P', b'R', 1, 0, 2, 0, 5, 0, 0, 1, 0, //
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn parses_a_request_vector() {
        let h = parse(&REQ, Kind::Request).unwrap();
        assert_eq!((h.pos, h.train_len, h.seq, h.flags), (2, 5, 256, 0));
        assert_eq!(parse(&REQ, Kind::Echo), Err(Bad::Flags));
    }

    #[test]
    fn round_trips_through_the_echo() {
        let mut buf = [0xAAu8; 64];
        emit_request(&mut buf, 77, 0, 3);
        assert_eq!(buf[HEADER_LEN], 0xAA, "padding untouched");
        stamp_echo(&mut buf, Some(1_000), 2_000, Some(55));
        let h = parse(&buf, Kind::Echo).unwrap();
        assert_eq!(h.seq, 77);
        assert_eq!(h.flags, flags::ECHO | flags::KERNEL_RX | flags::FILTERED);
        assert_eq!(
            (h.kernel_rx_ns, h.user_rx_ns, h.engine_ns),
            (1_000, 2_000, 55)
        );
        assert_eq!(parse(&buf, Kind::Request), Err(Bad::Flags));
    }

    #[test]
    fn rejects_every_bad_shape() {
        for n in 0..HEADER_LEN {
            assert_eq!(parse(&REQ[..n], Kind::Request), Err(Bad::Short));
        }
        let mut b = REQ;
        b[0] = b'X';
        assert_eq!(parse(&b, Kind::Request), Err(Bad::Magic));
        let mut b = REQ;
        b[3] = 2;
        assert_eq!(parse(&b, Kind::Request), Err(Bad::Version));
        let mut b = REQ;
        b[4] = flags::ECHO | 0x80;
        assert_eq!(parse(&b, Kind::Echo), Err(Bad::Flags));
        let mut b = REQ;
        b[5] = 5;
        assert_eq!(parse(&b, Kind::Request), Err(Bad::Train));
        let mut b = REQ;
        b[7] = 0;
        b[5] = 0;
        assert_eq!(parse(&b, Kind::Request), Err(Bad::Train));
    }

    #[test]
    fn never_panics_on_any_prefix_of_noise() {
        let mut x: u32 = 0x1234_5678;
        let mut buf = [0u8; 80];
        for _ in 0..20_000 {
            for byte in buf.iter_mut() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *byte = x as u8;
            }
            if x & 1 == 0 {
                buf[..4].copy_from_slice(b"WPR\x01");
            }
            let n = (x >> 8) as usize % buf.len();
            let _ = parse(&buf[..n], Kind::Request);
            let _ = parse(&buf[..n], Kind::Echo);
        }
    }
}
