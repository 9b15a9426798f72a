//! The engine: a program, its counters, policy for frames that are not
//! well-formed IP, and the logger, behind one `decide(packet)` call.

use crate::classify::{
    Alone, BitClassifier, Budget, Classifier, Found, Scratch, Simd, TrieClassifier, BATCH,
};
use crate::eval::StateCtx;
use crate::eval::{
    count, evaluate, rule_matches, CandidateBits, Linear, NoObserver, Observer, RuleCounter,
};
use crate::explain::{RuleTrace, Trace};
use crate::log::Logger;
use crate::ops::{packet_class, Ctx, Dispatch, Env, MatchDispatch, TableDispatch};
use crate::prefetch::{prefetch, prefetch_ends};
use crate::program::{class, Program, Verdict};
use crate::state::{StateConfig, StateTable};
use serde::Serialize;
use std::sync::Arc;
use weir_wire::{Fields, Malformed, Packet, L3};

/// How the evaluator dispatches on opcodes (same verdicts either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DispatchKind {
    /// A `match` on the opcode.
    Match,
    /// An array of function pointers indexed by opcode: the default, as it
    /// measured faster (BENCHMARKS.md: 21.2 vs 19.2 M packets/s on the
    /// realistic ruleset; LLVM hoists work for every opcode of the `match`
    /// ahead of the walk, which a short walk does not repay).
    #[default]
    Table,
}

/// Verdicts for frames the rules never see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Non-IP frames (ARP, LLDP, …): ipfw at layer 3 never sees them.
    pub non_ip: Verdict,
    /// Frames claiming IP that cannot be decoded: ipfw's pull-up failure drops.
    pub malformed: Verdict,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            non_ip: Verdict::Pass,
            malformed: Verdict::Drop,
        }
    }
}

/// Which rule decided a packet, if any, and the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Index into `Program::rules`; None for non-IP and malformed frames.
    pub rule: Option<usize>,
    pub verdict: Verdict,
}

/// Totals over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    pub packets: u64,
    pub passed: u64,
    pub dropped: u64,
    pub non_ip: u64,
    /// Malformed frames by reason, indexed by `Malformed as usize`.
    #[serde(skip)]
    pub malformed: [u64; Malformed::COUNT],
}

impl Stats {
    /// Adds another run's totals (workers merging, a reload carrying over).
    pub fn add(&mut self, o: &Stats) {
        self.packets += o.packets;
        self.passed += o.passed;
        self.dropped += o.dropped;
        self.non_ip += o.non_ip;
        for (a, b) in self.malformed.iter_mut().zip(o.malformed) {
            *a += b;
        }
    }

    pub fn malformed_total(&self) -> u64 {
        self.malformed.iter().sum()
    }
}

/// The part of an engine that never changes once built, shared by every
/// worker running the same ruleset: the program and its classifier.
struct Shared {
    program: Program,
    /// Candidate rules per packet (None: walk every rule).
    classifier: Option<Classifier>,
    /// The packet fields the program reads (`Program::reads`).
    fields: Fields,
    /// Whether batches walk the trie interleaved (see [`INTERLEAVE_BYTES`]).
    interleave: bool,
    /// Whether an interleaved batch prefetches each packet's likely first
    /// rule (see [`PREFETCH_FROM_RULES`]).
    prefetch_rules: bool,
}

/// Tries at least this large are walked a batch at a time, interleaved, so
/// that one packet's cache misses overlap the others' steps. Smaller ones
/// stay in cache and the interleaving only costs: `weir classbench` on a
/// 2,000-rule acl set (about 0.3 MiB) took 131 ns a packet interleaved
/// against 116 ns one by one; at 10,000 rules (1.5 MiB) the two were even;
/// at 100,000 (10–17 MiB) they did not separate in a loaded run. Tries
/// whose walks step in SIMD lanes are walked a batch at a time at any
/// size: the lanes need many walks to fill.
const INTERLEAVE_BYTES: usize = 4 << 20;

/// From this many rules (1.5 MiB of them, past a Zen 4 core's 1 MiB L2),
/// a batch walked interleaved asks, [`RULES_AHEAD`] packets before each
/// decision, for what the packet's likely first rule needs (its box and
/// counter, and the rule where it may not decide alone: BENCHMARKS.md,
/// "The first try inlined, the records asked for ahead"). With the rule
/// alone, against no prefetch (`weir classbench` on ClassBench sets, 7–11
/// rounds, medians):
/// at 2k rules 4–7% slower, at 5k 1% faster to 3% slower, at 10k 2–15%
/// faster, at 20k 14–25% faster (BENCHMARKS.md, "Leaves of one rule").
/// Below, the rules stay in cache and finding the first rule only costs.
const PREFETCH_FROM_RULES: usize = 8 << 10;
/// How many packets ahead of its decision a packet's first rule is asked
/// for. Asked for the whole batch at once after the walks, 512 packets'
/// boxes and counters (about 100 KiB of lines) passed a 32 KiB L1 before
/// their decisions read them: 16 ahead took 0.87–0.89 of that time at
/// 100k rules and 0.97–0.99 at 10k; 8 ahead the same as 16 (BENCHMARKS.md,
/// "fw-100000's wild half whole, and first rules asked for 16 packets
/// ahead").
const RULES_AHEAD: usize = 16;

