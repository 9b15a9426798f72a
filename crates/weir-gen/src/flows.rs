//! Conversations that span several frames: TCP connections, UDP exchanges,
//! ICMP echo, IP fragment trains, ARP. Each is a small `Copy` state machine
//! that writes its next packet when the generator picks it, so packets of
//! concurrent conversations interleave.

use crate::builder::*;
use crate::emit::Ctx;
use crate::mix::*;
use weir_wire::proto;

pub trait Conversation {
    /// Writes the next packet into `ctx.buf`; true when this was the last.
    fn step(&mut self, ctx: &mut Ctx) -> bool;
}

/// Emits one packet of the category: from a pending conversation, or from a
/// new one (always when none is pending, with `new_percent` chance while the
/// table has room). Finished conversations leave the table.
pub fn drive<C: Conversation>(
    table: &mut Vec<C>,
    cap: usize,
    new_percent: u32,
    ctx: &mut Ctx,
    make: impl FnOnce(&mut Ctx) -> C,
) {
    let start_new = table.is_empty() || (table.len() < cap && ctx.rng.percent(new_percent));
    if start_new {
        let mut c = make(ctx);
        if !c.step(ctx) {
            table.push(c);
        }
    } else {
        let i = ctx.rng.below(table.len() as u32) as usize;
        if table[i].step(ctx) {
            table.swap_remove(i);
        }
    }
}

/// TTL or hop limit of a packet from a remote peer, as seen on the capture
/// link: a typical initial value minus some hops.
fn remote_ttl(ctx: &mut Ctx) -> u8 {
    let initial = if ctx.rng.percent(75) { 64 } else { 128 };
    initial - ctx.rng.range(3, 20) as u8
}

// ---------------------------------------------------------------------------
// TCP

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TcpPhase {
    Syn,
    /// The server answers the SYN with RST|ACK (nothing listening).
    Refused,
    SynAck,
    HandshakeAck,
    Data,
    Rst,
    Fin1,
    Fin2,
    LastAck,
}

/// One side's sequence space and timestamp clock.
#[derive(Clone, Copy, Debug)]
struct TcpSide {
    /// Next sequence number this side sends.
    next: u32,
    /// Added to the millisecond clock to make this host's TSval.
    ts_off: u32,
    /// The last TSval sent, echoed by the peer as TSecr.
    last_ts: u32,
    window: u16,
}

#[derive(Clone, Copy, Debug)]
pub struct TcpFlow {
    up: Link,
    client: Ip,
    server: Ip,
    cport: u16,
    sport: u16,
    c: TcpSide,
    s: TcpSide,
    server_ttl: u8,
    mss: u16,
    data_left: u8,
    phase: TcpPhase,
    refused: bool,
    rst_end: bool,
    closer_is_client: bool,
}

/// MSS, SACK permitted, timestamps, NOP, window scale 7: Linux's SYN.
fn syn_options(mss: u16, tsval: u32, tsecr: u32) -> [u8; 20] {
    let m = mss.to_be_bytes();
    let v = tsval.to_be_bytes();
    let e = tsecr.to_be_bytes();
    [
        2, 4, m[0], m[1], 4, 2, 8, 10, v[0], v[1], v[2], v[3], e[0], e[1], e[2], e[3], 1, 3, 3, 7,
    ]
}

/// NOP, NOP, timestamps: on every segment after the SYNs.
fn ts_options(tsval: u32, tsecr: u32) -> [u8; 12] {
    let v = tsval.to_be_bytes();
    let e = tsecr.to_be_bytes();
    [1, 1, 8, 10, v[0], v[1], v[2], v[3], e[0], e[1], e[2], e[3]]
}

