//! `weir diff`: every class of packets two rulesets decide differently.

use crate::bdd::{Set, FALSE};
use crate::flow::{key, taken, Model, Took};
use crate::lint::caveat;
use crate::reach::Reach;
use crate::report::RuleRef;
use crate::space::Space;
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
    let budget = a.budget;
    let s = &mut a.space;
    let mo = Model::new(s, old, env);
    let mn = Model::new(s, new, env);
    let ro = Reach::new(s, &mo, budget)?;
    let rn = Reach::new(s, &mn, budget)?;
    let pass_old = ro.passes(s, &mo)?;
    let pass_new = rn.passes(s, &mn)?;
    let only_old = s.bdd.minus(pass_old, pass_new);
    let only_new = s.bdd.minus(pass_new, pass_old);
    let changed = s.bdd.or(only_old, only_new);
    let mut changed = s.bdd.and(changed, s.universe);
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
            for v in [Verdict::Pass, Verdict::Drop] {
                let d = ro.decides(s, &mo, t, v, s.universe, true)?.set;
                for &u in news {
                    let e = rn.decides(s, &mn, u, v, d, true)?.set;
                    same = s.bdd.or(same, e);
                }
            }
        }
        let other = s.bdd.minus(s.universe, same);
        changed = s.bdd.or(changed, other);
    }
    let olds = sides(s, &mo, changed)?;
    let news = sides(s, &mn, changed)?;
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
    s.bdd.full().map_err(|_| crate::flow::too_large())?;
    let why = [caveat(&mo, &ro), caveat(&mn, &rn)]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    Ok(DiffResult {
        changes,
        caveat: (!why.is_empty()).then(|| why.join("; ")),
    })
}

/// The rules that decide packets of `changed`, with the verdict and
/// those packets: the changed packets walked through the ruleset.
fn sides(s: &mut Space, m: &Model, changed: Set) -> Result<Vec<(usize, Verdict, Set)>, String> {
    let took = taken(s, m, key(&[], 0), changed, None)?;
    Ok(took
        .into_iter()
        .filter_map(|((t, how), set)| match how {
            Took::Pass => Some((t, Verdict::Pass, set)),
            Took::Drop => Some((t, Verdict::Drop, set)),
            Took::Past => None,
        })
        .collect())
}
