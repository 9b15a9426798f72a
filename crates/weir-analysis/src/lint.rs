//! `weir lint`: rules no packet can reach, rules that contradict
//! themselves, rules whose removal changes no decision, and jumps that go
//! nowhere useful.

use crate::bdd::{Cube, Set, FALSE, TRUE};
use crate::flow::{backward, decider, key, per_rule, taken, too_large, Model, Plain, Verdicts};
use crate::reach::{Hits, Reach};
use crate::report::{Finding, Kind, RuleRef, Witness};
use crate::space::Space;
use crate::witness::Point;
use crate::Analyser;
use weir_engine::{Act, Env, Program, StateOp, TagChange};

/// Findings on one ruleset, in rule order.
pub fn lint(a: &mut Analyser, prog: &Program, env: &Env) -> Result<Vec<Finding>, String> {
    let budget = a.budget;
    let s = &mut a.space;
    let m = Model::new(s, prog, env);
    let reach = Reach::new(s, &m, budget)?;
    let caveat = caveat(&m, &reach);
    let verdicts = backward(s, &m)?;
    // What one rule's questions make is not needed for the next rule.
    let kept = s.bdd.len();
    let mut out = Vec::new();
    let last = prog.rules.len() - 1;
    for i in 0..last {
        // A full table answers FALSE: stop before that makes a finding.
        s.bdd.full().map_err(|_| too_large())?;
        if s.bdd.len() > kept + GARBAGE.max(kept) {
            s.bdd.truncate(kept);
        }
        let r = &prog.rules[i];
        if r.act == Act::CheckState {
            continue; // acts through states; its body never matches
        }
        let at = RuleRef::of(prog, i);
        let mine = s.bdd.and(m.bounds[i].hi, s.universe);
        if mine == FALSE {
            out.push(Finding::new(
                Kind::NeverMatches,
                at,
                "its conditions contradict each other: no packet matches it".into(),
            ));
            continue;
        }
        let plain = r.state_op == StateOp::None && !r.probe && r.tag == TagChange::default();
        let decides = plain && matches!(r.act, Act::Accept | Act::Deny);
        if decides && changes_a_decision(s, &m, &reach, &verdicts, i, mine)? {
            continue;
        }
        let Some((stack, hit)) = first_hits(s, &m, &reach, i, mine)? else {
            out.push(unreachable(s, &m, &reach, i)?);
            continue;
        };
        if decides {
            out.push(redundant(s, &m, i, &stack, hit, mine)?);
        } else if plain && r.act == Act::Count {
            let mut f = Finding::new(
                Kind::CounterOnly,
                at,
                "a count rule: removing it changes no decision, only its counter".into(),
            );
            f.witness = witness(s, &m, hit.set)?;
            out.push(f);
        } else if r.act == Act::Return {
            let outside = reach.hits(s, &m, i, &[], mine, false)?;
            if outside.set != FALSE {
                let mut f = Finding::new(
                    Kind::ReturnOutsideCall,
                    at,
                    "packets reach this return without a call: the walk goes on at the next rule"
                        .into(),
                );
                f.witness = witness(s, &m, outside.set)?;
                out.push(f);
            }
        }
    }
    s.bdd.full().map_err(|_| too_large())?;
    for f in &mut out {
        f.number_witness(prog);
        if f.kind != Kind::NeverMatches && f.caveat.is_none() {
            f.caveat.clone_from(&caveat);
        }
    }
    Ok(out)
}

