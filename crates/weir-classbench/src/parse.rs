//! Strict parsers for ClassBench filter sets and header traces.
//!
//! The formats are the ones ClassBench's `db_generator` and
//! `trace_generator` write (`FilterList::print` and `hlist::print` in the
//! ClassBench sources); fields are separated by spaces or tabs, and a
//! trailing tab (which both generators write) is fine.
//!
//! Filter line (one per line, no blank or comment lines, so a filter's
//! number is its line number):
//! `@a.b.c.d/len  a.b.c.d/len  lo : hi  lo : hi  0xPP/0xMM  [0xVVVV/0xMMMM [E...]]`
//! (source prefix, destination prefix, source port range, destination port
//! range with `:` as its own field, protocol value/mask in hex, then the
//! optional 16-bit flags value/mask and any extra fields, unsigned decimal,
//! 0 meaning any). At most 20 fields, as ClassBench's own parser reads.
//!
//! Header line, unsigned decimal integers: `sa da sp dp proto` (five
//! fields, as DPDK's test-acl reads), then, as `trace_generator` writes
//! them, `filter#` alone (a set without flags) or `flags [E...] filter#`:
//! the sixth field is the 32-bit flags value (ClassBench puts a filter's
//! 16-bit flags and mask into one 32-bit range, `flags << 16 | mask`, any
//! value for a mask of 0), and the last is the 0-based index of the filter
//! the header was drawn from.
//!
//! Every error names `line:col` (1-based, col in characters); the caller
//! puts the file name in front.

use std::fmt;
use std::net::Ipv4Addr;

/// At most this many filters in one set (ClassBench sets are up to ~100k).
pub const MAX_FILTERS: usize = 1 << 20;
/// At most this many headers in one trace.
pub const MAX_HEADERS: usize = 1 << 24;
/// At most this many fields on a filter line: ClassBench's parser reads 20.
pub const MAX_FILTER_FIELDS: usize = 20;
/// At most this many fields on a header line: the five, the flags, the
/// extra fields a 20-field filter line has, and the filter index.
pub const MAX_HEADER_FIELDS: usize = 5 + 1 + (MAX_FILTER_FIELDS - 10) + 1;

/// A parse error at a 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {msg}")]
pub struct ParseError {
    pub line: u32,
    pub col: u32,
    pub msg: String,
}

impl ParseError {
    fn new(line: u32, col: u32, msg: impl Into<String>) -> ParseError {
        ParseError {
            line,
            col,
            msg: msg.into(),
        }
    }
}

/// An IPv4 prefix. `addr` is kept as written (host bits included); matching
/// looks only at the first `len` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    pub addr: u32,
    pub len: u8,
}

impl Prefix {
    /// The network mask of `len` bits.
    pub fn mask(self) -> u32 {
        match self.len {
            0 => 0,
            n => u32::MAX << (32 - u32::from(n.min(32))),
        }
    }

    /// The address with its host bits cleared.
    pub fn network(self) -> u32 {
        self.addr & self.mask()
    }

    pub fn contains(self, a: u32) -> bool {
        a & self.mask() == self.network()
    }
}

/// One ClassBench filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Filter {
    pub src: Prefix,
    pub dst: Prefix,
    /// Inclusive source port range.
    pub sport: (u16, u16),
    /// Inclusive destination port range.
    pub dport: (u16, u16),
    /// Protocol value and mask: a header's protocol `p` matches when
    /// `p & proto_mask == proto` (the parser rejects value bits outside
    /// the mask). ClassBench writes `0xPP/0xFF` or `0x00/0x00`.
    pub proto: u8,
    pub proto_mask: u8,
    /// The optional flags value/mask (16 bits each), compared only when
    /// asked for (see [`crate::Fields`]). Extra fields after it are
    /// checked for form and not kept.
    pub flags: Option<(u16, u16)>,
}

