//! The weir engine: compile rules to micro-instructions, evaluate packets.
//!
//! `compile` turns a parsed ruleset into a verified [`Program`] (rules as
//! flat instruction runs, operands in pools, jumps as indices) →
//! [`Engine::decide`] walks it for each [`weir_wire::Packet`] with one of two
//! dispatch strategies, updates per-rule counters, and hands `log` rules
//! to the [`Logger`]. Frames that are not IP, or are malformed, get the
//! [`Policy`] verdict and are counted by reason.
#![deny(unsafe_code)]

mod classify;
mod compile;
mod engine;
mod eval;
mod explain;
mod explain_text;
mod log;
mod opcodes;
mod ops;
mod prefetch;
mod program;
mod state;
mod tables;

pub use classify::{Budget, Parts, Simd};
pub use compile::{compile, CompileOptions};
pub use engine::{
    Decision, DispatchKind, Engine, EngineBuilder, Policy, Stats, WalkKind, CLASSIFY_FROM_RULES,
};
pub use eval::{
    evaluate, tablearg_target, CandidateBits, Linear, NoObserver, Observer, RuleCounter, StateCtx,
    Walk, MAX_CALLS,
};
pub use explain::{CostCounter, RuleTrace, Trace};
pub use explain_text::{describe_packet, explain_packet};
pub use log::{LogFormat, Logger};
pub use ops::{iface_matches, packet_class, Ctx, Dispatch, Env, MatchDispatch, TableDispatch};
pub use program::*;
pub use state::{StateConfig, StateStats, StateTable, StateView};
pub use tables::Table;

/// Parses and compiles rule text in one step (errors carry spans).
pub fn load(
    text: &str,
    names: &weir_rules::Names,
    opts: &CompileOptions,
) -> Result<Program, Vec<weir_rules::Diagnostic>> {
    let ast = weir_rules::parse_with(text, names)?;
    compile(&ast, names, opts)
}
