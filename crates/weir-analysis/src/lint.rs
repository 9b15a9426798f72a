//! `weir lint`: rules no packet can reach, rules that contradict
//! themselves, rules whose removal changes no decision, and jumps that go
//! nowhere useful.

use crate::bdd::{Set, FALSE};
use crate::flow::{backward, decider, forward, key, taken, Flow, Model, Plain, Verdicts};
use crate::report::{Finding, Kind, RuleRef, Witness};
use crate::space::Space;
use crate::witness::Point;
use crate::Analyser;
use weir_engine::{Act, Env, Program, StateOp, TagChange};

/// Findings on one ruleset, in rule order.
pub fn lint(a: &mut Analyser, prog: &Program, env: &Env) -> Result<Vec<Finding>, String> {
    let s = &mut a.space;
    let m = Model::new(s, prog, env);
    let flow = forward(s, &m)?;
    let caveat = caveat(&m, &flow);
    let mut verdicts: Option<Verdicts> = None;
    let mut out = Vec::new();
    let last = prog.rules.len() - 1;
    for i in 0..last {
        let r = &prog.rules[i];
        let b = m.bounds[i];
        if r.act == Act::CheckState {
            continue; // acts through states; its body never matches
        }
        let at = RuleRef::of(prog, i);
        if !s.bdd.intersects(b.hi, s.universe) {
            out.push(Finding::new(
                Kind::NeverMatches,
                at,
                "its conditions contradict each other: no packet matches it".into(),
            ));
            continue;
        }
        if flow.hit[i] == FALSE {
            out.push(unreachable(s, &m, i)?);
            continue;
        }
        let plain = r.state_op == StateOp::None && !r.probe && r.tag == TagChange::default();
        if plain && matches!(r.act, Act::Accept | Act::Deny) {
            if verdicts.is_none() {
                verdicts = Some(backward(s, &m)?);
            }
            let v = verdicts.as_ref().expect("just made");
            if let Some(f) = redundant(s, &m, &flow, v, i)? {
                out.push(f);
            }
        } else if plain && r.act == Act::Count {
            let mut f = Finding::new(
                Kind::CounterOnly,
                at,
                "a count rule: removing it changes no decision, only its counter".into(),
            );
            f.witness = witness(s, &m, flow.hit[i])?;
            out.push(f);
        } else if r.act == Act::Return {
            let outside = flow.states[i]
                .iter()
                .find(|(stack, _)| stack.is_empty())
                .map_or(FALSE, |x| x.1);
            if outside != FALSE {
                let mut f = Finding::new(
                    Kind::ReturnOutsideCall,
                    at,
                    "packets reach this return without a call: the walk goes on at the next rule"
                        .into(),
                );
                f.witness = witness(s, &m, outside)?;
                out.push(f);
            }
        }
    }
    for f in &mut out {
        f.number_witness(prog);
        if f.kind != Kind::NeverMatches && f.caveat.is_none() {
            f.caveat.clone_from(&caveat);
        }
    }
    Ok(out)
}

/// Why the walk is not exact, if it is not: notes and the first reasons.
pub(crate) fn caveat(m: &Model, flow: &Flow) -> Option<String> {
    let mut why: Vec<String> = m.notes.clone();
    for (i, w) in flow.inexact.iter().enumerate() {
        if let Some(w) = w {
            let s = format!("{w} (rule {})", m.prog.rules[i].number);
            if why.len() < 4 && !why.iter().any(|x| x.starts_with(w)) {
                why.push(s);
            }
        }
    }
    (!why.is_empty()).then(|| format!("analysed conservatively: {}", why.join(", ")))
}

/// A packet of `set` and the rule that decides it.
pub(crate) fn witness(s: &mut Space, m: &Model, set: Set) -> Result<Option<Witness>, String> {
    let Some(p) = Point::pick(s, set) else {
        return Ok(None);
    };
    let one = s.bdd.minterm(&p.bits);
    let d = decider(s, m, one)?;
    Ok(Some(Witness {
        packet: p,
        rule: d.map(|d| d.0),
        verdict: d.map(|d| d.1),
        without_rule: None,
        decided_by: None,
        decided_without_it_by: None,
    }))
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

fn unreachable(s: &mut Space, m: &Model, i: usize) -> Result<Finding, String> {
    let prog = m.prog;
    let mine = s.bdd.and(m.bounds[i].hi, s.universe);
    // What each rule took, for good, of the packets this rule matches:
    // disjoint sets that together hold them all.
    let took = taken(s, m, key(&[], 0), mine, Some(i))?;
    // Without jumps, an earlier rule that decides takes all it matches of
    // them by itself; a minimal cover can use that.
    let mut cands: Vec<(usize, Set, Set)> = Vec::new();
    for (&j, &(t, _)) in &took {
        let mut cover = t;
        if let (true, Some(Plain::Decides { sure, .. })) = (j < i, m.plain.as_ref().map(|p| p[j])) {
            let alone = s.bdd.and(mine, sure);
            cover = s.bdd.or(cover, alone);
        }
        cands.push((j, cover, t));
    }
    let verdict = prog.rules[i].act.verdict();
    let differs = |j: usize| prog.rules[j].act.verdict() != verdict || verdict.is_none();
    // Greedy, as Batfish picks blocking lines: the largest blocker with a
    // different action first, then whichever covers most of the rest.
    let mut chosen: Vec<usize> = Vec::new();
    let mut left = mine;
    let first_differing = cands
        .iter()
        .enumerate()
        .filter(|(_, c)| differs(c.0))
        .map(|(k, c)| (k, s.bdd.count(c.1)))
        .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)));
    if let Some((k, _)) = first_differing {
        chosen.push(k);
        left = s.bdd.minus(left, cands[k].1);
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
    // A packet the first blocker took itself (or, failing that, one it
    // would take).
    let from = chosen
        .iter()
        .map(|&k| cands[k].2)
        .find(|&t| t != FALSE)
        .unwrap_or(mine);
    f.witness = witness(s, m, from)?;
    Ok(f)
}

/// Most rules a finding lists.
const MAX_LISTED: usize = 8;

fn redundant(
    s: &mut Space,
    m: &Model,
    flow: &Flow,
    v: &Verdicts,
    i: usize,
) -> Result<Option<Finding>, String> {
    let prog = m.prog;
    let pass = prog.rules[i].act == Act::Accept;
    for (stack, hit) in &flow.states[i] {
        let next = key(stack, i + 1);
        let (lo, hi) =
            v.at.get(&next)
                .copied()
                .unwrap_or((FALSE, crate::bdd::TRUE));
        let same = if pass {
            s.bdd.subset(*hit, lo)
        } else {
            !s.bdd.intersects(*hit, hi)
        };
        if !same {
            return Ok(None);
        }
    }
    let Some((stack, hit)) = flow.states[i].first() else {
        return Ok(None);
    };
    // Who decides its packets once it is gone, most packets first.
    let after = taken(s, m, key(stack, i + 1), *hit, None)?;
    let mut covering: Vec<(usize, Set, f64)> = after
        .iter()
        .map(|(&t, &(set, _))| (t, set, s.bdd.count(set)))
        .collect();
    covering.sort_by(|x, y| y.2.total_cmp(&x.2).then(x.0.cmp(&y.0)));
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
    if let Some(c) = covering.first() {
        f.witness = witness(s, m, c.1)?;
        if let Some(w) = &mut f.witness {
            w.without_rule = Some(c.0);
        }
    }
    Ok(Some(f))
}
