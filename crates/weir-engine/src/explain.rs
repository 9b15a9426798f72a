//! `weir explain`: which rules and instructions ran for one packet.

use crate::eval::Observer;

/// One rule tried, with the instructions it ran and their results.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleTrace {
    pub rule: usize,
    /// (instruction index within the rule, matched after NOT).
    pub insns: Vec<(usize, bool)>,
    pub matched: bool,
}

/// Records the walk in order. Allocates freely: it is for one packet.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub rules: Vec<RuleTrace>,
    current: Vec<(usize, bool)>,
}

impl Observer for Trace {
    fn insn(&mut self, _rule: usize, insn: usize, matched: bool) {
        self.current.push((insn, matched));
    }

    fn rule(&mut self, rule: usize, matched: bool) {
        let insns = std::mem::take(&mut self.current);
        self.rules.push(RuleTrace {
            rule,
            insns,
            matched,
        });
    }
}

/// Counts rules and instructions executed (for `weir bench`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CostCounter {
    pub rules: u64,
    pub insns: u64,
}

impl Observer for CostCounter {
    #[inline(always)]
    fn insn(&mut self, _: usize, _: usize, _: bool) {
        self.insns += 1;
    }
    #[inline(always)]
    fn rule(&mut self, _: usize, _: bool) {
        self.rules += 1;
    }
}