/// A compiled ruleset deciding packets: the shared program and classifier,
/// and what is this engine's own (settings, counters, states, logger).
/// Made by [`Engine::builder`]; [`Engine::replica`] makes another for a
/// worker without building anything again.
pub struct Engine {
    shared: Arc<Shared>,
    env: Env,
    policy: Policy,
    dispatch: DispatchKind,
    counters: Vec<RuleCounter>,
    stats: Stats,
    logger: Option<Logger>,
    /// The current packet's candidate bitset (`Classifier::Bits`), or the
    /// tries' working space, reused.
    candidates: Candidates,
    /// Dynamic states, when the program makes or probes any.
    states: Option<StateTable>,
}

/// An engine's configuration, all given before the classifier is built
/// (a linear walk builds none).
pub struct EngineBuilder {
    program: Program,
    walk: WalkKind,
    dispatch: DispatchKind,
    policy: Policy,
    env: Env,
    state_config: Option<StateConfig>,
    budget: Budget,
    interleave_always: bool,
    simd: Simd,
}

impl EngineBuilder {
    /// How packets find their candidate rules (default: [`WalkKind::Auto`]).
    pub fn walk(mut self, walk: WalkKind) -> EngineBuilder {
        self.walk = walk;
        self
    }

    /// `--linear`: every rule in order, and no classifier built. False
    /// leaves the walk as it was.
    pub fn linear(self, linear: bool) -> EngineBuilder {
        if linear {
            self.walk(WalkKind::Linear)
        } else {
            self
        }
    }

    pub fn dispatch(mut self, dispatch: DispatchKind) -> EngineBuilder {
        self.dispatch = dispatch;
        self
    }

    /// Verdicts for frames the rules never see.
    pub fn policy(mut self, policy: Policy) -> EngineBuilder {
        self.policy = policy;
        self
    }

    /// This host's addresses (`--me`), with their IP versions.
    pub fn me(mut self, me: Vec<(u128, u8)>) -> EngineBuilder {
        self.env.me = me;
        self
    }

    /// The FIB a packet starts in (`--fib`).
    pub fn fib(mut self, fib: u16) -> EngineBuilder {
        self.env.fib = fib;
        self
    }

    /// The seed of `prob` draws (`--seed`).
    pub fn seed(mut self, seed: u64) -> EngineBuilder {
        self.env.seed = seed;
        self
    }

    /// What building the classifier may spend (default: [`Budget`]'s);
    /// rules past it are indexed more coarsely or tried by every packet.
    pub fn budget(mut self, budget: Budget) -> EngineBuilder {
        self.budget = budget;
        self
    }

    /// Walk a trie's batches interleaved whatever its size (by default
    /// only from [`INTERLEAVE_BYTES`]); for tests and benchmarks.
    pub fn interleave_always(mut self) -> EngineBuilder {
        self.interleave_always = true;
        self
    }

    /// Which SIMD lanes the tries' automata step in and the bit sets are
    /// ANDed in: by default (`Simd::Auto`) AVX-512 where this CPU has it,
    /// else AVX2, else scalar; `Simd::Off` keeps the scalar code, and a walk this
    /// CPU lacks falls back to them (check [`Simd::runs_here`] first). The
    /// answers are the same; `--simd` compares the costs.
    pub fn simd(mut self, simd: Simd) -> EngineBuilder {
        self.simd = simd;
        self
    }

    /// Dynamic-state tunables that override the program's own.
    pub fn state_config(mut self, config: StateConfig) -> EngineBuilder {
        self.state_config = Some(config);
        self
    }

    /// Builds the classifier the walk asks for (none for a linear walk),
    /// then the engine.
    pub fn build(self) -> Engine {
        let EngineBuilder {
            mut program,
            walk,
            dispatch,
            policy,
            env,
            state_config,
            budget,
            interleave_always,
            simd,
        } = self;
        if let Some(config) = state_config {
            program.state_config = config;
        }
        let mut classifier = match walk {
            WalkKind::Linear => None,
            WalkKind::Auto if program.rules.len() <= CLASSIFY_FROM_RULES => None,
            WalkKind::Auto => Some(Classifier::build(&program, budget, simd)),
            WalkKind::Bits => BitClassifier::build(&program).map(|b| Classifier::Bits(Box::new(b))),
            WalkKind::Trie => Some(Classifier::Trie(Box::new(TrieClassifier::build_with(
                &program, budget,
            )))),
        };
        match &mut classifier {
            Some(Classifier::Trie(c)) => c.use_simd(simd),
            Some(Classifier::Bits(c)) => c.use_simd(simd),
            None => {}
        }
        Engine::of(
            Arc::new(Shared {
                fields: program.reads(),
                interleave: match &classifier {
                    Some(Classifier::Trie(c)) => {
                        interleave_always || c.simd() != Simd::Off || c.memory() >= INTERLEAVE_BYTES
                    }
                    _ => false,
                },
                prefetch_rules: program.rules.len() >= PREFETCH_FROM_RULES,
                program,
                classifier,
            }),
            env,
            policy,
            dispatch,
        )
    }
}

enum Candidates {
    None,
    Bits(Box<BitScratch>),
    /// Boxed: the batch's keys and slots are a large inline struct.
    Trie(Box<Scratch>),
}

impl Candidates {
    fn for_classifier(c: Option<&Classifier>) -> Candidates {
        match c {
            None => Candidates::None,
            Some(Classifier::Bits(b)) => Candidates::Bits(Box::new(BitScratch {
                bits: vec![0; b.words()],
                found: [None; BATCH],
                alone: [None; BATCH],
            })),
            Some(Classifier::Trie(t)) => Candidates::Trie(Box::new(t.scratch())),
        }
    }
}

