//! What each micro-instruction tests, and the two ways to dispatch on it.
//!
//! ipfw replaced its giant `switch` with a dispatch table and measured no
//! cost. weir keeps both, [`MatchDispatch`] (a `match` the compiler turns
//! into a jump table or inlines) and [`TableDispatch`] (an array of function
//! pointers indexed by opcode), over the same per-op functions, so the
//! benchmark can repeat that measurement and tests can check they agree.

use crate::program::{class, Insn, Op, Program};
use weir_wire::{frag, tcp, Direction, Packet};

/// What the evaluator knows beyond the packet: this host's addresses and
/// which interface patterns each capture interface matches.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// `--me` addresses, in the packet's `u128` form, with their version.
    pub me: Vec<(u128, u8)>,
    /// Per interface index: bit k set when it matches pattern k.
    pub iface_bits: Vec<u64>,
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
    }
}

/// `eth0` matches itself; `eth*` matches any name starting with `eth`.
pub fn iface_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
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
        if p.tcp_flags & (tcp::ACK | tcp::RST) != 0 {
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
    fn matches(ins: &Insn, p: &Packet, prog: &Program, env: &Env) -> bool;
}

pub struct MatchDispatch;
pub struct TableDispatch;

impl Dispatch for MatchDispatch {
    #[inline(always)]
    fn matches(ins: &Insn, p: &Packet, prog: &Program, env: &Env) -> bool {
        match ins.op {
            Op::Never => never(ins, p, prog, env),
            Op::Proto => proto(ins, p, prog, env),
            Op::IpVersion => ip_version(ins, p, prog, env),
            Op::SrcNet => src_net(ins, p, prog, env),
            Op::DstNet => dst_net(ins, p, prog, env),
            Op::SrcMe => src_me(ins, p, prog, env),
            Op::DstMe => dst_me(ins, p, prog, env),
            Op::SrcPort => src_port(ins, p, prog, env),
            Op::DstPort => dst_port(ins, p, prog, env),
            Op::In => dir_in(ins, p, prog, env),
            Op::Out => dir_out(ins, p, prog, env),
            Op::Via => via(ins, p, prog, env),
            Op::Recv => recv(ins, p, prog, env),
            Op::Xmit => xmit(ins, p, prog, env),
            Op::Established => established(ins, p, prog, env),
            Op::Setup => setup(ins, p, prog, env),
            Op::TcpFlags => tcp_flags(ins, p, prog, env),
            Op::IcmpTypes => icmp_types(ins, p, prog, env),
            Op::Frag => is_frag(ins, p, prog, env),
            Op::IpOptions => ip_options(ins, p, prog, env),
            Op::IpTos => ip_tos(ins, p, prog, env),
            Op::IpLen => ip_len(ins, p, prog, env),
            Op::IpTtl => ip_ttl(ins, p, prog, env),
            Op::HasPorts => has_ports(ins, p, prog, env),
            Op::SrcPrefix4 => src_prefix4(ins, p, prog, env),
            Op::DstPrefix4 => dst_prefix4(ins, p, prog, env),
            Op::SrcPortRange => src_port_range(ins, p, prog, env),
            Op::DstPortRange => dst_port_range(ins, p, prog, env),
            Op::Icmp6Types => icmp6_types(ins, p, prog, env),
            Op::Ext6Hdr => ext6_hdr(ins, p, prog, env),
            Op::SrcTable => src_table(ins, p, prog, env),
            Op::DstTable => dst_table(ins, p, prog, env),
        }
    }
}

type OpFn = fn(&Insn, &Packet, &Program, &Env) -> bool;

/// Indexed by `Op as usize`; the order must follow the enum (checked by a test).
static TABLE: [OpFn; Op::COUNT] = [
    never,
    proto,
    ip_version,
    src_net,
    dst_net,
    src_me,
    dst_me,
    src_port,
    dst_port,
    dir_in,
    dir_out,
    via,
    recv,
    xmit,
    established,
    setup,
    tcp_flags,
    icmp_types,
    is_frag,
    ip_options,
    ip_tos,
    ip_len,
    ip_ttl,
    has_ports,
    src_prefix4,
    dst_prefix4,
    src_port_range,
    dst_port_range,
    icmp6_types,
    ext6_hdr,
    src_table,
    dst_table,
];

impl Dispatch for TableDispatch {
    #[inline(always)]
    fn matches(ins: &Insn, p: &Packet, prog: &Program, env: &Env) -> bool {
        TABLE[ins.op as usize](ins, p, prog, env)
    }
}

const TCP: u8 = 6;
const ICMP: u8 = 1;
const ICMP6: u8 = 58;

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
    p.proto == TCP && p.has_ports
}

