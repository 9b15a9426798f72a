//! `weir diff -r`: a capture's packets that two rulesets decide
//! differently, counted by the rule that decides each on either side.

use serde::Serialize;
use std::collections::BTreeMap;
use weir_engine::{Decision, Program};

/// The packets whose decision changed, by (old rule, new rule) number; 0
/// stands for no rule (a non-IP or malformed frame).
#[derive(Debug, Default)]
pub struct TraceChanges {
    /// Also packets with the same verdict whose deciding rule changed
    /// (number or text).
    rules: bool,
    pub counts: BTreeMap<(u16, u16), u64>,
}

/// One (old rule, new rule) pair and its packets, as JSON shows it.
#[derive(Debug, Serialize)]
pub struct Pair {
    pub old: u16,
    pub new: u16,
    pub packets: u64,
}

impl TraceChanges {
    pub fn new(rules: bool) -> TraceChanges {
        TraceChanges {
            rules,
            counts: BTreeMap::new(),
        }
    }

    /// Counts one packet decided `x` by `old` and `y` by `new`; says
    /// whether its decision changed.
    pub fn record(&mut self, old: &Program, x: &Decision, new: &Program, y: &Decision) -> bool {
        let (ro, rn) = (rule(old, x.rule), rule(new, y.rule));
        let changed = x.verdict != y.verdict || (self.rules && ro != rn);
        if changed {
            let number = |r: Option<(u16, &str)>| r.map_or(0, |r| r.0);
            *self.counts.entry((number(ro), number(rn))).or_insert(0) += 1;
        }
        changed
    }

    /// The pairs in (old rule, new rule) order.
    pub fn pairs(&self) -> Vec<Pair> {
        self.counts
            .iter()
            .map(|(&(old, new), &packets)| Pair { old, new, packets })
            .collect()
    }
}

/// The deciding rule's number and text.
fn rule(p: &Program, r: Option<usize>) -> Option<(u16, &str)> {
    r.map(|i| (p.rules[i].number, p.rules[i].text.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_engine::{CompileOptions, Verdict};

    fn prog(text: &str) -> Program {
        weir_engine::load(
            text,
            &weir_rules::Names::system(),
            &CompileOptions::default(),
        )
        .unwrap()
    }

    fn decided(rule: usize, verdict: Verdict) -> Decision {
        Decision {
            rule: Some(rule),
            verdict,
        }
    }

    #[test]
    fn counts_verdict_changes_and_with_rules_also_rule_changes() {
        let old = prog("100 allow tcp from any to any\n200 deny ip from any to any\n");
        let new = prog("100 allow tcp from any to any\n150 allow ip from any to any\n");
        let (pass, drop) = (Verdict::Pass, Verdict::Drop);
        for rules in [false, true] {
            let mut t = TraceChanges::new(rules);
            // The same rule on both sides, a moved pass, a flipped verdict.
            assert!(!t.record(&old, &decided(0, pass), &new, &decided(0, pass)));
            let moved = t.record(&old, &decided(0, pass), &new, &decided(1, pass));
            assert_eq!(moved, rules);
            assert!(t.record(&old, &decided(1, drop), &new, &decided(1, pass)));
            let no_rule = Decision {
                rule: None,
                verdict: drop,
            };
            assert!(t.record(&old, &no_rule, &new, &decided(0, pass)));
            let mut want = vec![(0, 100, 1), (200, 150, 1)];
            if rules {
                want.insert(1, (100, 150, 1));
            }
            let got: Vec<_> = t
                .pairs()
                .iter()
                .map(|p| (p.old, p.new, p.packets))
                .collect();
            assert_eq!(got, want);
        }
    }
}
