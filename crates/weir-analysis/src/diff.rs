//! `weir diff`: every class of packets two rulesets decide differently.

use crate::bdd::{Set, FALSE};
use crate::flow::{forward, Flow, Model};
use crate::lint::caveat;
use crate::report::RuleRef;
use crate::witness::Point;
use crate::Analyser;
use serde::Serialize;
use std::collections::HashMap;
use weir_engine::{Env, Program, Verdict};

#[derive(Clone, Debug, Default)]
pub struct DiffOptions {
    /// Also packets whose verdict is the same but whose deciding rule
    /// changed (number or text).
    pub rules: bool,
}

/// One class: the packets decided by `old` with `old_verdict` before and
/// by `new` with `new_verdict` after.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    pub old: RuleRef,
    pub old_verdict: Verdict,
    pub new: RuleRef,
    pub new_verdict: Verdict,
    pub witness: Point,
}

pub struct DiffResult {
    pub changes: Vec<Change>,
    pub caveat: Option<String>,
}

/// The classes, in (old rule, new rule) order.
pub fn diff(
    a: &mut Analyser,
    old: &Program,
    new: &Program,
    env: &Env,
    opts: &DiffOptions,
) -> Result<DiffResult, String> {
    let s = &mut a.space;
    let mo = Model::new(s, old, env);
    let mn = Model::new(s, new, env);
    let fo = forward(s, &mo)?;
    let fnew = forward(s, &mn)?;
    let pass_old = s.bdd.any(fo.pass.iter().copied());
    let pass_new = s.bdd.any(fnew.pass.iter().copied());
    let only_old = s.bdd.minus(pass_old, pass_new);
    let only_new = s.bdd.minus(pass_new, pass_old);
    let mut changed = s.bdd.or(only_old, only_new);
    if opts.rules {
        // Packets decided by the same rule (number and text) on both sides.
        let mut by_text: HashMap<(u16, &str), Vec<usize>> = HashMap::new();
        for (u, q) in new.rules.iter().enumerate() {
            by_text
                .entry((q.number, q.text.as_str()))
                .or_default()
                .push(u);
        }
        let mut same = FALSE;
        for (t, r) in old.rules.iter().enumerate() {
            let Some(news) = by_text.get(&(r.number, r.text.as_str())) else {
                continue;
            };
            let d = fo.decided(s, t);
            for &u in news {
                let e = fnew.decided(s, u);
                let both = s.bdd.and(d, e);
                same = s.bdd.or(same, both);
            }
        }
        let other = s.bdd.minus(s.universe, same);
        changed = s.bdd.or(changed, other);
    }
    let sides = |s: &mut crate::space::Space, f: &Flow| -> Vec<(usize, Verdict, Set)> {
        let mut out = Vec::new();
        for t in 0..f.pass.len() {
            for (set, v) in [(f.pass[t], Verdict::Pass), (f.drop[t], Verdict::Drop)] {
                let c = s.bdd.and(set, changed);
                if c != FALSE {
                    out.push((t, v, c));
                }
            }
        }
        out
    };
    let olds = sides(s, &fo);
    let news = sides(s, &fnew);
    let mut changes = Vec::new();
    for &(t, vo, so) in &olds {
        for &(u, vn, sn) in &news {
            if !opts.rules && vo == vn {
                continue;
            }
            let both = s.bdd.and(so, sn);
            if let Some(p) = Point::pick(s, both) {
                changes.push(Change {
                    old: RuleRef::of(old, t),
                    old_verdict: vo,
                    new: RuleRef::of(new, u),
                    new_verdict: vn,
                    witness: p,
                });
            }
        }
    }
    let why = [caveat(&mo, &fo), caveat(&mn, &fnew)]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    Ok(DiffResult {
        changes,
        caveat: (!why.is_empty()).then(|| why.join("; ")),
    })
}
