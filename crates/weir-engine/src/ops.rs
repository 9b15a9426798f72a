//! What each micro-instruction tests, and the two ways to dispatch on it.
//!
//! ipfw replaced its giant `switch` with a dispatch table and measured no
//! cost. weir keeps both, [`MatchDispatch`] (a `match` the compiler turns
//! into a jump table or inlines) and [`TableDispatch`] (an array of function
//! pointers indexed by opcode), over the same per-op functions, so the
//! benchmark can repeat that measurement and tests can check they agree.
//! Both are made from the opcode table (`opcodes.rs`).

use crate::program::{class, Insn, Op, Program};
use weir_wire::{frag, proto, tcp, Direction, Packet};

/// What the evaluator knows beyond the packet: this host's addresses,
/// which interface patterns and interface-table entries each capture
/// interface matches, and the replay settings a walk starts from.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// `--me` addresses, in the packet's `u128` form, with their version.
    pub me: Vec<(u128, u8)>,
    /// Per interface index: bit k set when it matches pattern k.
    pub iface_bits: Vec<u64>,
    /// Per interface-table reference and interface index (`ref *
    /// interfaces + index`): the interface's value in that table.
    pub iface_values: Vec<Option<u32>>,
    /// The FIB a packet starts in (`--fib`; FreeBSD's default 0).
    pub fib: u16,
    /// Seed of `prob` draws (`--seed`): the same seed, the same draws.
    pub seed: u64,
}

impl Env {
    /// Recomputes interface bits for the capture's interface names.
    pub fn set_interfaces(&mut self, prog: &Program, names: &[Option<&str>]) {
        self.iface_bits = names
            .iter()
            .map(|name| {
                let Some(name) = name else { return 0 };
                prog.iface_patterns
                    .iter()
                    .enumerate()
                    .filter(|(_, pat)| iface_matches(pat, name))
                    .fold(0u64, |bits, (k, _)| bits | 1 << k)
            })
            .collect();
        self.iface_values = prog
            .table_refs
            .iter()
            .flat_map(|r| {
                let table = &prog.tables[r.table as usize];
                names.iter().map(move |name| {
                    let v = table.lookup_iface(name.as_deref()?)?;
                    r.value.is_none_or(|want| want == v).then_some(v)
                })
            })
            .collect();
    }
}

/// `eth0` matches itself; `eth*` matches any name starting with `eth`.
pub fn iface_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// What one walk has done to the packet so far, as later rules see it:
/// small, fixed-size, on the stack (no allocation per packet). The FIB,
/// TOS and MSS are the packet's (the run's, for the FIB) until an action
/// changes them, so a new one is a few zeroed words.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Ctx {
    /// Tags set by `tag` (bit k: `Program::tag_values[k]`).
    pub tags: u64,
    /// `prob`: the packet's number times a constant, plus a step per draw.
    rng: u64,
    /// Set by `setfib`, `tcp-setmss`, `setdscp` (bits of `changed`).
    fib: u16,
    mss: u16,
    tos: u8,
    changed: u8,
    /// Back from a divert socket: 1 into input, 2 into output.
    pub diverted: u8,
    /// This walk is the layer-2 pass.
    pub layer2: bool,
}

const FIB_SET: u8 = 1;
const MSS_SET: u8 = 2;
const TOS_SET: u8 = 4;

impl Ctx {
    /// The state before the first rule of packet number `packet_no`.
    #[inline]
    pub fn new(packet_no: u64) -> Ctx {
        Ctx {
            tags: 0,
            rng: packet_no.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            fib: 0,
            mss: 0,
            tos: 0,
            changed: 0,
            diverted: 0,
            layer2: false,
        }
    }

    /// The FIB (`--fib`, then `setfib`).
    #[inline]
    pub fn fib(&self, env: &Env) -> u16 {
        if self.changed & FIB_SET != 0 {
            self.fib
        } else {
            env.fib
        }
    }

    pub fn set_fib(&mut self, fib: u16) {
        self.fib = fib;
        self.changed |= FIB_SET;
    }

    /// The TOS byte (IPv6: traffic class); `setdscp` rewrites its DSCP.
    #[inline]
    pub fn tos(&self, p: &Packet) -> u8 {
        if self.changed & TOS_SET != 0 {
            self.tos
        } else {
            p.tos
        }
    }

