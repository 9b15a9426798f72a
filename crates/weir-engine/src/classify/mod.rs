//! Classifiers: each gives a packet the rules that can match it.
//!
//! The evaluator walks only a packet's candidates, in rule order, so first
//! match, `count`, `log`, `skipto` and `call` behave exactly as in the
//! linear walk: every rule the packet can match before its walk ends is a
//! candidate. Rule constraints come from plain instructions (`fields.rs`);
//! what is not indexed (`me`, or-blocks, options, tables) only makes a rule
//! a candidate more often.
//!
//! Two schemes, chosen by ruleset size (BENCHMARKS.md, "Classifying large
//! rulesets"; [`Classifier::build`] gives small fw-like sets the tries
//! where their walk has lanes): per-field bitsets (`bits.rs`) for small
//! rulesets, where an AND of a few words is hard to beat, with recursive
//! flow classification tables (`rfc.rs`) in front for IPv4; and past
//! [`BITS_UP_TO_RULES`] rules, byte tries (`trie.rs`, automata built by
//! `automaton.rs` over the rules as `family.rs` indexes them), whose cost
//! per packet hardly grows with the ruleset, with bit blocks
//! (`bitgroup.rs`) for what the automata cannot hold within the build's
//! [`Budget`]; a batch's walks step in AVX-512 or AVX2 lanes where the
//! CPU has them (`lanes.rs`).

mod automaton;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod bitgroup;
mod bits;
mod family;
mod fields;
mod lanes;
mod rfc;
mod trie;

pub use bits::{next_candidate, BitClassifier};
pub use lanes::Simd;
pub use rfc::Found;
pub use trie::{Alone, Budget, Parts, Scratch, TrieClassifier, BATCH};

use crate::program::Program;

/// A tiny xorshift for the classifier's tests: no dependency, and the
/// same numbers every run.
#[cfg(test)]
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// ClassBench's generator's `n`-filter set of `kind` (seed 1), imported
/// and compiled, for the classifier's tests.
#[cfg(test)]
fn classbench_program(kind: weir_classbench::gen::Kind, n: usize) -> Program {
    let filters = weir_classbench::gen::filters(kind, n, 1);
    let text = weir_rules::print_ruleset(&weir_classbench::to_weir::import(&filters));
    crate::load(&text, &Default::default(), &Default::default()).expect("compiles")
}

/// Rulesets up to this many rules use the bitsets; larger ones the tries.
pub const BITS_UP_TO_RULES: usize = 1024;

pub enum Classifier {
    /// Boxed, both: the bitsets' field tables are large inline structs,
    /// and the tries hold two families' parts.
    Bits(Box<BitClassifier>),
    Trie(Box<TrieClassifier>),
}

impl Classifier {
    /// The classifier for this ruleset: the bitsets when it is small
    /// enough for them, else the tries, within `budget`. Where the bit
    /// sets would AND their address classes apart and the automata can
    /// step in `simd`'s lanes, the tries serve small rulesets too: on
    /// fw-like sets, whose packets mostly AND three whole sets from
    /// megabytes of tables, the tries' hundred kilobytes stay in cache.
    /// With AVX2 lanes on a noisy Zen 3 they took 0.84–0.98 of the bit
    /// sets' time in three runs of four (1.07 in the fourth), 0.88 with
    /// AVX-512 on a Xeon; scalar, 2.4 times it; on sets whose address
    /// classes combine, 1.3 times it (BENCHMARKS.md, "On a Zen 3 without
    /// AVX-512").
    pub fn build(prog: &Program, budget: Budget, simd: Simd) -> Classifier {
        let bits = (prog.rules.len() <= BITS_UP_TO_RULES)
            .then(|| BitClassifier::build(prog))
            .flatten()
            .filter(|b| !(b.ands_addresses_apart() && lanes::Lanes::pick(simd).is_some()));
        match bits {
            Some(b) => Classifier::Bits(Box::new(b)),
            None => Classifier::Trie(Box::new(TrieClassifier::build_with(prog, budget))),
        }
    }

    /// Bytes held.
    pub fn memory(&self) -> usize {
        match self {
            Classifier::Bits(c) => c.memory(),
            Classifier::Trie(c) => c.memory(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{classbench_program, Budget, Classifier, Simd};
    use weir_classbench::gen::Kind;

    /// ClassBench's 1,000-rule sets: the bit sets for acl and ipc, whose
    /// address classes combine; for fw, whose classes are ANDed apart,
    /// the tries wherever the automata step in lanes, else the bit sets.
    #[test]
    fn small_sets_anding_addresses_apart_take_the_tries_where_lanes_step() {
        let lanes_here = !Simd::here().is_empty();
        for kind in Kind::ALL {
            let prog = classbench_program(kind, 1000);
            let off = Classifier::build(&prog, Budget::default(), Simd::Off);
            assert!(
                matches!(off, Classifier::Bits(_)),
                "{}: bit sets without lanes",
                kind.name()
            );
            let auto = Classifier::build(&prog, Budget::default(), Simd::Auto);
            assert_eq!(
                matches!(auto, Classifier::Trie(_)),
                lanes_here && matches!(kind, Kind::Fw),
                "{}: the tries only for fw, and only with lanes",
                kind.name()
            );
        }
    }
}
