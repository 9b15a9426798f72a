//! The evaluator: one packet, one walk over the rules, first match wins.
//!
//! Loop variables:
//! - `i`: index of the rule being tried. It starts at the first candidate
//!   and only grows, except on `return`, which resumes after the `call`
//!   that was taken. Every move goes through `walk.next(j)`: the first rule
//!   at or after `j` that can match (every rule for [`Linear`], a
//!   classifier's candidates for [`CandidateBits`] and `TrieWalk`).
//! - `stack`/`depth`: return points of taken `call`s (at most
//!   `CALL_STACK_DEPTH`); `calls` counts calls taken for this packet, capped
//!   at `MAX_CALLS` so a hostile ruleset cannot make a walk run long.
//! - `class`: the packet's one-bit facts (direction, version, fragment,
//!   TCP state, IP options, and `STATE` when its flow has a dynamic
//!   state), computed once. A rule whose header (class bits, protocol)
//!   the packet fails sends the walk to that header's skip step: the next
//!   rule whose requirement differs.
//! - `ctx`: what the walk did to the packet ([`Ctx`]: tags, FIB, DSCP,
//!   MSS, diverted, `prob` draws), read by later rules.
//! - `hit`: the rule whose action runs. Probe rules (`check-state`,
//!   `keep-state`, `limit`) require "no state", so a packet with a state
//!   fails their header and, on that failure path, fires the state of the
//!   rule's name: `hit` becomes the rule that made the state, as in ipfw,
//!   and `STATE` is cleared so the packet probes once. A matching rule
//!   that makes a state and is refused (table full, limit reached) denies
//!   the packet; a `defer-action` rule makes its state and goes on.
//! - `skip_or` (in `rule_matches`): a member of the current or-block has
//!   matched, so skip the rest of the block.
//!
//! Exits: the first rule whose action ends the walk (allow, deny and its
//! kin, fwd; a hand-off with `one_pass`; NAT of a non-IPv4 packet; reass
//! of a fragment) returns its index and verdict. The last rule, 65535,
//! matches everything and is terminal (verified at load), so every walk
//! ends. `count`, `skipto`, `call`, `return`, `tee`, `setfib`, `setdscp`
//! and `log` do not end it.

use crate::ops::{Ctx, Dispatch, Env};
use crate::program::*;
use crate::state::StateTable;
use weir_rules::ValueField;
use weir_wire::{frag, tcp, tcpopt, Direction, Packet};

/// At most this many `call`s are taken per packet; later ones fall through.
pub const MAX_CALLS: u32 = 256;

/// Which rules the walk may visit.
pub trait Walk {
    /// The first rule index at or after `i` worth trying (a walk may
    /// find more candidates as it goes: the trie's tail tier).
    fn next(&mut self, i: usize) -> usize;
}

/// Every rule, in order.
pub struct Linear;
impl Walk for Linear {
    #[inline(always)]
    fn next(&mut self, i: usize) -> usize {
        i
    }
}

/// The bitset classifier's candidates for this packet, a bit per rule.
pub struct CandidateBits<'a>(pub &'a [u64]);
impl Walk for CandidateBits<'_> {
    #[inline(always)]
    fn next(&mut self, i: usize) -> usize {
        crate::classify::next_candidate(self.0, i)
    }
}

/// Per-rule counters, as `ipfw show` prints them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleCounter {
    pub packets: u64,
    pub bytes: u64,
}

/// Hooks for `explain` and for cost accounting. The default methods do
/// nothing, so the replay path's [`NoObserver`] compiles away entirely.
pub trait Observer {
    /// Sees nothing: a packet the classifier alone decides need not be
    /// walked for it.
    const SILENT: bool = false;
    #[inline(always)]
    fn insn(&mut self, _rule: usize, _insn: usize, _matched: bool) {}
    #[inline(always)]
    fn rule(&mut self, _rule: usize, _matched: bool) {}
}

pub struct NoObserver;
impl Observer for NoObserver {
    const SILENT: bool = true;
}

/// The dynamic-state side of one walk: the table, which holds the states
/// the packet's flow has under each state name (found before the walk;
/// `class` then has [`class::STATE`]).
pub struct StateCtx<'a> {
    pub table: Option<&'a mut StateTable>,
}

impl StateCtx<'_> {
    /// For programs without state rules.
    pub fn none() -> StateCtx<'static> {
        StateCtx { table: None }
    }
}

/// What a probe rule the packet's header check failed gave.
enum Probe {
    /// Not matched: go on at this index.
    Next(usize),
    /// A state fired: run the action of the rule that made it.
    Fired(usize),
    /// The rule matched as if the packet had no state.
    Matched,
}