impl Filter {
    /// The flags as `trace_generator` encodes them in one 32-bit range:
    /// None (any value) when the mask is 0 or there are no flags, else the
    /// single value `flags << 16 | mask`.
    pub fn flags_value(&self) -> Option<u32> {
        match self.flags {
            Some((v, m)) if m != 0 => Some(u32::from(v) << 16 | u32::from(m)),
            _ => None,
        }
    }
}

/// One ClassBench trace header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Header {
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    /// The 32-bit flags value (`trace_generator`'s sixth field).
    pub flags: Option<u32>,
    /// The 0-based index of the filter the header was drawn from (the
    /// trace's last field), when the line has one.
    pub filter: Option<u32>,
}

/// Writes the filter in ClassBench's format (tab-separated, as
/// `db_generator` does).
impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "@{}/{}\t{}/{}\t{} : {}\t{} : {}\t0x{:02X}/0x{:02X}",
            Ipv4Addr::from(self.src.addr),
            self.src.len,
            Ipv4Addr::from(self.dst.addr),
            self.dst.len,
            self.sport.0,
            self.sport.1,
            self.dport.0,
            self.dport.1,
            self.proto,
            self.proto_mask
        )?;
        if let Some((v, m)) = self.flags {
            write!(f, "\t0x{v:04X}/0x{m:04X}")?;
        }
        Ok(())
    }
}

/// Writes the header in ClassBench's trace format (tab-separated). The
/// flags are written only with a filter index, as `trace_generator` does:
/// `sa da sp dp proto flags` alone would read back as a filter index.
impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\t{}\t{}\t{}\t{}",
            self.src, self.dst, self.sport, self.dport, self.proto
        )?;
        if let Some(n) = self.filter {
            if let Some(fl) = self.flags {
                write!(f, "\t{fl}")?;
            }
            write!(f, "\t{n}")?;
        }
        Ok(())
    }
}

/// A field of a line: its 1-based column and text.
#[derive(Clone, Copy)]
struct Field<'a> {
    col: u32,
    text: &'a str,
}

/// Splits a line on runs of spaces and tabs, keeping columns.
fn fields(line: &str) -> Vec<Field<'_>> {
    let mut out = Vec::new();
    let mut start: Option<(usize, u32)> = None;
    let mut col = 0u32;
    for (i, c) in line.char_indices() {
        col += 1;
        let sep = c == ' ' || c == '\t';
        match (sep, start) {
            (true, Some((s, sc))) => {
                out.push(Field {
                    col: sc,
                    text: &line[s..i],
                });
                start = None;
            }
            (false, None) => start = Some((i, col)),
            _ => {}
        }
    }
    if let Some((s, sc)) = start {
        out.push(Field {
            col: sc,
            text: &line[s..],
        });
    }
    out
}

/// The lines of a file with 1-based numbers; a final newline ends the
/// last line rather than starting an empty one; `\r\n` is accepted.
fn lines(text: &str) -> impl Iterator<Item = (u32, &str)> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let empty = text.is_empty();
    body.split('\n')
        .filter(move |_| !empty)
        .enumerate()
        .map(|(i, l)| {
            let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
            (n, l.strip_suffix('\r').unwrap_or(l))
        })
}

/// Parses a whole filter set. Filter `i` (0-based) is on line `i + 1`.
pub fn parse_filters(text: &str) -> Result<Vec<Filter>, ParseError> {
    let mut out = Vec::new();
    for (n, line) in lines(text) {
        if out.len() == MAX_FILTERS {
            return Err(ParseError::new(
                n,
                1,
                format!("more than {MAX_FILTERS} filters"),
            ));
        }
        out.push(parse_filter_line(line, n)?);
    }
    Ok(out)
}