    pub fn set_tos(&mut self, tos: u8) {
        self.tos = tos;
        self.changed |= TOS_SET;
    }

    /// The TCP MSS option's value (`tcp-setmss` lowers it).
    #[inline]
    pub fn mss(&self, p: &Packet) -> u16 {
        if self.changed & MSS_SET != 0 {
            self.mss
        } else {
            p.tcp_mss
        }
    }

    pub fn set_mss(&mut self, mss: u16) {
        self.mss = mss;
        self.changed |= MSS_SET;
    }

    /// One `prob` draw: true with probability `threshold / 2^32`. The
    /// draw depends on the seed, the packet's number and how many draws
    /// its walk made before (seed + number × φ + draws × another odd
    /// constant, then splitmix64's finaliser): reproducible, and the same
    /// whichever walk (linear or classified) reaches the rule.
    #[inline]
    pub fn draw(&mut self, seed: u64, threshold: u32) -> bool {
        self.rng = self.rng.wrapping_add(0xd1b5_4a32_d192_ed03);
        let mut z = seed.wrapping_add(self.rng);
        // splitmix64's finaliser.
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 32) as u32) < threshold
    }
}

/// The packet's class bits (see [`class`]), computed once per packet.
#[inline]
pub fn packet_class(p: &Packet) -> u32 {
    let mut c = match p.direction {
        Direction::In => class::IN,
        Direction::Out => class::OUT,
        Direction::Unknown => 0,
    };
    c |= match p.ip_version {
        4 => class::V4,
        6 => class::V6,
        _ => 0,
    };
    if p.frag & frag::LATER != 0 {
        c |= class::LATER_FRAG;
    }
    if is_tcp_with_header(p) {
        if is_established(p) {
            c |= class::ESTABLISHED;
        }
        if p.tcp_flags & (tcp::SYN | tcp::ACK) == tcp::SYN {
            c |= class::SETUP;
        }
    }
    c | u32::from(p.ip_options) << class::IPOPT_SHIFT
}

/// Evaluates one instruction (before its NOT flag is applied).
pub trait Dispatch {
    fn matches(ins: &Insn, p: &Packet, prog: &Program, env: &Env, ctx: &Ctx) -> bool;
}

pub struct MatchDispatch;
pub struct TableDispatch;

#[inline]
fn pool<'a, T>(items: &'a [T], ins: &Insn) -> &'a [T] {
    &items[ins.arg as usize..ins.arg as usize + ins.len as usize]
}

#[inline]
fn in_ranges(ranges: &[(u16, u16)], v: u16) -> bool {
    ranges.iter().any(|&(lo, hi)| lo <= v && v <= hi)
}

#[inline]
fn in_nets(prog: &Program, ins: &Insn, addr: u128, version: u8) -> bool {
    pool(&prog.nets, ins)
        .iter()
        .any(|n| addr & n.mask == n.value && n.version == version)
}

/// Low byte of the argument must be set in `bits`, the next byte clear.
#[inline]
fn flags_match(bits: u8, arg: u32) -> bool {
    let (set, clear) = (arg as u8, (arg >> 8) as u8);
    bits & set == set && bits & clear == 0
}

#[inline]
fn iface_bit(env: &Env, p: &Packet, k: u32) -> bool {
    env.iface_bits
        .get(usize::from(p.iface))
        .is_some_and(|bits| bits & (1 << k) != 0)
}

#[inline]
fn is_tcp_with_header(p: &Packet) -> bool {
    p.proto == proto::TCP && p.has_ports
}

#[inline]
fn is_ip(p: &Packet) -> bool {
    p.ip_version == 4 || p.ip_version == 6
}

