//! `weir lint`: rules no packet can reach, rules that contradict
//! themselves, rules whose removal changes no decision, and jumps that go
//! nowhere useful.

use crate::bdd::{Set, FALSE};
use crate::flow::{backward, forward, forward_from, key, split, Flow, Model, Verdicts};
use crate::report::{Finding, Kind, RuleRef, Witness};
use crate::witness::Point;
use crate::Analyser;
use weir_engine::{Act, Env, Program, StateOp, TagChange, Verdict};

/// Findings on one ruleset, in rule order.
pub fn lint(a: &mut Analyser, prog: &Program, env: &Env) -> Result<Vec<Finding>, String> {
    let s = &mut a.space;
    let m = Model::new(s, prog, env);
    let flow = forward(s, &m, s.universe, None)?;
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
        if b.hi == FALSE {
            out.push(Finding::new(
                Kind::NeverMatches,
                at,
                "its conditions contradict each other: no packet matches it".into(),
            ));
            continue;
        }
        if flow.matched[i] == FALSE {
            out.push(unreachable(a, &m, &flow, i, caveat.clone())?);
            continue;
        }
        let s = &mut a.space;
        let plain = r.state_op == StateOp::None && !r.probe && r.tag == TagChange::default();
        if plain && matches!(r.act, Act::Accept | Act::Deny) {
            if verdicts.is_none() {
                verdicts = Some(backward(s, &m)?);
            }
            let v = verdicts.as_ref().expect("just made");
            if let Some(f) = redundant(a, &m, &flow, v, i)? {
                out.push(f);
            }
        } else if plain && r.act == Act::Count {
            let mut f = Finding::new(
                Kind::CounterOnly,
                at,
                "a count rule: removing it changes no decision, only its counter".into(),
            );
            f.witness = witness(&a.space, &flow, flow.matched[i]);
            out.push(f);
        } else if r.act == Act::Return {
            let s = &mut a.space;
            let mut outside = FALSE;
            for (k, &reach) in flow.states.range(key(&[], i)..=key(&[], i)) {
                debug_assert!(split(k).0.is_empty());
                outside = s.bdd.and(reach, b.hi);
            }
            if outside != FALSE {
                let mut f = Finding::new(
                    Kind::ReturnOutsideCall,
                    at,
                    "packets reach this return without a call: the walk goes on at the next rule"
                        .into(),
                );
                f.witness = witness(&a.space, &flow, outside);
                out.push(f);
            }
        }
    }
    for f in &mut out {
        f.number_witness(prog);
    }
    if let Some(c) = caveat {
        for f in &mut out {
            if f.kind != Kind::NeverMatches && f.caveat.is_none() {
                f.caveat = Some(c.clone());
            }
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

/// A packet of `set` and the rule the walk decides it by.
fn witness(s: &crate::space::Space, flow: &Flow, set: Set) -> Option<Witness> {
    let p = Point::pick(s, set)?;
    Some(decided(s, flow, p))
}

pub(crate) fn decided(s: &crate::space::Space, flow: &Flow, p: Point) -> Witness {
    let mut w = Witness {
        packet: p,
        rule: None,
        verdict: None,
        without_rule: None,
        decided_by: None,
        decided_without_it_by: None,
    };
    for t in 0..flow.pass.len() {
        for (set, v) in [(flow.pass[t], Verdict::Pass), (flow.drop[t], Verdict::Drop)] {
            if w.rule.is_none() && s.bdd.contains(set, &w.packet.bits) {
                w.rule = Some(t);
                w.verdict = Some(v);
            }
        }
    }
    w
}

fn unreachable(
    a: &mut Analyser,
    m: &Model,
    flow: &Flow,
    i: usize,
    caveat: Option<String>,
) -> Result<Finding, String> {
    let s = &mut a.space;
    let prog = m.prog;
    let mine = m.bounds[i].hi;
    let t = forward(s, m, mine, Some(i))?;
    // What each rule took away from the packets this rule would match:
    // disjoint sets that together hold them all.
    let mut taken: Vec<(usize, Set, f64)> = Vec::new();
    for j in 0..prog.rules.len() {
        let d = t.decided(s, j);
        let c = s.bdd.or(d, t.cut[j]);
        if c != FALSE {
            taken.push((j, c, s.bdd.count(c)));
        }
    }
    let verdict = prog.rules[i].act.verdict();
    let differs = |j: usize| prog.rules[j].act.verdict() != verdict || verdict.is_none();
    taken.sort_by(|x, y| y.2.total_cmp(&x.2).then(x.0.cmp(&y.0)));
    if let Some(k) = taken.iter().position(|x| differs(x.0)) {
        let first = taken.remove(k);
        taken.insert(0, first);
    }
    let any_differs = taken.iter().any(|x| differs(x.0));
    let names: Vec<String> = taken
        .iter()
        .map(|x| prog.rules[x.0].number.to_string())
        .collect();
    let why = if any_differs {
        "a blocking rule has a different action: likely a bug"
    } else {
        "all blocking rules have the same action: the rule is redundant"
    };
    let mut f = Finding::new(
        Kind::Unreachable,
        RuleRef::of(prog, i),
        format!(
            "no packet reaches this rule and matches it: rule{} {} take{} every packet it matches; {why}",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if names.len() == 1 { "s" } else { "" },
        ),
    );
    f.blockers = taken.iter().map(|x| RuleRef::of(prog, x.0)).collect();
    f.different_action = Some(any_differs);
    f.witness = taken.first().and_then(|x| witness(&a.space, flow, x.1));
    f.caveat = caveat;
    Ok(f)
}

fn redundant(
    a: &mut Analyser,
    m: &Model,
    flow: &Flow,
    v: &Verdicts,
    i: usize,
) -> Result<Option<Finding>, String> {
    let s = &mut a.space;
    let prog = m.prog;
    let r = &prog.rules[i];
    let pass = r.act == Act::Accept;
    let mut first: Option<(Vec<u32>, Set)> = None;
    let states: Vec<(Vec<u32>, Set)> = flow
        .states
        .iter()
        .filter(|(k, _)| split(k).1 == i)
        .map(|(k, &set)| (k.clone(), set))
        .collect();
    for (k, reach) in states {
        let hit = s.bdd.and(reach, m.bounds[i].hi);
        if hit == FALSE {
            continue;
        }
        let next = key(split(&k).0, i + 1);
        let (lo, hi) =
            v.at.get(&next)
                .copied()
                .unwrap_or((FALSE, crate::bdd::TRUE));
        let same = if pass {
            s.bdd.subset(hit, lo)
        } else {
            !s.bdd.intersects(hit, hi)
        };
        if !same {
            return Ok(None);
        }
        if first.is_none() {
            first = Some((next, hit));
        }
    }
    let Some((next, hit)) = first else {
        return Ok(None);
    };
    let after = forward_from(s, m, next, hit, None)?;
    let covering: Vec<usize> = (0..prog.rules.len())
        .filter(|&t| after.pass[t] != FALSE || after.drop[t] != FALSE)
        .collect();
    let names: Vec<String> = covering
        .iter()
        .map(|&t| prog.rules[t].number.to_string())
        .collect();
    let mut f = Finding::new(
        Kind::Redundant,
        RuleRef::of(prog, i),
        format!(
            "removing this rule changes no decision: rule{} {} give{} every packet it decides the same verdict",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if names.len() == 1 { "s" } else { "" },
        ),
    );
    f.covered_by = covering.iter().map(|&t| RuleRef::of(prog, t)).collect();
    f.witness = witness(&a.space, flow, hit);
    if let (Some(w), Some(p)) = (f.witness.as_mut(), Point::pick(&a.space, hit)) {
        let later = decided(&a.space, &after, p);
        w.without_rule = later.rule;
    }
    Ok(Some(f))
}
