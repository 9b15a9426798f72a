//! The rules of a ruleset script as its housekeeping commands leave them.
//!
//! A script may `delete`, `flush` and move rules between sets as often as
//! it adds them. Doing each command by a pass over every rule made a
//! hostile file (100,000 rules, then 100,000 commands) quadratic, so each
//! command here costs only what it touches:
//!
//! - rules are indexed by number, so `delete N-M` and `set move rule N`
//!   visit only the rules with those numbers;
//! - a rule does not store its set but its *group*, and groups are merged
//!   union-find style: `delete set N`, `flush`, `set swap` and `set move`
//!   change at most 32 groups, never the rules in them.
//!
//! Deleted rules stay in the vector, marked, and leave the number index
//! the next time a command visits them; `into_rules` keeps the live ones in
//! the order they were added.

use crate::ast::{Rule, RESERVED_SET};
use std::collections::BTreeMap;

const SETS: usize = RESERVED_SET as usize + 1;

#[derive(Default)]
pub(crate) struct RuleList {
    rules: Vec<Entry>,
    /// Rule numbers → positions in `rules` (some possibly dead).
    by_number: BTreeMap<u16, Vec<usize>>,
    groups: Vec<Group>,
    /// The root group holding each set's rules, if it has any.
    group_of_set: [Option<usize>; SETS],
}

struct Entry {
    rule: Rule,
    group: usize,
    /// False once `delete N` removed this very rule.
    live: bool,
}

struct Group {
    /// Itself for a root; otherwise the group it was merged into.
    parent: usize,
    /// The set of a root group's rules.
    set: u8,
    /// A root whose rules `delete set`/`flush` removed.
    deleted: bool,
}

impl RuleList {
    pub fn push(&mut self, rule: Rule) {
        let group = self.group_for(rule.head.set);
        let at = self.rules.len();
        self.by_number.entry(rule.number).or_default().push(at);
        self.rules.push(Entry {
            rule,
            group,
            live: true,
        });
    }

    /// The highest number a live rule has (0 when there is none). Dead
    /// positions are dropped from the end of each list until a live one.
    pub fn max_number(&mut self) -> u16 {
        while let Some((&number, _)) = self.by_number.last_key_value() {
            while let Some(&i) = self.by_number.get(&number).and_then(|v| v.last()) {
                if self.is_live(i) {
                    return number;
                }
                self.by_number.get_mut(&number).map(Vec::pop);
            }
            self.by_number.remove(&number);
        }
        0
    }

    /// `flush`: every set's rules but set 31's; `set N flush`: set N's.
    pub fn flush(&mut self, set: Option<u8>) {
        match set {
            Some(s) => self.delete_set(s),
            None => (0..RESERVED_SET).for_each(|s| self.delete_set(s)),
        }
    }

    /// `delete set N`.
    pub fn delete_set(&mut self, set: u8) {
        if let Some(g) = self.group_of_set[usize::from(set)].take() {
            self.groups[g].deleted = true;
        }
    }

    /// `[set S] delete LO-HI`: the live rules numbered LO to HI (in set S).
    pub fn delete_numbers(&mut self, lo: u16, hi: u16, in_set: Option<u8>) {
        let numbers: Vec<u16> = self.by_number.range(lo..=hi).map(|(&n, _)| n).collect();
        for n in numbers {
            let positions = self.by_number.remove(&n).unwrap_or_default();
            let mut kept = Vec::new();
            for i in positions {
                if !self.is_live(i) {
                    continue;
                }
                if in_set.is_none_or(|s| self.set_of(i) == s) {
                    self.rules[i].live = false;
                } else {
                    kept.push(i);
                }
            }
            if !kept.is_empty() {
                self.by_number.insert(n, kept);
            }
        }
    }

    /// `set swap A B`.
    pub fn swap_sets(&mut self, a: u8, b: u8) {
        self.group_of_set.swap(usize::from(a), usize::from(b));
        for s in [a, b] {
            if let Some(g) = self.group_of_set[usize::from(s)] {
                self.groups[g].set = s;
            }
        }
    }

    /// `set move A to B`: set A's rules join set B's.
    pub fn move_set(&mut self, from: u8, to: u8) {
        if from == to {
            return;
        }
        let Some(moving) = self.group_of_set[usize::from(from)].take() else {
            return;
        };
        match self.group_of_set[usize::from(to)] {
            Some(staying) => self.groups[moving].parent = staying,
            None => {
                self.groups[moving].set = to;
                self.group_of_set[usize::from(to)] = Some(moving);
            }
        }
    }

    /// `set move rule N to S`.
    pub fn move_rule(&mut self, number: u16, to: u8) {
        let Some(positions) = self.by_number.remove(&number) else {
            return;
        };
        let live: Vec<usize> = positions.into_iter().filter(|&i| self.is_live(i)).collect();
        if live.is_empty() {
            return;
        }
        let group = self.group_for(to);
        for &i in &live {
            self.rules[i].group = group;
        }
        self.by_number.insert(number, live);
    }

    /// The live rules in the order they were added, each with its set.
    pub fn into_rules(mut self) -> Vec<Rule> {
        let keep: Vec<Option<u8>> = (0..self.rules.len())
            .map(|i| self.is_live(i).then(|| self.set_of(i)))
            .collect();
        self.rules
            .into_iter()
            .zip(keep)
            .filter_map(|(entry, set)| {
                let mut rule = entry.rule;
                rule.head.set = set?;
                Some(rule)
            })
            .collect()
    }

    fn group_for(&mut self, set: u8) -> usize {
        if let Some(g) = self.group_of_set[usize::from(set)] {
            return g;
        }
        let g = self.groups.len();
        self.groups.push(Group {
            parent: g,
            set,
            deleted: false,
        });
        self.group_of_set[usize::from(set)] = Some(g);
        g
    }

    /// The root of a group, halving the path on the way (union-find).
    fn root(&mut self, mut g: usize) -> usize {
        while self.groups[g].parent != g {
            let grandparent = self.groups[self.groups[g].parent].parent;
            self.groups[g].parent = grandparent;
            g = grandparent;
        }
        g
    }

    fn is_live(&mut self, i: usize) -> bool {
        let root = self.root(self.rules[i].group);
        self.rules[i].live && !self.groups[root].deleted
    }

    fn set_of(&mut self, i: usize) -> u8 {
        let root = self.root(self.rules[i].group);
        self.groups[root].set
    }
}