impl TcpFlow {
    pub fn new(ctx: &mut Ctx) -> TcpFlow {
        let v6 = ctx.rng.percent(IPV6_PERCENT);
        let host = ctx.hosts.client(&mut ctx.rng, v6);
        let server = ctx.hosts.server(&mut ctx.rng, v6);
        let up = ctx.uplink(&host);
        let sport = match ctx.rng.weighted(&TCP_SERVER_PORTS) {
            0 => ctx.rng.range(1024, 65535) as u16,
            p => p,
        };
        let cport = ctx.ephemeral_port();
        let side = |ctx: &mut Ctx, window: u16| TcpSide {
            next: ctx.rng.next_u32(),
            ts_off: ctx.rng.next_u32(),
            last_ts: 0,
            window,
        };
        let c = side(ctx, 502);
        let s_window = ctx.rng.range(227, 509) as u16;
        let s = side(ctx, s_window);
        let server_ttl = remote_ttl(ctx);
        TcpFlow {
            up,
            client: host.ip,
            server,
            cport,
            sport,
            c,
            s,
            server_ttl,
            mss: if v6 { 1440 } else { 1460 },
            // Mostly short request/response exchanges, sometimes a transfer.
            data_left: ctx.rng.range(1, 12) as u8,
            phase: TcpPhase::Syn,
            refused: ctx.rng.percent(TCP_REFUSED_PERCENT),
            rst_end: ctx.rng.percent(TCP_RST_TEARDOWN_PERCENT),
            closer_is_client: ctx.rng.percent(70),
        }
    }

    /// Writes one segment from the client (`from_client`) or the server.
    fn send(&mut self, ctx: &mut Ctx, from_client: bool, flags: u8, len: usize) {
        let tsval_now = (ctx.now_ns / 1_000_000) as u32;
        let (me, peer) = if from_client {
            (&mut self.c, &self.s)
        } else {
            (&mut self.s, &self.c)
        };
        let tsval = tsval_now.wrapping_add(me.ts_off);
        let h = Tcp {
            sport: if from_client { self.cport } else { self.sport },
            dport: if from_client { self.sport } else { self.cport },
            seq: me.next,
            ack: if flags & TCP_ACK != 0 { peer.next } else { 0 },
            flags,
            window: if flags & TCP_RST != 0 {
                0
            } else if flags & TCP_SYN != 0 {
                // Unscaled window in SYNs (scaling starts after them).
                if from_client {
                    64240
                } else {
                    65160
                }
            } else {
                me.window
            },
        };
        let syn_opts;
        let ts_opts;
        let opts: &[u8] = if flags & TCP_RST != 0 {
            &[]
        } else if flags & TCP_SYN != 0 {
            syn_opts = syn_options(self.mss, tsval, peer.last_ts);
            &syn_opts
        } else {
            ts_opts = ts_options(tsval, peer.last_ts);
            &ts_opts
        };
        me.last_ts = tsval;
        // SYN and FIN take one sequence number each.
        let consumed = len as u32 + u32::from(flags & (TCP_SYN | TCP_FIN) != 0);
        me.next = me.next.wrapping_add(consumed);
        let (link, src, dst, ttl) = if from_client {
            (self.up, self.client, self.server, 64)
        } else {
            (self.up.rev(), self.server, self.client, self.server_ttl)
        };
        ctx.tcp(&link, src, dst, ttl, &h, opts, len);
    }

    /// Payload size of a data-phase segment: a pure ACK, a small write, or a
    /// full segment (MSS less the 12 bytes of timestamp option).
    fn segment_len(&self, ctx: &mut Ctx) -> usize {
        match ctx.rng.weighted(&[(0u8, 25), (1, 45), (2, 30)]) {
            0 => 0,
            1 => ctx.rng.range(100, 600) as usize,
            _ => usize::from(self.mss) - 12,
        }
    }
}