/// Parses one filter line (`line_no` is used in errors).
pub fn parse_filter_line(line: &str, line_no: u32) -> Result<Filter, ParseError> {
    let err = |col: u32, msg: String| ParseError::new(line_no, col, msg);
    let f = fields(line);
    let Some(first) = f.first() else {
        return Err(err(
            1,
            "empty line: expected a filter '@sa/len da/len lo : hi lo : hi 0xPP/0xMM'".into(),
        ));
    };
    let Some(src_text) = first.text.strip_prefix('@') else {
        return Err(err(
            first.col,
            format!("a filter starts with '@', found '{}'", first.text),
        ));
    };
    if f.len() < 9 {
        let end = line.chars().count() as u32 + 1;
        return Err(err(
            end,
            format!(
                "expected at least 9 fields (@sa/len da/len lo : hi lo : hi 0xPP/0xMM [0xVVVV/0xMMMM [extra...]]), found {}",
                f.len()
            ),
        ));
    }
    if let Some(extra) = f.get(MAX_FILTER_FIELDS) {
        return Err(err(
            extra.col,
            format!(
                "more than {MAX_FILTER_FIELDS} fields (ClassBench's parser reads no more): '{}'",
                extra.text
            ),
        ));
    }
    let src = prefix(src_text, first.col + 1).map_err(|(c, m)| err(c, m))?;
    let dst = prefix(f[1].text, f[1].col).map_err(|(c, m)| err(c, m))?;
    let sport = port_range(&f[2..5]).map_err(|(c, m)| err(c, m))?;
    let dport = port_range(&f[5..8]).map_err(|(c, m)| err(c, m))?;
    let (proto, proto_mask) = hex_pair::<u8>(f[8], 2, "protocol").map_err(|(c, m)| err(c, m))?;
    if proto & !proto_mask != 0 {
        return Err(err(
            f[8].col,
            format!("protocol value 0x{proto:02X} has bits outside its mask 0x{proto_mask:02X}"),
        ));
    }
    let flags = match f.get(9) {
        Some(fl) => Some(hex_pair::<u16>(*fl, 4, "flags").map_err(|(c, m)| err(c, m))?),
        None => None,
    };
    for extra in f.iter().skip(10) {
        decimal::<u32>(extra.text).ok_or_else(|| {
            err(
                extra.col,
                format!(
                    "extra field '{}' is not a decimal number 0..4294967295",
                    extra.text
                ),
            )
        })?;
    }
    Ok(Filter {
        src,
        dst,
        sport,
        dport,
        proto,
        proto_mask,
        flags,
    })
}

type FieldResult<T> = Result<T, (u32, String)>;

/// `a.b.c.d/len` with four decimal octets and a length 0..=32.
fn prefix(text: &str, col: u32) -> FieldResult<Prefix> {
    let Some((addr, len)) = text.split_once('/') else {
        return Err((
            col,
            format!("expected a prefix a.b.c.d/len, found '{text}'"),
        ));
    };
    let mut octets = [0u8; 4];
    let mut parts = addr.split('.');
    for (i, o) in octets.iter_mut().enumerate() {
        let part = parts.next().unwrap_or("");
        *o = decimal::<u8>(part).ok_or_else(|| {
            (
                col,
                format!("bad address '{addr}': octet {} is not 0..255", i + 1),
            )
        })?;
    }
    if parts.next().is_some() {
        return Err((col, format!("bad address '{addr}': more than four octets")));
    }
    let len_col = col + addr.chars().count() as u32 + 1;
    let len = decimal::<u8>(len)
        .filter(|&l| l <= 32)
        .ok_or_else(|| (len_col, format!("prefix length '{len}' is not 0..32")))?;
    Ok(Prefix {
        addr: u32::from_be_bytes(octets),
        len,
    })
}

/// Three fields `lo`, `:`, `hi` with `lo <= hi`.
fn port_range(f: &[Field<'_>]) -> FieldResult<(u16, u16)> {
    let port = |fd: &Field<'_>| {
        decimal::<u16>(fd.text)
            .ok_or_else(|| (fd.col, format!("port '{}' is not 0..65535", fd.text)))
    };
    let lo = port(&f[0])?;
    if f[1].text != ":" {
        return Err((
            f[1].col,
            format!(
                "expected ':' between the ends of a port range, found '{}'",
                f[1].text
            ),
        ));
    }
    let hi = port(&f[2])?;
    if lo > hi {
        return Err((f[0].col, format!("port range {lo} : {hi} is backwards")));
    }
    Ok((lo, hi))
}