/// Whether some packet that reaches accept/deny rule `i` would get
/// another verdict without it (a witness of that makes it needed).
fn changes_a_decision(
    s: &mut Space,
    m: &Model,
    reach: &Reach,
    v: &Verdicts,
    i: usize,
    mine: Set,
) -> Result<bool, String> {
    let pass = m.prog.rules[i].act == Act::Accept;
    for stack in reach.stacks(i) {
        let next = key(&stack, i + 1);
        let (lo, hi) = v.at.get(&next).copied().unwrap_or((FALSE, TRUE));
        let other = if pass {
            s.bdd.minus(mine, lo)
        } else {
            s.bdd.and(mine, hi)
        };
        if reach.hits(s, m, i, &stack, other, false)?.set != FALSE {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The first call stack with packets that reach rule `i` and match it.
fn first_hits(
    s: &mut Space,
    m: &Model,
    reach: &Reach,
    i: usize,
    mine: Set,
) -> Result<Option<(Vec<u32>, Hits)>, String> {
    for stack in reach.stacks(i) {
        let h = reach.hits(s, m, i, &stack, mine, false)?;
        if h.set != FALSE {
            return Ok(Some((stack, h)));
        }
    }
    Ok(None)
}

/// Notes for the rules a replayed trace never matched (`unmatched`, rule
/// indices), kept apart from those no packet can match: a rule with an
/// unreachable or never-matches finding gets none, nor the default rule.
pub fn unmatched_in_trace(
    prog: &Program,
    findings: &[Finding],
    unmatched: impl IntoIterator<Item = usize>,
    trace: &str,
) -> Vec<Finding> {
    let last = prog.rules.len() - 1;
    unmatched
        .into_iter()
        .filter(|&i| i < last)
        .filter(|&i| {
            !findings.iter().any(|f| {
                f.rule.index == i && matches!(f.kind, Kind::Unreachable | Kind::NeverMatches)
            })
        })
        .map(|i| {
            Finding::new(
                Kind::UnmatchedInTrace,
                RuleRef::of(prog, i),
                format!("no packet of {trace} matched it (packets can)"),
            )
        })
        .collect()
}

/// Why the walk is not exact, if it is not: notes and the first reasons.
pub(crate) fn caveat(m: &Model, reach: &Reach) -> Option<String> {
    let mut why: Vec<String> = m.notes.clone();
    for (i, w) in reach.inexact(m) {
        let s = format!("{w} (rule {})", m.prog.rules[i].number);
        if why.len() < 4 && !why.iter().any(|x| x.starts_with(w)) {
            why.push(s);
        }
    }
    (!why.is_empty()).then(|| format!("analysed conservatively: {}", why.join(", ")))
}

/// A packet of `set` and the rule that decides it.
pub(crate) fn witness(s: &mut Space, m: &Model, set: Set) -> Result<Option<Witness>, String> {
    let Some(p) = Point::pick(s, set) else {
        return Ok(None);
    };
    let d = decider(s, m, &p.bits)?;
    Ok(Some(Witness {
        packet: p,
        rule: d.map(|d| d.0),
        verdict: d.map(|d| d.1),
        without_rule: None,
        decided_by: None,
        decided_without_it_by: None,
    }))
}

/// A packet of `set`, every one of which rule `i` decides.
fn witness_of_rule(s: &Space, m: &Model, set: Set, i: usize) -> Option<Witness> {
    Point::pick(s, set).map(|p| Witness {
        packet: p,
        rule: Some(i),
        verdict: m.prog.rules[i].act.verdict(),
        without_rule: None,
        decided_by: None,
        decided_without_it_by: None,
    })
}

/// "rule 5" or "rules 5, 7 and 2 more".
fn rule_list(prog: &Program, rules: &[usize], total: usize) -> String {
    let names: Vec<String> = rules
        .iter()
        .map(|&t| prog.rules[t].number.to_string())
        .collect();
    let more = total - rules.len();
    format!(
        "rule{} {}{}",
        if total == 1 { "" } else { "s" },
        names.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

fn unreachable(s: &mut Space, m: &Model, reach: &Reach, i: usize) -> Result<Finding, String> {
    let prog = m.prog;
    let mine = s.bdd.and(m.bounds[i].hi, s.universe);
    let verdict = prog.rules[i].act.verdict();
    let differs = |j: usize| prog.rules[j].act.verdict() != verdict || verdict.is_none();
    let cands: Vec<(usize, Set)> = match &m.plain {
        // Alone before this rule, an earlier rule that decides takes all
        // it surely matches of these packets.
        Some(plain) => {
            let mut c = Vec::new();
            for j in (0..i).rev() {
                if let Plain::Decides { sure, .. } = plain[j] {
                    if sure != FALSE && !m.cubes[j].clashes(&m.cubes[i]) {
                        c.push((j, sure));
                    }
                }
            }
            // The nearest that takes them all, when none differs, is
            // the whole answer; else every part is weighed.
            let alone = c
                .iter()
                .position(|&(_, sure)| s.bdd.subset(mine, sure))
                .filter(|_| !c.iter().any(|x| differs(x.0)));
            match alone {
                Some(k) => vec![(c[k].0, mine)],
                None => {
                    let mut parts = Vec::new();
                    for (j, sure) in c.into_iter().rev() {
                        let part = s.bdd.and(mine, sure);
                        if part != FALSE {
                            parts.push((j, part));
                        }
                    }
                    parts
                }
            }
        }
        // What each rule took, for good: disjoint sets that together
        // hold them all.
        None => {
            let took = taken(s, m, key(&[], 0), mine, Some(i))?;
            per_rule(s, took)
        }
    };
    let chosen = greedy_cover(s, mine, &cands, differs);
    let any_differs = cands.iter().any(|c| differs(c.0));
    let rules: Vec<usize> = chosen.iter().map(|&k| cands[k].0).collect();
    let why = if any_differs {
        "a blocking rule has a different action: likely a bug"
    } else {
        "all blocking rules have the same action: the rule is redundant"
    };
    let total = rules.len();
    let shown = &rules[..total.min(MAX_LISTED)];
    let mut f = Finding::new(
        Kind::Unreachable,
        RuleRef::of(prog, i),
        format!(
            "no packet reaches this rule and matches it: {} take{} every packet it matches; {why}",
            rule_list(prog, shown, total),
            if total == 1 { "s" } else { "" },
        ),
    );
    f.blockers = shown.iter().map(|&j| RuleRef::of(prog, j)).collect();
    f.blockers_total = total;
    f.different_action = Some(any_differs);
    // A packet the first blocker takes itself, if it takes one.
    let mut from = mine;
    if let Some(&(j, part)) = chosen.first().map(|&k| &cands[k]) {
        from = part;
        if m.plain.is_some() {
            let own = reach.hits(s, m, j, &[], part, false)?.set;
            if own != FALSE {
                from = own;
            }
        }
    }
    f.witness = witness(s, m, from)?;
    Ok(f)
}

/// Indices of `cands` whose sets cover `target` (as far as they can),
/// picked greedily as Batfish picks blocking lines: the largest one that
/// `first` prefers, then whichever covers most of the rest.
fn greedy_cover(
    s: &mut Space,
    target: Set,
    cands: &[(usize, Set)],
    first: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let mut chosen: Vec<usize> = Vec::new();
    let mut left = target;
    let preferred = cands
        .iter()
        .enumerate()
        .filter(|(_, c)| first(c.0))
        .map(|(k, c)| (k, s.bdd.count(c.1)))
        .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)));
    if let Some((k, _)) = preferred {
        chosen.push(k);
        left = s.bdd.minus(left, cands[k].1);
    }
    // One that covers the rest by itself is the largest: no need to count.
    if let Some(k) =
        (0..cands.len()).find(|&k| !chosen.contains(&k) && s.bdd.subset(left, cands[k].1))
    {
        if left != FALSE {
            chosen.push(k);
        }
        return chosen;
    }
    while left != FALSE {
        let mut best: Option<(usize, f64)> = None;
        for (k, c) in cands.iter().enumerate() {
            if chosen.contains(&k) {
                continue;
            }
            let part = s.bdd.and(c.1, left);
            if part == FALSE {
                continue;
            }
            let n = s.bdd.count(part);
            if best.is_none_or(|b| n > b.1) {
                best = Some((k, n));
            }
        }
        let Some((k, _)) = best else { break };
        chosen.push(k);
        left = s.bdd.minus(left, cands[k].1);
    }
    chosen
}

/// The first rule after `i` of a plain ruleset that may decide the
/// packet `bits` of a set whose cube is `cube`.
fn first_later(
    s: &Space,
    m: &Model,
    plain: &[Plain],
    i: usize,
    cube: &Cube,
    bits: &[bool],
) -> Option<usize> {
    (i + 1..plain.len()).find(|&j| match plain[j] {
        Plain::Decides { .. } => !m.cubes[j].clashes(cube) && s.bdd.contains(m.bounds[j].hi, bits),
        Plain::GoesOn => false,
    })
}

/// Nodes made for questions about single rules before they are dropped.
const GARBAGE: usize = 1 << 21;

/// Most rules a finding lists.
const MAX_LISTED: usize = 8;

/// Rule `i` reaches `hit` with `stack`, and no packet would get another
/// verdict without it.
fn redundant(
    s: &mut Space,
    m: &Model,
    i: usize,
    stack: &[u32],
    hit: Hits,
    mine: Set,
) -> Result<Finding, String> {
    let prog = m.prog;
    // Who decides its packets once it is gone, most packets first (of
    // all it matches when only some of those that reach it are known).
    let from = if hit.all { hit.set } else { mine };
    let cube = s.bdd.cube(from);
    let covering: Vec<(usize, Set)> = match &m.plain {
        // Later rules with the same verdict that take them, chosen as
        // blockers are.
        Some(plain) => {
            let verdict = prog.rules[i].act.verdict();
            let mut cands = Vec::new();
            // The rule that decides one of them in its place often takes
            // them all.
            let mut alone = Point::pick(s, hit.set)
                .and_then(|p| first_later(s, m, plain, i, &cube, &p.bits))
                .filter(|&j| match plain[j] {
                    Plain::Decides { verdict: v, sure } => {
                        Some(v) == verdict && m.cubes[j].may_hold(&cube) && s.bdd.subset(from, sure)
                    }
                    Plain::GoesOn => false,
                });
            let rest = if alone.is_some() { plain.len() } else { i + 1 };
            for (j, p) in plain.iter().enumerate().skip(rest) {
                if let Plain::Decides { verdict: v, sure } = *p {
                    if Some(v) == verdict && !m.cubes[j].clashes(&cube) {
                        // The first that takes them all is the answer
                        // (its literals first: a quick no for most).
                        if m.cubes[j].may_hold(&cube) && s.bdd.subset(from, sure) {
                            alone = Some(j);
                            break;
                        }
                        cands.push((j, sure));
                    }
                }
            }
            match alone {
                Some(j) => vec![(j, from)],
                None => {
                    let mut parts = Vec::new();
                    for (j, sure) in cands {
                        let part = s.bdd.and(from, sure);
                        if part != FALSE {
                            parts.push((j, part));
                        }
                    }
                    let chosen = greedy_cover(s, from, &parts, |_| false);
                    chosen.into_iter().map(|k| parts[k]).collect()
                }
            }
        }
        None => {
            let after = taken(s, m, key(stack, i + 1), from, None)?;
            let after = per_rule(s, after);
            let mut c: Vec<(usize, Set, f64)> = after
                .into_iter()
                .map(|(t, set)| (t, set, s.bdd.count(set)))
                .collect();
            c.sort_by(|x, y| y.2.total_cmp(&x.2).then(x.0.cmp(&y.0)));
            c.into_iter().map(|x| (x.0, x.1)).collect()
        }
    };
    let total = covering.len();
    let shown: Vec<usize> = covering.iter().take(MAX_LISTED).map(|c| c.0).collect();
    let mut f = Finding::new(
        Kind::Redundant,
        RuleRef::of(prog, i),
        format!(
            "removing this rule changes no decision: {} give{} every packet it decides the same verdict",
            rule_list(prog, &shown, total),
            if total == 1 { "s" } else { "" },
        ),
    );
    f.covered_by = shown.iter().map(|&t| RuleRef::of(prog, t)).collect();
    f.covered_by_total = total;
    // A packet that reaches it, and who decides it once it is gone.
    let p = match covering.first() {
        Some(c) if hit.all => s.bdd.and(c.1, hit.set),
        _ => hit.set,
    };
    // In an exact plain ruleset what reaches an accept or deny rule and
    // matches it is decided there.
    f.witness = if m.plain.is_some() && m.exact {
        witness_of_rule(s, m, p, i)
    } else {
        witness(s, m, p)?
    };
    if let Some(w) = &mut f.witness {
        w.without_rule = match &m.plain {
            Some(plain) => first_later(s, m, plain, i, &cube, &w.packet.bits),
            None => covering
                .iter()
                .find(|c| s.bdd.contains(c.1, &w.packet.bits))
                .map(|c| c.0),
        };
    }
    Ok(f)
}
