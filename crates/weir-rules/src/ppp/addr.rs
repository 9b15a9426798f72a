//! Numbers and addresses as ppp reads them: C's `strtol(…, 0)`,
//! `inet_aton`, and ncpaddr.c's `ncprange_aton` (symbols, widths, IPv6,
//! host names).

use super::words::Word;
use super::{Endpoint, Symbol};
use crate::diag::Diagnostic;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A whole word as C's `strtol(…, 0)` reads a number: decimal, `0x` hex,
/// or `0` octal (so `010` is 8). None when any character is left over.
pub(super) fn c_integer(w: &str) -> Option<u64> {
    let (digits, radix) = if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        (h, 16)
    } else if w.len() > 1 && w.starts_with('0') {
        (&w[1..], 8)
    } else {
        (w, 10)
    };
    if digits.is_empty() || digits.len() > 22 || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// An IPv4 address as `inet_aton` reads it: one to four parts, each a C
/// number; the last part fills the remaining bytes (`10` is 0.0.0.10,
/// `127.1` is 127.0.0.1, `10.1.2` is 10.1.0.2).
pub(super) fn inet_aton(w: &str) -> Option<Ipv4Addr> {
    let parts: Vec<u64> = w.split('.').map(c_integer).collect::<Option<_>>()?;
    let (last, head) = parts.split_last()?;
    if head.len() > 3 || head.iter().any(|&p| p > 0xff) {
        return None;
    }
    let tail_bits = 32 - 8 * head.len() as u32;
    if *last >= 1u64 << tail_bits {
        return None;
    }
    let high = head
        .iter()
        .enumerate()
        .fold(0u64, |acc, (i, &p)| acc | p << (24 - 8 * i as u32));
    Some(Ipv4Addr::from((high | last) as u32))
}

/// A width after `/`: a C number 0..=128 (the family's limit is checked
/// by the caller).
fn width(text: &str, w: &Word) -> Result<u8, Diagnostic> {
    c_integer(text)
        .filter(|&n| n <= 128)
        .map(|n| n as u8)
        .ok_or_else(|| Diagnostic::new(w.span, format!("bad mask width '{text}'")))
}

