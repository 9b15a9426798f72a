//! Packets through the control flow: which packets reach each rule, which
//! it decides, and — backwards — which packets a walk from any point ends
//! by passing.
//!
//! A walk's position is a *state*: the rule index and the stack of
//! `call` return points. Every move (next rule, `skipto`, `call`,
//! `return`) makes the key `stack ++ [index, ∞]` grow in lexicographic
//! order (jumps go forward; a call pushes a return point past itself; a
//! return drops the last two entries), so visiting states in key order
//! sees every state after all the states that lead to it, and each state
//! is visited once with the union of the packets that get there.

use crate::bdd::{Set, FALSE, TRUE};
use crate::rules::{rule_bounds, Bounds};
use crate::space::{Space, MF};
use std::collections::{BTreeMap, BTreeSet};
use weir_engine::{Act, Env, Program, StateOp, Verdict, ANY_STATE, CALL_STACK_DEPTH, MAX_CALLS};

/// `stack ++ [index, u32::MAX]`.
pub type Key = Vec<u32>;

pub fn key(stack: &[u32], i: usize) -> Key {
    let mut k = stack.to_vec();
    k.push(i as u32);
    k.push(u32::MAX);
    k
}

pub fn split(k: &[u32]) -> (&[u32], usize) {
    let n = k.len() - 2;
    (&k[..n], k[n] as usize)
}

/// Most states (rule × call stack) one analysis visits.
const MAX_STATES: usize = 4_000_000;

/// A ruleset prepared for analysis: its rules' match bounds.
pub struct Model<'p> {
    pub prog: &'p Program,
    pub bounds: Vec<Bounds>,
    /// Whole-ruleset reasons the analysis is not exact.
    pub notes: Vec<String>,
}

