//! Each rule's match set, built from its compiled instructions: the one
//! place ipfw's semantics live is the engine's `Program`, so the analysis
//! reads that (names, tables, jumps and or-blocks already resolved) and
//! mirrors each opcode of `weir_engine::ops` as a set of packets.
//!
//! An opcode the space does not model (tags, FIB, MAC addresses, lengths,
//! lookup tables…) has bounds: at least no packet, at most every packet.
//! A rule's match set is then an interval `lo ⊆ match ⊆ hi`; where the two
//! differ the analysis is conservative and its findings say why.

use crate::bdd::{Set, FALSE, TRUE};
use crate::space::*;
use weir_engine::{class, Env, Insn, Op, Program, Rule, F_NOT, F_OR};
use weir_wire::tcp;

/// `lo ⊆ match ⊆ hi`; `why` names what was not modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub lo: Set,
    pub hi: Set,
    pub why: Option<&'static str>,
}

impl Bounds {
    pub fn exact(s: Set) -> Bounds {
        Bounds {
            lo: s,
            hi: s,
            why: None,
        }
    }

    fn unknown(why: &'static str) -> Bounds {
        Bounds {
            lo: FALSE,
            hi: TRUE,
            why: Some(why),
        }
    }

    pub fn is_exact(&self) -> bool {
        self.lo == self.hi
    }
}

/// The bounds of rule `r`'s match (outside the universe too). Probe rules'
/// states and `prob` are the flow's business (see `flow`); here a rule
/// matches as for a packet without a state and a winning draw.
pub fn rule_bounds(s: &mut Space, prog: &Program, env: &Env, r: &Rule) -> Bounds {
    let mut b = header(s, r);
    let insns = prog.rule_insns(r);
    let mut k = 0;
    while k < insns.len() {
        // An or-block: members while F_OR is set, then one more.
        let mut block = Bounds::exact(FALSE);
        loop {
            let ins = &insns[k];
            let mut m = insn_bounds(s, prog, env, ins);
            if ins.flags & F_NOT != 0 {
                let (lo, hi) = (s.bdd.not(m.hi), s.bdd.not(m.lo));
                m = Bounds { lo, hi, why: m.why };
            }
            block = join(s, block, m, false);
            k += 1;
            if ins.flags & F_OR == 0 || k >= insns.len() {
                break;
            }
        }
        b = join(s, b, block, true);
    }
    b
}

fn join(s: &mut Space, a: Bounds, b: Bounds, and: bool) -> Bounds {
    let (lo, hi) = if and {
        (s.bdd.and(a.lo, b.lo), s.bdd.and(a.hi, b.hi))
    } else {
        (s.bdd.or(a.lo, b.lo), s.bdd.or(a.hi, b.hi))
    };
    Bounds {
        lo,
        hi,
        why: a.why.or(b.why),
    }
}

/// The hoisted header: protocol and class bits.
fn header(s: &mut Space, r: &Rule) -> Bounds {
    let mut b = Bounds::exact(TRUE);
    if let Some(p) = r.proto {
        b.lo = s.eq(PROTO, u128::from(p));
        b.hi = b.lo;
    }
    for bit in 0..32 {
        let mask = 1u32 << bit;
        if r.class_mask & mask == 0 || mask == class::STATE {
            continue;
        }
        let want = r.class_bits & mask != 0;
        let set = match mask {
            class::IN => Some(s.dir_in),
            class::OUT => Some(s.dir_out),
            class::V4 => Some(s.v4),
            class::V6 => Some(s.v6),
            class::LATER_FRAG => Some(s.later),
            class::ESTABLISHED => Some(established(s)),
            class::SETUP => Some(setup(s)),
            _ => None,
        };
        let m = match set {
            Some(set) if want => Bounds::exact(set),
            Some(set) => Bounds::exact(s.bdd.not(set)),
            None => Bounds::unknown("ipoptions"),
        };
        b = join(s, b, m, true);
    }
    b
}

fn established(s: &mut Space) -> Set {
    let bare_syn = s.masked(
        FLAGS,
        u128::from(tcp::SYN),
        u128::from(tcp::RST | tcp::ACK | tcp::SYN),
    );
    s.bdd.minus(s.tcp_header, bare_syn)
}

fn setup(s: &mut Space) -> Set {
    let syn = s.masked(FLAGS, u128::from(tcp::SYN), u128::from(tcp::SYN | tcp::ACK));
    s.bdd.and(s.tcp_header, syn)
}

fn side(src: bool) -> Side {
    if src {
        Side::Src
    } else {
        Side::Dst
    }
}