fn never(_: &Insn, _: &Packet, _: &Program, _: &Env) -> bool {
    false
}
fn proto(i: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    u32::from(p.proto) == i.arg
}
fn ip_version(i: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    u32::from(p.ip_version) == i.arg
}
fn src_net(i: &Insn, p: &Packet, prog: &Program, _: &Env) -> bool {
    in_nets(prog, i, p.src, p.ip_version)
}
fn dst_net(i: &Insn, p: &Packet, prog: &Program, _: &Env) -> bool {
    in_nets(prog, i, p.dst, p.ip_version)
}
fn src_me(i: &Insn, p: &Packet, _: &Program, env: &Env) -> bool {
    u32::from(p.ip_version) == i.arg && env.me.iter().any(|&(a, v)| a == p.src && v == p.ip_version)
}
fn dst_me(i: &Insn, p: &Packet, _: &Program, env: &Env) -> bool {
    u32::from(p.ip_version) == i.arg && env.me.iter().any(|&(a, v)| a == p.dst && v == p.ip_version)
}
fn src_port(i: &Insn, p: &Packet, prog: &Program, _: &Env) -> bool {
    p.has_ports && in_ranges(pool(&prog.ranges, i), p.src_port)
}
fn dst_port(i: &Insn, p: &Packet, prog: &Program, _: &Env) -> bool {
    p.has_ports && in_ranges(pool(&prog.ranges, i), p.dst_port)
}
fn dir_in(_: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.direction == Direction::In
}
fn dir_out(_: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.direction == Direction::Out
}
fn via(i: &Insn, p: &Packet, _: &Program, env: &Env) -> bool {
    iface_bit(env, p, i.arg)
}
fn recv(i: &Insn, p: &Packet, _: &Program, env: &Env) -> bool {
    p.direction == Direction::In && iface_bit(env, p, i.arg)
}
fn xmit(i: &Insn, p: &Packet, _: &Program, env: &Env) -> bool {
    p.direction == Direction::Out && iface_bit(env, p, i.arg)
}
fn established(_: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    is_tcp_with_header(p) && p.tcp_flags & (tcp::ACK | tcp::RST) != 0
}
fn setup(_: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    is_tcp_with_header(p) && p.tcp_flags & (tcp::SYN | tcp::ACK) == tcp::SYN
}
fn tcp_flags(i: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    is_tcp_with_header(p) && flags_match(p.tcp_flags, i.arg)
}
fn icmp_types(i: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.proto == ICMP && p.has_icmp && p.icmp_type < 32 && i.arg & (1 << p.icmp_type) != 0
}
fn icmp6_types(i: &Insn, p: &Packet, prog: &Program, _: &Env) -> bool {
    let t = usize::from(p.icmp_type);
    p.proto == ICMP6
        && p.ip_version == 6
        && p.has_icmp
        && prog.icmp6_types[i.arg as usize][t / 64] & (1 << (t % 64)) != 0
}
fn ext6_hdr(i: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.ip_version == 6 && u32::from(p.ext6) & i.arg != 0
}
fn src_table(i: &Insn, p: &Packet, prog: &Program, _: &Env) -> bool {
    prog.table_value(i, p.src, p.ip_version).is_some()
}
fn dst_table(i: &Insn, p: &Packet, prog: &Program, _: &Env) -> bool {
    prog.table_value(i, p.dst, p.ip_version).is_some()
}
fn is_frag(_: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.frag & frag::LATER != 0
}
// ipoptions, iptos, iplen and ipttl look at IPv4 header fields: as in
// ipfw, an IPv6 packet never matches them (a `not` still inverts that).
fn ip_options(i: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.ip_version == 4 && flags_match(p.ip_options, i.arg)
}
fn ip_tos(i: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.ip_version == 4 && flags_match(p.tos, i.arg)
}
fn ip_len(i: &Insn, p: &Packet, prog: &Program, _: &Env) -> bool {
    p.ip_version == 4 && in_ranges(pool(&prog.ranges, i), p.ip_len)
}
fn ip_ttl(i: &Insn, p: &Packet, prog: &Program, _: &Env) -> bool {
    p.ip_version == 4 && in_ranges(pool(&prog.ranges, i), u16::from(p.ttl))
}
fn has_ports(_: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.has_ports
}