/// Whether ppp's `GetIpAddr` would look the word up as a host name.
fn host_name_chars(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
        && !s.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// One side of the `src dst` pair, as `ncprange_aton` (and `any`) reads it;
/// surprises go to `notes`.
pub(super) fn endpoint(w: &Word, notes: &mut Vec<Diagnostic>) -> Result<Endpoint, Diagnostic> {
    let text = w.text.as_str();
    if text.eq_ignore_ascii_case("any") {
        return Ok(Endpoint::Any);
    }
    let (base, wtext) = match text.split_once('/') {
        Some((b, wd)) => (b, Some(wd)),
        None => (text, None),
    };
    if let Some(sym) = Symbol::ALL
        .into_iter()
        .find(|s| s.word().eq_ignore_ascii_case(base))
    {
        if let Some(wd) = wtext {
            notes.push(Diagnostic::new(
                w.span,
                format!(
                    "ppp ignores the width '/{wd}' on {0}: it always means the one address",
                    sym.word()
                ),
            ));
        }
        return Ok(Endpoint::Symbol(sym, w.span));
    }
    let abbreviated = Symbol::ALL.into_iter().find(|s| {
        !base.is_empty()
            && base.len() < s.word().len()
            && s.word()[..base.len()].eq_ignore_ascii_case(base)
    });
    if let Some(sym) = abbreviated {
        return Err(Diagnostic::new(
            w.span,
            format!(
                "ppp reads '{base}' as an abbreviation of {0}, whose value it takes once and never updates: write {0}",
                sym.word()
            ),
        ));
    }
    let width = wtext.map(|wd| width(wd, w)).transpose()?;
    if base.contains(':') {
        let addr: Ipv6Addr = base
            .parse()
            .ok()
            .filter(|_| base.matches(':').count() >= 2)
            .ok_or_else(|| Diagnostic::new(w.span, format!("bad IPv6 address '{base}'")))?;
        let width = if addr.is_unspecified() {
            0
        } else {
            width.unwrap_or(128)
        };
        return Ok(Endpoint::Net(IpAddr::V6(addr), width));
    }
    if width.is_some_and(|n| n > 32) {
        return Err(Diagnostic::new(
            w.span,
            format!("bad mask width '{}' (0..32 for IPv4)", wtext.unwrap_or("")),
        ));
    }
    let addr = if base.eq_ignore_ascii_case("default") {
        Some(Ipv4Addr::UNSPECIFIED)
    } else {
        inet_aton(base)
    };
    let Some(addr) = addr else {
        if host_name_chars(base) {
            return Ok(Endpoint::Host(base.to_owned(), width.unwrap_or(32), w.span));
        }
        return Err(Diagnostic::new(
            w.span,
            format!("bad address '{base}' (an IPv4 or IPv6 address, a host name, any, MYADDR, …)"),
        ));
    };
    if addr == Ipv4Addr::BROADCAST {
        return Err(Diagnostic::new(
            w.span,
            "ppp cannot use 255.255.255.255: it is the value its address reader returns for a bad address",
        ));
    }
    if addr.is_unspecified() {
        return Ok(Endpoint::Net(IpAddr::V4(addr), 0));
    }
    if base != addr.to_string() {
        notes.push(Diagnostic::new(
            w.span,
            format!("ppp reads '{base}' as inet_aton does: {addr}"),
        ));
    }
    Ok(Endpoint::Net(IpAddr::V4(addr), width.unwrap_or(32)))
}

/// The family of an endpoint as ppp keeps it: None for `any`; host names
/// and the IPv4 symbols are IPv4.
pub(super) fn family_is_v6(e: &Endpoint) -> Option<bool> {
    match e {
        Endpoint::Any => None,
        Endpoint::Net(a, _) => Some(a.is_ipv6()),
        Endpoint::Host(..) => Some(false),
        Endpoint::Symbol(s, _) => Some(s.is_ipv6()),
    }
}

/// Whether ppp keeps the endpoint as a range at all (width 0 is reset to
/// unset, which skips its family check).
pub(super) fn is_set(e: &Endpoint) -> bool {
    !matches!(e, Endpoint::Any | Endpoint::Net(_, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Span;

    #[test]
    fn c_numbers() {
        assert_eq!(c_integer("010"), Some(8));
        assert_eq!(c_integer("0x1F"), Some(31));
        assert_eq!(c_integer("0"), Some(0));
        assert_eq!(c_integer("09"), None);
        assert_eq!(c_integer("0x"), None);
        assert_eq!(c_integer("5x"), None);
        assert_eq!(c_integer(""), None);
    }

    #[test]
    fn inet_aton_forms() {
        let a = |s: &str| inet_aton(s).map(|a| a.to_string());
        assert_eq!(a("0").as_deref(), Some("0.0.0.0"));
        assert_eq!(a("10").as_deref(), Some("0.0.0.10"));
        assert_eq!(a("127.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(a("10.1.2").as_deref(), Some("10.1.0.2"));
        assert_eq!(a("0x7f.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(a("010.0.0.1").as_deref(), Some("8.0.0.1"));
        assert_eq!(a("4294967295").as_deref(), Some("255.255.255.255"));
        for bad in [
            "4294967296",
            "1.2.3.4.5",
            "256.1.1.1",
            "1.",
            ".1",
            "1..2",
            "1.16777216",
            "a",
        ] {
            assert_eq!(a(bad), None, "{bad}");
        }
    }

    fn ep(text: &str) -> (Result<Endpoint, String>, usize) {
        let w = Word {
            text: text.to_owned(),
            span: Span::default(),
        };
        let mut notes = Vec::new();
        let r = endpoint(&w, &mut notes).map_err(|d| d.message);
        (r, notes.len())
    }

    #[test]
    fn endpoints() {
        let v4 = |s: &str, w| Ok(Endpoint::Net(IpAddr::V4(s.parse().unwrap()), w));
        assert_eq!(ep("0"), (v4("0.0.0.0", 0), 0));
        assert_eq!(ep("0/0"), (v4("0.0.0.0", 0), 0));
        assert_eq!(ep("0.0.0.0/24"), (v4("0.0.0.0", 0), 0));
        assert_eq!(ep("10/8"), (v4("0.0.0.10", 8), 1));
        assert_eq!(ep("127.1"), (v4("127.0.0.1", 32), 1));
        assert_eq!(ep("10.0.0.0/010"), (v4("10.0.0.0", 8), 0));
        assert_eq!(ep("default"), (v4("0.0.0.0", 0), 0));
        assert_eq!(ep("ANY"), (Ok(Endpoint::Any), 0));
        assert_eq!(
            ep("::/0"),
            (Ok(Endpoint::Net(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0)), 0)
        );
        assert_eq!(
            ep("fe80::1"),
            (
                Ok(Endpoint::Net(IpAddr::V6("fe80::1".parse().unwrap()), 128)),
                0
            )
        );
        assert_eq!(
            ep("hisaddr/24"),
            (Ok(Endpoint::Symbol(Symbol::HisAddr, Span::default())), 1)
        );
        assert_eq!(
            ep("MyAddr6"),
            (Ok(Endpoint::Symbol(Symbol::MyAddr6, Span::default())), 0)
        );
        assert_eq!(
            ep("gate-1.example/24"),
            (
                Ok(Endpoint::Host("gate-1.example".into(), 24, Span::default())),
                0
            )
        );
        for (bad, msg) in [
            ("his", "abbreviation of HISADDR"),
            ("d", "abbreviation of DNS0"),
            ("10.0.0.0/33", "bad mask width '33'"),
            ("10.0.0.0/x", "bad mask width 'x'"),
            ("1.2.3.4.5", "bad address '1.2.3.4.5'"),
            ("a_b", "bad address 'a_b'"),
            ("a:b", "bad IPv6 address"),
            ("255.255.255.255", "cannot use 255.255.255.255"),
            ("::1/129", "bad mask width '129'"),
        ] {
            let (r, _) = ep(bad);
            let m = r.expect_err(bad);
            assert!(m.contains(msg), "{bad}: {m}");
        }
    }
}