/// The table value an instruction finds for the packet, if it is one of
/// the table tests and the packet is in its table (with the value it
/// asks for): what `tablearg` stands for.
#[inline]
pub fn table_lookup(ins: &Insn, p: &Packet, prog: &Program, env: &Env, ctx: &Ctx) -> Option<u32> {
    let t = || prog.table_of(ins);
    let found = match ins.op {
        Op::SrcTable => t().lookup_ip(p.src, p.ip_version),
        Op::DstTable => t().lookup_ip(p.dst, p.ip_version),
        Op::SrcPortTable if p.has_ports => t().lookup_number(u32::from(p.src_port)),
        Op::DstPortTable if p.has_ports => t().lookup_number(u32::from(p.dst_port)),
        Op::DscpTable if is_ip(p) => t().lookup_number(u32::from(ctx.tos(p) >> 2)),
        Op::FlowTable => t().lookup_flow(p),
        Op::IfaceTable if iface_dir_ok(ins, p) => {
            let at = ins.arg as usize * env.iface_bits.len() + usize::from(p.iface);
            env.iface_values.get(at).copied().flatten()
        }
        _ => return None,
    };
    prog.table_answer(ins, found)
}

/// `via` looks at any interface, `recv` only inbound, `xmit` only outbound.
#[inline]
fn iface_dir_ok(ins: &Insn, p: &Packet) -> bool {
    match ins.len {
        1 => p.direction == Direction::In,
        2 => p.direction == Direction::Out,
        _ => true,
    }
}

pub(crate) fn never(_: &Insn, _: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    false
}
pub(crate) fn proto(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    u32::from(p.proto) == i.arg
}
pub(crate) fn ip_version(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    u32::from(p.ip_version) == i.arg
}
pub(crate) fn src_net(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    in_nets(prog, i, p.src, p.ip_version)
}
pub(crate) fn dst_net(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    in_nets(prog, i, p.dst, p.ip_version)
}
/// `me` (arg 0) is any of this host's addresses, as ipfw's `me` matches
/// local IPv4 and IPv6 addresses; `me6` (arg 6) only IPv6 ones.
#[inline]
fn is_me(i: &Insn, p: &Packet, env: &Env, addr: u128) -> bool {
    (i.arg == 0 || u32::from(p.ip_version) == i.arg)
        && env.me.iter().any(|&(a, v)| a == addr && v == p.ip_version)
}
pub(crate) fn src_me(i: &Insn, p: &Packet, _: &Program, env: &Env, _: &Ctx) -> bool {
    is_me(i, p, env, p.src)
}
pub(crate) fn dst_me(i: &Insn, p: &Packet, _: &Program, env: &Env, _: &Ctx) -> bool {
    is_me(i, p, env, p.dst)
}
pub(crate) fn src_port(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    p.has_ports && in_ranges(pool(&prog.ranges, i), p.src_port)
}
pub(crate) fn dst_port(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    p.has_ports && in_ranges(pool(&prog.ranges, i), p.dst_port)
}
pub(crate) fn dir_in(_: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    p.direction == Direction::In
}
pub(crate) fn dir_out(_: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    p.direction == Direction::Out
}
pub(crate) fn via(i: &Insn, p: &Packet, _: &Program, env: &Env, _: &Ctx) -> bool {
    iface_bit(env, p, i.arg)
}
pub(crate) fn recv(i: &Insn, p: &Packet, _: &Program, env: &Env, _: &Ctx) -> bool {
    p.direction == Direction::In && iface_bit(env, p, i.arg)
}
pub(crate) fn xmit(i: &Insn, p: &Packet, _: &Program, env: &Env, _: &Ctx) -> bool {
    p.direction == Direction::Out && iface_bit(env, p, i.arg)
}
pub(crate) fn established(_: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    is_tcp_with_header(p) && is_established(p)
}