/// `0xV/0xM`, each 1..=`digits` hex digits.
fn hex_pair<T: TryFrom<u32>>(fd: Field<'_>, digits: usize, what: &str) -> FieldResult<(T, T)> {
    let bad = || {
        (
            fd.col,
            format!(
                "expected the {what} as 0x{}/0x{} in hex, found '{}'",
                "H".repeat(digits),
                "H".repeat(digits),
                fd.text
            ),
        )
    };
    let (v, m) = fd.text.split_once('/').ok_or_else(bad)?;
    let one = |s: &str| -> Option<T> {
        let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
        if h.is_empty() || h.len() > digits || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        T::try_from(u32::from_str_radix(h, 16).ok()?).ok()
    };
    Ok((one(v).ok_or_else(bad)?, one(m).ok_or_else(bad)?))
}

/// Unsigned decimal digits only (no sign, no spaces), in range of `T`.
fn decimal<T: TryFrom<u64>>(s: &str) -> Option<T> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    T::try_from(s.parse::<u64>().ok()?).ok()
}

/// Parses a whole header trace.
pub fn parse_trace(text: &str) -> Result<Vec<Header>, ParseError> {
    let mut out = Vec::new();
    for (n, line) in lines(text) {
        if out.len() == MAX_HEADERS {
            return Err(ParseError::new(
                n,
                1,
                format!("more than {MAX_HEADERS} headers"),
            ));
        }
        out.push(parse_header_line(line, n)?);
    }
    Ok(out)
}

