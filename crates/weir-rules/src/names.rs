//! Protocol and service names, loaded once when a ruleset is compiled.
//!
//! The ppp lesson: never call `getprotobynumber()` per packet. Names are
//! resolved at compile time from a built-in table (authoritative, so results
//! do not depend on the host) plus whatever /etc/protocols and /etc/services
//! add; the reverse table for log lines is built here too.

use std::collections::HashMap;
use weir_wire::proto;

const BUILTIN_PROTOCOLS: &[(&str, u8)] = &[
    ("hopopt", proto::HOPOPT),
    ("icmp", proto::ICMP),
    ("igmp", proto::IGMP),
    ("ipencap", proto::IPIP),
    ("tcp", proto::TCP),
    ("egp", proto::EGP),
    ("udp", proto::UDP),
    ("ipv6-route", proto::IPV6_ROUTE),
    ("ipv6-frag", proto::IPV6_FRAG),
    ("rsvp", proto::RSVP),
    ("gre", proto::GRE),
    ("esp", proto::ESP),
    ("ah", proto::AH),
    ("ipv6-icmp", proto::ICMPV6),
    ("icmp6", proto::ICMPV6),
    ("ipv6-nonxt", proto::IPV6_NONXT),
    ("ipv6-opts", proto::IPV6_OPTS),
    ("ospf", proto::OSPF),
    ("pim", proto::PIM),
    ("vrrp", proto::VRRP),
    ("l2tp", proto::L2TP),
    ("sctp", proto::SCTP),
    ("udplite", proto::UDPLITE),
];

const BUILTIN_SERVICES: &[(&str, u16)] = &[
    ("ftp-data", 20),
    ("ftp", 21),
    ("ssh", 22),
    ("telnet", 23),
    ("smtp", 25),
    ("domain", 53),
    ("dns", 53),
    ("bootps", 67),
    ("bootpc", 68),
    ("tftp", 69),
    ("http", 80),
    ("www", 80),
    ("kerberos", 88),
    ("pop3", 110),
    ("sunrpc", 111),
    ("ntp", 123),
    ("imap", 143),
    ("snmp", 161),
    ("snmp-trap", 162),
    ("bgp", 179),
    ("ldap", 389),
    ("https", 443),
    ("microsoft-ds", 445),
    ("syslog", 514),
    ("submission", 587),
    ("ldaps", 636),
    ("login", 513),
    ("shell", 514),
    ("imaps", 993),
    ("pop3s", 995),
    ("openvpn", 1194),
    ("mysql", 3306),
    ("ms-wbt-server", 3389),
    ("postgresql", 5432),
    ("http-alt", 8080),
];

/// Upper bound on entries taken from a system file (hostile input).
const MAX_FILE_ENTRIES: usize = 100_000;

/// Name tables, built once.
#[derive(Clone, Debug)]
pub struct Names {
    protocols: HashMap<String, u8>,
    services: HashMap<String, u16>,
    /// Display names for log lines, by protocol number.
    proto_display: Vec<Option<String>>,
}

impl Default for Names {
    /// The built-in tables only: deterministic, no file access.
    fn default() -> Names {
        let mut n = Names {
            protocols: HashMap::new(),
            services: HashMap::new(),
            proto_display: vec![None; 256],
        };
        for &(name, num) in BUILTIN_PROTOCOLS {
            n.add_protocol(name, num);
        }
        for &(name, port) in BUILTIN_SERVICES {
            n.services.insert(name.to_owned(), port);
        }
        n
    }
}

impl Names {
    /// Built-ins plus /etc/protocols and /etc/services, each read once.
    pub fn system() -> Names {
        let mut n = Names::default();
        if let Ok(text) = std::fs::read_to_string("/etc/protocols") {
            n.add_protocols_file(&text);
        }
        if let Ok(text) = std::fs::read_to_string("/etc/services") {
            n.add_services_file(&text);
        }
        n
    }

    fn add_protocol(&mut self, name: &str, num: u8) {
        self.protocols.entry(name.to_owned()).or_insert(num);
        self.proto_display[usize::from(num)].get_or_insert_with(|| name.to_owned());
    }

    /// `name number aliases...  # comment` lines; built-ins win.
    pub fn add_protocols_file(&mut self, text: &str) {
        for line in text.lines().take(MAX_FILE_ENTRIES) {
            let mut words = line.split('#').next().unwrap_or("").split_whitespace();
            let (Some(name), Some(num)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(num) = num.parse::<u8>() else { continue };
            self.add_protocol(name, num);
            for alias in words {
                self.protocols.entry(alias.to_owned()).or_insert(num);
            }
        }
    }

    /// `name port/proto aliases...  # comment` lines; built-ins win.
    pub fn add_services_file(&mut self, text: &str) {
        for line in text.lines().take(MAX_FILE_ENTRIES) {
            let mut words = line.split('#').next().unwrap_or("").split_whitespace();
            let (Some(name), Some(port)) = (words.next(), words.next()) else {
                continue;
            };
            let Some(Ok(port)) = port.split('/').next().map(str::parse::<u16>) else {
                continue;
            };
            for n in std::iter::once(name).chain(words) {
                self.services.entry(n.to_owned()).or_insert(port);
            }
        }
    }

    pub fn protocol(&self, name: &str) -> Option<u8> {
        self.protocols.get(name).copied()
    }

    pub fn service(&self, name: &str) -> Option<u16> {
        self.services.get(name).copied()
    }

    /// The name to show for a protocol number, if it has one.
    pub fn protocol_name(&self, num: u8) -> Option<&str> {
        self.proto_display[usize::from(num)].as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_resolve_without_files() {
        let n = Names::default();
        assert_eq!(n.protocol("tcp"), Some(6));
        assert_eq!(n.protocol("ipv6-icmp"), Some(58));
        assert_eq!(n.service("https"), Some(443));
        assert_eq!(n.protocol_name(17), Some("udp"));
        assert_eq!(n.protocol_name(250), None);
    }

    #[test]
    fn files_add_names_but_builtins_win() {
        let mut n = Names::default();
        n.add_protocols_file("tcp 99 TCP\nfoo 200 FOO # x\nbad line\nbar 300\n");
        n.add_services_file("http 81/tcp\nmysvc 4242/udp alias1\njunk\n");
        assert_eq!(n.protocol("tcp"), Some(6));
        assert_eq!(n.protocol("foo"), Some(200));
        assert_eq!(n.protocol("FOO"), Some(200));
        assert_eq!(n.protocol("bar"), None);
        assert_eq!(n.service("http"), Some(80));
        assert_eq!(n.service("alias1"), Some(4242));
    }
}
