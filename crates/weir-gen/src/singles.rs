//! Frames that stand alone: ICMP errors, neighbour solicitations, LLDP, IPv4
//! with options, ESP/GRE, and the malformed frames.

use crate::builder::*;
use crate::emit::Ctx;
use crate::flows::link_local;
use crate::mix::*;
use weir_wire::proto;

/// Appends the start of an offending IPv4 datagram as ICMP errors quote it
/// (RFC 792): its header, with its original total length, and its first
/// 8 bytes of transport header.
fn quoted_ipv4(buf: &mut Vec<u8>, h: &Ipv4, total_len: u16, first8: [u8; 8]) {
    let off = ipv4_begin(buf, h, &[]);
    ipv4_seal(buf, off, total_len);
    buf.extend_from_slice(&first8);
}

/// Destination unreachable (port or host) or time exceeded, sent to a local
/// client about a packet it sent.
pub fn icmp4_error(ctx: &mut Ctx) {
    let host = ctx.hosts.client(&mut ctx.rng, false);
    let Ip::V4(client) = host.ip else {
        unreachable!()
    };
    let Ip::V4(server) = ctx.hosts.server(&mut ctx.rng, false) else {
        unreachable!()
    };
    let down = ctx.uplink(&host).rev();
    let cport = ctx.ephemeral_port();
    let mut orig = Ipv4 {
        src: client,
        dst: server,
        proto: proto::UDP,
        ttl: 64 - ctx.rng.range(3, 12) as u8,
        tos: 0,
        id: ctx.rng.u16(),
        frag: IP_DF,
    };
    let mut first8 = [0u8; 8];
    first8[..2].copy_from_slice(&cport.to_be_bytes());
    let kind = ctx.rng.weighted(&[(0u8, 40), (1, 30), (2, 30)]);
    let (from, typ, code, orig_len) = match kind {
        0 => {
            // Port unreachable from the server: a UDP datagram to a closed port.
            let dport = ctx.rng.range(1024, 65535) as u16;
            let ulen = ctx.rng.range(20, 200) as u16;
            first8[2..4].copy_from_slice(&dport.to_be_bytes());
            first8[4..6].copy_from_slice(&ulen.to_be_bytes());
            first8[6..].copy_from_slice(&ctx.rng.u16().to_be_bytes());
            (server, 3, 3, 20 + ulen)
        }
        1 => {
            // Host unreachable from the gateway: a TCP SYN it could not deliver.
            orig.proto = proto::TCP;
            orig.ttl = 63;
            first8[2..4].copy_from_slice(&443u16.to_be_bytes());
            first8[4..].copy_from_slice(&ctx.rng.next_u32().to_be_bytes());
            (GATEWAY_V4, 3, 1, 60)
        }
        _ => {
            // Time exceeded from a transit router: a traceroute probe.
            orig.ttl = 1;
            orig.frag = 0;
            let probe = 33434 + ctx.rng.range(0, 29) as u16;
            first8[2..4].copy_from_slice(&probe.to_be_bytes());
            first8[4..6].copy_from_slice(&40u16.to_be_bytes());
            first8[6..].copy_from_slice(&ctx.rng.u16().to_be_bytes());
            let router = TRANSIT_ROUTERS[ctx.rng.below(TRANSIT_ROUTERS.len() as u32) as usize];
            (router, 11, 0, 60)
        }
    };
    let ttl = if from == GATEWAY_V4 {
        64
    } else {
        255 - ctx.rng.range(2, 12) as u8
    };
    let open = ctx.icmp_begin(&down, Ip::V4(from), Ip::V4(client), ttl, typ, code, [0; 4]);
    quoted_ipv4(&mut ctx.buf, &orig, orig_len, first8);
    ctx.icmp_finish(open);
}

/// Neighbour solicitation (type 135) for the gateway or a neighbour, to the
/// solicited-node multicast group, with the source link-layer option.
pub fn icmp6_ns(ctx: &mut Ctx) {
    let host = ctx.hosts.client(&mut ctx.rng, true);
    let Ip::V6(global) = host.ip else {
        unreachable!()
    };
    let target = if ctx.rng.percent(50) {
        GATEWAY_V6_LL
    } else {
        let Ip::V6(n) = ctx.hosts.client(&mut ctx.rng, true).ip else {
            unreachable!()
        };
        n
    };
    let mut group = [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 0];
    group[13..].copy_from_slice(&target[13..]);
    let link = Link {
        src: host.mac,
        dst: [0x33, 0x33, 0xff, target[13], target[14], target[15]],
        vlan: ctx.vlan(),
    };
    let src = Ip::V6(link_local(&global));
    // Hop limit 255 proves the sender is on-link (RFC 4861).
    let open = ctx.icmp_begin(&link, src, Ip::V6(group), 255, 135, 0, [0; 4]);
    ctx.buf.extend_from_slice(&target);
    ctx.buf.extend_from_slice(&[1, 1]);
    ctx.buf.extend_from_slice(&host.mac);
    ctx.icmp_finish(open);
}