/// The bit sets' working space: one packet's candidates, a batch's
/// recursive-table classes found ahead of its decisions, and the rule and
/// verdict of each of its packets that the tables decide alone.
struct BitScratch {
    bits: Vec<u64>,
    found: [Option<Found>; BATCH],
    alone: [Option<(u32, Verdict)>; BATCH],
}

/// How packets find the rules to try.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WalkKind {
    /// The bitsets up to `classify::BITS_UP_TO_RULES` rules, the tries
    /// beyond (either falls back to linear when too big to build).
    #[default]
    Auto,
    /// Every rule in order (`--linear`).
    Linear,
    /// Per-field bitsets (tests and benchmarks force it).
    Bits,
    /// Byte tries, one per partition (tests and benchmarks force it).
    Trie,
}

/// Below this many rules a linear walk is cheaper than the classifier's
/// lookups: callgrind, `examples/profile_eval`, table dispatch, per packet:
/// 1 rule 166 instructions linear vs 299 classified; 12 rules 742 vs 398.
pub const CLASSIFY_FROM_RULES: usize = 8;

/// A pass's deciding rule and verdict, as a decision.
fn by_rule((rule, verdict): (usize, Verdict)) -> Decision {
    Decision {
        rule: Some(rule),
        verdict,
    }
}

impl Engine {
    /// An engine with every setting at its default: the classifier on when
    /// it pays (rulesets of more than [`CLASSIFY_FROM_RULES`] rules that are
    /// not too big for it). [`Engine::builder`] sets the rest first.
    pub fn new(program: Program) -> Engine {
        Engine::builder(program).build()
    }

    /// Configuration for an engine running `program`.
    pub fn builder(program: Program) -> EngineBuilder {
        EngineBuilder {
            program,
            walk: WalkKind::Auto,
            dispatch: DispatchKind::default(),
            policy: Policy::default(),
            env: Env::default(),
            state_config: None,
            budget: Budget::default(),
            interleave_always: false,
            simd: Simd::Auto,
        }
    }

    fn of(shared: Arc<Shared>, env: Env, policy: Policy, dispatch: DispatchKind) -> Engine {
        let program = &shared.program;
        Engine {
            states: program
                .has_state()
                .then(|| StateTable::new(program.state_config)),
            candidates: Candidates::for_classifier(shared.classifier.as_ref()),
            counters: vec![RuleCounter::default(); program.rules.len()],
            shared,
            env,
            policy,
            dispatch,
            stats: Stats::default(),
            logger: None,
        }
    }

    /// Another engine for the same ruleset and settings, sharing the
    /// program and classifier (nothing is built again), with counters,
    /// states and candidates of its own and no logger: one per worker.
    pub fn replica(&self) -> Engine {
        Engine::of(
            Arc::clone(&self.shared),
            self.env.clone(),
            self.policy,
            self.dispatch,
        )
    }

    /// The compiled ruleset.
    #[inline]
    pub fn program(&self) -> &Program {
        &self.shared.program
    }

    /// The optional packet fields deciding reads: decode frames with
    /// `weir_wire::decode_with(.., engine.fields())` and skip the rest
    /// (a caller whose outputs read more adds theirs).
    #[inline]
    pub fn fields(&self) -> Fields {
        self.shared.fields
    }

    /// This host's addresses, interfaces and replay settings.
    pub fn env(&self) -> &Env {
        &self.env
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }

    pub fn dispatch(&self) -> DispatchKind {
        self.dispatch
    }

    /// Whether packets go through the classifier.
    pub fn classified(&self) -> bool {
        self.shared.classifier.is_some()
    }

    /// Whether [`decide_batch`](Self::decide_batch) walks packets
    /// interleaved (a trie too large for the cache); otherwise it is
    /// `decide` one by one.
    pub fn walks_in_batches(&self) -> bool {
        self.shared.interleave
    }

    /// The SIMD lanes the classifier's automata step in, or its bit sets
    /// are ANDed in (`Off`: scalar, or no classifier).
    pub fn simd(&self) -> Simd {
        match &self.shared.classifier {
            Some(Classifier::Trie(c)) => c.simd(),
            Some(Classifier::Bits(c)) => c.simd(),
            None => Simd::Off,
        }
    }

    /// Which walk packets take now (`Linear` when no classifier is built).
    pub fn walk_kind(&self) -> WalkKind {
        match self.shared.classifier {
            None => WalkKind::Linear,
            Some(Classifier::Bits(_)) => WalkKind::Bits,
            Some(Classifier::Trie(_)) => WalkKind::Trie,
        }
    }

    /// How many rules packet `p` would try at most: its candidate count
    /// (every rule when the walk is linear). For `weir check --stats`.
    pub fn candidate_count(&mut self, p: &Packet) -> usize {
        self.candidate_rules(p).len()
    }