/// Parses one trace line (`line_no` is used in errors).
pub fn parse_header_line(line: &str, line_no: u32) -> Result<Header, ParseError> {
    let f = fields(line);
    if !(5..=MAX_HEADER_FIELDS).contains(&f.len()) {
        let col = f
            .get(MAX_HEADER_FIELDS)
            .map_or(line.chars().count() as u32 + 1, |x| x.col);
        return Err(ParseError::new(
            line_no,
            col,
            format!(
                "expected 5 to {MAX_HEADER_FIELDS} fields (sa da sp dp proto [[flags [extra...]] filter#]), found {}",
                f.len()
            ),
        ));
    }
    fn num<T: TryFrom<u64>>(
        fd: Field<'_>,
        what: &str,
        max: u64,
        line: u32,
    ) -> Result<T, ParseError> {
        decimal::<T>(fd.text).ok_or_else(|| {
            ParseError::new(
                line,
                fd.col,
                format!("{what} '{}' is not a decimal number 0..{max}", fd.text),
            )
        })
    }
    let max32 = u64::from(u32::MAX);
    let mut h = Header {
        src: num(f[0], "source address", max32, line_no)?,
        dst: num(f[1], "destination address", max32, line_no)?,
        sport: num(f[2], "source port", 65535, line_no)?,
        dport: num(f[3], "destination port", 65535, line_no)?,
        proto: num(f[4], "protocol", 255, line_no)?,
        flags: None,
        filter: None,
    };
    if let [middle @ .., last] = &f[5..] {
        if let [flags, extra @ ..] = middle {
            h.flags = Some(num(*flags, "flags", max32, line_no)?);
            for e in extra {
                num::<u32>(*e, "extra field", max32, line_no)?;
            }
        }
        h.filter = Some(num(*last, "filter index", max32, line_no)?);
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "@10.1.0.0/16\t192.168.1.7/32\t0 : 65535\t80 : 80\t0x06/0xFF\t0x0000/0x0000";

    #[test]
    fn filter_fields() {
        let f = parse_filter_line(LINE, 1).unwrap();
        assert_eq!(
            f.src,
            Prefix {
                addr: 0x0a01_0000,
                len: 16
            }
        );
        assert_eq!(
            f.dst,
            Prefix {
                addr: 0xc0a8_0107,
                len: 32
            }
        );
        assert_eq!((f.sport, f.dport), ((0, 65535), (80, 80)));
        assert_eq!((f.proto, f.proto_mask), (6, 0xff));
        assert_eq!(f.flags, Some((0, 0)));
        // Display writes the same fields back.
        assert_eq!(f.to_string(), LINE);
        assert_eq!(parse_filter_line(&f.to_string(), 1).unwrap(), f);
    }

    #[test]
    fn filter_without_flags_and_with_spaces() {
        let f =
            parse_filter_line("@0.0.0.0/0 1.2.3.4/30  1024 : 65535 0 : 0 0x00/0x00", 3).unwrap();
        assert_eq!(f.flags, None);
        assert_eq!((f.proto, f.proto_mask), (0, 0));
        assert_eq!(f.dst.network(), 0x0102_0304 & !3);
    }

    fn filter_err(line: &str) -> String {
        parse_filters(line).unwrap_err().to_string()
    }

    #[test]
    fn filter_errors_name_line_and_column() {
        let two = format!("{LINE}\n@1.2.3.4/33\t0.0.0.0/0\t0 : 1\t0 : 1\t0x00/0x00\n");
        assert_eq!(
            parse_filters(&two).unwrap_err().to_string(),
            "2:10: prefix length '33' is not 0..32"
        );
        assert_eq!(
            filter_err("10.0.0.0/8"),
            "1:1: a filter starts with '@', found '10.0.0.0/8'"
        );
        assert_eq!(
            filter_err("@1.2.3/8 0.0.0.0/0 0 : 1 0 : 1 0x00/0x00"),
            "1:2: bad address '1.2.3': octet 4 is not 0..255"
        );
        assert_eq!(
            filter_err("@1.2.3.4/8 0.0.0.0/0 9 : 1 0 : 1 0x00/0x00"),
            "1:22: port range 9 : 1 is backwards"
        );
        assert_eq!(
            filter_err("@1.2.3.4/8 0.0.0.0/0 0:1 0 : 1 0x00/0x00"),
            "1:41: expected at least 9 fields (@sa/len da/len lo : hi lo : hi 0xPP/0xMM [0xVVVV/0xMMMM [extra...]]), found 7"
        );
        assert_eq!(
            filter_err("@1.2.3.4/8 0.0.0.0/0 0 - 1 0 : 1 0x00/0x00"),
            "1:24: expected ':' between the ends of a port range, found '-'"
        );
        assert_eq!(
            filter_err("@1.2.3.4/8 0.0.0.0/0 0 : 70000 0 : 1 0x00/0x00"),
            "1:26: port '70000' is not 0..65535"
        );
        assert_eq!(
            filter_err("@1.2.3.4/8 0.0.0.0/0 0 : 1 0 : 1 6/255"),
            "1:34: expected the protocol as 0xHH/0xHH in hex, found '6/255'"
        );
        assert_eq!(
            filter_err("@1.2.3.4/8 0.0.0.0/0 0 : 1 0 : 1 0x06/0xF0"),
            "1:34: protocol value 0x06 has bits outside its mask 0xF0"
        );
        assert_eq!(
            filter_err("@1.2.3.4/8 0.0.0.0/0 0 : 1 0 : 1 0x06/0xFF 0x0/0x0 x"),
            "1:52: extra field 'x' is not a decimal number 0..4294967295"
        );
        let twenty = "@1.2.3.4/8 0.0.0.0/0 0 : 1 0 : 1 0x06/0xFF 0x0/0x0 1 2 3 4 5 6 7 8 9 10";
        assert!(parse_filters(twenty).is_ok());
        assert_eq!(
            filter_err(&format!("{twenty} 11")),
            "1:73: more than 20 fields (ClassBench's parser reads no more): '11'"
        );
        assert_eq!(
            filter_err("@1.2.3.4/8 0.0.0.0/0 0 : 1 0 : 1 0x06/0xFF 0x10000/0x0"),
            "1:44: expected the flags as 0xHHHH/0xHHHH in hex, found '0x10000/0x0'"
        );
        // No blank lines: a filter's number is its line number.
        assert_eq!(
            parse_filters(&format!("{LINE}\n\n{LINE}\n"))
                .unwrap_err()
                .to_string(),
            "2:1: empty line: expected a filter '@sa/len da/len lo : hi lo : hi 0xPP/0xMM'"
        );
    }

    #[test]
    fn files_end_with_or_without_newline() {
        assert_eq!(parse_filters("").unwrap(), vec![]);
        assert_eq!(parse_filters(LINE).unwrap().len(), 1);
        assert_eq!(
            parse_filters(&format!("{LINE}\r\n{LINE}\n")).unwrap().len(),
            2
        );
    }

    /// Extra fields and the trailing tab, as `db_generator` writes them.
    #[test]
    fn filter_with_extra_fields() {
        let f = parse_filter_line(&format!("{LINE}\t0\t7\t"), 1).unwrap();
        assert_eq!(f, parse_filter_line(LINE, 1).unwrap());
        assert_eq!(f.flags_value(), None);
        let f = parse_filter_line(
            "@0.0.0.0/0 0.0.0.0/0 0 : 1 0 : 1 0x06/0xFF 0x1000/0x1200",
            1,
        )
        .unwrap();
        assert_eq!(f.flags_value(), Some(0x1000_1200));
    }

    #[test]
    fn trace_lines() {
        let t = parse_trace(
            "167772161\t3232235777\t1024\t80\t6\t12\n1 2 3 4 17\n1 2 3 4 17 0 9\n\
             1\t2\t3\t4\t17\t4294967295\t0\t7\t5\n",
        )
        .unwrap();
        assert_eq!(
            t[0],
            Header {
                src: 167772161,
                dst: 3232235777,
                sport: 1024,
                dport: 80,
                proto: 6,
                flags: None,
                filter: Some(12)
            }
        );
        assert_eq!(t[1].filter, None);
        assert_eq!((t[2].flags, t[2].filter), (Some(0), Some(9)));
        // trace_generator's 32-bit flags, two extra fields, the index last.
        assert_eq!((t[3].flags, t[3].filter), (Some(u32::MAX), Some(5)));
        let t = &t[..3];
        for h in t {
            assert_eq!(parse_header_line(&h.to_string(), 1).unwrap(), *h);
        }
    }

    #[test]
    fn trace_errors() {
        let e = |s: &str| parse_trace(s).unwrap_err().to_string();
        assert_eq!(
            e("1 2 3 4 6 1\n1 2 3 4\n"),
            "2:8: expected 5 to 17 fields (sa da sp dp proto [[flags [extra...]] filter#]), found 4"
        );
        assert_eq!(
            e("1 2 3 4 6 1 2 3 4 5 6 7 8 9 10 11 12 13"),
            "1:38: expected 5 to 17 fields (sa da sp dp proto [[flags [extra...]] filter#]), found 18"
        );
        assert_eq!(
            e("1 2 3 4 6 4294967296 9"),
            "1:11: flags '4294967296' is not a decimal number 0..4294967295"
        );
        assert_eq!(
            e("1 2 3 4 6 0 x 9"),
            "1:13: extra field 'x' is not a decimal number 0..4294967295"
        );
        assert_eq!(
            e("1 2 3 4 6 -1"),
            "1:11: filter index '-1' is not a decimal number 0..4294967295"
        );
        assert_eq!(
            e("4294967296 2 3 4 6"),
            "1:1: source address '4294967296' is not a decimal number 0..4294967295"
        );
        assert_eq!(
            e("1 2 3 65536 6"),
            "1:7: destination port '65536' is not a decimal number 0..65535"
        );
        assert_eq!(
            e("1 2 3 4 256"),
            "1:9: protocol '256' is not a decimal number 0..255"
        );
        assert_eq!(
            e("1 2 -3 4 6"),
            "1:5: source port '-3' is not a decimal number 0..65535"
        );
        assert_eq!(
            e("1 2 3 4 0x6"),
            "1:9: protocol '0x6' is not a decimal number 0..255"
        );
    }
}