/// An LLDP advertisement from the access switch.
pub fn lldp(ctx: &mut Ctx) {
    const SWITCH_MAC: Mac = [0x02, 0x00, 0x00, 0x00, 0x5e, 0x01];
    let link = Link {
        src: SWITCH_MAC,
        dst: [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e],
        vlan: Vlan::None,
    };
    ethernet(&mut ctx.buf, &link, ETH_LLDP);
    let tlv = |buf: &mut Vec<u8>, typ: u16, value: &[u8]| {
        put_u16(buf, (typ << 9) | value.len() as u16);
        buf.extend_from_slice(value);
    };
    let mut chassis = [4u8; 7]; // subtype 4: MAC address
    chassis[1..].copy_from_slice(&SWITCH_MAC);
    tlv(&mut ctx.buf, 1, &chassis);
    let port = b'1' + ctx.rng.below(8) as u8;
    tlv(&mut ctx.buf, 2, &[5, b'g', b'e', b'0', b'/', port]); // subtype 5: ifname
    tlv(&mut ctx.buf, 3, &120u16.to_be_bytes()); // TTL
    tlv(&mut ctx.buf, 5, b"weir-sw1"); // system name
    tlv(&mut ctx.buf, 0, &[]); // end
}

/// An ICMP echo request with IPv4 options: record route (`ping -R`),
/// timestamp (`ping -T tsonly`) or loose source route.
pub fn ip_options(ctx: &mut Ctx) {
    let host = ctx.hosts.client(&mut ctx.rng, false);
    let Ip::V4(src) = host.ip else { unreachable!() };
    let Ip::V4(dst) = ctx.hosts.server(&mut ctx.rng, false) else {
        unreachable!()
    };
    let link = ctx.uplink(&host);
    let mut opts = [0u8; 40];
    let len = match ctx.rng.below(3) {
        0 => {
            // Record route: 9 empty slots, then an end-of-list byte.
            opts[..3].copy_from_slice(&[7, 39, 4]);
            40
        }
        1 => {
            // Timestamps only, 9 empty slots.
            opts[..4].copy_from_slice(&[68, 40, 5, 0]);
            40
        }
        _ => {
            // NOP, then LSRR through one transit router.
            opts[..4].copy_from_slice(&[1, 131, 7, 4]);
            opts[4..8].copy_from_slice(&TRANSIT_ROUTERS[0]);
            8
        }
    };
    ethernet(&mut ctx.buf, &link, ETH_IPV4);
    let h = Ipv4 {
        src,
        dst,
        proto: proto::ICMP,
        ttl: 64,
        tos: 0,
        id: ctx.rng.u16(),
        frag: 0,
    };
    let ip = ipv4_begin(&mut ctx.buf, &h, &opts[..len]);
    let mut rest = [0u8; 4];
    rest[..2].copy_from_slice(&ctx.rng.u16().to_be_bytes());
    rest[3] = 1;
    let l4 = icmp_begin(&mut ctx.buf, 8, 0, rest);
    let seed = ctx.rng.next_u64();
    payload(&mut ctx.buf, seed, 0, 56);
    l4_seal(&mut ctx.buf, l4, ICMP_CSUM_AT, Pseudo::None, proto::ICMP);
    ipv4_finish(&mut ctx.buf, ip);
}

/// ESP (an IPsec tunnel to a server) or GRE carrying an IPv4 ICMP echo.
pub fn other_proto(ctx: &mut Ctx) {
    let host = ctx.hosts.client(&mut ctx.rng, false);
    let server = ctx.hosts.server(&mut ctx.rng, false);
    let up = ctx.uplink(&host);
    let outbound = ctx.rng.percent(50);
    let (link, src, dst, ttl) = if outbound {
        (up, host.ip, server, 64)
    } else {
        (up.rev(), server, host.ip, 64 - ctx.rng.range(3, 20) as u8)
    };
    if ctx.rng.percent(70) {
        let l3 = ctx.ip_begin(&link, src, dst, proto::ESP, ttl, false);
        // A few tunnels (SPIs), sequence numbers that look in progress.
        put_u32(&mut ctx.buf, 0x0100_0000 + ctx.rng.below(4));
        put_u32(&mut ctx.buf, ctx.rng.range(1, 100_000));
        let len = ctx.rng.range(15, 100) as usize * 4;
        let seed = ctx.rng.next_u64();
        payload(&mut ctx.buf, seed, 0, len);
        ctx.ip_finish(l3);
    } else {
        let l3 = ctx.ip_begin(&link, src, dst, proto::GRE, ttl, false);
        // GRE without checksum/key/sequence, protocol IPv4.
        put_u16(&mut ctx.buf, 0);
        put_u16(&mut ctx.buf, ETH_IPV4);
        let inner = Ipv4 {
            src: [172, 16, 0, 1 + u8::from(!outbound)],
            dst: [172, 16, 0, 1 + u8::from(outbound)],
            proto: proto::ICMP,
            ttl: 64,
            tos: 0,
            id: ctx.rng.u16(),
            frag: 0,
        };
        let ip = ipv4_begin(&mut ctx.buf, &inner, &[]);
        let mut rest = [0u8; 4];
        rest[..2].copy_from_slice(&ctx.rng.u16().to_be_bytes());
        rest[3] = 1;
        let l4 = icmp_begin(&mut ctx.buf, 8, 0, rest);
        let seed = ctx.rng.next_u64();
        payload(&mut ctx.buf, seed, 0, 56);
        l4_seal(&mut ctx.buf, l4, ICMP_CSUM_AT, Pseudo::None, proto::ICMP);
        ipv4_finish(&mut ctx.buf, ip);
        ctx.ip_finish(l3);
    }
}