    /// The rules packet `p` would try at most, in order: its candidates
    /// (every rule when the walk is linear). For statistics and `explain`;
    /// allocates.
    pub fn candidate_rules(&mut self, p: &Packet) -> Vec<usize> {
        let class = packet_class(p);
        let all = || (0..self.shared.program.rules.len()).collect();
        match (&self.shared.classifier, &mut self.candidates) {
            (Some(Classifier::Bits(c)), Candidates::Bits(b)) if p.l3 == L3::Ip => {
                let bits = &mut b.bits;
                c.candidates(p, class, bits);
                let rules = self.shared.program.rules.len();
                let set = |(k, &word): (usize, &u64)| {
                    (0..64)
                        .filter(move |b| word >> b & 1 == 1)
                        .map(move |b| k * 64 + b)
                };
                bits.iter()
                    .enumerate()
                    .flat_map(set)
                    .filter(|&r| r < rules)
                    .collect()
            }
            (Some(Classifier::Trie(c)), _) if p.l3 == L3::Ip => {
                let mut list = Vec::new();
                if c.candidates(p, class, &mut list) {
                    list.into_iter().map(|r| r as usize).collect()
                } else {
                    all()
                }
            }
            _ => all(),
        }
    }

    /// Rule `rule`'s instructions run for `p` alone, as `explain` shows a
    /// rule the walk did not try: nothing is counted and no state moves.
    /// Options that read what earlier rules did (tags, FIB, DSCP) see the
    /// packet as it was before the first rule.
    pub fn trace_rule(&self, p: &Packet, rule: usize) -> RuleTrace {
        let mut trace = Trace::default();
        let (prog, env, ctx) = (&self.shared.program, &self.env, &Ctx::new(0));
        let matched = match self.dispatch {
            DispatchKind::Match => {
                rule_matches::<MatchDispatch, _>(prog, env, p, rule, ctx, &mut trace)
            }
            DispatchKind::Table => {
                rule_matches::<TableDispatch, _>(prog, env, p, rule, ctx, &mut trace)
            }
        };
        trace.rule(rule, matched);
        trace.rules.pop().unwrap_or_default()
    }

    /// Where rule `rule`'s `skipto tablearg` sends `p`, as [`trace_rule`]
    /// sees the packet.
    ///
    /// [`trace_rule`]: Engine::trace_rule
    pub fn tablearg_target(&self, p: &Packet, rule: usize) -> usize {
        crate::eval::tablearg_target(&self.shared.program, rule, p, &self.env, &Ctx::new(0))
    }

    /// Rule `rule`'s action with `tablearg` replaced by what `p` finds in
    /// the rule's table, each action reading its own field of the value
    /// (ip_fw2.c `TARG(arg, pipe|divert|netgraph|nat|fib|dscp|skipto)`,
    /// `fwd`'s next hop). None when the action takes no `tablearg` or `p`
    /// finds nothing: the action's own text stands. Formats nothing, so a
    /// caller pays only for the packets it asks about.
    pub fn resolved_action(&self, p: &Packet, rule: usize) -> Option<crate::program::RuleAction> {
        use crate::program::RuleAction as A;
        use weir_rules::{Arg, DivertPort, NatArg, Port, ValueField as F};
        let prog = &self.shared.program;
        let ctx = Ctx::new(0);
        let field = |f| prog.tablearg(rule, p, &self.env, &ctx, f);
        let arg = |f| field(f).map(Arg::Number);
        let port = |f| {
            let v = field(f)?;
            Some(DivertPort::Port(Port::Number(u16::try_from(v).ok()?)))
        };
        let action = &prog.rules.get(rule)?.action;
        Some(match action {
            A::Pipe(Arg::Tablearg) => A::Pipe(arg(F::Pipe)?),
            A::Queue(Arg::Tablearg) => A::Queue(arg(F::Pipe)?),
            A::Netgraph(Arg::Tablearg) => A::Netgraph(arg(F::Netgraph)?),
            A::Ngtee(Arg::Tablearg) => A::Ngtee(arg(F::Netgraph)?),
            A::SetFib(Arg::Tablearg) => A::SetFib(arg(F::Fib)?),
            A::SetDscp(Arg::Tablearg) => A::SetDscp(Arg::Number(field(F::Dscp)? & 0x3f)),
            A::Divert(DivertPort::Tablearg) => A::Divert(port(F::Divert)?),
            A::Tee(DivertPort::Tablearg) => A::Tee(port(F::Divert)?),
            A::Nat(NatArg::Tablearg) => A::Nat(NatArg::Number(field(F::Nat)?)),
            A::SkiptoTablearg => A::Skipto(u16::try_from(field(F::Skipto)?).ok()?),
            A::Fwd(t) if t.addr.is_none() => A::Fwd(weir_rules::FwdTarget {
                addr: Some(prog.tablearg_next_hop(rule, p, &self.env, &ctx)?),
                port: t.port,
            }),
            _ => return None,
        })
    }

    /// What the trie classifier's rules went into (None for other walks).
    pub fn classifier_parts(&self) -> Option<crate::classify::Parts> {
        match &self.shared.classifier {
            Some(Classifier::Trie(t)) => Some(t.parts()),
            _ => None,
        }
    }

    /// Bytes the classifier holds (0 when off).
    pub fn classifier_memory(&self) -> usize {
        self.shared
            .classifier
            .as_ref()
            .map_or(0, Classifier::memory)
    }

    /// The dynamic states, when the program has state rules.
    pub fn states(&self) -> Option<&StateTable> {
        self.states.as_ref()
    }

    /// Sets the time states age by: the packet's timestamp in replay, the
    /// clock live. Cheap; a no-op for stateless programs.
    #[inline]
    pub fn set_time(&mut self, now_ns: u64) {
        if let Some(t) = &mut self.states {
            t.set_time(now_ns);
        }
    }

    pub fn set_logger(&mut self, logger: Logger) {
        self.logger = Some(logger);
    }

    pub fn logger(&self) -> Option<&Logger> {
        self.logger.as_ref()
    }

