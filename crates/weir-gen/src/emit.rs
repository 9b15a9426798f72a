//! The state shared by every packet writer: random source, frame buffer,
//! current time, host pool; plus the Ethernet + IP framing they all use.

use crate::builder::*;
use crate::mix::*;
use crate::rng::Rng;
use weir_wire::proto;

pub struct Ctx {
    pub rng: Rng,
    /// The frame being built; cleared before each frame, never shrunk.
    pub buf: Vec<u8>,
    /// Timestamp of the frame being built.
    pub now_ns: u64,
    pub hosts: Hosts,
}

/// An IP header that is open until [`Ctx::ip_finish`].
#[derive(Clone, Copy, Debug)]
pub struct L3 {
    off: usize,
    v6: bool,
    pub pseudo: Pseudo,
}

impl L3 {
    pub fn icmp_proto(&self) -> u8 {
        if self.v6 {
            proto::ICMPV6
        } else {
            proto::ICMP
        }
    }
}

/// A flow label that stays the same for one address pair, as a real stack's
/// per-socket label would.
fn flow_label(s: &[u8; 16], d: &[u8; 16]) -> u32 {
    let x = u32::from_be_bytes([s[12], s[13], s[14], s[15]])
        ^ u32::from_be_bytes([d[12], d[13], d[14], d[15]]).rotate_left(11);
    x.wrapping_mul(0x9e37_79b9) >> 12
}

impl Ctx {
    /// The VLAN tagging of a new conversation or single frame.
    pub fn vlan(&mut self) -> Vlan {
        if !self.rng.percent(VLAN_PERCENT) {
            return Vlan::None;
        }
        let id = VLAN_IDS[self.rng.below(VLAN_IDS.len() as u32) as usize];
        if self.rng.percent(QINQ_PERCENT_OF_VLAN) {
            Vlan::QinQ {
                outer: QINQ_OUTER_VLAN,
                inner: id,
            }
        } else {
            Vlan::Dot1q(id)
        }
    }

    /// The link from a local host to the gateway, which every remote peer is
    /// behind.
    pub fn uplink(&mut self, host: &Host) -> Link {
        Link {
            src: host.mac,
            dst: GATEWAY_MAC,
            vlan: self.vlan(),
        }
    }

    pub fn ephemeral_port(&mut self) -> u16 {
        self.rng
            .range(u32::from(EPHEMERAL_PORTS.0), u32::from(EPHEMERAL_PORTS.1)) as u16
    }

    /// Writes Ethernet and the IP header (with, for IPv6, sometimes an
    /// options extension header when `ext_ok`; callers clear it when the
    /// packet is already MTU-sized).
    pub fn ip_begin(
        &mut self,
        link: &Link,
        src: Ip,
        dst: Ip,
        proto: u8,
        ttl: u8,
        ext_ok: bool,
    ) -> L3 {
        match (src, dst) {
            (Ip::V4(s), Ip::V4(d)) => {
                ethernet(&mut self.buf, link, ETH_IPV4);
                // Linux sets DF on TCP and UDP (path MTU discovery), not on ICMP.
                let frag = if proto == proto::TCP || proto == proto::UDP {
                    IP_DF
                } else {
                    0
                };
                let h = Ipv4 {
                    src: s,
                    dst: d,
                    proto,
                    ttl,
                    tos: 0,
                    id: self.rng.u16(),
                    frag,
                };
                let off = ipv4_begin(&mut self.buf, &h, &[]);
                let pseudo = if proto == proto::ICMP {
                    Pseudo::None
                } else {
                    Pseudo::V4(s, d)
                };
                L3 {
                    off,
                    v6: false,
                    pseudo,
                }
            }
            (Ip::V6(s), Ip::V6(d)) => {
                ethernet(&mut self.buf, link, ETH_IPV6);
                let ext = ext_ok && self.rng.percent(IPV6_EXT_HEADER_PERCENT);
                let next = match (ext, self.rng.percent(60)) {
                    (false, _) => proto,
                    (true, true) => proto::IPV6_OPTS,
                    (true, false) => proto::HOPOPT,
                };
                let h = Ipv6 {
                    src: s,
                    dst: d,
                    next,
                    hop_limit: ttl,
                    flow_label: flow_label(&s, &d),
                };
                let off = ipv6_begin(&mut self.buf, &h);
                if ext {
                    ipv6_opts_ext(&mut self.buf, proto);
                }
                L3 {
                    off,
                    v6: true,
                    pseudo: Pseudo::V6(s, d),
                }
            }
            _ => unreachable!("address families of one packet differ"),
        }
    }

    pub fn ip_finish(&mut self, l3: L3) {
        if l3.v6 {
            ipv6_finish(&mut self.buf, l3.off);
        } else {
            ipv4_finish(&mut self.buf, l3.off);
        }
    }

    /// A complete TCP segment with `payload_len` opaque bytes.
    #[allow(clippy::too_many_arguments)]
    pub fn tcp(
        &mut self,
        link: &Link,
        src: Ip,
        dst: Ip,
        ttl: u8,
        h: &Tcp,
        opts: &[u8],
        payload_len: usize,
    ) {
        let l3 = self.ip_begin(link, src, dst, proto::TCP, ttl, payload_len <= 1400);
        let l4 = tcp_begin(&mut self.buf, h, opts);
        let seed = self.rng.next_u64();
        payload(&mut self.buf, seed, 0, payload_len);
        l4_seal(&mut self.buf, l4, TCP_CSUM_AT, l3.pseudo, proto::TCP);
        self.ip_finish(l3);
    }

    /// Opens a UDP datagram; the caller appends the payload to `buf`, then
    /// calls [`Ctx::udp_finish`].
    #[allow(clippy::too_many_arguments)]
    pub fn udp_begin(
        &mut self,
        link: &Link,
        src: Ip,
        dst: Ip,
        ttl: u8,
        sport: u16,
        dport: u16,
        ext_ok: bool,
    ) -> (L3, usize) {
        let l3 = self.ip_begin(link, src, dst, proto::UDP, ttl, ext_ok);
        (l3, udp_begin(&mut self.buf, sport, dport))
    }

    pub fn udp_finish(&mut self, (l3, l4): (L3, usize)) {
        udp_seal(&mut self.buf, l4, l3.pseudo);
        self.ip_finish(l3);
    }

    /// Opens an ICMP (IPv4) or ICMPv6 message, by the address family.
    #[allow(clippy::too_many_arguments)]
    pub fn icmp_begin(
        &mut self,
        link: &Link,
        src: Ip,
        dst: Ip,
        ttl: u8,
        typ: u8,
        code: u8,
        rest: [u8; 4],
    ) -> (L3, usize) {
        let proto = if src.is_v6() {
            proto::ICMPV6
        } else {
            proto::ICMP
        };
        let l3 = self.ip_begin(link, src, dst, proto, ttl, true);
        (l3, icmp_begin(&mut self.buf, typ, code, rest))
    }

    pub fn icmp_finish(&mut self, (l3, l4): (L3, usize)) {
        l4_seal(&mut self.buf, l4, ICMP_CSUM_AT, l3.pseudo, l3.icmp_proto());
        self.ip_finish(l3);
    }
}
