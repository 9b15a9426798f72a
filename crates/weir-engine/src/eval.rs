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
//! - `hit`: the rule whose action runs. Probe rules (`check-state`,
//!   `keep-state`, `limit`) require "no state", so a packet with a state
//!   fails their header and, on that failure path, fires the state: `hit`
//!   becomes the rule that made the state, as in ipfw, and `STATE` is
//!   cleared so the packet probes once. A matching rule that makes a
//!   state and is refused (table full, limit reached) denies the packet.
//! - `skip_or` (in `rule_matches`): a member of the current or-block has
//!   matched, so skip the rest of the block.
//!
//! Exits: the first matching rule whose action is terminal (allow, deny,
//! reject, unreach, reset) returns its index and verdict. The last rule,
//! 65535, matches everything and is terminal (verified at load), so every
//! walk ends. `count`, `skipto`, `call`, `return` and `log` do not end it.

use crate::ops::{Dispatch, Env};
use crate::program::*;
use crate::state::{Found, StateTable};
use weir_wire::Packet;

/// At most this many `call`s are taken per packet; later ones fall through.
pub const MAX_CALLS: u32 = 256;

/// Which rules the walk may visit.
pub trait Walk {
    /// The first rule index at or after `i` worth trying.
    fn next(&self, i: usize) -> usize;
}

/// Every rule, in order.
pub struct Linear;
impl Walk for Linear {
    #[inline(always)]
    fn next(&self, i: usize) -> usize {
        i
    }
}

/// The bitset classifier's candidates for this packet, a bit per rule.
pub struct CandidateBits<'a>(pub &'a [u64]);
impl Walk for CandidateBits<'_> {
    #[inline(always)]
    fn next(&self, i: usize) -> usize {
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
    #[inline(always)]
    fn insn(&mut self, _rule: usize, _insn: usize, _matched: bool) {}
    #[inline(always)]
    fn rule(&mut self, _rule: usize, _matched: bool) {}
}

pub struct NoObserver;
impl Observer for NoObserver {}

/// The dynamic-state side of one walk: the table, and the state the
/// packet's flow has (found before the walk; `class` then has
/// [`class::STATE`]).
pub struct StateCtx<'a> {
    pub table: Option<&'a mut StateTable>,
    pub found: Option<Found>,
}

impl StateCtx<'_> {
    /// For programs without state rules.
    pub fn none() -> StateCtx<'static> {
        StateCtx {
            table: None,
            found: None,
        }
    }
}

/// Walks `prog` for one IP packet whose class bits are `class`. Counts
/// every matching rule; calls `log(rule_index)` for matching rules that
/// have `log`.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn evaluate<D: Dispatch, O: Observer, W: Walk>(
    prog: &Program,
    env: &Env,
    walk: &W,
    p: &Packet,
    mut class: u32,
    states: &mut StateCtx,
    counters: &mut [RuleCounter],
    log: &mut dyn FnMut(usize),
    obs: &mut O,
) -> (usize, Verdict) {
    debug_assert_eq!(counters.len(), prog.rules.len());
    let mut stack = [0u32; CALL_STACK_DEPTH];
    let (mut depth, mut calls) = (0usize, 0u32);
    let mut i = walk.next(0);
    loop {
        let r = &prog.rules[i];
        // `hit`: the rule whose action runs; a state's rule when it fires.
        let hit = if class & r.class_mask != r.class_bits {
            let fired = if r.probe && class & class::STATE != 0 {
                states.fire(p)
            } else {
                None
            };
            let Some(state_rule) = fired else {
                obs.rule(i, false);
                i = walk.next(r.skip_class as usize);
                continue;
            };
            obs.rule(i, true);
            class &= !class::STATE; // a packet probes its state once
            state_rule
        } else if r.proto.is_some_and(|proto| proto != p.proto) {
            obs.rule(i, false);
            i = walk.next(r.skip_proto as usize);
            continue;
        } else if !rule_matches::<D, O>(prog, env, p, i, obs) {
            obs.rule(i, false);
            i = walk.next(i + 1);
            continue;
        } else {
            obs.rule(i, true);
            if r.state_op != StateOp::None && !states.install(i, r.state_op, p) {
                counters[i].packets += 1;
                counters[i].bytes += u64::from(p.l3_len);
                return (i, Verdict::Drop);
            }
            i
        };
        let r = &prog.rules[hit];
        counters[hit].packets += 1;
        counters[hit].bytes += u64::from(p.l3_len);
        if r.log_limit.is_some() && hit == i {
            log(i);
        }
        match r.action {
            RuleAction::Skipto(_) => i = walk.next(r.jump as usize),
            RuleAction::SkiptoTablearg => i = walk.next(tablearg_target(prog, hit, p)),
            RuleAction::Call(_) if depth < CALL_STACK_DEPTH && calls < MAX_CALLS => {
                stack[depth] = hit as u32 + 1;
                depth += 1;
                calls += 1;
                i = walk.next(r.jump as usize);
            }
            RuleAction::Return if depth > 0 => {
                depth -= 1;
                i = walk.next(stack[depth] as usize);
            }
            action => match terminal_verdict(action) {
                Some(v) => return (hit, v),
                None => i = walk.next(hit + 1),
            },
        }
    }
}

/// Where `skipto tablearg` goes: the first rule numbered at or after the
/// table value, if that is past this rule; else the next rule (ipfw never
/// jumps back).
pub fn tablearg_target(prog: &Program, ri: usize, p: &Packet) -> usize {
    prog.tablearg(ri, p)
        .map(|v| prog.first_rule_at(v))
        .filter(|&t| t > ri)
        .unwrap_or(ri + 1)
}

impl StateCtx<'_> {
    /// The packet's state fires: count it, move it on, and return the
    /// index of the rule that made it.
    fn fire(&mut self, p: &Packet) -> Option<usize> {
        let found = self.found.take()?;
        self.table.as_deref_mut()?.hit(found, p);
        Some(found.rule)
    }

    /// Makes the state a matching rule asks for; false when refused.
    fn install(&mut self, rule: usize, op: StateOp, p: &Packet) -> bool {
        let limit = match op {
            StateOp::Limit { mask, count } => Some((mask, count)),
            _ => None,
        };
        self.table
            .as_deref_mut()
            .is_none_or(|t| t.install(rule, limit, p))
    }
}

/// True when every instruction of rule `ri` matches (or-blocks aside).
#[inline(always)]
pub(crate) fn rule_matches<D: Dispatch, O: Observer>(
    prog: &Program,
    env: &Env,
    p: &Packet,
    ri: usize,
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
        let m = D::matches(ins, p, prog, env) ^ (ins.flags & F_NOT != 0);
        obs.insn(ri, k, m);
        if ins.flags & F_OR != 0 {
            skip_or = m;
        } else if !m {
            return false;
        }
    }
    true
}