    pub fn logger_mut(&mut self) -> Option<&mut Logger> {
        self.logger.as_mut()
    }

    /// Tells the engine the capture's interface names (index = interface id).
    pub fn set_interfaces(&mut self, names: &[Option<&str>]) {
        self.env.set_interfaces(&self.shared.program, names);
        if let Some(l) = &mut self.logger {
            l.set_interfaces(names);
        }
    }

    pub fn counters(&self) -> &[RuleCounter] {
        &self.counters
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Decides one packet: counts it, logs if a `log` rule says so.
    #[inline]
    pub fn decide(&mut self, p: &Packet) -> Decision {
        self.decide_observed(p, &mut NoObserver)
    }

    /// As [`decide`](Self::decide), reporting each rule and instruction
    /// tried to `obs` (for `explain` and cost accounting).
    #[inline]
    pub fn decide_observed<O: Observer>(&mut self, p: &Packet, obs: &mut O) -> Decision {
        self.decide_walked(p, None, obs)
    }

    /// Decides `packets` in order, exactly as [`decide`](Self::decide) one
    /// by one would, into `out` (cleared first). With the trie classifier
    /// the packets' walks run [`BATCH`] at a time, interleaved, so their
    /// cache misses overlap; states, counters and logs still follow packet
    /// order (a packet sees the states its predecessors made).
    pub fn decide_batch(&mut self, packets: &[Packet], out: &mut Vec<Decision>) {
        self.decide_batch_with(packets, out, |_, _| {});
    }

    /// As [`decide_batch`](Self::decide_batch), each packet `i` decided
    /// at [`set_time`](Self::set_time)`(time_ns(i))`, as a live source or
    /// a replay gives times one by one.
    pub fn decide_batch_at(
        &mut self,
        packets: &[Packet],
        time_ns: impl Fn(usize) -> u64,
        out: &mut Vec<Decision>,
    ) {
        self.decide_batch_with(packets, out, |e, i| e.set_time(time_ns(i)));
    }

    #[inline]
    fn decide_batch_with(
        &mut self,
        packets: &[Packet],
        out: &mut Vec<Decision>,
        mut before: impl FnMut(&mut Engine, usize),
    ) {
        out.clear();
        let batch = match &self.shared.classifier {
            Some(Classifier::Trie(c)) => c.batch(),
            _ => BATCH,
        };
        for (k, chunk) in packets.chunks(batch).enumerate() {
            let walked = match (&self.shared.classifier, &mut self.candidates) {
                (Some(Classifier::Trie(c)), Candidates::Trie(s)) if self.shared.interleave => {
                    c.walk_batch(chunk, s);
                    true
                }
                (Some(Classifier::Bits(c)), Candidates::Bits(b)) => {
                    // The recursive tables' first phases for every packet
                    // first: one packet's dependent loads overlap the
                    // next's, where its decision would wait on each.
                    c.classes(chunk, &mut b.found);
                    // Then what the tables decide alone (only without
                    // states: a packet of a known flow is looked up again),
                    // in a loop of its own, whose packets' loads overlap
                    // as the first phases' do, and which asks nothing of
                    // the engine: 0.89-0.96 of the time at 1,000 rules
                    // (BENCHMARKS.md, "The bit sets: fewer instructions,
                    // and packets decided alone in a loop of their own").
                    if self.states.is_none() {
                        c.decide_alone(&b.found[..chunk.len()], &mut b.bits, &mut b.alone);
                    }
                    true
                }
                _ => false,
            };
            let ahead = walked && self.shared.prefetch_rules;
            if ahead {
                (0..chunk.len().min(RULES_AHEAD)).for_each(|slot| self.prefetch_first_rule(slot));
            }
            let next = packets.get((k + 1) * batch..).unwrap_or_default();
            for (slot, p) in chunk.iter().enumerate() {
                // The next chunk's record in this slot, on its way while
                // this chunk is decided: its walks read it first (a
                // prefetch eight records ahead inside the walk's loop came
                // too late; BENCHMARKS.md, "The next chunk's records").
                prefetch_ends(next.get(slot));
                if ahead && slot + RULES_AHEAD < chunk.len() {
                    self.prefetch_first_rule(slot + RULES_AHEAD);
                }
                before(self, k * batch + slot);
                let slot = walked.then_some(slot);
                // The common case's rule and verdict go straight into
                // `out`: a `Decision` merged from every case is built on
                // the stack, and copying it out waited on those stores
                // (17% of this loop's time at 10k rules).
                if self.ip_alone(p) {
                    let alone = slot.and_then(|slot| self.decided_alone(slot, p));
                    let decided = alone.unwrap_or_else(|| self.decide_ip(p, slot, &mut NoObserver));
                    out.push(by_rule(decided));
                } else {
                    out.push(self.decide_walked(p, slot, &mut NoObserver));
                }
            }
        }
    }

    /// Asks for what the likely first rule of the walked packet in `slot`
    /// needs: its box and counter, and the rule itself only where it may
    /// not decide alone (a packet decided alone reads no rule).
    #[inline(always)]
    fn prefetch_first_rule(&self, slot: usize) {
        if let (Some(Classifier::Trie(c)), Candidates::Trie(s)) =
            (&self.shared.classifier, &self.candidates)
        {
            if let Some(first) = c.first_leaf_rule(slot, s) {
                c.prefetch_box(first);
                prefetch(self.counters.get(first as usize));
                if !c.may_decide(first) {
                    prefetch(self.shared.program.rules.get(first as usize));
                }
            }
        }
    }

    /// The rule and verdict of a batch's IP packet that the classifier
    /// decides alone (the bit sets' recursive tables, or the tries' head
    /// leaves; `slot`: its place in the batch, whose lookups are done),
    /// counted as [`decide_ip`](Self::decide_ip) counts it; None for any
    /// other packet. The same decision without the walk's set-up (the
    /// packet's class, state and log), which at 1,000 rules was a fifth
    /// of a packet's instructions.
    #[inline(always)]
    fn decided_alone(&mut self, slot: usize, p: &Packet) -> Option<(usize, Verdict)> {
        if self.states.is_some() {
            return None;
        }
        let (first, verdict) = match (&self.shared.classifier, &mut self.candidates) {
            (Some(Classifier::Bits(_)), Candidates::Bits(b)) => {
                let (first, verdict) = b.alone[slot]?;
                (first as usize, verdict)
            }
            // Without states no packet has the state class bit, the only
            // one the leaves look at.
            (Some(Classifier::Trie(c)), Candidates::Trie(s)) => match c.leaves_decide(slot, s, 0) {
                Alone::Decides(first, verdict) => (first, verdict),
                _ => return None,
            },
            _ => return None,
        };
        self.stats.packets += 1;
        count(&mut self.counters, first, p);
        self.tally(verdict);
        Some((first, verdict))
    }

    /// [`decide_observed`](Self::decide_observed), with the classifier's
    /// walk already done for this packet when `slot` (its place in the
    /// batch just walked) is given.
    #[inline]
    fn decide_walked<O: Observer>(
        &mut self,
        p: &Packet,
        slot: Option<usize>,
        obs: &mut O,
    ) -> Decision {
        if self.ip_alone(p) {
            return by_rule(self.decide_ip(p, slot, obs));
        }
        self.stats.packets += 1;
        let mut ctx = Ctx::new(self.stats.packets);
        // With net.link.ether.ipfw, an Ethernet frame also passes the rules
        // at layer 2 (see `two_passes`).
        let layer2 = self.shared.program.layer2 && p.has_mac;
        let decision = match p.l3 {
            L3::NonIp if layer2 => {
                self.stats.non_ip += 1;
                self.layer2_pass(p, &mut ctx, obs)
            }
            // The rest of IP packets took `decide_ip`.
            L3::Ip => self.two_passes(p, slot, &mut ctx, obs),
            L3::NonIp => {
                self.stats.non_ip += 1;
                Decision {
                    rule: None,
                    verdict: self.policy.non_ip,
                }
            }
            L3::Malformed(reason) => {
                self.stats.malformed[reason as usize] += 1;
                Decision {
                    rule: None,
                    verdict: self.policy.malformed,
                }
            }
        };
        self.tally(decision.verdict);
        decision
    }

    /// Whether packet `p` is an IP packet that passes the rules once, at
    /// layer 3: the common case, which [`decide_ip`](Self::decide_ip) takes.
    #[inline(always)]
    fn ip_alone(&self, p: &Packet) -> bool {
        p.l3 == L3::Ip && !(self.shared.program.layer2 && p.has_mac)
    }

    /// An IP packet's one pass (see [`ip_alone`](Self::ip_alone)): its rule
    /// and verdict.
    #[inline(always)]
    fn decide_ip<O: Observer>(
        &mut self,
        p: &Packet,
        slot: Option<usize>,
        obs: &mut O,
    ) -> (usize, Verdict) {
        self.stats.packets += 1;
        let mut ctx = Ctx::new(self.stats.packets);
        let (rule, verdict) = self.pass(p, slot, false, &mut ctx, obs);
        self.tally(verdict);
        (rule, verdict)
    }

    /// Counts a decided packet's verdict.
    #[inline(always)]
    fn tally(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Pass => self.stats.passed += 1,
            Verdict::Drop => self.stats.dropped += 1,
        }
    }

