//! Prefixes and the text of one table entry: `PREFIX [VALUE]`.
//!
//! The same functions parse a line of a table file and the operands of a
//! ruleset's `table NAME add PREFIX [VALUE]`, so both accept exactly the
//! same spellings.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// An IPv4 or IPv6 prefix, host bits always zero.
///
/// IPv4 prefixes are kept in their own 32-bit space (`len` ≤ 32), not in the
/// IPv4-mapped form: a table keeps the families apart, as ipfw's radix
/// tables do. [`Prefix::mapped`] gives the `u128` form that
/// `weir_wire::Packet` uses for addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Prefix {
    V4 { addr: u32, len: u8 },
    V6 { addr: u128, len: u8 },
}

impl Prefix {
    /// An IPv4 prefix; host bits beyond `len` are cleared (as ipfw does).
    /// `None` if `len` > 32.
    pub fn v4(addr: u32, len: u8) -> Option<Prefix> {
        (len <= 32).then(|| Prefix::V4 {
            addr: addr & mask32(len),
            len,
        })
    }

    /// An IPv6 prefix; host bits beyond `len` are cleared. `None` if `len` > 128.
    pub fn v6(addr: u128, len: u8) -> Option<Prefix> {
        (len <= 128).then(|| Prefix::V6 {
            addr: addr & mask128(len),
            len,
        })
    }

    /// Prefix length in the prefix's own family (0–32 or 0–128).
    pub fn prefix_len(self) -> u8 {
        match self {
            Prefix::V4 { len, .. } | Prefix::V6 { len, .. } => len,
        }
    }

    pub fn is_v4(self) -> bool {
        matches!(self, Prefix::V4 { .. })
    }

    /// The prefix in `weir_wire`'s `u128` address space: an IPv4 prefix
    /// `a.b.c.d/n` becomes `::ffff:a.b.c.d/(96 + n)`.
    pub fn mapped(self) -> (u128, u8) {
        match self {
            Prefix::V4 { addr, len } => ((0xffff_u128 << 32) | addr as u128, 96 + len),
            Prefix::V6 { addr, len } => (addr, len),
        }
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Prefix::V4 { addr, len } => write!(f, "{}/{len}", Ipv4Addr::from(addr)),
            Prefix::V6 { addr, len } => write!(f, "{}/{len}", Ipv6Addr::from(addr)),
        }
    }
}

/// The netmask of a `len`-bit IPv4 prefix.
pub(crate) fn mask32(len: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(len.min(32)))
        .unwrap_or(0)
}

/// The netmask of a `len`-bit IPv6 prefix.
pub(crate) fn mask128(len: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(len.min(128)))
        .unwrap_or(0)
}

/// One table entry: a prefix and its value (0 when none is given, as in ipfw).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    pub prefix: Prefix,
    pub value: u32,
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.prefix, self.value)
    }
}

/// Why a token is not a prefix or a value. `offset` is the byte offset in
/// the text that was given to the parsing function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenError {
    pub offset: usize,
    pub message: String,
}

impl TokenError {
    fn at(offset: usize, message: impl Into<String>) -> TokenError {
        TokenError {
            offset,
            message: message.into(),
        }
    }

    fn shifted(mut self, by: usize) -> TokenError {
        self.offset += by;
        self
    }
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Parses `ADDR` or `ADDR/LEN`, IPv4 or IPv6. A plain address is a host
/// prefix (/32 or /128). Host bits set beyond `LEN` are cleared silently,
/// as ipfw's kernel does (`10.1.2.3/8` is `10.0.0.0/8`). `LEN` is 1–3
/// decimal digits. IPv4 uses the strict dotted quad of `std::net` (no
/// leading zeros, no shorthand forms).
pub fn parse_prefix(token: &str) -> Result<Prefix, TokenError> {
    let (addr_text, len_text) = match token.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (token, None),
    };
    let len_offset = addr_text.len() + 1;
    let parse_len = |max: u8| -> Result<u8, TokenError> {
        let Some(text) = len_text else { return Ok(max) };
        if text.is_empty() || text.len() > 3 || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(TokenError::at(
                len_offset,
                format!("bad prefix length `{text}`: expected 0-{max}"),
            ));
        }
        match text.parse::<u16>() {
            Ok(n) if n <= u16::from(max) => Ok(n as u8),
            _ => Err(TokenError::at(
                len_offset,
                format!("prefix length {text} is out of range 0-{max}"),
            )),
        }
    };
    if let Ok(a) = addr_text.parse::<Ipv4Addr>() {
        let len = parse_len(32)?;
        return Ok(Prefix::v4(u32::from(a), len).expect("len checked"));
    }
    if let Ok(a) = addr_text.parse::<Ipv6Addr>() {
        let len = parse_len(128)?;
        return Ok(Prefix::v6(u128::from(a), len).expect("len checked"));
    }
    let shown: String = addr_text.chars().take(64).collect();
    Err(TokenError::at(
        0,
        format!("`{shown}` is not an IPv4 or IPv6 address"),
    ))
}