impl Conversation for TcpFlow {
    fn step(&mut self, ctx: &mut Ctx) -> bool {
        use TcpPhase::*;
        match self.phase {
            Syn => {
                self.send(ctx, true, TCP_SYN, 0);
                self.phase = if self.refused { Refused } else { SynAck };
            }
            Refused => {
                self.s.next = 0;
                self.send(ctx, false, TCP_RST | TCP_ACK, 0);
                return true;
            }
            SynAck => {
                self.send(ctx, false, TCP_SYN | TCP_ACK, 0);
                self.phase = HandshakeAck;
            }
            HandshakeAck => {
                self.send(ctx, true, TCP_ACK, 0);
                self.phase = Data;
            }
            Data => {
                // Servers send most of the bytes.
                let from_client = ctx.rng.percent(35);
                let len = self.segment_len(ctx);
                let full = len + 12 == usize::from(self.mss);
                let flags = if len == 0 || full {
                    TCP_ACK
                } else {
                    TCP_PSH | TCP_ACK
                };
                self.send(ctx, from_client, flags, len);
                self.data_left -= 1;
                if self.data_left == 0 {
                    self.phase = if self.rst_end { Rst } else { Fin1 };
                }
            }
            Rst => {
                let from_client = ctx.rng.percent(50);
                self.send(ctx, from_client, TCP_RST | TCP_ACK, 0);
                return true;
            }
            Fin1 => {
                self.send(ctx, self.closer_is_client, TCP_FIN | TCP_ACK, 0);
                self.phase = Fin2;
            }
            Fin2 => {
                self.send(ctx, !self.closer_is_client, TCP_FIN | TCP_ACK, 0);
                self.phase = LastAck;
            }
            LastAck => {
                self.send(ctx, self.closer_is_client, TCP_ACK, 0);
                return true;
            }
        }
        false
    }
}

// ---------------------------------------------------------------------------
// UDP

/// Names under the reserved example domains (RFC 2606).
const DNS_NAMES: [&str; 6] = [
    "www.example.com",
    "api.example.net",
    "mail.example.org",
    "cdn.example.com",
    "time.example.org",
    "login.example.net",
];
const DNS_A: u16 = 1;
const DNS_AAAA: u16 = 28;

#[derive(Clone, Copy, Debug)]
pub struct UdpExchange {
    up: Link,
    client: Ip,
    server: Ip,
    cport: u16,
    sport: u16,
    server_ttl: u8,
    kind: UdpKind,
    step: u8,
    steps: u8,
    dns_id: u16,
    dns_name: u8,
    dns_type: u16,
    nxdomain: bool,
}

impl UdpExchange {
    pub fn new(ctx: &mut Ctx) -> UdpExchange {
        let v6 = ctx.rng.percent(IPV6_PERCENT);
        let host = ctx.hosts.client(&mut ctx.rng, v6);
        let up = ctx.uplink(&host);
        let kind = ctx.rng.weighted(&UDP_KINDS);
        let pick =
            |ctx: &mut Ctx, list: &[[u8; 4]]| list[ctx.rng.below(list.len() as u32) as usize];
        let (server, sport, cport, steps) = match kind {
            UdpKind::Dns => {
                let server = if v6 {
                    Ip::V6(DNS_RESOLVER_V6)
                } else {
                    Ip::V4(pick(ctx, &DNS_RESOLVERS))
                };
                // One query in ten goes unanswered.
                let steps = if ctx.rng.percent(10) { 1 } else { 2 };
                (server, 53, ctx.ephemeral_port(), steps)
            }
            UdpKind::Ntp => {
                let server = if v6 {
                    ctx.hosts.server(&mut ctx.rng, true)
                } else {
                    Ip::V4(pick(ctx, &NTP_SERVERS))
                };
                // ntpd uses source port 123, SNTP clients an ephemeral one.
                let cport = if ctx.rng.percent(50) {
                    123
                } else {
                    ctx.ephemeral_port()
                };
                (server, 123, cport, 2)
            }
            UdpKind::HighPort => {
                let server = ctx.hosts.server(&mut ctx.rng, v6);
                let sport = ctx.rng.range(1024, 65535) as u16;
                (
                    server,
                    sport,
                    ctx.ephemeral_port(),
                    ctx.rng.range(1, 6) as u8,
                )
            }
            UdpKind::Large => {
                let server = ctx.hosts.server(&mut ctx.rng, v6);
                let sport = ctx.rng.range(1024, 65535) as u16;
                (
                    server,
                    sport,
                    ctx.ephemeral_port(),
                    ctx.rng.range(1, 3) as u8,
                )
            }
        };
        let dns_type = if v6 || ctx.rng.percent(30) {
            DNS_AAAA
        } else {
            DNS_A
        };
        UdpExchange {
            up,
            client: host.ip,
            server,
            cport,
            sport,
            server_ttl: remote_ttl(ctx),
            kind,
            step: 0,
            steps,
            dns_id: ctx.rng.u16(),
            dns_name: ctx.rng.below(DNS_NAMES.len() as u32) as u8,
            dns_type,
            nxdomain: ctx.rng.percent(8),
        }
    }