impl<'p> Model<'p> {
    pub fn new(s: &mut Space, prog: &'p Program, env: &Env) -> Model<'p> {
        let bounds = prog
            .rules
            .iter()
            .map(|r| rule_bounds(s, prog, env, r))
            .collect();
        let mut notes = Vec::new();
        if prog.layer2 {
            notes.push("the layer-2 pass is not analysed".to_string());
        }
        Model {
            prog,
            bounds,
            notes,
        }
    }

    /// Rules that make states of the name probe rule `i` fires.
    fn state_makers(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let name = self.prog.rules[i].state_name;
        self.prog
            .rules
            .iter()
            .enumerate()
            .filter_map(move |(t, r)| {
                let makes = r.state_op != StateOp::None;
                (makes && (name == ANY_STATE || r.state_name == name)).then_some(t)
            })
    }
}

/// What one forward walk found.
pub struct Flow {
    /// Per rule: packets that may reach it (any stack).
    pub reach: Vec<Set>,
    /// Per rule: packets that may reach it and match it.
    pub matched: Vec<Set>,
    /// Per rule: packets it may decide, by verdict.
    pub pass: Vec<Set>,
    pub drop: Vec<Set>,
    /// Per rule: a reason its part of the walk is not exact.
    pub inexact: Vec<Option<&'static str>>,
    /// With a stop index: per rule, the packets it took away for good
    /// before they reached the stop (decided, or jumped past it).
    pub cut: Vec<Set>,
    /// Per state visited: the packets that got there.
    pub states: BTreeMap<Key, Set>,
    /// `call`s that may be taken, counted over states.
    pub calls: usize,
}

impl Flow {
    pub fn decided(&self, s: &mut Space, i: usize) -> Set {
        s.bdd.or(self.pass[i], self.drop[i])
    }
}

/// Walks `start` packets from the first rule. With `stop`, states past
/// rule `stop` that cannot come back before it are not followed, and
/// what got there is counted in `cut` of the rule that sent it.
pub fn forward(s: &mut Space, m: &Model, start: Set, stop: Option<usize>) -> Result<Flow, String> {
    forward_from(s, m, key(&[], 0), start, stop)
}

/// As [`forward`], from the state `from`.
pub fn forward_from(
    s: &mut Space,
    m: &Model,
    from: Key,
    start: Set,
    stop: Option<usize>,
) -> Result<Flow, String> {
    let n = m.prog.rules.len();
    let mut f = Flow {
        reach: vec![FALSE; n],
        matched: vec![FALSE; n],
        pass: vec![FALSE; n],
        drop: vec![FALSE; n],
        inexact: vec![None; n],
        cut: vec![FALSE; n],
        states: BTreeMap::new(),
        calls: 0,
    };
    let mut work: BTreeMap<Key, Set> = BTreeMap::new();
    work.insert(from, start);
    while let Some((k, r)) = work.pop_first() {
        if r == FALSE {
            continue;
        }
        if f.states.len() >= MAX_STATES {
            return Err(format!("more than {MAX_STATES} call paths to analyse"));
        }
        let (stack, i) = split(&k);
        let stack = stack.to_vec();
        f.states.insert(k.clone(), r);
        let rule = &m.prog.rules[i];
        let b = m.bounds[i];
        f.reach[i] = s.bdd.or(f.reach[i], r);
        let lo = if rule.prob.is_some() { FALSE } else { b.lo };
        let hit = s.bdd.and(r, b.hi);
        let miss = s.bdd.minus(r, lo);
        let unsure = s.bdd.minus(hit, lo);
        if unsure != FALSE {
            f.inexact[i] = f.inexact[i].or(b.why).or(Some("prob"));
        }
        f.matched[i] = s.bdd.or(f.matched[i], hit);
        if rule.probe {
            // As if any state may exist: its rule's action may run.
            f.inexact[i] = Some("dynamic states");
            for t in m.state_makers(i).collect::<Vec<_>>() {
                match m.prog.rules[t].act.verdict() {
                    Some(Verdict::Pass) => f.pass[t] = s.bdd.or(f.pass[t], r),
                    Some(Verdict::Drop) => f.drop[t] = s.bdd.or(f.drop[t], r),
                    None if t > i => push(s, &mut work, &mut f, stop, key(&stack, t + 1), r, i),
                    None => {}
                }
            }
        }
        if i + 1 < n {
            push(s, &mut work, &mut f, stop, key(&stack, i + 1), miss, i);
        }
        if hit == FALSE {
            continue;
        }
        let next = key(&stack, i + 1);
        if rule.state_op != StateOp::None {
            if matches!(rule.state_op, StateOp::Limit { .. }) {
                // A limit reached denies.
                f.drop[i] = s.bdd.or(f.drop[i], hit);
                f.inexact[i] = Some("limit");
            }
            if rule.defer {
                push(s, &mut work, &mut f, stop, next, hit, i);
                continue;
            }
        }
        let one_pass = m.prog.one_pass;
        match rule.act {
            Act::Accept | Act::Fwd => f.pass[i] = s.bdd.or(f.pass[i], hit),
            Act::Deny => f.drop[i] = s.bdd.or(f.drop[i], hit),
            Act::Skipto => push(
                s,
                &mut work,
                &mut f,
                stop,
                key(&stack, rule.jump as usize),
                hit,
                i,
            ),
            Act::SkiptoTablearg => {
                f.inexact[i] = Some("skipto tablearg");
                for t in i + 1..n {
                    push(s, &mut work, &mut f, stop, key(&stack, t), hit, i);
                }
            }
            Act::HandOff | Act::Divert if one_pass => f.pass[i] = s.bdd.or(f.pass[i], hit),
            Act::Nat => {
                let v4 = s.bdd.and(hit, s.v4);
                let other = s.bdd.minus(hit, s.v4);
                f.drop[i] = s.bdd.or(f.drop[i], other);
                if one_pass {
                    f.pass[i] = s.bdd.or(f.pass[i], v4);
                } else {
                    push(s, &mut work, &mut f, stop, next, v4, i);
                }
            }
            Act::Reass => {
                let mf = s.bdd.var(MF.at, true);
                let frag = s.bdd.or(mf, s.later);
                let frag = s.bdd.and(frag, s.v4);
                let goes = s.bdd.and(hit, frag);
                f.pass[i] = s.bdd.or(f.pass[i], goes);
                let rest = s.bdd.minus(hit, frag);
                push(s, &mut work, &mut f, stop, next, rest, i);
            }
            Act::Call if stack.len() < CALL_STACK_DEPTH => {
                f.calls += 1;
                if f.calls >= MAX_CALLS as usize {
                    f.inexact[i] = Some("more than 256 calls");
                }
                let mut inner = stack.clone();
                inner.push(i as u32 + 1);
                push(
                    s,
                    &mut work,
                    &mut f,
                    stop,
                    key(&inner, rule.jump as usize),
                    hit,
                    i,
                );
            }
            Act::Return if !stack.is_empty() => {
                let (ret, outer) = stack.split_last().expect("not empty");
                push(
                    s,
                    &mut work,
                    &mut f,
                    stop,
                    key(outer, *ret as usize),
                    hit,
                    i,
                );
            }
            // count, setfib, setdscp, tcp-setmss, tee, ngtee, check-state,
            // hand-offs without one_pass, a call too deep, a return with
            // nowhere to go: the walk goes on.
            _ => push(s, &mut work, &mut f, stop, next, hit, i),
        }
    }
    Ok(f)
}

/// Adds `set` to the state `to`, sent there by rule `from`; with a stop,
/// a state past it that cannot come back counts as `from`'s cut instead.
#[allow(clippy::too_many_arguments)]
fn push(
    s: &mut Space,
    work: &mut BTreeMap<Key, Set>,
    f: &mut Flow,
    stop: Option<usize>,
    to: Key,
    set: Set,
    from: usize,
) {
    if set == FALSE {
        return;
    }
    let (st, t) = split(&to);
    if let Some(stop) = stop {
        if t > stop && st.iter().all(|&ret| ret as usize > stop) {
            f.cut[from] = s.bdd.or(f.cut[from], set);
            return;
        }
    }
    let e = work.entry(to).or_insert(FALSE);
    *e = s.bdd.or(*e, set);
}

/// Per state: the packets a walk from there surely (`lo`) and maybe
/// (`hi`) ends by passing.
pub struct Verdicts {
    pub at: BTreeMap<Key, (Set, Set)>,
}

/// Every state a walk can be in, whatever the packet.
fn structural_states(m: &Model) -> Result<BTreeSet<Key>, String> {
    let n = m.prog.rules.len();
    let mut seen = BTreeSet::new();
    let mut work = vec![key(&[], 0)];
    while let Some(k) = work.pop() {
        if seen.contains(&k) {
            continue;
        }
        if seen.len() >= MAX_STATES {
            return Err(format!("more than {MAX_STATES} call paths to analyse"));
        }
        work.extend(successors(m, &k).into_iter().filter(|s| split(s).1 < n));
        seen.insert(k);
    }
    Ok(seen)
}

fn successors(m: &Model, k: &[u32]) -> Vec<Key> {
    let (stack, i) = split(k);
    let r = &m.prog.rules[i];
    let n = m.prog.rules.len();
    let mut out = vec![key(stack, i + 1)];
    match r.act {
        Act::Skipto => out.push(key(stack, r.jump as usize)),
        Act::SkiptoTablearg => out.extend((i + 2..n).map(|t| key(stack, t))),
        Act::Call if stack.len() < CALL_STACK_DEPTH => {
            let mut inner = stack.to_vec();
            inner.push(i as u32 + 1);
            out.push(key(&inner, r.jump as usize));
        }
        Act::Return if !stack.is_empty() => {
            let (ret, outer) = stack.split_last().expect("not empty");
            out.push(key(outer, *ret as usize));
        }
        _ => {}
    }
    if r.probe {
        out.extend(
            m.state_makers(i)
                .filter(|&t| t > i)
                .map(|t| key(stack, t + 1)),
        );
    }
    out
}

/// Computes [`Verdicts`] for every state, last state first.
pub fn backward(s: &mut Space, m: &Model) -> Result<Verdicts, String> {
    let states = structural_states(m)?;
    let mut at: BTreeMap<Key, (Set, Set)> = BTreeMap::new();
    let n = m.prog.rules.len();
    for k in states.iter().rev() {
        let (stack, i) = split(k);
        let r = &m.prog.rules[i];
        let b = m.bounds[i];
        let get =
            |at: &BTreeMap<Key, (Set, Set)>, to: Key| at.get(&to).copied().unwrap_or((FALSE, TRUE));
        let next = if i + 1 < n {
            get(&at, key(stack, i + 1))
        } else {
            (FALSE, TRUE)
        };
        let one_pass = m.prog.one_pass;
        let mut out = match r.act {
            Act::Accept | Act::Fwd => (TRUE, TRUE),
            Act::Deny => (FALSE, FALSE),
            Act::Skipto => get(&at, key(stack, r.jump as usize)),
            Act::SkiptoTablearg => {
                let (mut lo, mut hi) = (TRUE, FALSE);
                for t in i + 1..n {
                    let (l, h) = get(&at, key(stack, t));
                    lo = s.bdd.and(lo, l);
                    hi = s.bdd.or(hi, h);
                }
                (lo, hi)
            }
            Act::HandOff | Act::Divert if one_pass => (TRUE, TRUE),
            Act::Nat => {
                let v4 = if one_pass { (TRUE, TRUE) } else { next };
                (s.bdd.and(v4.0, s.v4), s.bdd.and(v4.1, s.v4))
            }
            Act::Reass => {
                let mf = s.bdd.var(MF.at, true);
                let frag = s.bdd.or(mf, s.later);
                let frag = s.bdd.and(frag, s.v4);
                (s.bdd.or(frag, next.0), s.bdd.or(frag, next.1))
            }
            Act::Call if stack.len() < CALL_STACK_DEPTH => {
                let mut inner = stack.to_vec();
                inner.push(i as u32 + 1);
                get(&at, key(&inner, r.jump as usize))
            }
            Act::Return if !stack.is_empty() => {
                let (ret, outer) = stack.split_last().expect("not empty");
                get(&at, key(outer, *ret as usize))
            }
            _ => next,
        };
        if r.defer {
            out = next;
        } else if matches!(r.state_op, StateOp::Limit { .. }) {
            out.0 = FALSE;
        }
        let lo_m = if r.prob.is_some() { FALSE } else { b.lo };
        // lo: surely matched and surely passes, or surely missed and surely
        // passes after, or both ways pass.
        let a = s.bdd.and(lo_m, out.0);
        let missed = s.bdd.not(b.hi);
        let c = s.bdd.and(missed, next.0);
        let both = s.bdd.and(out.0, next.0);
        let lo = s.bdd.or(a, c);
        let mut lo = s.bdd.or(lo, both);
        let d = s.bdd.and(b.hi, out.1);
        let not_lo = s.bdd.not(lo_m);
        let e = s.bdd.and(not_lo, next.1);
        let mut hi = s.bdd.or(d, e);
        if r.probe {
            for t in m.state_makers(i).collect::<Vec<_>>() {
                let fired = match m.prog.rules[t].act.verdict() {
                    Some(Verdict::Pass) => (TRUE, TRUE),
                    Some(Verdict::Drop) => (FALSE, FALSE),
                    None => (FALSE, TRUE),
                };
                lo = s.bdd.and(lo, fired.0);
                hi = s.bdd.or(hi, fired.1);
            }
        }
        at.insert(k.clone(), (lo, hi));
    }
    Ok(Verdicts { at })
}