    /// An Ethernet frame's two passes, in the kernel's order (ipfw(8)
    /// PACKET FLOW): in, at layer 2 (ether_demux) and then at layer 3
    /// (ip_input); out, at layer 3 (ip_output) and then at layer 2
    /// (ether_output_frame). A drop ends it. The decision is the frame's
    /// own, at layer 2, unless the IP pass dropped the packet.
    #[inline(never)]
    fn two_passes<O: Observer>(
        &mut self,
        p: &Packet,
        slot: Option<usize>,
        ctx: &mut Ctx,
        obs: &mut O,
    ) -> Decision {
        if p.direction == weir_wire::Direction::Out {
            let ip = by_rule(self.pass(p, slot, false, ctx, obs));
            if ip.verdict == Verdict::Drop {
                return ip;
            }
            return self.layer2_pass(p, ctx, obs);
        }
        let frame = self.layer2_pass(p, ctx, obs);
        if frame.verdict == Verdict::Drop {
            return frame;
        }
        match by_rule(self.pass(p, slot, false, ctx, obs)) {
            ip if ip.verdict == Verdict::Drop => ip,
            _ => frame,
        }
    }

    /// The layer-2 pass: every rule in order, MAC tests live. Out of line,
    /// so that the IP pass alone is inlined into the packet path.
    #[inline(never)]
    fn layer2_pass<O: Observer>(&mut self, p: &Packet, ctx: &mut Ctx, obs: &mut O) -> Decision {
        ctx.layer2 = true;
        let d = self.pass(p, None, true, ctx, obs);
        ctx.layer2 = false;
        by_rule(d)
    }