/// Walks `prog` for one packet whose class bits are `class`. Counts every
/// matching rule; calls `log(rule_index)` for matching rules that have
/// `log`.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn evaluate<D: Dispatch, O: Observer, W: Walk>(
    prog: &Program,
    env: &Env,
    walk: &mut W,
    p: &Packet,
    mut class: u32,
    states: &mut StateCtx,
    ctx: &mut Ctx,
    counters: &mut [RuleCounter],
    log: &mut dyn FnMut(usize),
    obs: &mut O,
) -> (usize, Verdict) {
    debug_assert_eq!(counters.len(), prog.rules.len());
    let mut stack = [0u32; CALL_STACK_DEPTH];
    let (mut depth, mut calls) = (0usize, 0u32);
    let mut i = walk.next(0);
    loop {
        let mut r = &prog.rules[i];
        // `hit`: the rule whose action runs; a state's rule when it fires.
        let (mut hit, mut fired) = (i, false);
        if class & r.class_mask != r.class_bits {
            if !(r.probe && class & class::STATE != 0) {
                obs.rule(i, false);
                i = walk.next(r.skip_class as usize);
                continue;
            }
            // The common case inline: no `prob`, a state of the rule's name.
            let quick = match r.prob {
                None => states.fire(p, r.state_name),
                Some(_) => None,
            };
            let probed = match quick {
                Some(state_rule) => {
                    obs.rule(i, true);
                    Probe::Fired(state_rule)
                }
                None => probe::<D, O>(prog, env, p, i, class, states, ctx, obs),
            };
            match probed {
                Probe::Next(j) => {
                    i = walk.next(j);
                    continue;
                }
                Probe::Fired(state_rule) => {
                    class &= !class::STATE; // a packet probes its state once
                    (hit, fired) = (state_rule, true);
                    r = &prog.rules[hit];
                }
                Probe::Matched => {}
            }
        } else if r.proto.is_some_and(|proto| proto != p.proto) {
            obs.rule(i, false);
            i = walk.next(r.skip_proto as usize);
            continue;
        } else if rule_matches::<D, O>(prog, env, p, i, ctx, obs)
            && r.prob.is_none_or(|t| ctx.draw(env.seed, t))
        {
            obs.rule(i, true);
        } else {
            obs.rule(i, false);
            i = walk.next(i + 1);
            continue;
        }
        if !fired && r.state_op != StateOp::None {
            if !states.install(i, r, p) {
                // A state refused (table full, limit reached) denies.
                count(counters, i, p);
                return (i, Verdict::Drop);
            }
            if r.defer {
                i = walk.next(i + 1); // the action waits for the state
                continue;
            }
        }
        if r.act.may_skip() && skips_action(r.act, p, ctx, depth, calls) {
            i = walk.next(hit + 1);
            continue;
        }
        count(counters, hit, p);
        match r.quick {
            Quick::Accept => return (hit, Verdict::Pass),
            Quick::Deny => return (hit, Verdict::Drop),
            Quick::Count => {
                i = walk.next(hit + 1);
                continue;
            }
            Quick::Slow => {}
        }
        if r.log_limit.is_some() && hit == i {
            log(i);
        }
        ctx.tags = (ctx.tags | r.tag.set) & !r.tag.clear;
        match r.act {
            Act::Skipto => i = walk.next(r.jump as usize),
            Act::SkiptoTablearg => i = walk.next(tablearg_target(prog, hit, p, env, ctx)),
            Act::Call if depth < CALL_STACK_DEPTH && calls < MAX_CALLS => {
                stack[depth] = hit as u32 + 1;
                depth += 1;
                calls += 1;
                i = walk.next(r.jump as usize);
            }
            Act::Return if depth > 0 => {
                depth -= 1;
                i = walk.next(stack[depth] as usize);
            }
            act => match run(act, prog, hit, p, env, ctx) {
                Some(v) => return (hit, v),
                None => i = walk.next(hit + 1),
            },
        }
    }
}

/// Counts packet `p` for rule `i`.
#[inline(always)]
pub fn count(counters: &mut [RuleCounter], i: usize, p: &Packet) {
    counters[i].packets += 1;
    counters[i].bytes += u64::from(p.l3_len);
}

/// Probe rule `i`, whose header check a packet with a state failed, in
/// ipfw's order: `prob`, then the state of the rule's name, then the
/// rule's own tests as for a packet without a state.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn probe<D: Dispatch, O: Observer>(
    prog: &Program,
    env: &Env,
    p: &Packet,
    i: usize,
    class: u32,
    states: &mut StateCtx,
    ctx: &mut Ctx,
    obs: &mut O,
) -> Probe {
    let r = &prog.rules[i];
    if r.prob.is_some_and(|t| !ctx.draw(env.seed, t)) {
        obs.rule(i, false);
        return Probe::Next(i + 1);
    }
    if let Some(state_rule) = states.fire(p, r.state_name) {
        obs.rule(i, true);
        return Probe::Fired(state_rule);
    }
    // A state of another name: the rule is tried as if there were none.
    let matched = (class & !class::STATE) & r.class_mask == r.class_bits
        && r.proto.is_none_or(|proto| proto == p.proto)
        && rule_matches::<D, O>(prog, env, p, i, ctx, obs);
    obs.rule(i, matched);
    if matched {
        Probe::Matched
    } else {
        Probe::Next(i + 1)
    }
}

