//! IP protocol numbers (IANA "Assigned Internet Protocol Numbers", as
//! /etc/protocols lists them): the one place weir writes them down.

pub const HOPOPT: u8 = 0;
pub const ICMP: u8 = 1;
pub const IGMP: u8 = 2;
/// IP in IP (`ipencap`).
pub const IPIP: u8 = 4;
pub const TCP: u8 = 6;
pub const EGP: u8 = 8;
pub const UDP: u8 = 17;
/// IPv6 in IP.
pub const IPV6: u8 = 41;
pub const IPV6_ROUTE: u8 = 43;
pub const IPV6_FRAG: u8 = 44;
pub const RSVP: u8 = 46;
pub const GRE: u8 = 47;
pub const ESP: u8 = 50;
pub const AH: u8 = 51;
pub const ICMPV6: u8 = 58;
pub const IPV6_NONXT: u8 = 59;
pub const IPV6_OPTS: u8 = 60;
pub const OSPF: u8 = 89;
pub const PIM: u8 = 103;
pub const VRRP: u8 = 112;
pub const L2TP: u8 = 115;
pub const SCTP: u8 = 132;
pub const UDPLITE: u8 = 136;

/// The protocols whose headers start with source and destination ports
/// that ipfw's port tests read.
pub const WITH_PORTS: [u8; 3] = [TCP, UDP, SCTP];
