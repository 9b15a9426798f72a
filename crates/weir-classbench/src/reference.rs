//! The brute-force answer: the oracle every faster path is checked against.

use crate::parse::{Filter, Header};

impl Filter {
    /// Whether the header lies in this filter's box (ClassBench semantics:
    /// every field is compared, ports whatever the protocol).
    pub fn matches(&self, h: &Header) -> bool {
        self.src.contains(h.src)
            && self.dst.contains(h.dst)
            && (self.sport.0..=self.sport.1).contains(&h.sport)
            && (self.dport.0..=self.dport.1).contains(&h.dport)
            && h.proto & self.proto_mask == self.proto
    }
}

/// The 1-based number of the first filter that matches, 0 if none.
pub fn first_match(filters: &[Filter], h: &Header) -> u32 {
    filters
        .iter()
        .position(|f| f.matches(h))
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
        assert_eq!(first_match(&f, &h(0x0a01_0203, 5, 80, 6)), 1);
        assert_eq!(first_match(&f, &h(0x0a01_0203, 5, 80, 17)), 2);
        // Ports are compared for ICMP too.
        assert_eq!(first_match(&f, &h(0x0b00_0000, 2000, 22, 1)), 3);
        assert_eq!(first_match(&f, &h(0x0b00_0000, 80, 22, 1)), 0);
        assert_eq!(first_match(&f, &h(0x0a00_0000, 1024, 1023, 6)), 3);
        assert_eq!(first_match(&f, &h(0x0a00_0000, 1023, 1023, 6)), 0);
    }
}
