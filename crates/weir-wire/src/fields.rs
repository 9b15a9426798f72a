//! Which of a packet's optional fields [`decode_with`](crate::decode_with)
//! fills.
//!
//! Addresses, protocol, ports, TCP flags, ICMP type and code, lengths, TTL,
//! TOS, fragment bits, IP options and IPv6 extension headers are always
//! decoded: the classifier, states, logs and outputs read them. The fields
//! below only some rule options read, so a caller that knows its rules
//! (`weir_engine::Engine::fields`) asks for those alone and decode skips
//! the rest. A field not asked for stays zero (`has_mac` false).
//!
//! Hand-written rather than `bitflags`: six bits, and weir-wire has no
//! dependencies.

use crate::packet::Packet;
use std::ops::{BitOr, BitOrAssign};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fields(u8);

impl Fields {
    /// The always-decoded fields only.
    pub const NONE: Fields = Fields(0);
    /// `tcp_seq`, `tcp_ack`, `tcp_win`.
    pub const TCP_HEADER: Fields = Fields(1);
    /// `tcp_data_len`.
    pub const TCP_DATA_LEN: Fields = Fields(2);
    /// `tcp_opts` and `tcp_mss`: the walk over the TCP options.
    pub const TCP_OPTIONS: Fields = Fields(4);
    /// `mac_dst`, `mac_src`, `ether_type`, `has_mac`.
    pub const MAC: Fields = Fields(8);
    /// `ip_id`.
    pub const IP_ID: Fields = Fields(16);
    /// `flow_label`.
    pub const FLOW_LABEL: Fields = Fields(32);
    /// Everything: what [`decode`](crate::decode) fills.
    pub const ALL: Fields = Fields(63);
    /// Each field set alone, for tests that walk them.
    pub const EACH: [Fields; 6] = [
        Fields::TCP_HEADER,
        Fields::TCP_DATA_LEN,
        Fields::TCP_OPTIONS,
        Fields::MAC,
        Fields::IP_ID,
        Fields::FLOW_LABEL,
    ];

    /// Both sets' fields (`const`, for tables).
    pub const fn with(self, other: Fields) -> Fields {
        Fields(self.0 | other.0)
    }

    /// Whether every field of `other` is in this set.
    #[inline(always)]
    pub const fn contains(self, other: Fields) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any field of `other` is in this set.
    #[inline(always)]
    pub const fn intersects(self, other: Fields) -> bool {
        self.0 & other.0 != 0
    }

    /// What `decode_with(.., self)` gives for a frame whose full decode is
    /// `full`: the optional fields not in this set zeroed. The reference
    /// that tests and fuzz targets hold `decode_with` to.
    pub fn keep(self, full: &Packet) -> Packet {
        let mut p = *full;
        let has = |f| self.contains(f);
        if !has(Fields::TCP_HEADER) {
            (p.tcp_seq, p.tcp_ack, p.tcp_win) = (0, 0, 0);
        }
        if !has(Fields::TCP_DATA_LEN) {
            p.tcp_data_len = 0;
        }
        if !has(Fields::TCP_OPTIONS) {
            (p.tcp_opts, p.tcp_mss) = (0, 0);
        }
        if !has(Fields::MAC) {
            (p.mac_dst, p.mac_src, p.ether_type, p.has_mac) = ([0; 6], [0; 6], 0, false);
        }
        if !has(Fields::IP_ID) {
            p.ip_id = 0;
        }
        if !has(Fields::FLOW_LABEL) {
            p.flow_label = 0;
        }
        p
    }

    /// The set as its bits (for a compact display).
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// A set from its bits; bits past [`Fields::ALL`] are dropped.
    pub const fn from_bits(bits: u8) -> Fields {
        Fields(bits & Fields::ALL.0)
    }
}

impl BitOr for Fields {
    type Output = Fields;
    fn bitor(self, other: Fields) -> Fields {
        self.with(other)
    }
}

impl BitOrAssign for Fields {
    fn bitor_assign(&mut self, other: Fields) {
        *self = self.with(other);
    }
}
