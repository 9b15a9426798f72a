//! The brute-force answer: the oracle every faster path is checked against.

use crate::parse::{Filter, Header};

/// Which header fields a classification compares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fields {
    /// Source and destination prefix, the two port ranges and the
    /// protocol: how DPDK's test-acl and the literature use ClassBench.
    #[default]
    FiveTuple,
    /// The five and ClassBench's sixth dimension, the flags, as
    /// `trace_generator` encodes them: a filter whose flags mask is 0 (or
    /// that has no flags) holds any value; any other holds only the single
    /// 32-bit value `flags << 16 | mask` (see [`Filter::flags_value`]). A
    /// header without a flags value is held only by the former.
    WithFlags,
}

impl Fields {
    pub fn name(self) -> &'static str {
        match self {
            Fields::FiveTuple => "5-tuple",
            Fields::WithFlags => "5-tuple+flags",
        }
    }
}

impl Filter {
    /// Whether the header lies in this filter's 5-tuple box (ClassBench
    /// semantics: every field is compared, ports whatever the protocol).
    pub fn matches(&self, h: &Header) -> bool {
        self.src.contains(h.src)
            && self.dst.contains(h.dst)
            && (self.sport.0..=self.sport.1).contains(&h.sport)
            && (self.dport.0..=self.dport.1).contains(&h.dport)
            && h.proto & self.proto_mask == self.proto
    }

    /// Whether the header's flags lie in this filter's sixth dimension.
    pub fn flags_match(&self, h: &Header) -> bool {
        match self.flags_value() {
            None => true,
            Some(v) => h.flags == Some(v),
        }
    }

    /// Whether the header lies in this filter, comparing `fields`.
    pub fn holds(&self, h: &Header, fields: Fields) -> bool {
        self.matches(h) && (fields == Fields::FiveTuple || self.flags_match(h))
    }
}

/// The 1-based number of the first filter that holds the header, 0 if none.
pub fn first_match(filters: &[Filter], h: &Header, fields: Fields) -> u32 {
    filters
        .iter()
        .position(|f| f.holds(h, fields))
        .map_or(0, |i| i as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_filters;

    #[test]
    fn first_match_by_line_order() {
        let f = parse_filters(
            "@10.0.0.0/8\t0.0.0.0/0\t0 : 65535\t80 : 80\t0x06/0xFF\n\
             @10.1.0.0/16\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x00/0x00\n\
             @0.0.0.0/0\t0.0.0.0/0\t1024 : 65535\t0 : 1023\t0x00/0x00\n",
        )
        .unwrap();
        let h = |src: u32, sport, dport, proto| Header {
            src,
            sport,
            dport,
            proto,
            ..Header::default()
        };
        let five = Fields::FiveTuple;
        assert_eq!(first_match(&f, &h(0x0a01_0203, 5, 80, 6), five), 1);
        assert_eq!(first_match(&f, &h(0x0a01_0203, 5, 80, 17), five), 2);
        // Ports are compared for ICMP too.
        assert_eq!(first_match(&f, &h(0x0b00_0000, 2000, 22, 1), five), 3);
        assert_eq!(first_match(&f, &h(0x0b00_0000, 80, 22, 1), five), 0);
        assert_eq!(first_match(&f, &h(0x0a00_0000, 1024, 1023, 6), five), 3);
        assert_eq!(first_match(&f, &h(0x0a00_0000, 1023, 1023, 6), five), 0);
    }

    /// The sixth dimension as trace_generator builds it: value/mask
    /// 0x1000/0x1000 is the one value 0x10001000; mask 0 is any value.
    #[test]
    fn flags_are_one_value_or_any() {
        let f = parse_filters(
            "@0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x06/0xFF\t0x1000/0x1000\n\
             @0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x06/0xFF\t0x0000/0x0200\n\
             @0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x06/0xFF\t0xffff/0x0000\n",
        )
        .unwrap();
        let h = |flags| Header {
            proto: 6,
            flags,
            ..Header::default()
        };
        let six = Fields::WithFlags;
        assert_eq!(first_match(&f, &h(Some(0x1000_1000)), six), 1);
        assert_eq!(first_match(&f, &h(Some(0x0000_0200)), six), 2);
        // Bitwise the value would satisfy 0x1000/0x1000; ClassBench's
        // ranges say it is neither filter's value.
        assert_eq!(first_match(&f, &h(Some(0x1000_1200)), six), 3);
        assert_eq!(first_match(&f, &h(Some(u32::MAX)), six), 3);
        assert_eq!(first_match(&f, &h(None), six), 3);
        // The 5-tuple reading ignores the flags.
        assert_eq!(first_match(&f, &h(Some(0x0000_0200)), Fields::FiveTuple), 1);
    }
}