/// One instruction's set, before its NOT flag.
fn insn_bounds(s: &mut Space, prog: &Program, env: &Env, ins: &Insn) -> Bounds {
    let pool = |len: u16| ins.arg as usize..ins.arg as usize + len as usize;
    let arg = u128::from(ins.arg);
    let set = match ins.op {
        Op::Never => FALSE,
        Op::Proto => s.eq(PROTO, arg),
        Op::IpVersion => match ins.arg {
            4 => s.v4,
            6 => s.v6,
            _ => FALSE,
        },
        Op::SrcNet | Op::DstNet => {
            let side = side(ins.op == Op::SrcNet);
            let mut any = FALSE;
            for n in &prog.nets[pool(ins.len)] {
                let m = s.addr(side, n.version, n.value, n.mask);
                any = s.bdd.or(any, m);
            }
            any
        }
        Op::SrcPrefix4 | Op::DstPrefix4 => {
            let mask = u32::MAX.checked_shl(32 - u32::from(ins.len)).unwrap_or(0);
            let side = side(ins.op == Op::SrcPrefix4);
            s.addr(side, 4, u128::from(ins.arg), u128::from(mask))
        }
        Op::SrcMe | Op::DstMe => {
            let side = side(ins.op == Op::SrcMe);
            let mut any = FALSE;
            for &(addr, v) in &env.me {
                if ins.arg != 0 && u32::from(v) != ins.arg {
                    continue;
                }
                let m = s.addr(side, v, addr, !0);
                any = s.bdd.or(any, m);
            }
            any
        }
        Op::SrcPort | Op::DstPort => {
            let f = if ins.op == Op::SrcPort { SPORT } else { DPORT };
            let ranges = prog.ranges[pool(ins.len)].to_vec();
            let sets: Vec<Set> = ranges
                .iter()
                .map(|&(lo, hi)| s.range(f, u128::from(lo), u128::from(hi)))
                .collect();
            let any = s.bdd.any(sets);
            s.bdd.and(any, s.has_ports)
        }
        Op::SrcPortRange | Op::DstPortRange => {
            let f = if ins.op == Op::SrcPortRange {
                SPORT
            } else {
                DPORT
            };
            let r = s.range(f, arg & 0xffff, arg >> 16);
            s.bdd.and(r, s.has_ports)
        }
        Op::In => s.dir_in,
        Op::Out => s.dir_out,
        Op::Via | Op::Recv | Op::Xmit => {
            let pattern = prog.iface_patterns[ins.arg as usize].clone();
            let m = s.iface(&pattern);
            match ins.op {
                Op::Recv => s.bdd.and(m, s.dir_in),
                Op::Xmit => s.bdd.and(m, s.dir_out),
                _ => m,
            }
        }
        Op::Established => established(s),
        Op::Setup => setup(s),
        Op::TcpFlags => {
            let f = s.flags(FLAGS, arg & 0xff, arg >> 8 & 0xff);
            s.bdd.and(f, s.tcp_header)
        }
        Op::IcmpTypes => {
            let types: Vec<Set> = (0..32u128)
                .filter(|t| arg >> t & 1 == 1)
                .map(|t| s.eq(ICMP_TYPE, t))
                .collect();
            let any = s.bdd.any(types);
            let icmp = s.eq(PROTO, 1);
            let icmp = s.bdd.and(icmp, s.has_icmp);
            s.bdd.and(any, icmp)
        }
        Op::Icmp6Types => {
            let map = prog.icmp6_types[ins.arg as usize];
            let types: Vec<Set> = (0..256u128)
                .filter(|&t| map[(t / 64) as usize] >> (t % 64) & 1 == 1)
                .map(|t| s.eq(ICMP_TYPE, t))
                .collect();
            let any = s.bdd.any(types);
            let icmp6 = s.eq(PROTO, 58);
            let icmp6 = s.bdd.and(icmp6, s.has_icmp);
            s.bdd.and(any, icmp6)
        }
        Op::Frag => s.later,
        Op::HasPorts => s.has_ports,
        Op::SrcSet | Op::DstSet => {
            let side = side(ins.op == Op::SrcSet);
            let set = prog.addr_sets[ins.arg as usize];
            let hosts: Vec<Set> = (0..set.size)
                .filter(|k| set.members[(k / 64) as usize] >> (k % 64) & 1 == 1)
                .map(|k| s.addr(side, 4, u128::from(set.base.wrapping_add(k)), !0))
                .collect();
            s.bdd.any(hosts)
        }
        op => return Bounds::unknown(op.name()),
    };
    Bounds::exact(set)
}