    fn dns_body(&self, ctx: &mut Ctx, response: bool) {
        let buf = &mut ctx.buf;
        put_u16(buf, self.dns_id);
        let answers = u16::from(response && !self.nxdomain);
        let flags = match (response, self.nxdomain) {
            (false, _) => 0x0100,    // standard query, recursion desired
            (true, false) => 0x8180, // response, RD, RA, no error
            (true, true) => 0x8183,  // NXDOMAIN
        };
        for v in [flags, 1, answers, 0, 0] {
            put_u16(buf, v);
        }
        for label in DNS_NAMES[usize::from(self.dns_name)].split('.') {
            buf.push(label.len() as u8);
            buf.extend_from_slice(label.as_bytes());
        }
        buf.push(0);
        put_u16(buf, self.dns_type);
        put_u16(buf, 1); // class IN
        if answers == 1 {
            // Name as a pointer to the question at offset 12.
            for v in [0xc00c, self.dns_type, 1] {
                put_u16(buf, v);
            }
            put_u32(buf, 300);
            if self.dns_type == DNS_A {
                put_u16(buf, 4);
                let last = ctx.rng.range(1, 254) as u8;
                ctx.buf.extend_from_slice(&[192, 0, 2, last]);
            } else {
                put_u16(buf, 16);
                ctx.buf
                    .extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0]);
                let low = ctx.rng.next_u32();
                put_u32(&mut ctx.buf, low);
            }
        }
    }

    fn ntp_body(&self, ctx: &mut Ctx, response: bool) {
        // LI 0, version 4, mode 3 (client) or 4 (server).
        let first = if response { 0x24 } else { 0x23 };
        let stratum = if response { 2 } else { 0 };
        ctx.buf.extend_from_slice(&[first, stratum, 6, 0xe9]);
        let seed = ctx.rng.next_u64();
        payload(&mut ctx.buf, seed, 0, 44);
    }
}

impl Conversation for UdpExchange {
    fn step(&mut self, ctx: &mut Ctx) -> bool {
        let from_client = match self.kind {
            UdpKind::Large => ctx.rng.percent(30),
            _ => self.step & 1 == 0,
        };
        let (link, src, dst, ttl, sport, dport) = if from_client {
            (
                self.up,
                self.client,
                self.server,
                64,
                self.cport,
                self.sport,
            )
        } else {
            (
                self.up.rev(),
                self.server,
                self.client,
                self.server_ttl,
                self.sport,
                self.cport,
            )
        };
        let large = self.kind == UdpKind::Large;
        let open = ctx.udp_begin(&link, src, dst, ttl, sport, dport, !large);
        match self.kind {
            UdpKind::Dns => self.dns_body(ctx, !from_client),
            UdpKind::Ntp => self.ntp_body(ctx, !from_client),
            UdpKind::HighPort | UdpKind::Large => {
                let len = if large {
                    // Fill the 1500-byte MTU at most.
                    let max = if src.is_v6() { 1452 } else { 1472 };
                    ctx.rng.range(1000, max)
                } else {
                    ctx.rng.range(20, 300)
                };
                let seed = ctx.rng.next_u64();
                payload(&mut ctx.buf, seed, 0, len as usize);
            }
        }
        ctx.udp_finish(open);
        self.step += 1;
        self.step == self.steps
    }
}

