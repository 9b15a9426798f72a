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

use crate::bdd::{Cube, Set, FALSE, TRUE};
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
    /// Per rule: the literals every packet it may match has.
    pub cubes: Vec<Cube>,
    /// When every rule either decides the packets it matches or lets
    /// every packet go on: what each does. Every walk is then the rules
    /// in order, and a rule gets what it matches less what earlier rules
    /// decided (see `reach`).
    pub plain: Option<Vec<Plain>>,
    /// Every rule's match is known exactly (no bounds, no `prob`).
    pub exact: bool,
    /// Whole-ruleset reasons the analysis is not exact.
    pub notes: Vec<String>,
}

impl<'p> Model<'p> {
    pub fn new(s: &mut Space, prog: &'p Program, env: &Env) -> Model<'p> {
        let bounds: Vec<Bounds> = prog
            .rules
            .iter()
            .map(|r| rule_bounds(s, prog, env, r))
            .collect();
        let cubes = bounds.iter().map(|b| s.bdd.cube(b.hi)).collect();
        let mut notes = Vec::new();
        if prog.layer2 {
            notes.push("the layer-2 pass is not analysed".to_string());
        }
        let exact =
            bounds.iter().all(Bounds::is_exact) && prog.rules.iter().all(|r| r.prob.is_none());
        let mut m = Model {
            prog,
            bounds,
            cubes,
            plain: None,
            exact,
            notes,
        };
        m.plain = (0..prog.rules.len()).map(|i| Plain::of(s, &m, i)).collect();
        m
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

/// What a rule of a plain ruleset does (see [`Model::plain`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plain {
    /// Decides the packets it matches with `verdict`, and surely those of
    /// `sure` (its exact match, or less when its match has bounds).
    Decides { verdict: Verdict, sure: Set },
    /// Every packet goes on to the next rule (`count`, …).
    GoesOn,
}

impl Plain {
    /// Read off [`step`] for every packet, so the semantics stay there.
    fn of(s: &mut Space, m: &Model, i: usize) -> Option<Plain> {
        let st = step(s, m, &[], i, TRUE);
        let next = key(&[], i + 1);
        let to_next = st.next.iter().all(|(k, _)| *k == next);
        let hi = m.bounds[i].hi;
        match (st.decided.as_slice(), st.next.as_slice()) {
            (&[(t, verdict, set)], next_sets) if t == i && set == hi && to_next => {
                let miss = next_sets.first().map_or(FALSE, |x| x.1);
                let sure = s.bdd.not(miss);
                Some(Plain::Decides { verdict, sure })
            }
            ([], next_sets) if to_next => {
                let goes = s.bdd.any(next_sets.iter().map(|x| x.1));
                (goes == TRUE).then_some(Plain::GoesOn)
            }
            _ => None,
        }
    }
}

/// What one rule does with the packets that reach it in one state.
pub(crate) struct Step {
    /// The packets that may match it.
    pub hit: Set,
    /// Packets decided here: by which rule (a probe rule's packets are
    /// decided by the rules that make its states), with which verdict.
    pub decided: Vec<(usize, Verdict, Set)>,
    /// Packets the walk carries on, and to which state.
    pub next: Vec<(Key, Set)>,
    /// Why this step is not exact, if it is not.
    pub inexact: Option<&'static str>,
    /// A call was taken.
    pub call: bool,
}

/// The one place the analysis follows ipfw's control flow forwards.
pub(crate) fn step(s: &mut Space, m: &Model, stack: &[u32], i: usize, r: Set) -> Step {
    let n = m.prog.rules.len();
    let rule = &m.prog.rules[i];
    let b = m.bounds[i];
    let mut out = Step {
        hit: FALSE,
        decided: Vec::new(),
        next: Vec::new(),
        inexact: None,
        call: false,
    };
    let lo = if rule.prob.is_some() { FALSE } else { b.lo };
    let hit = s.bdd.and(r, b.hi);
    let miss = if lo == FALSE { r } else { s.bdd.minus(r, lo) };
    if hit != lo && s.bdd.minus(hit, lo) != FALSE {
        out.inexact = b.why.or(Some("prob"));
    }
    out.hit = hit;
    if rule.probe {
        // As if any state may exist: its rule's action may run.
        out.inexact = Some("dynamic states");
        for t in m.state_makers(i) {
            match m.prog.rules[t].act.verdict() {
                Some(v) => out.decided.push((t, v, r)),
                None if t > i => out.next.push((key(stack, t + 1), r)),
                None => {}
            }
        }
    }
    if i + 1 < n && miss != FALSE {
        out.next.push((key(stack, i + 1), miss));
    }
    if hit == FALSE {
        return out;
    }
    let next = key(stack, i + 1);
    if rule.state_op != StateOp::None {
        if matches!(rule.state_op, StateOp::Limit { .. }) {
            // A limit reached denies.
            out.decided.push((i, Verdict::Drop, hit));
            out.inexact = Some("limit");
        }
        if rule.defer {
            out.next.push((next, hit));
            return out;
        }
    }
    let one_pass = m.prog.one_pass;
    match rule.act {
        Act::Accept | Act::Fwd => out.decided.push((i, Verdict::Pass, hit)),
        Act::Deny => out.decided.push((i, Verdict::Drop, hit)),
        Act::Skipto => out.next.push((key(stack, rule.jump as usize), hit)),
        Act::SkiptoTablearg => {
            out.inexact = Some("skipto tablearg");
            out.next.extend((i + 1..n).map(|t| (key(stack, t), hit)));
        }
        Act::HandOff | Act::Divert if one_pass => out.decided.push((i, Verdict::Pass, hit)),
        Act::Nat => {
            let v4 = s.bdd.and(hit, s.v4);
            let other = s.bdd.minus(hit, s.v4);
            out.decided.push((i, Verdict::Drop, other));
            if one_pass {
                out.decided.push((i, Verdict::Pass, v4));
            } else {
                out.next.push((next, v4));
            }
        }
        Act::Reass => {
            let frag = fragment(s);
            let goes = s.bdd.and(hit, frag);
            out.decided.push((i, Verdict::Pass, goes));
            let rest = s.bdd.minus(hit, frag);
            out.next.push((next, rest));
        }
        Act::Call if stack.len() < CALL_STACK_DEPTH => {
            let mut inner = stack.to_vec();
            inner.push(i as u32 + 1);
            out.next.push((key(&inner, rule.jump as usize), hit));
            out.call = true;
        }
        Act::Return if !stack.is_empty() => {
            let (ret, outer) = stack.split_last().expect("not empty");
            out.next.push((key(outer, *ret as usize), hit));
        }
        // count, setfib, setdscp, tcp-setmss, tee, ngtee, check-state,
        // hand-offs without one_pass, a call too deep, a return with
        // nowhere to go: the walk goes on.
        _ => out.next.push((next, hit)),
    }
    out.decided.retain(|d| d.2 != FALSE);
    out.next.retain(|d| d.1 != FALSE);
    out
}

/// IPv4 packets `reass` holds: fragments, first or later.
fn fragment(s: &mut Space) -> Set {
    let mf = s.bdd.var(MF.at, true);
    let frag = s.bdd.or(mf, s.later);
    s.bdd.and(frag, s.v4)
}

/// What a walk reports to whoever runs it.
pub(crate) trait Sink {
    /// Rule `i` in state `k` did `step`; false ends the walk.
    fn step(&mut self, s: &mut Space, k: &[u32], i: usize, step: &Step) -> bool;
    /// Rule `from` sent `set` past the walk's stop for good.
    fn cut(&mut self, _s: &mut Space, _from: usize, _set: Set) {}
}

/// Walks `start` packets from state `from` through the rules. With
/// `stop`, a state past rule `stop` that cannot come back before it is
/// not followed and its packets are reported as cut. With `only`, the
/// cube of a set that holds every start packet: rules whose match set
/// clashes with it are passed over without building anything.
pub(crate) fn walk(
    s: &mut Space,
    m: &Model,
    from: Key,
    start: Set,
    stop: Option<usize>,
    only: Option<&Cube>,
    sink: &mut impl Sink,
) -> Result<(), String> {
    let n = m.prog.rules.len();
    let mut work: BTreeMap<Key, Set> = BTreeMap::new();
    work.insert(from, start);
    let mut visited = 0usize;
    while let Some((mut k, r)) = work.pop_first() {
        if r == FALSE {
            continue;
        }
        // Rules that cannot match any of these packets pass them on,
        // while no other state comes first.
        if let Some(only) = only {
            loop {
                let (stack, i) = split(&k);
                let passes = !m.prog.rules[i].probe && m.cubes[i].clashes(only);
                if !passes || i + 1 >= n || stop.is_some_and(|t| i + 1 > t && past(stack, t)) {
                    break;
                }
                let next = key(stack, i + 1);
                if work.first_key_value().is_some_and(|(w, _)| *w <= next) {
                    break;
                }
                k = next;
            }
        }
        visited += 1;
        if visited >= MAX_STATES {
            return Err(format!("more than {MAX_STATES} call paths to analyse"));
        }
        s.bdd.full().map_err(|_| too_large())?;
        let (stack, i) = split(&k);
        let st = step(s, m, stack, i, r);
        if !sink.step(s, &k, i, &st) {
            return Ok(());
        }
        for (to, set) in st.next {
            let (to_stack, t) = split(&to);
            if let Some(stop) = stop {
                if t > stop && past(to_stack, stop) {
                    sink.cut(s, i, set);
                    continue;
                }
            }
            let e = work.entry(to).or_insert(FALSE);
            *e = s.bdd.or(*e, set);
        }
    }
    s.bdd.full().map_err(|_| too_large())
}

/// Whether a walk with this stack never comes back to rule `stop`.
fn past(stack: &[u32], stop: usize) -> bool {
    stack.iter().all(|&ret| ret as usize > stop)
}

pub(crate) fn too_large() -> String {
    format!(
        "the ruleset is too large to analyse: more than {} decision-diagram nodes",
        crate::space::MAX_NODES
    )
}

/// What the walk of every packet found.
pub struct Flow {
    /// Per rule: packets that may reach it and match it.
    pub hit: Vec<Set>,
    /// Per rule: packets it may decide, by verdict.
    pub pass: Vec<Set>,
    pub drop: Vec<Set>,
    /// Per rule: a reason its part of the walk is not exact.
    pub inexact: Vec<Option<&'static str>>,
    /// Per rule: its states (call stacks) and the packets that may match
    /// it in each.
    pub states: Vec<Vec<(Vec<u32>, Set)>>,
    /// `call`s that may be taken, counted over states.
    pub calls: usize,
}

impl Flow {
    pub fn decided(&self, s: &mut Space, i: usize) -> Set {
        s.bdd.or(self.pass[i], self.drop[i])
    }
}

impl Sink for Flow {
    fn step(&mut self, s: &mut Space, k: &[u32], i: usize, st: &Step) -> bool {
        let (stack, _) = split(k);
        self.hit[i] = s.bdd.or(self.hit[i], st.hit);
        if st.hit != FALSE {
            self.states[i].push((stack.to_vec(), st.hit));
        }
        if let Some(w) = st.inexact {
            self.inexact[i] = Some(w);
        }
        for &(t, v, set) in &st.decided {
            let to = match v {
                Verdict::Pass => &mut self.pass[t],
                Verdict::Drop => &mut self.drop[t],
            };
            *to = s.bdd.or(*to, set);
        }
        if st.call {
            self.calls += 1;
            if self.calls >= MAX_CALLS as usize {
                self.inexact[i] = Some("more than 256 calls");
            }
        }
        true
    }
}

/// Walks every packet from the first rule.
pub fn forward(s: &mut Space, m: &Model) -> Result<Flow, String> {
    let n = m.prog.rules.len();
    let mut f = Flow {
        hit: vec![FALSE; n],
        pass: vec![FALSE; n],
        drop: vec![FALSE; n],
        inexact: vec![None; n],
        states: vec![Vec::new(); n],
        calls: 0,
    };
    walk(s, m, key(&[], 0), s.universe, None, None, &mut f)?;
    Ok(f)
}

/// The first rule that decides the packet `bits`, and its verdict.
pub fn decider(
    s: &mut Space,
    m: &Model,
    bits: &[bool],
) -> Result<Option<(usize, Verdict)>, String> {
    if let Some(plain) = &m.plain {
        // The rules in order: the first that may match and decides.
        let here = Cube::point(bits);
        return Ok(plain.iter().enumerate().find_map(|(j, p)| match *p {
            Plain::Decides { verdict, .. }
                if !m.cubes[j].clashes(&here) && s.bdd.contains(m.bounds[j].hi, bits) =>
            {
                Some((j, verdict))
            }
            _ => None,
        }));
    }
    struct First(Option<(usize, Verdict)>);
    impl Sink for First {
        fn step(&mut self, _: &mut Space, _: &[u32], _: usize, st: &Step) -> bool {
            self.0 = st.decided.first().map(|d| (d.0, d.1));
            self.0.is_none()
        }
    }
    let point = s.bdd.minterm(bits);
    let cube = s.bdd.cube(point);
    let mut first = First(None);
    walk(s, m, key(&[], 0), point, None, Some(&cube), &mut first)?;
    Ok(first.0)
}

/// [`taken`] per rule, whatever the way.
pub fn per_rule(s: &mut Space, took: BTreeMap<(usize, Took), Set>) -> Vec<(usize, Set)> {
    let mut out: Vec<(usize, Set)> = Vec::new();
    for ((rule, _), set) in took {
        match out.last_mut() {
            Some(last) if last.0 == rule => last.1 = s.bdd.or(last.1, set),
            _ => out.push((rule, set)),
        }
    }
    out
}

/// How a rule took packets from a walk for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Took {
    Pass,
    Drop,
    /// Sent past the walk's stop.
    Past,
}

/// What each rule took, for good, of `start` packets walked from `from`
/// towards rule `stop` (decided, or sent past it), or to the end.
pub fn taken(
    s: &mut Space,
    m: &Model,
    from: Key,
    start: Set,
    stop: Option<usize>,
) -> Result<BTreeMap<(usize, Took), Set>, String> {
    struct Taken(BTreeMap<(usize, Took), Set>);
    impl Taken {
        fn add(&mut self, s: &mut Space, rule: usize, how: Took, set: Set) {
            let e = self.0.entry((rule, how)).or_insert(FALSE);
            *e = s.bdd.or(*e, set);
        }
    }
    impl Sink for Taken {
        fn step(&mut self, s: &mut Space, _: &[u32], _: usize, st: &Step) -> bool {
            for &(t, v, set) in &st.decided {
                let how = match v {
                    Verdict::Pass => Took::Pass,
                    Verdict::Drop => Took::Drop,
                };
                self.add(s, t, how, set);
            }
            true
        }
        fn cut(&mut self, s: &mut Space, from: usize, set: Set) {
            self.add(s, from, Took::Past, set);
        }
    }
    let cube = s.bdd.cube(start);
    let mut t = Taken(BTreeMap::new());
    walk(s, m, from, start, stop, Some(&cube), &mut t)?;
    Ok(t.0)
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

/// Computes [`Verdicts`] for every state, last state first: the one
/// place the analysis follows the control flow backwards (a mirror of
/// [`step`]).
pub fn backward(s: &mut Space, m: &Model) -> Result<Verdicts, String> {
    let states = structural_states(m)?;
    let mut at: BTreeMap<Key, (Set, Set)> = BTreeMap::new();
    let n = m.prog.rules.len();
    let unknown = (FALSE, TRUE);
    for k in states.iter().rev() {
        s.bdd.full().map_err(|_| too_large())?;
        let (stack, i) = split(k);
        let r = &m.prog.rules[i];
        let b = m.bounds[i];
        let get = |at: &BTreeMap<Key, (Set, Set)>, to: Key| at.get(&to).copied().unwrap_or(unknown);
        let next = if i + 1 < n {
            get(&at, key(stack, i + 1))
        } else {
            unknown
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
                let frag = fragment(s);
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
        let sure = if r.prob.is_some() { FALSE } else { b.lo };
        let (mut lo, mut hi) = if sure == b.hi {
            // Matched: the action's outcome; missed: the next rule's.
            let lo = s.bdd.ite(sure, out.0, next.0);
            let hi = if out.0 == out.1 && next.0 == next.1 {
                lo
            } else {
                s.bdd.ite(sure, out.1, next.1)
            };
            (lo, hi)
        } else {
            // Between the bounds the rule may match or not: surely
            // passes only if both ways pass, maybe if either does.
            let both = s.bdd.and(out.0, next.0);
            let maybe = s.bdd.ite(b.hi, both, next.0);
            let lo = s.bdd.ite(sure, out.0, maybe);
            let either = s.bdd.or(out.1, next.1);
            let maybe = s.bdd.ite(b.hi, either, next.1);
            (lo, s.bdd.ite(sure, out.1, maybe))
        };
        if r.probe {
            for t in m.state_makers(i) {
                let fired = match m.prog.rules[t].act.verdict() {
                    Some(Verdict::Pass) => (TRUE, TRUE),
                    Some(Verdict::Drop) => (FALSE, FALSE),
                    None => unknown,
                };
                lo = s.bdd.and(lo, fired.0);
                hi = s.bdd.or(hi, fired.1);
            }
        }
        at.insert(k.clone(), (lo, hi));
    }
    s.bdd.full().map_err(|_| too_large())?;
    Ok(Verdicts { at })
}
