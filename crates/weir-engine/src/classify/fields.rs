//! What a rule's plain instructions require of each header field, as sets
//! of intervals: the input of both classifiers.
//!
//! A rule's constraint on a field comes from its plain instructions (not in
//! an or-block), negated or not; everything else (`me`, or-blocks, options)
//! is left to the evaluator, so a set is never smaller than what the rule
//! admits. `Constraints::exact` says whether the sets are also no larger:
//! every instruction of the rule was turned into a set.

use crate::program::{Insn, Op, Program, F_NOT, F_OR};

/// Port key for packets without ports (later fragments, ICMP, …).
pub const NO_PORTS: u32 = 1 << 16;
/// The IPv4-mapped block `::ffff:0:0/96`, where IPv4 packets' addresses live.
pub const MAPPED_LO: u128 = 0xffff_u128 << 32;
pub const MAPPED_HI: u128 = MAPPED_LO | 0xffff_ffff;

/// Inclusive intervals over one field, sorted and disjoint.
pub type Set<T> = Vec<(T, T)>;

/// What a rule's plain instructions require of each field (None: nothing).
#[derive(Default)]
pub struct Constraints {
    pub src: Option<Set<u128>>,
    pub dst: Option<Set<u128>>,
    pub sport: Option<Set<u32>>,
    pub dport: Option<Set<u32>>,
    /// Every instruction became a set: a packet inside all of them matches
    /// the rule's instructions (its header is checked separately).
    pub exact: bool,
}

impl Constraints {
    pub fn of(prog: &Program, insns: &[Insn]) -> Constraints {
        let mut c = Constraints {
            exact: true,
            ..Constraints::default()
        };
        for (k, ins) in insns.iter().enumerate() {
            let in_or_block = ins.flags & F_OR != 0 || (k > 0 && insns[k - 1].flags & F_OR != 0);
            if in_or_block {
                c.exact = false;
                continue;
            }
            let not = ins.flags & F_NOT != 0;
            match ins.op {
                Op::SrcPrefix4 | Op::SrcNet | Op::DstPrefix4 | Op::DstNet => {
                    let slot = if matches!(ins.op, Op::SrcPrefix4 | Op::SrcNet) {
                        &mut c.src
                    } else {
                        &mut c.dst
                    };
                    match addr_set(prog, ins) {
                        Some(set) => narrow(slot, set, not, u128::MAX),
                        None => c.exact = false,
                    }
                }
                Op::SrcPort | Op::SrcPortRange => {
                    narrow(&mut c.sport, port_set(prog, ins), not, NO_PORTS)
                }
                Op::DstPort | Op::DstPortRange => {
                    narrow(&mut c.dport, port_set(prog, ins), not, NO_PORTS)
                }
                Op::HasPorts => {
                    narrow(&mut c.sport, vec![(0, NO_PORTS - 1)], not, NO_PORTS);
                    narrow(&mut c.dport, vec![(0, NO_PORTS - 1)], not, NO_PORTS);
                }
                _ => c.exact = false,
            }
        }
        c
    }
}

/// A rule's address set restricted to the IPv4-mapped block, rebased to
/// plain IPv4 addresses (exact for IPv4 packets).
pub fn family4(set: &Set<u128>) -> Set<u32> {
    set.iter()
        .filter(|&&(lo, hi)| hi >= MAPPED_LO && lo <= MAPPED_HI)
        .map(|&(lo, hi)| {
            (
                (lo.max(MAPPED_LO) - MAPPED_LO) as u32,
                (hi.min(MAPPED_HI) - MAPPED_LO) as u32,
            )
        })
        .collect()
}

pub fn in_mapped(a: u128) -> bool {
    (MAPPED_LO..=MAPPED_HI).contains(&a)
}

/// The few integer operations the fields need.
pub trait Step: Copy + Ord {
    const ZERO: Self;
    /// Callers never step past the field's range.
    fn succ(self) -> Self;
    fn pred(self) -> Self;
}
impl Step for u128 {
    const ZERO: u128 = 0;
    fn succ(self) -> u128 {
        self + 1
    }
    fn pred(self) -> u128 {
        self - 1
    }
}
impl Step for u64 {
    const ZERO: u64 = 0;
    fn succ(self) -> u64 {
        self + 1
    }
    fn pred(self) -> u64 {
        self - 1
    }
}
impl Step for u32 {
    const ZERO: u32 = 0;
    fn succ(self) -> u32 {
        self + 1
    }
    fn pred(self) -> u32 {
        self - 1
    }
}