/// Anything but a bare SYN among RST, ACK and SYN, as ip_fw2.c's O_ESTAB
/// reads a TCP header: `(th_flags & (TH_RST|TH_ACK|TH_SYN)) != TH_SYN`
/// (a FIN alone, or no flag at all, is established too).
#[inline]
fn is_established(p: &Packet) -> bool {
    p.tcp_flags & (tcp::RST | tcp::ACK | tcp::SYN) != tcp::SYN
}
pub(crate) fn setup(_: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    is_tcp_with_header(p) && p.tcp_flags & (tcp::SYN | tcp::ACK) == tcp::SYN
}
pub(crate) fn tcp_flags(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    is_tcp_with_header(p) && flags_match(p.tcp_flags, i.arg)
}
pub(crate) fn icmp_types(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    p.proto == proto::ICMP && p.has_icmp && p.icmp_type < 32 && i.arg & (1 << p.icmp_type) != 0
}
pub(crate) fn icmp6_types(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    let t = usize::from(p.icmp_type);
    p.proto == proto::ICMPV6
        && p.ip_version == 6
        && p.has_icmp
        && prog.icmp6_types[i.arg as usize][t / 64] & (1 << (t % 64)) != 0
}
pub(crate) fn ext6_hdr(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    p.ip_version == 6 && u32::from(p.ext6) & i.arg != 0
}
pub(crate) fn src_table(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    prog.table_answer(i, prog.table_of(i).lookup_ip(p.src, p.ip_version))
        .is_some()
}
pub(crate) fn dst_table(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    prog.table_answer(i, prog.table_of(i).lookup_ip(p.dst, p.ip_version))
        .is_some()
}
pub(crate) fn is_frag(_: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    p.frag & frag::LATER != 0
}
// ipoptions, iptos, iplen, ipttl, ipid and ipprecedence look at IPv4
// header fields: as in ipfw, an IPv6 packet never matches them (a `not`
// still inverts that).
pub(crate) fn ip_options(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    p.ip_version == 4 && flags_match(p.ip_options, i.arg)
}
pub(crate) fn ip_tos(i: &Insn, p: &Packet, _: &Program, _: &Env, ctx: &Ctx) -> bool {
    p.ip_version == 4 && flags_match(ctx.tos(p), i.arg)
}
pub(crate) fn ip_len(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    p.ip_version == 4 && in_ranges(pool(&prog.ranges, i), p.ip_len)
}
pub(crate) fn ip_ttl(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    p.ip_version == 4 && in_ranges(pool(&prog.ranges, i), u16::from(p.ttl))
}
pub(crate) fn ip_id(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    p.ip_version == 4 && in_ranges(pool(&prog.ranges, i), p.ip_id)
}
pub(crate) fn ip_precedence(i: &Insn, p: &Packet, _: &Program, _: &Env, ctx: &Ctx) -> bool {
    p.ip_version == 4 && u32::from(ctx.tos(p) & 0xe0) == i.arg
}
/// DSCP: the top six bits of the IPv4 TOS or the IPv6 traffic class.
pub(crate) fn dscp(i: &Insn, p: &Packet, prog: &Program, _: &Env, ctx: &Ctx) -> bool {
    is_ip(p) && prog.bitmaps[i.arg as usize] >> (ctx.tos(p) >> 2) & 1 == 1
}
pub(crate) fn has_ports(_: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    p.has_ports
}
pub(crate) fn tcp_data_len(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    is_tcp_with_header(p) && in_ranges(pool(&prog.ranges, i), p.tcp_data_len)
}
pub(crate) fn tcp_win(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    is_tcp_with_header(p) && in_ranges(pool(&prog.ranges, i), p.tcp_win)
}
/// ipfw reads the MSS option of SYN segments only.
pub(crate) fn tcp_mss(i: &Insn, p: &Packet, prog: &Program, _: &Env, ctx: &Ctx) -> bool {
    is_tcp_with_header(p)
        && p.tcp_flags & tcp::SYN != 0
        && p.tcp_opts & weir_wire::tcpopt::MSS != 0
        && in_ranges(pool(&prog.ranges, i), ctx.mss(p))
}
pub(crate) fn tcp_seq(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    is_tcp_with_header(p) && p.tcp_seq == i.arg
}
pub(crate) fn tcp_ack(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    is_tcp_with_header(p) && p.tcp_ack == i.arg
}
pub(crate) fn tcp_opts(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    is_tcp_with_header(p) && flags_match(p.tcp_opts, i.arg)
}
/// ipfw packs the IPv4 fragment flags into a byte: RF, DF, MF as bits 7..5
/// (as they sit in the header) and bit 0 for a non-zero offset.
pub(crate) fn frag_flags(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    let bit = |f: u8, b: u8| if p.frag & f != 0 { b } else { 0 };
    let byte =
        bit(frag::RF, 0x80) | bit(frag::DF, 0x40) | bit(frag::MF, 0x20) | bit(frag::LATER, 1);
    p.ip_version == 4 && flags_match(byte, i.arg)
}
pub(crate) fn fib(i: &Insn, _: &Packet, _: &Program, env: &Env, ctx: &Ctx) -> bool {
    u32::from(ctx.fib(env)) == i.arg
}
pub(crate) fn tagged(i: &Insn, _: &Packet, prog: &Program, _: &Env, ctx: &Ctx) -> bool {
    ctx.tags & prog.bitmaps[i.arg as usize] != 0
}
// MAC tests see the Ethernet header only in the layer-2 pass; in the IP
// pass it is gone, as in ipfw.
pub(crate) fn mac_addr(i: &Insn, p: &Packet, prog: &Program, _: &Env, ctx: &Ctx) -> bool {
    let m = &prog.macs[i.arg as usize];
    let eq = |a: &[u8; 6], want: &[u8; 6], mask: &[u8; 6]| {
        a.iter().zip(want).zip(mask).all(|((a, w), m)| a & m == *w)
    };
    ctx.layer2
        && p.has_mac
        && eq(&p.mac_dst, &m.dst, &m.dst_mask)
        && eq(&p.mac_src, &m.src, &m.src_mask)
}
pub(crate) fn mac_type(i: &Insn, p: &Packet, prog: &Program, _: &Env, ctx: &Ctx) -> bool {
    ctx.layer2 && p.has_mac && in_ranges(pool(&prog.ranges, i), p.ether_type)
}
pub(crate) fn layer2(_: &Insn, _: &Packet, _: &Program, _: &Env, ctx: &Ctx) -> bool {
    ctx.layer2
}
pub(crate) fn diverted(i: &Insn, _: &Packet, _: &Program, _: &Env, ctx: &Ctx) -> bool {
    u32::from(ctx.diverted) & i.arg != 0
}
pub(crate) fn flow_id(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    p.ip_version == 6 && pool(&prog.flow_ids, i).contains(&p.flow_label)
}
#[inline]
fn in_set(prog: &Program, i: &Insn, p: &Packet, addr: u128) -> bool {
    let s = &prog.addr_sets[i.arg as usize];
    let k = (addr as u32).wrapping_sub(s.base);
    p.ip_version == 4 && k < s.size && s.members[(k / 64) as usize] >> (k % 64) & 1 == 1
}
pub(crate) fn src_set(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    in_set(prog, i, p, p.src)
}
pub(crate) fn dst_set(i: &Insn, p: &Packet, prog: &Program, _: &Env, _: &Ctx) -> bool {
    in_set(prog, i, p, p.dst)
}
pub(crate) fn src_port_table(i: &Insn, p: &Packet, prog: &Program, env: &Env, ctx: &Ctx) -> bool {
    table_lookup(i, p, prog, env, ctx).is_some()
}
pub(crate) fn dst_port_table(i: &Insn, p: &Packet, prog: &Program, env: &Env, ctx: &Ctx) -> bool {
    table_lookup(i, p, prog, env, ctx).is_some()
}
pub(crate) fn dscp_table(i: &Insn, p: &Packet, prog: &Program, env: &Env, ctx: &Ctx) -> bool {
    table_lookup(i, p, prog, env, ctx).is_some()
}
pub(crate) fn flow_table(i: &Insn, p: &Packet, prog: &Program, env: &Env, ctx: &Ctx) -> bool {
    table_lookup(i, p, prog, env, ctx).is_some()
}
pub(crate) fn iface_table(i: &Insn, p: &Packet, prog: &Program, env: &Env, ctx: &Ctx) -> bool {
    table_lookup(i, p, prog, env, ctx).is_some()
}