    /// One pass of a packet through the rules: its state looked up under
    /// each state name, then the walk (every rule in the layer-2 pass).
    /// Returns the deciding rule and the verdict.
    #[inline(always)]
    fn pass<O: Observer>(
        &mut self,
        p: &Packet,
        slot: Option<usize>,
        linear: bool,
        ctx: &mut Ctx,
        obs: &mut O,
    ) -> (usize, Verdict) {
        let index = self.stats.packets;
        let dispatch = self.dispatch;
        let Engine {
            shared,
            env,
            counters,
            logger,
            candidates,
            states,
            ..
        } = self;
        let Shared {
            program,
            classifier,
            ..
        } = &**shared;
        // The flow's states, if any, are looked up once, before the walk;
        // the classifier makes every probe rule a candidate for a packet
        // with a state.
        let mut class = packet_class(p);
        if let Some(t) = states.as_mut() {
            if t.probe(p, program.state_names.len()) {
                class |= class::STATE;
            }
        }
        let mut state = StateCtx {
            table: states.as_mut(),
        };
        let mut log = |ri: usize| {
            if let Some(l) = logger.as_mut() {
                l.log(ri, &program.rules[ri], p, index);
            }
        };
        let walk = Walker {
            classifier: if linear { None } else { classifier.as_ref() },
            slot,
            candidates,
            class,
            state: &mut state,
            ctx,
        };
        match dispatch {
            DispatchKind::Match => {
                walk.evaluate::<MatchDispatch, O>(program, env, p, counters, &mut log, obs)
            }
            DispatchKind::Table => {
                walk.evaluate::<TableDispatch, O>(program, env, p, counters, &mut log, obs)
            }
        }
    }

    /// Adds `other`'s per-rule counters and totals to this engine's, rule
    /// by rule: workers that each ran a copy of one program merge here,
    /// exactly. Panics if the two engines run programs of different sizes.
    pub fn add_counts(&mut self, other: &Engine) {
        assert_eq!(
            self.counters.len(),
            other.counters.len(),
            "merging counters of different programs"
        );
        for (a, b) in self.counters.iter_mut().zip(&other.counters) {
            a.packets += b.packets;
            a.bytes += b.bytes;
        }
        self.stats.add(&other.stats);
    }

    /// After a reload: takes over `old`'s totals, and the counters of every
    /// rule whose number and text did not change (the n-th rule with a
    /// given number and text inherits from the n-th in `old`). Other rules
    /// start at zero. Runs once per reload, never per packet.
    pub fn carry_over(&mut self, old: &Engine) {
        use std::collections::{HashMap, VecDeque};
        let mut before: HashMap<(u16, &str), VecDeque<usize>> = HashMap::new();
        for (i, r) in old.shared.program.rules.iter().enumerate() {
            before.entry((r.number, &r.text)).or_default().push_back(i);
        }
        for (r, c) in self
            .shared
            .program
            .rules
            .iter()
            .zip(self.counters.iter_mut())
        {
            if let Some(i) = before
                .get_mut(&(r.number, r.text.as_str()))
                .and_then(VecDeque::pop_front)
            {
                c.packets += old.counters[i].packets;
                c.bytes += old.counters[i].bytes;
            }
        }
        self.stats.add(&old.stats);
    }

    /// Rules that never matched (the default rule included), in order.
    pub fn unmatched_rules(&self) -> impl Iterator<Item = usize> + '_ {
        self.counters
            .iter()
            .enumerate()
            .filter(|(_, c)| c.packets == 0)
            .map(|(i, _)| i)
    }
}

/// One packet's walk: its candidates from the classifier, if any, then the
/// evaluator over them.
struct Walker<'a, 's> {
    classifier: Option<&'a Classifier>,
    /// The packet's slot in the batch whose trie walks are done (batches).
    slot: Option<usize>,
    candidates: &'a mut Candidates,
    /// The packet's class bits, `class::STATE` included when it has a state.
    class: u32,
    state: &'a mut StateCtx<'s>,
    ctx: &'a mut Ctx,
}