/// The addresses an address instruction admits (before NOT), exactly for
/// every packet whose address is outside the mapped block unless IPv4;
/// None when a mask is not a prefix (then the field is left unconstrained,
/// negated or not).
pub fn addr_set(prog: &Program, ins: &Insn) -> Option<Set<u128>> {
    let mut set = Vec::new();
    if matches!(ins.op, Op::SrcPrefix4 | Op::DstPrefix4) {
        let mask = u32::MAX.checked_shl(32 - u32::from(ins.len)).unwrap_or(0);
        set.push((
            MAPPED_LO | u128::from(ins.arg & mask),
            MAPPED_LO | u128::from(ins.arg | !mask),
        ));
    } else {
        let nets = &prog.nets[ins.arg as usize..ins.arg as usize + ins.len as usize];
        for net in nets {
            // Only prefixes become intervals; an odd mask means no constraint.
            if net.mask.leading_ones() + net.mask.trailing_zeros() != 128 {
                return None;
            }
            let (lo, hi) = (net.value, net.value | !net.mask);
            if net.version == 4 {
                set.push((lo, hi));
            } else {
                // An IPv6 net never matches an IPv4 packet: cut out the mapped block.
                if lo < MAPPED_LO {
                    set.push((lo, hi.min(MAPPED_LO - 1)));
                }
                if hi > MAPPED_HI {
                    set.push((lo.max(MAPPED_HI + 1), hi));
                }
            }
        }
    }
    Some(normalize(set))
}

pub fn port_set(prog: &Program, ins: &Insn) -> Set<u32> {
    let ranges: Vec<(u32, u32)> = if matches!(ins.op, Op::SrcPortRange | Op::DstPortRange) {
        vec![(ins.arg & 0xffff, ins.arg >> 16)]
    } else {
        prog.ranges[ins.arg as usize..ins.arg as usize + ins.len as usize]
            .iter()
            .map(|&(lo, hi)| (u32::from(lo), u32::from(hi)))
            .collect()
    };
    normalize(ranges)
}

/// Intersects the constraint with `set` (or its complement within 0..=max).
pub fn narrow<T: Step>(slot: &mut Option<Set<T>>, set: Set<T>, not: bool, max: T) {
    let set = if not { complement(&set, max) } else { set };
    *slot = Some(match slot.take() {
        None => set,
        Some(old) => intersect(&old, &set),
    });
}

/// Sorted, overlaps merged.
pub fn normalize<T: Step>(mut set: Set<T>) -> Set<T> {
    set.sort_unstable();
    let mut out: Set<T> = Vec::with_capacity(set.len());
    for (lo, hi) in set {
        match out.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Everything in 0..=max that `set` (sorted, disjoint) leaves out.
pub fn complement<T: Step>(set: &Set<T>, max: T) -> Set<T> {
    let mut out = Vec::new();
    let mut next = Some(T::ZERO);
    for &(lo, hi) in set {
        if let Some(n) = next.filter(|&n| n < lo) {
            out.push((n, lo.pred()));
        }
        next = (hi < max).then(|| hi.succ());
    }
    if let Some(n) = next {
        out.push((n, max));
    }
    out
}

pub fn intersect<T: Copy + Ord>(a: &Set<T>, b: &Set<T>) -> Set<T> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if lo <= hi {
            out.push((lo, hi));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_sets() {
        let a = normalize(vec![(5u32, 9), (1, 3), (8, 12)]);
        assert_eq!(a, vec![(1, 3), (5, 12)]);
        assert_eq!(complement(&a, 20), vec![(0, 0), (4, 4), (13, 20)]);
        assert_eq!(complement(&vec![(0u32, 20)], 20), vec![]);
        assert_eq!(
            intersect(&a, &vec![(2, 6), (11, 30)]),
            vec![(2, 3), (5, 6), (11, 12)]
        );
    }
}