// ---------------------------------------------------------------------------
// ICMP / ICMPv6 echo

/// Windows ping's 32-byte payload.
const WINDOWS_PING: &[u8; 32] = b"abcdefghijklmnopqrstuvwabcdefghi";

#[derive(Clone, Copy, Debug)]
pub struct EchoExchange {
    up: Link,
    client: Ip,
    server: Ip,
    server_ttl: u8,
    ident: u16,
    seq: u16,
    rounds_left: u8,
    awaiting_reply: bool,
    windows: bool,
    /// Time of the outstanding request: Linux ping puts it in the payload
    /// and the reply echoes it.
    sent_ns: u64,
}

impl EchoExchange {
    pub fn new(ctx: &mut Ctx, v6: bool) -> EchoExchange {
        let host = ctx.hosts.client(&mut ctx.rng, v6);
        let up = ctx.uplink(&host);
        // Some pings go to the gateway on the link, most go out.
        let (server, server_ttl) = if ctx.rng.percent(15) {
            let gw = if v6 {
                Ip::V6(GATEWAY_V6_LL)
            } else {
                Ip::V4(GATEWAY_V4)
            };
            (gw, 64)
        } else {
            (ctx.hosts.server(&mut ctx.rng, v6), remote_ttl(ctx))
        };
        // A link-local target needs a link-local source.
        let client = match (server, host.ip) {
            (Ip::V6(s), Ip::V6(c)) if s[0] == 0xfe => Ip::V6(link_local(&c)),
            _ => host.ip,
        };
        EchoExchange {
            up,
            client,
            server,
            server_ttl,
            ident: ctx.rng.u16(),
            seq: 1,
            rounds_left: ctx.rng.range(1, 4) as u8,
            awaiting_reply: false,
            windows: !v6 && ctx.rng.percent(30),
            sent_ns: 0,
        }
    }

    fn body(&self, ctx: &mut Ctx) {
        if self.windows {
            ctx.buf.extend_from_slice(WINDOWS_PING);
        } else {
            // iputils: a 16-byte timeval, then byte i holds i (56 bytes).
            let secs = self.sent_ns / 1_000_000_000;
            let usecs = (self.sent_ns % 1_000_000_000) / 1000;
            ctx.buf.extend_from_slice(&secs.to_le_bytes());
            ctx.buf.extend_from_slice(&usecs.to_le_bytes());
            ctx.buf.extend(16u8..56);
        }
    }
}

/// fe80::/64 with the interface identifier of a global address.
pub fn link_local(global: &[u8; 16]) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[0] = 0xfe;
    a[1] = 0x80;
    a[8..].copy_from_slice(&global[8..]);
    a
}

impl Conversation for EchoExchange {
    fn step(&mut self, ctx: &mut Ctx) -> bool {
        let v6 = self.client.is_v6();
        let mut rest = [0u8; 4];
        rest[..2].copy_from_slice(&self.ident.to_be_bytes());
        rest[2..].copy_from_slice(&self.seq.to_be_bytes());
        if self.awaiting_reply {
            let typ = if v6 { 129 } else { 0 };
            let link = self.up.rev();
            let open = ctx.icmp_begin(
                &link,
                self.server,
                self.client,
                self.server_ttl,
                typ,
                0,
                rest,
            );
            self.body(ctx);
            ctx.icmp_finish(open);
            self.awaiting_reply = false;
            self.seq += 1;
            self.rounds_left -= 1;
        } else {
            self.sent_ns = ctx.now_ns;
            let typ = if v6 { 128 } else { 8 };
            let link = self.up;
            let open = ctx.icmp_begin(&link, self.client, self.server, 64, typ, 0, rest);
            self.body(ctx);
            ctx.icmp_finish(open);
            // One request in ten gets no reply.
            if ctx.rng.percent(10) {
                self.seq += 1;
                self.rounds_left -= 1;
            } else {
                self.awaiting_reply = true;
            }
        }
        self.rounds_left == 0
    }
}

