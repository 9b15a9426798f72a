//! `weir search`: one packet that fits a match and gets a decision, or
//! the proof that none exists.

use crate::bdd::FALSE;
use crate::flow::Model;
use crate::lint::caveat;
use crate::reach::Reach;
use crate::report::Witness;
use crate::rules::rule_bounds;
use crate::witness::Point;
use crate::Analyser;
use weir_engine::{Env, Program, Verdict};

/// Which decision the packet must get.
#[derive(Clone, Debug, Default)]
pub struct Goal {
    /// The verdict (`allow` → pass, `deny` → drop)…
    pub verdict: Option<Verdict>,
    /// …or the deciding rule's action word (`reject`, `unreach`, …).
    pub action: Option<String>,
    /// The deciding rule's number.
    pub decided_by: Option<u16>,
}

impl Goal {
    /// From `--action WORD` (allow and deny name the verdict, any other
    /// word the deciding rule's action) and `--decided-by N`.
    pub fn new(action: Option<&str>, decided_by: Option<u16>) -> Goal {
        let mut g = Goal {
            decided_by,
            ..Goal::default()
        };
        match action {
            None => {}
            Some("allow" | "accept" | "pass" | "permit") => g.verdict = Some(Verdict::Pass),
            Some("deny" | "drop") => g.verdict = Some(Verdict::Drop),
            Some(word) => g.action = Some(word.to_string()),
        }
        g
    }
}

/// The one-rule ruleset a match body is compiled as, for [`search`].
pub fn query_rule(body: &str) -> String {
    format!("count {body}")
}

#[derive(Debug)]
pub struct SearchResult {
    /// None: no packet fits (a proof when `caveat` is None).
    pub witness: Option<Witness>,
    pub caveat: Option<String>,
}

/// Searches `prog` for a packet matching the first rule of `query`
/// (a one-rule ruleset, `count MATCH`) that gets `goal`.
pub fn search(
    a: &mut Analyser,
    prog: &Program,
    env: &Env,
    query: &Program,
    goal: &Goal,
) -> Result<SearchResult, String> {
    let budget = a.budget;
    let s = &mut a.space;
    let m = Model::new(s, prog, env);
    let reach = Reach::new(s, &m, budget)?;
    let q = rule_bounds(s, query, env, &query.rules[0]);
    let mut found = None;
    'rules: for (t, r) in prog.rules.iter().enumerate() {
        if goal.decided_by.is_some_and(|n| n != r.number) {
            continue;
        }
        let word = r.action_text.split_whitespace().next().unwrap_or("");
        if goal.action.as_deref().is_some_and(|w| w != word) {
            continue;
        }
        for v in [Verdict::Pass, Verdict::Drop] {
            if goal.verdict.is_none_or(|g| g == v) {
                let both = reach.decides(s, &m, t, v, q.hi, false)?;
                if both.set != FALSE {
                    found = Some((t, v, both.set));
                    break 'rules;
                }
            }
        }
    }
    s.bdd.full().map_err(|_| crate::flow::too_large())?;
    let mut why = caveat(&m, &reach);
    if let Some(w) = q.why {
        why = Some(match why {
            Some(c) => format!("{c}, {w} (the match)"),
            None => format!("analysed conservatively: {w} (the match)"),
        });
    }
    let witness = found.and_then(|(t, v, set)| {
        Point::pick(s, set).map(|p| Witness {
            packet: p,
            rule: Some(t),
            verdict: Some(v),
            without_rule: None,
            decided_by: Some(prog.rules[t].number),
            decided_without_it_by: None,
        })
    });
    Ok(SearchResult {
        witness,
        caveat: why,
    })
}