/// An IPv4 address in mapped form is `::ffff:a.b.c.d`: the top 96 bits say
/// the family, so a v6 packet never passes the compare below.
#[inline]
fn in_prefix4(addr: u128, ins: &Insn) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(ins.len)).unwrap_or(0);
    addr >> 32 == 0xffff && (addr as u32) & mask == ins.arg
}
fn src_prefix4(i: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.ip_version == 4 && in_prefix4(p.src, i)
}
fn dst_prefix4(i: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.ip_version == 4 && in_prefix4(p.dst, i)
}
#[inline]
fn in_range(v: u16, arg: u32) -> bool {
    (arg & 0xffff..=arg >> 16).contains(&u32::from(v))
}
fn src_port_range(i: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.has_ports && in_range(p.src_port, i.arg)
}
fn dst_port_range(i: &Insn, p: &Packet, _: &Program, _: &Env) -> bool {
    p.has_ports && in_range(p.dst_port, i.arg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Net;
    use weir_wire::{v4_mapped, L3};

    const ALL_OPS: [Op; Op::COUNT] = [
        Op::Never,
        Op::Proto,
        Op::IpVersion,
        Op::SrcNet,
        Op::DstNet,
        Op::SrcMe,
        Op::DstMe,
        Op::SrcPort,
        Op::DstPort,
        Op::In,
        Op::Out,
        Op::Via,
        Op::Recv,
        Op::Xmit,
        Op::Established,
        Op::Setup,
        Op::TcpFlags,
        Op::IcmpTypes,
        Op::Frag,
        Op::IpOptions,
        Op::IpTos,
        Op::IpLen,
        Op::IpTtl,
        Op::HasPorts,
        Op::SrcPrefix4,
        Op::DstPrefix4,
        Op::SrcPortRange,
        Op::DstPortRange,
        Op::Icmp6Types,
        Op::Ext6Hdr,
        Op::SrcTable,
        Op::DstTable,
    ];

    /// The table must list functions in opcode order. Function addresses
    /// cannot be compared (the optimiser merges and duplicates them), so
    /// compare behaviour: every opcode, under both dispatchers, over
    /// packets and operands chosen so that each op answers differently
    /// from its neighbours on at least one of them.
    #[test]
    fn table_dispatch_agrees_with_match_on_every_opcode() {
        for (k, op) in ALL_OPS.iter().enumerate() {
            assert_eq!(*op as usize, k, "ALL_OPS lists opcodes in order");
        }
        let prog = Program {
            nets: vec![Net {
                value: v4_mapped(0x0a00_0000),
                mask: !0u128 << 24,
                version: 4,
            }],
            ranges: vec![(20, 90)],
            iface_patterns: vec!["eth*".into()],
            icmp6_types: vec![[0, 0, 1, 0]],
            tables: vec![std::sync::Arc::new({
                let mut b = weir_table::Builder::new();
                b.add_entry(weir_table::parse_entry("10.0.0.0/8 7").unwrap())
                    .unwrap();
                b.build().unwrap()
            })],
            table_names: vec!["t".into()],
            table_refs: vec![crate::program::TableRef {
                table: 0,
                value: None,
            }],
            ..Program::default()
        };
        let env = Env {
            me: vec![(v4_mapped(0x0a00_0001), 4)],
            iface_bits: vec![1, 1],
        };
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
            ip_len: 60,
            ttl: 64,
            tos: 0x10,
            ip_options: 4,
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
                ..base
            },
            Packet {
                ip_version: 6,
                src: 1,
                dst: 2,
                ip_options: 0,
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
                frag: frag::LATER,
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
        let args = [
            0u32,
            1,
            4,
            6,
            0x0a00_0000,
            0x0102,
            1 << 8,
            20 | 90 << 16,
            u32::MAX,
        ];
        let mut differing = [false; Op::COUNT];
        for op in ALL_OPS {
            for arg in args {
                for len in [0u16, 1, 8, 24] {
                    let pooled = matches!(
                        op,
                        Op::SrcNet | Op::DstNet | Op::SrcPort | Op::DstPort | Op::IpLen | Op::IpTtl
                    );
                    let ins = match op {
                        _ if pooled => Insn {
                            op,
                            flags: 0,
                            len: 1,
                            arg: 0,
                        },
                        Op::Via
                        | Op::Recv
                        | Op::Xmit
                        | Op::Icmp6Types
                        | Op::SrcTable
                        | Op::DstTable => Insn::new(op, 0),
                        _ => Insn {
                            op,
                            flags: 0,
                            len,
                            arg,
                        },
                    };
                    for p in &packets {
                        let m = MatchDispatch::matches(&ins, p, &prog, &env);
                        let t = TableDispatch::matches(&ins, p, &prog, &env);
                        assert_eq!(m, t, "{op:?} arg {arg:#x} len {len} on {p:?}");
                        differing[op as usize] |= m;
                    }
                }
            }
        }
        // Every op except `never` matched something, so the test had teeth.
        let silent: Vec<&Op> = ALL_OPS
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
}