// ---------------------------------------------------------------------------
// Fragments

/// Share of fragment trains over IPv6 (higher than [`IPV6_PERCENT`] so that
/// IPv6 fragments show up in short traces).
pub const IPV6_FRAGMENT_PERCENT: u32 = 20;

/// A UDP datagram too big for the MTU, sent as IP fragments in order. The
/// datagram is never stored: its bytes are regenerated from `seed`.
#[derive(Clone, Copy, Debug)]
pub struct FragTrain {
    link: Link,
    src: Ip,
    dst: Ip,
    ttl: u8,
    sport: u16,
    dport: u16,
    ident: u32,
    /// UDP header + payload.
    dgram_len: u16,
    next_off: u16,
    seed: u64,
    udp_csum: u16,
}

impl FragTrain {
    pub fn new(ctx: &mut Ctx) -> FragTrain {
        let v6 = ctx.rng.percent(IPV6_FRAGMENT_PERCENT);
        let host = ctx.hosts.client(&mut ctx.rng, v6);
        let server = ctx.hosts.server(&mut ctx.rng, v6);
        let link = ctx.uplink(&host).rev();
        // NFS reads, RTP, or some other service (not DNS or VXLAN: their
        // decoders would choke on the opaque payload).
        let sport = match ctx.rng.weighted(&[(2049u16, 50), (5004, 25), (0, 25)]) {
            0 => ctx.rng.range(10_000, 30_000) as u16,
            p => p,
        };
        let dport = ctx.ephemeral_port();
        let plen = ctx.rng.range(1600, 4300) as u16;
        let dgram_len = plen + 8;
        let seed = ctx.rng.next_u64();
        let (pseudo, ident) = match (server, host.ip) {
            (Ip::V4(s), Ip::V4(d)) => (Pseudo::V4(s, d), u32::from(ctx.rng.u16())),
            (Ip::V6(s), Ip::V6(d)) => (Pseudo::V6(s, d), ctx.rng.next_u32()),
            _ => unreachable!(),
        };
        // The UDP checksum covers the whole datagram: sum it once, using the
        // (empty) frame buffer as scratch.
        debug_assert!(ctx.buf.is_empty());
        let scratch = ctx.buf.len();
        let l4 = udp_begin(&mut ctx.buf, sport, dport);
        payload(&mut ctx.buf, seed, 0, usize::from(plen));
        udp_seal(&mut ctx.buf, l4, pseudo);
        let udp_csum = u16::from_be_bytes([ctx.buf[l4 + 6], ctx.buf[l4 + 7]]);
        ctx.buf.truncate(scratch);
        FragTrain {
            link,
            src: server,
            dst: host.ip,
            ttl: remote_ttl(ctx),
            sport,
            dport,
            ident,
            dgram_len,
            next_off: 0,
            seed,
            udp_csum,
        }
    }

    /// Appends bytes `off..off + len` of the UDP datagram.
    fn dgram_bytes(&self, buf: &mut Vec<u8>, off: u16, len: u16) {
        let (off, len) = (usize::from(off), usize::from(len));
        if off == 0 {
            put_u16(buf, self.sport);
            put_u16(buf, self.dport);
            put_u16(buf, self.dgram_len);
            put_u16(buf, self.udp_csum);
            payload(buf, self.seed, 0, len - 8);
        } else {
            payload(buf, self.seed, off - 8, len);
        }
    }
}