/// Parses a table value: a decimal `u32` (0–4294967295), digits only.
pub fn parse_value(token: &str) -> Result<u32, TokenError> {
    if token.is_empty() || token.len() > 10 || !token.bytes().all(|b| b.is_ascii_digit()) {
        let shown: String = token.chars().take(32).collect();
        return Err(TokenError::at(
            0,
            format!("bad value `{shown}`: expected a number 0-4294967295"),
        ));
    }
    token
        .parse::<u32>()
        .map_err(|_| TokenError::at(0, format!("value {token} is out of range 0-4294967295")))
}

/// Parses `PREFIX [VALUE]` (whitespace-separated, nothing else; no
/// comment). The value defaults to 0.
pub fn parse_entry(text: &str) -> Result<Entry, TokenError> {
    let mut tokens = tokens(text);
    let Some((at, prefix_text)) = tokens.next() else {
        return Err(TokenError::at(0, "expected PREFIX [VALUE]"));
    };
    let prefix = parse_prefix(prefix_text).map_err(|e| e.shifted(at))?;
    let value = match tokens.next() {
        Some((at, v)) => parse_value(v).map_err(|e| e.shifted(at))?,
        None => 0,
    };
    if let Some((at, extra)) = tokens.next() {
        let shown: String = extra.chars().take(32).collect();
        return Err(TokenError::at(
            at,
            format!("unexpected `{shown}`: an entry is PREFIX [VALUE]"),
        ));
    }
    Ok(Entry { prefix, value })
}

/// Whitespace-separated tokens with their byte offsets.
fn tokens(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(|c: char| c.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
        .map(move |t| (t.as_ptr() as usize - text.as_ptr() as usize, t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> String {
        parse_prefix(s).unwrap().to_string()
    }

    #[test]
    fn prefixes() {
        assert_eq!(p("10.0.0.0/8"), "10.0.0.0/8");
        assert_eq!(p("10.1.2.3"), "10.1.2.3/32");
        assert_eq!(p("10.1.2.3/8"), "10.0.0.0/8", "host bits are masked");
        assert_eq!(p("0.0.0.0/0"), "0.0.0.0/0");
        assert_eq!(p("255.255.255.255/32"), "255.255.255.255/32");
        assert_eq!(p("2001:db8::1/32"), "2001:db8::/32");
        assert_eq!(p("::/0"), "::/0");
        assert_eq!(p("::1"), "::1/128");
        assert_eq!(p("::ffff:1.2.3.4/120"), "::ffff:1.2.3.0/120");
        assert_eq!(p("1.2.3.4/0"), "0.0.0.0/0");
        assert_eq!(p("10.0.0.0/008"), "10.0.0.0/8");
    }

    #[test]
    fn prefix_errors() {
        let e = |s: &str| parse_prefix(s).unwrap_err();
        assert_eq!(e("10.0.0.0/33").offset, 9);
        assert!(e("10.0.0.0/33").message.contains("out of range 0-32"));
        assert!(e("::/129").message.contains("out of range 0-128"));
        assert_eq!(e("::/129").offset, 3);
        assert!(e("10.0.0.0/").message.contains("bad prefix length"));
        assert!(e("10.0.0.0/-1").message.contains("bad prefix length"));
        assert!(e("10.0.0.0/+8").message.contains("bad prefix length"));
        assert!(e("10.0.0.0/1000").message.contains("bad prefix length"));
        assert!(e("10.0.0/8").message.contains("not an IPv4 or IPv6"));
        assert!(e("010.0.0.1").message.contains("not an IPv4 or IPv6"));
        assert!(e("example.com").message.contains("not an IPv4 or IPv6"));
        assert!(e("1.2.3.4/8/9").message.contains("bad prefix length"));
        assert_eq!(e("").offset, 0);
    }

    #[test]
    fn values() {
        assert_eq!(parse_value("0"), Ok(0));
        assert_eq!(parse_value("4294967295"), Ok(u32::MAX));
        assert!(parse_value("4294967296")
            .unwrap_err()
            .message
            .contains("out of range"));
        assert!(parse_value("99999999999").is_err());
        assert!(parse_value("-1").is_err());
        assert!(parse_value("0x10").is_err());
        assert!(parse_value("").is_err());
    }

    #[test]
    fn entries() {
        let e = parse_entry("  10.0.0.0/8   42 ").unwrap();
        assert_eq!(e.prefix, Prefix::v4(0x0a00_0000, 8).unwrap());
        assert_eq!(e.value, 42);
        assert_eq!(parse_entry("2001:db8::/48").unwrap().value, 0);
        let err = parse_entry("10.0.0.0/8 42 x").unwrap_err();
        assert_eq!(err.offset, 14);
        let err = parse_entry("10.0.0.0/8\tabc").unwrap_err();
        assert_eq!(err.offset, 11);
        let err = parse_entry("1.2.3.4/40").unwrap_err();
        assert_eq!(err.offset, 8);
        assert!(parse_entry("   ").is_err());
    }

    #[test]
    fn mapped_form() {
        let (a, l) = Prefix::v4(0x0a00_0000, 8).unwrap().mapped();
        assert_eq!(a, 0xffff_0a00_0000);
        assert_eq!(l, 104);
        assert_eq!(Prefix::v6(1, 128).unwrap().mapped(), (1, 128));
    }
}
