//! Host names in ppp filters resolve once, when the rules are loaded
//! (ppp's `GetIpAddr` calls `gethostbyname` as it reads the rule, never per
//! packet). This reads a hosts(5) file for the lookup, so a run can name
//! its own table instead of asking the system resolver.

use std::collections::HashMap;
use std::net::Ipv4Addr;

/// At most this many names taken from one file (hostile input).
const MAX_NAMES: usize = 100_000;

/// `ADDR NAME [ALIAS...]  # comment` lines: each name (compared without
/// case, as resolvers do) to the IPv4 address of its first line; IPv6
/// lines are skipped, as `gethostbyname` answers IPv4 only.
pub fn parse_hosts(text: &str) -> HashMap<String, Ipv4Addr> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let mut words = line.split('#').next().unwrap_or("").split_whitespace();
        let Some(Ok(addr)) = words.next().map(str::parse::<Ipv4Addr>) else {
            continue;
        };
        for name in words {
            if out.len() == MAX_NAMES {
                return out;
            }
            out.entry(name.to_ascii_lowercase()).or_insert(addr);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_line_wins_and_ipv6_is_skipped() {
        let h = parse_hosts(
            "127.0.0.1 localhost lo # loopback\n::1 localhost ip6-localhost\n\
             192.0.2.7\tGate gate.example\n192.0.2.8 gate\nbad line\n",
        );
        assert_eq!(h.get("localhost"), Some(&Ipv4Addr::LOCALHOST));
        assert_eq!(h.get("gate"), Some(&Ipv4Addr::new(192, 0, 2, 7)));
        assert_eq!(h.get("gate.example"), Some(&Ipv4Addr::new(192, 0, 2, 7)));
        assert_eq!(h.get("ip6-localhost"), None);
        assert_eq!(h.len(), 4);
    }
}