/// The kinds of malformed frame, chosen uniformly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// The frame ends inside the IPv4 header.
    TruncatedIpHeader,
    /// IHL below 5 (a header shorter than the fixed part).
    IhlTooSmall,
    /// IPv4 total length larger than the bytes in the frame.
    TotalLenTooBig,
    /// TCP data offset below 5.
    TcpOffsetTooSmall,
    /// IPv4 says TCP but carries fewer than 20 bytes.
    TruncatedTcpHeader,
}

pub const MALFORMED_KINDS: [Malformed; 5] = [
    Malformed::TruncatedIpHeader,
    Malformed::IhlTooSmall,
    Malformed::TotalLenTooBig,
    Malformed::TcpOffsetTooSmall,
    Malformed::TruncatedTcpHeader,
];

/// A malformed IPv4 frame (never padded: the padding could hide the fault).
pub fn malformed(ctx: &mut Ctx) {
    let kind = MALFORMED_KINDS[ctx.rng.below(MALFORMED_KINDS.len() as u32) as usize];
    let host = ctx.hosts.client(&mut ctx.rng, false);
    let server = ctx.hosts.server(&mut ctx.rng, false);
    let link = ctx.uplink(&host);
    let proto = match kind {
        Malformed::TcpOffsetTooSmall | Malformed::TruncatedTcpHeader => proto::TCP,
        _ => proto::UDP,
    };
    let l3 = ctx.ip_begin(&link, host.ip, server, proto, 64, false);
    let ip_off = ctx.buf.len() - 20;
    let sport = ctx.ephemeral_port();
    match kind {
        Malformed::TruncatedIpHeader => {
            ctx.ip_finish(l3);
            ipv4_seal(&mut ctx.buf, ip_off, 20 + ctx.rng.range(8, 100) as u16);
            let keep = ctx.rng.range(1, 19) as usize;
            ctx.buf.truncate(ip_off + keep);
        }
        Malformed::IhlTooSmall => {
            let seed = ctx.rng.next_u64();
            payload(&mut ctx.buf, seed, 0, ctx.rng.range(8, 64) as usize);
            ctx.ip_finish(l3);
            ctx.buf[ip_off] = 0x40 | ctx.rng.range(0, 4) as u8;
        }
        Malformed::TotalLenTooBig => {
            let dport = ctx.rng.range(10_000, 30_000) as u16;
            let l4 = udp_begin(&mut ctx.buf, sport, dport);
            let seed = ctx.rng.next_u64();
            payload(&mut ctx.buf, seed, 0, ctx.rng.range(8, 200) as usize);
            udp_seal(&mut ctx.buf, l4, l3.pseudo);
            let real = (ctx.buf.len() - ip_off) as u16;
            ipv4_seal(&mut ctx.buf, ip_off, real + ctx.rng.range(1, 400) as u16);
        }
        Malformed::TcpOffsetTooSmall => {
            let h = Tcp {
                sport,
                dport: 443,
                seq: ctx.rng.next_u32(),
                ack: ctx.rng.next_u32(),
                flags: TCP_ACK,
                window: 502,
            };
            let l4 = tcp_begin(&mut ctx.buf, &h, &[]);
            ctx.buf[l4 + 12] = (ctx.rng.range(0, 4) as u8) << 4;
            let seed = ctx.rng.next_u64();
            payload(&mut ctx.buf, seed, 0, ctx.rng.range(0, 40) as usize);
            l4_seal(&mut ctx.buf, l4, TCP_CSUM_AT, l3.pseudo, proto::TCP);
            ctx.ip_finish(l3);
        }
        Malformed::TruncatedTcpHeader => {
            let h = Tcp {
                sport,
                dport: 80,
                seq: ctx.rng.next_u32(),
                ack: 0,
                flags: TCP_SYN,
                window: 64240,
            };
            let l4 = tcp_begin(&mut ctx.buf, &h, &[]);
            ctx.buf.truncate(l4 + ctx.rng.range(1, 19) as usize);
            ctx.ip_finish(l3);
        }
    }
}