/// Actions that do nothing here and leave the rule unmatched (uncounted):
/// `divert`, `tee` and `fwd` in the layer-2 pass, `reass` of an IPv6
/// packet, a `call` with the stack full and a `return` with it empty, as
/// ipfw's kernel does (ip_fw2.c O_CALLRETURN: "On error both `call' and
/// `return' just continue with next rule", before the counter).
#[inline]
fn skips_action(act: Act, p: &Packet, ctx: &Ctx, depth: usize, calls: u32) -> bool {
    match act {
        Act::Divert | Act::Tee | Act::Fwd => ctx.layer2,
        Act::Reass => p.ip_version == 6 && !ctx.layer2,
        Act::Call => depth >= CALL_STACK_DEPTH || calls >= MAX_CALLS,
        Act::Return => depth == 0,
        _ => false,
    }
}

/// Runs an action that is not a jump: the verdict if it ends the walk,
/// None to go on at the next rule.
#[inline]
fn run(
    act: Act,
    prog: &Program,
    hit: usize,
    p: &Packet,
    env: &Env,
    ctx: &mut Ctx,
) -> Option<Verdict> {
    let tablearg = |ctx: &Ctx, f| prog.tablearg(hit, p, env, ctx, f).unwrap_or(0);
    match act {
        Act::Accept | Act::Fwd => Some(Verdict::Pass),
        Act::Deny => Some(Verdict::Drop),
        // In the layer-2 pass these act as `allow` (ipfw(8), PACKET FLOW).
        Act::Nat | Act::Reass if ctx.layer2 => Some(Verdict::Pass),
        // NAT handles IPv4 only, and denies anything else.
        Act::Nat if p.ip_version != 4 => Some(Verdict::Drop),
        // Back from the divert socket the packet is a diverted one, for the
        // rest of this pass and for the frame's layer-2 pass after it.
        Act::Divert => {
            ctx.diverted = if p.direction == Direction::Out { 2 } else { 1 };
            prog.one_pass.then_some(Verdict::Pass)
        }
        Act::HandOff | Act::Nat if prog.one_pass => Some(Verdict::Pass),
        // A fragment goes to reassembly, which replay does not do.
        Act::Reass if p.frag & (frag::MF | frag::LATER) != 0 => Some(Verdict::Pass),
        Act::SetFib(n) => {
            ctx.set_fib(n);
            None
        }
        Act::SetFibTablearg => {
            ctx.set_fib((tablearg(ctx, ValueField::Fib) & 0x7fff) as u16);
            None
        }
        Act::SetDscp(code) => {
            ctx.set_tos(code << 2 | ctx.tos(p) & 3);
            None
        }
        Act::SetDscpTablearg => {
            ctx.set_tos(((tablearg(ctx, ValueField::Dscp) & 0x3f) as u8) << 2 | ctx.tos(p) & 3);
            None
        }
        Act::TcpSetMss(mss) => {
            let syn_with_mss = p.proto == weir_wire::proto::TCP
                && p.has_ports
                && p.tcp_flags & tcp::SYN != 0
                && p.tcp_opts & tcpopt::MSS != 0;
            if syn_with_mss && ctx.mss(p) > mss {
                ctx.set_mss(mss);
            }
            None
        }
        _ => None,
    }
}

/// Where `skipto tablearg` goes: the first rule numbered at or after the
/// table value, if that is past this rule; else the next rule (ipfw never
/// jumps back).
pub fn tablearg_target(prog: &Program, ri: usize, p: &Packet, env: &Env, ctx: &Ctx) -> usize {
    prog.tablearg(ri, p, env, ctx, ValueField::Skipto)
        .map(|v| prog.first_rule_at(v))
        .filter(|&t| t > ri)
        .unwrap_or(ri + 1)
}

impl StateCtx<'_> {
    /// The packet's state under `name` fires (see [`StateTable::fire`]).
    #[inline]
    fn fire(&mut self, p: &Packet, name: u8) -> Option<usize> {
        self.table.as_deref_mut()?.fire(p, name)
    }

    /// Makes the state a matching rule asks for; false when refused.
    fn install(&mut self, i: usize, r: &Rule, p: &Packet) -> bool {
        let limit = match r.state_op {
            StateOp::Limit { mask, count, .. } => Some((mask, count)),
            _ => None,
        };
        self.table
            .as_deref_mut()
            .is_none_or(|t| t.install(i, limit, r.state_name, p))
    }
}

/// True when every instruction of rule `ri` matches (or-blocks aside).
#[inline(always)]
pub(crate) fn rule_matches<D: Dispatch, O: Observer>(
    prog: &Program,
    env: &Env,
    p: &Packet,
    ri: usize,
    ctx: &Ctx,
    obs: &mut O,
) -> bool {
    let r = &prog.rules[ri];
    let mut skip_or = false;
    for (k, ins) in prog.insns[r.start as usize..r.end as usize]
        .iter()
        .enumerate()
    {
        if skip_or {
            skip_or = ins.flags & F_OR != 0;
            continue;
        }
        let m = D::matches(ins, p, prog, env, ctx) ^ (ins.flags & F_NOT != 0);
        obs.insn(ri, k, m);
        if ins.flags & F_OR != 0 {
            skip_or = m;
        } else if !m {
            return false;
        }
    }
    true
}