/// An IPv4 address in mapped form is `::ffff:a.b.c.d`: the top 96 bits say
/// the family, so a v6 packet never passes the compare below.
#[inline]
fn in_prefix4(addr: u128, ins: &Insn) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(ins.len)).unwrap_or(0);
    addr >> 32 == 0xffff && (addr as u32) & mask == ins.arg
}
pub(crate) fn src_prefix4(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    p.ip_version == 4 && in_prefix4(p.src, i)
}
pub(crate) fn dst_prefix4(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    p.ip_version == 4 && in_prefix4(p.dst, i)
}
#[inline]
fn in_range(v: u16, arg: u32) -> bool {
    (arg & 0xffff..=arg >> 16).contains(&u32::from(v))
}
pub(crate) fn src_port_range(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    p.has_ports && in_range(p.src_port, i.arg)
}
pub(crate) fn dst_port_range(i: &Insn, p: &Packet, _: &Program, _: &Env, _: &Ctx) -> bool {
    p.has_ports && in_range(p.dst_port, i.arg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{AddrSet, MacMatch, Net, TableRef};
    use crate::tables::Table;
    use std::sync::Arc;
    use weir_wire::{tcpopt, v4_mapped, L3};

    fn test_program() -> Program {
        let addr = {
            let mut b = weir_table::Builder::new();
            b.add_entry(weir_table::parse_entry("10.0.0.0/8 7").unwrap())
                .unwrap();
            Table::Addr(b.build().unwrap())
        };
        let flows =
            weir_rules::parse("table f create type flow:proto,dst-port\ntable f add tcp,1234 9\n")
                .unwrap();
        let flow = crate::tables::build(&[], &flows.tables, &weir_rules::Names::default())
            .unwrap()
            .tables
            .pop()
            .unwrap();
        Program {
            nets: vec![Net {
                value: v4_mapped(0x0a00_0000),
                mask: !0u128 << 24,
                version: 4,
            }],
            ranges: vec![(20, 90)],
            iface_patterns: vec!["eth*".into()],
            icmp6_types: vec![[0, 0, 1, 0]],
            bitmaps: vec![1 << 4, 1],
            macs: vec![MacMatch {
                dst: [1, 2, 3, 4, 5, 6],
                dst_mask: [0xff; 6],
                src: [0; 6],
                src_mask: [0; 6],
            }],
            flow_ids: vec![5],
            addr_sets: vec![AddrSet {
                base: 0x0a00_0000,
                size: 256,
                members: [2, 0, 0, 0],
            }],
            tables: vec![
                Arc::new(addr),
                Arc::new(Table::Number(vec![(4, 1), (80, 2)])),
                Arc::new(Table::Iface(vec![("eth0".into(), 3)])),
                Arc::new(flow),
            ],
            table_names: vec!["a".into(), "n".into(), "i".into(), "f".into()],
            table_refs: (0..4)
                .map(|table| TableRef { table, value: None })
                .collect(),
            ..Program::default()
        }
    }

    /// The operand each opcode reads in the test program.
    fn operand(op: Op) -> Option<Insn> {
        let pooled = |op| Insn {
            op,
            flags: 0,
            len: 1,
            arg: 0,
        };
        Some(match op {
            Op::SrcNet
            | Op::DstNet
            | Op::SrcPort
            | Op::DstPort
            | Op::IpLen
            | Op::IpTtl
            | Op::IpId
            | Op::TcpDataLen
            | Op::TcpWin
            | Op::TcpMss
            | Op::MacType
            | Op::FlowId => pooled(op),
            Op::Via
            | Op::Recv
            | Op::Xmit
            | Op::Icmp6Types
            | Op::SrcTable
            | Op::DstTable
            | Op::Dscp
            | Op::MacAddr
            | Op::SrcSet
            | Op::DstSet => Insn::new(op, 0),
            Op::Tagged => Insn::new(op, 1),
            Op::SrcPortTable | Op::DstPortTable | Op::DscpTable => Insn::new(op, 1),
            Op::IfaceTable => Insn::new(op, 2),
            Op::FlowTable => Insn::new(op, 3),
            _ => return None,
        })
    }

    /// The table must list functions in opcode order. Function addresses
    /// cannot be compared (the optimiser merges and duplicates them), so
    /// compare behaviour: every opcode, under both dispatchers, over
    /// packets, walk contexts and operands chosen so that each op answers
    /// differently from its neighbours on at least one of them.
    #[test]
    fn table_dispatch_agrees_with_match_on_every_opcode() {
        for (k, op) in Op::ALL.iter().enumerate() {
            assert_eq!(*op as usize, k, "Op::ALL lists opcodes in order");
        }
        let prog = test_program();
        let mut env = Env {
            me: vec![(v4_mapped(0x0a00_0001), 4)],
            ..Env::default()
        };
        env.set_interfaces(&prog, &[Some("eth0"), Some("eth1")]);
        let base = Packet {
            src: v4_mapped(0x0a00_0001),
            dst: v4_mapped(0xc000_0201),
            l3: L3::Ip,
            ip_version: 4,
            proto: 6,
            src_port: 80,
            dst_port: 1234,
            has_ports: true,
            tcp_flags: tcp::SYN,
            tcp_opts: tcpopt::MSS,
            tcp_seq: 0x0102,
            tcp_ack: 1 << 8,
            tcp_win: 40,
            tcp_data_len: 50,
            tcp_mss: 60,
            ip_id: 30,
            ip_len: 60,
            ttl: 64,
            tos: 0x10,
            ip_options: 4,
            mac_dst: [1, 2, 3, 4, 5, 6],
            ether_type: 70,
            has_mac: true,
            direction: Direction::In,
            ..Packet::default()
        };
        let packets = [
            base,
            Packet {
                direction: Direction::Out,
                iface: 1,
                tcp_flags: tcp::ACK,
                ..base
            },
            Packet {
                proto: 1,
                has_ports: false,
                has_icmp: true,
                icmp_type: 8,
                tos: 0xe0,
                ..base
            },
            Packet {
                ip_version: 6,
                src: 1,
                dst: 2,
                ip_options: 0,
                flow_label: 5,
                ..base
            },
            Packet {
                ip_version: 6,
                proto: 58,
                has_ports: false,
                has_icmp: true,
                icmp_type: 128,
                ext6: 1,
                ..base
            },
            Packet {
                frag: frag::LATER | frag::DF,
                has_ports: false,
                ttl: 1,
                ip_len: 1500,
                ..base
            },
            Packet {
                src: v4_mapped(0xc000_0201),
                dst: v4_mapped(0x0a00_0001),
                src_port: 1234,
                dst_port: 80,
                ..base
            },
        ];
        let mut changed = Ctx {
            tags: 1,
            diverted: 2,
            layer2: true,
            ..Ctx::new(2)
        };
        changed.set_fib(1);
        let contexts = [Ctx::new(1), changed];
        let args = [
            0u32,
            1,
            4,
            6,
            0x0a00_0000,
            0x0102,
            1 << 8,
            0x60,
            20 | 90 << 16,
            u32::MAX,
        ];
        let mut differing = [false; Op::COUNT];
        for &op in Op::ALL {
            for arg in args {
                for len in [0u16, 1, 8, 24] {
                    let ins = operand(op).unwrap_or(Insn {
                        op,
                        flags: 0,
                        len,
                        arg,
                    });
                    for p in &packets {
                        for ctx in &contexts {
                            let m = MatchDispatch::matches(&ins, p, &prog, &env, ctx);
                            let t = TableDispatch::matches(&ins, p, &prog, &env, ctx);
                            assert_eq!(m, t, "{op:?} arg {arg:#x} len {len} on {p:?}");
                            differing[op as usize] |= m;
                        }
                    }
                }
            }
        }
        // Every op except `never` matched something, so the test had teeth.
        let silent: Vec<&Op> = Op::ALL
            .iter()
            .filter(|op| **op != Op::Never && !differing[**op as usize])
            .collect();
        assert!(silent.is_empty(), "never matched: {silent:?}");
    }

    #[test]
    fn interface_patterns() {
        assert!(iface_matches("eth0", "eth0"));
        assert!(!iface_matches("eth0", "eth01"));
        assert!(iface_matches("eth*", "eth01"));
        assert!(!iface_matches("eth*", "em0"));
    }

    /// `prob` draws: reproducible, about as often true as asked, and a
    /// different seed gives different draws.
    #[test]
    fn draws_follow_the_threshold_and_the_seed() {
        let count = |seed: u64| {
            (0..10_000u64)
                .filter(|&n| Ctx::new(n).draw(seed, 1 << 31))
                .count()
        };
        let half = count(7);
        assert!((4_700..5_300).contains(&half), "{half}");
        assert_eq!(half, count(7), "same seed, same draws");
        let differ = (0..1_000u64)
            .filter(|&n| Ctx::new(n).draw(7, 1 << 31) != Ctx::new(n).draw(8, 1 << 31))
            .count();
        assert!(differ > 300, "{differ}");
        let mut ctx = Ctx::new(1);
        assert!(!ctx.draw(7, 0), "probability 0 never draws true");
        let sure = (0..100).filter(|_| ctx.draw(7, u32::MAX)).count();
        assert!(sure >= 99, "almost surely: {sure}");
    }
}
