//! Byte-order-aware integer loads. Callers check lengths first; these take
//! fixed-size arrays so a short slice is a caller bug caught by `get`.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endian {
    Little,
    Big,
}

impl Endian {
    #[inline]
    pub(crate) fn u16(self, b: &[u8], at: usize) -> u16 {
        let a = [byte(b, at), byte(b, at + 1)];
        match self {
            Endian::Little => u16::from_le_bytes(a),
            Endian::Big => u16::from_be_bytes(a),
        }
    }

    #[inline]
    pub(crate) fn u32(self, b: &[u8], at: usize) -> u32 {
        let a = [
            byte(b, at),
            byte(b, at + 1),
            byte(b, at + 2),
            byte(b, at + 3),
        ];
        match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        }
    }

    #[inline]
    pub(crate) fn u64(self, b: &[u8], at: usize) -> u64 {
        let (hi, lo) = match self {
            Endian::Little => (self.u32(b, at + 4), self.u32(b, at)),
            Endian::Big => (self.u32(b, at), self.u32(b, at + 4)),
        };
        (u64::from(hi) << 32) | u64::from(lo)
    }
}

/// Out-of-range reads yield 0 instead of panicking; every caller has already
/// checked the length, so this only matters if that check is ever wrong.
#[inline]
fn byte(b: &[u8], at: usize) -> u8 {
    debug_assert!(at < b.len(), "read past checked length");
    b.get(at).copied().unwrap_or(0)
}
