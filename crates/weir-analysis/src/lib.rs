//! Exact analysis of compiled rulesets over header space.
//!
//! `space` lays the packet fields the engine tests out as BDD variables
//! (`bdd`); `rules` turns each compiled rule into the set of packets it
//! matches; `flow` walks those sets through the rules' control flow
//! (first match, `count`, `skipto`, `call`/`return`, hand-offs, the
//! default rule) forwards — which packets reach and which rule decides
//! each — and backwards — which packets a walk from any point passes.
//! On that: `lint` (unreachable, self-contradicting, redundant rules),
//! `search` (a packet that a match and a decision allow, or a proof there
//! is none), `diff` (packets two rulesets decide differently). Witnesses
//! (`witness`) are real frames the engine replays.
#![forbid(unsafe_code)]

pub mod bdd;
pub mod diff;
pub mod flow;
pub mod lint;
pub mod outcome;
mod reach;
pub mod report;
pub mod rules;
pub mod search;
pub mod space;
pub mod trace;
pub mod witness;

pub use diff::{diff, Change, DiffOptions, DiffResult};
pub use lint::lint;
pub use report::{Finding, Kind, RuleRef, Witness};
pub use search::{search, Goal, SearchResult};
pub use trace::TraceChanges;
pub use witness::Point;

use weir_engine::Program;

/// The space shared by the rulesets one command analyses.
pub struct Analyser {
    pub space: space::Space,
    /// Nodes a question about one rule of a plain ruleset may make before
    /// packets are drawn to answer it (0: draw at once; tests use that).
    pub budget: usize,
}

impl Analyser {
    /// For these rulesets (their interface patterns make the classes).
    pub fn new(progs: &[&Program]) -> Analyser {
        let patterns = progs
            .iter()
            .flat_map(|p| p.iface_patterns.iter().map(String::as_str));
        Analyser {
            space: space::Space::new(patterns),
            budget: reach::BUDGET,
        }
    }

    /// The interface names a replay of witnesses gives the engine (a
    /// witness's interface index is its class).
    pub fn interface_names(&self) -> Vec<Option<&str>> {
        self.space.ifaces.iter().map(|n| n.as_deref()).collect()
    }
}