impl Conversation for FragTrain {
    fn step(&mut self, ctx: &mut Ctx) -> bool {
        // Largest multiple of 8 that fits a 1500-byte MTU after the headers.
        let unit = if self.src.is_v6() { 1448 } else { 1480 };
        let off = self.next_off;
        let len = unit.min(self.dgram_len - off);
        let more = off + len < self.dgram_len;
        match (self.src, self.dst) {
            (Ip::V4(s), Ip::V4(d)) => {
                ethernet(&mut ctx.buf, &self.link, ETH_IPV4);
                let h = Ipv4 {
                    src: s,
                    dst: d,
                    proto: proto::UDP,
                    ttl: self.ttl,
                    tos: 0,
                    id: self.ident as u16,
                    frag: if more { IP_MF } else { 0 } | (off / 8),
                };
                let ip = ipv4_begin(&mut ctx.buf, &h, &[]);
                self.dgram_bytes(&mut ctx.buf, off, len);
                ipv4_finish(&mut ctx.buf, ip);
            }
            (Ip::V6(s), Ip::V6(d)) => {
                ethernet(&mut ctx.buf, &self.link, ETH_IPV6);
                let h = Ipv6 {
                    src: s,
                    dst: d,
                    next: proto::IPV6_FRAG,
                    hop_limit: self.ttl,
                    flow_label: 0,
                };
                let ip = ipv6_begin(&mut ctx.buf, &h);
                ipv6_frag_ext(&mut ctx.buf, proto::UDP, off, more, self.ident);
                self.dgram_bytes(&mut ctx.buf, off, len);
                ipv6_finish(&mut ctx.buf, ip);
            }
            _ => unreachable!(),
        }
        self.next_off += len;
        !more
    }
}

// ---------------------------------------------------------------------------
// ARP

const BROADCAST: Mac = [0xff; 6];

#[derive(Clone, Copy, Debug)]
pub struct ArpExchange {
    asker: Host,
    target: Host,
    vlan: Vlan,
    replied: bool,
}

impl ArpExchange {
    pub fn new(ctx: &mut Ctx) -> ArpExchange {
        let asker = ctx.hosts.client(&mut ctx.rng, false);
        // Mostly the gateway's address is asked for, else a neighbour's.
        let target = if ctx.rng.percent(60) {
            Host {
                mac: GATEWAY_MAC,
                ip: Ip::V4(GATEWAY_V4),
            }
        } else {
            ctx.hosts.client(&mut ctx.rng, false)
        };
        ArpExchange {
            asker,
            target,
            vlan: ctx.vlan(),
            replied: false,
        }
    }
}

fn arp(buf: &mut Vec<u8>, link: &Link, op: u16, sender: &Host, target_mac: Mac, target_ip: Ip) {
    let (Ip::V4(spa), Ip::V4(tpa)) = (sender.ip, target_ip) else {
        unreachable!("ARP is IPv4 only")
    };
    ethernet(buf, link, ETH_ARP);
    // Ethernet hardware, IPv4 protocol, address lengths 6 and 4.
    for v in [1, ETH_IPV4, 0x0604, op] {
        put_u16(buf, v);
    }
    buf.extend_from_slice(&sender.mac);
    buf.extend_from_slice(&spa);
    buf.extend_from_slice(&target_mac);
    buf.extend_from_slice(&tpa);
}

impl Conversation for ArpExchange {
    fn step(&mut self, ctx: &mut Ctx) -> bool {
        if !self.replied {
            let link = Link {
                src: self.asker.mac,
                dst: BROADCAST,
                vlan: self.vlan,
            };
            arp(&mut ctx.buf, &link, 1, &self.asker, [0; 6], self.target.ip);
            self.replied = true;
            false
        } else {
            let link = Link {
                src: self.target.mac,
                dst: self.asker.mac,
                vlan: self.vlan,
            };
            arp(
                &mut ctx.buf,
                &link,
                2,
                &self.target,
                self.asker.mac,
                self.asker.ip,
            );
            true
        }
    }
}
