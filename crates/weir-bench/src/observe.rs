//! Observers that time the evaluator rule by rule.

use crate::clock::ticks;
use weir_engine::Observer;

/// Charges the clock ticks between one rule's end and the next to the
/// rule that just ended (the first rule of a packet also gets the
/// packet's set-up: class bits, call stack). One clock read per rule
/// tried; [`RuleTimer::start`] before each packet.
#[derive(Clone, Debug)]
pub struct RuleTimer {
    pub ticks: Vec<u64>,
    pub tried: Vec<u64>,
    pub matched: Vec<u64>,
    last: u64,
}

impl RuleTimer {
    pub fn new(rules: usize) -> RuleTimer {
        RuleTimer {
            ticks: vec![0; rules],
            tried: vec![0; rules],
            matched: vec![0; rules],
            last: ticks(),
        }
    }

    /// Marks the start of a packet.
    #[inline(always)]
    pub fn start(&mut self) {
        self.last = ticks();
    }
}

impl Observer for RuleTimer {
    #[inline(always)]
    fn rule(&mut self, rule: usize, matched: bool) {
        let now = ticks();
        self.ticks[rule] += now.wrapping_sub(self.last);
        self.last = now;
        self.tried[rule] += 1;
        self.matched[rule] += u64::from(matched);
    }
}