impl Walker<'_, '_> {
    #[inline(always)]
    fn evaluate<D: Dispatch, O: Observer>(
        self,
        program: &Program,
        env: &Env,
        p: &Packet,
        counters: &mut [RuleCounter],
        log: &mut dyn FnMut(usize),
        obs: &mut O,
    ) -> (usize, Verdict) {
        let (class, state, ctx) = (self.class, self.state, self.ctx);
        match (self.classifier, self.candidates) {
            (Some(Classifier::Bits(c)), Candidates::Bits(b)) => {
                // The recursive tables' classes, when the batch found them
                // (for this packet's class: none with a state).
                let found = self
                    .slot
                    .and_then(|slot| b.found.get(slot).copied().flatten());
                let bits = &mut b.bits;
                let decided = match found.filter(|_| class & class::STATE == 0) {
                    Some(found) => c.lookup_found(found, bits),
                    None => c.lookup(p, class, bits),
                };
                if let Some((first, verdict)) = decided.filter(|_| O::SILENT) {
                    // The first candidate surely matches and decides.
                    count(counters, first, p);
                    return (first, verdict);
                }
                let mut walk = CandidateBits(bits);
                return evaluate::<D, O, _>(
                    program, env, &mut walk, p, class, state, ctx, counters, log, obs,
                );
            }
            (Some(Classifier::Trie(c)), Candidates::Trie(s)) => {
                let slot = self.slot.unwrap_or_else(|| {
                    c.walk_batch(std::slice::from_ref(p), s);
                    0
                });
                // The first candidate surely matches and decides, seen
                // from the leaves alone, or else from the merged walk.
                let alone = if O::SILENT {
                    c.leaves_decide(slot, s, class)
                } else {
                    Alone::Evaluate
                };
                if let Alone::Decides(first, verdict) = alone {
                    count(counters, first, p);
                    return (first, verdict);
                }
                // None: the packet walks every rule (below).
                if let Some(mut walk) = c.merge(slot, s, class, program.default_index()) {
                    let decided = (alone == Alone::Ask).then(|| walk.decided()).flatten();
                    if let Some((first, verdict)) = decided {
                        count(counters, first, p);
                        return (first, verdict);
                    }
                    return evaluate::<D, O, _>(
                        program, env, &mut walk, p, class, state, ctx, counters, log, obs,
                    );
                }
            }
            _ => {}
        }
        let mut walk = Linear;
        evaluate::<D, O, _>(
            program, env, &mut walk, p, class, state, ctx, counters, log, obs,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_wire::v4_mapped;

    /// Twenty rules, one per destination port, then the default.
    fn program() -> Program {
        let text: String = (1..=20)
            .map(|k| format!("{k} deny tcp from any to any {k}\n"))
            .collect();
        crate::load(&text, &weir_rules::Names::default(), &Default::default()).expect("rules")
    }

    fn tcp_to(port: u16) -> Packet {
        Packet {
            l3: L3::Ip,
            ip_version: 4,
            proto: 6,
            src: v4_mapped(0x0a00_0001),
            dst: v4_mapped(0x0a00_0002),
            has_ports: true,
            src_port: 1000,
            dst_port: port,
            ..Packet::default()
        }
    }

    #[test]
    fn a_linear_walk_builds_no_classifier() {
        let auto = Engine::builder(program()).build();
        assert_eq!(auto.walk_kind(), WalkKind::Bits);
        assert!(auto.classifier_memory() > 0);
        let linear = Engine::builder(program()).linear(true).build();
        assert!(linear.shared.classifier.is_none());
        assert_eq!(linear.walk_kind(), WalkKind::Linear);
        let trie = Engine::builder(program()).walk(WalkKind::Trie).build();
        assert_eq!(trie.walk_kind(), WalkKind::Trie);
    }

    #[test]
    fn the_builder_sets_everything_before_the_first_packet() {
        let policy = Policy {
            non_ip: Verdict::Drop,
            malformed: Verdict::Pass,
        };
        let e = Engine::builder(program())
            .dispatch(DispatchKind::Match)
            .policy(policy)
            .me(vec![(v4_mapped(1), 4)])
            .fib(3)
            .seed(9)
            .build();
        assert_eq!(e.dispatch(), DispatchKind::Match);
        assert_eq!(e.policy(), policy);
        assert_eq!(
            (e.env().me.clone(), e.env().fib, e.env().seed),
            (vec![(v4_mapped(1), 4)], 3, 9)
        );
    }

    /// One by one or in a batch, every packet is counted once, by its
    /// verdict, and non-IP and malformed frames apart: IP packets take
    /// `decide_ip`, the others `decide_walked`'s cases.
    #[test]
    fn each_packet_is_counted_by_its_verdict() {
        let mut packets: Vec<Packet> = (1..=40).map(tcp_to).collect();
        packets.push(Packet {
            l3: L3::NonIp,
            ..Packet::default()
        });
        packets.push(Packet {
            l3: L3::Malformed(weir_wire::Malformed::TruncatedL4),
            ..Packet::default()
        });
        let text = "100 deny tcp from any to any 1-15\n200 allow ip from any to any\n";
        let prog = || crate::load(text, &weir_rules::Names::default(), &Default::default());
        let mut one = Engine::builder(prog().expect("rules")).build();
        let each: Vec<Decision> = packets.iter().map(|p| one.decide(p)).collect();
        let mut batched = Engine::builder(prog().expect("rules")).build();
        let mut out = Vec::new();
        batched.decide_batch(&packets, &mut out);
        assert_eq!(each, out);
        for e in [&one, &batched] {
            let s = e.stats();
            // Ports 1-15 dropped, 16-40 and the non-IP frame passed (the
            // default policy), the malformed one dropped.
            assert_eq!((s.packets, s.passed, s.dropped, s.non_ip), (42, 26, 16, 1));
        }
    }

    /// Workers share one program and classifier and count on their own;
    /// merged, their counters are what one engine would have counted.
    #[test]
    fn replicas_share_the_build_and_count_apart() {
        let mut one = Engine::builder(program())
            .dispatch(DispatchKind::Match)
            .build();
        let mut a = one.replica();
        let mut b = one.replica();
        assert!(Arc::ptr_eq(&a.shared, &one.shared) && Arc::ptr_eq(&b.shared, &one.shared));
        assert_eq!(
            (a.walk_kind(), a.dispatch()),
            (WalkKind::Bits, DispatchKind::Match)
        );
        let packets: Vec<Packet> = (0..40).map(tcp_to).collect();
        for (k, p) in packets.iter().enumerate() {
            let d = one.decide(p);
            let w = if k % 2 == 0 { &mut a } else { &mut b };
            assert_eq!(w.decide(p), d);
        }
        a.add_counts(&b);
        assert_eq!(a.counters(), one.counters());
        assert_eq!(a.stats(), one.stats());
    }
}
