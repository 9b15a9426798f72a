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
