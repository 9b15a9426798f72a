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
//! rulesets"): per-field bitsets (`bits.rs`) for small rulesets, where an
//! AND of a few words is hard to beat, with recursive flow classification
//! tables (`rfc.rs`) in front for IPv4; and past [`BITS_UP_TO_RULES`]
//! rules, byte tries (`trie.rs`, automata built by `automaton.rs` over the
//! rules as `family.rs` indexes them), whose cost per packet hardly grows
//! with the ruleset, with bit blocks (`bitgroup.rs`) for what the automata
//! cannot hold within the build's [`Budget`]; a batch's walks step in
//! AVX-512 or AVX2 lanes where the CPU has them (`lanes.rs`).

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
    /// enough for them, else the tries, within `budget`.
    pub fn build(prog: &Program, budget: Budget) -> Classifier {
        let bits = (prog.rules.len() <= BITS_UP_TO_RULES)
            .then(|| BitClassifier::build(prog))
            .flatten();
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
