//! Compiles a parsed ruleset into a [`Program`].
//!
//! All the expensive choices happen here, once: names resolve to numbers,
//! address lists become one instruction over a pool of masked networks,
//! tables are built, tags and state names get small indices, jump targets
//! become rule indices, and the result is verified. `body.rs` turns a
//! rule's protocol, addresses, ports and options into instructions.

mod body;

use crate::program::*;
use weir_rules::{self as ast, Diagnostic, Errors, Names, Span};

/// Choices that change what a ruleset means.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// The default rule 65535 allows instead of denying.
    pub default_allow: bool,
    /// Lookup tables loaded from files (`--table NAME=FILE`); the ruleset's
    /// `table NAME …` lines apply on top of them.
    pub tables: Vec<(String, weir_table::Builder)>,
    /// Sets turned off (`--disable-set`, bit per set) besides the
    /// ruleset's own `set disable` lines: their rules are left out.
    pub disabled_sets: u32,
    /// Refuse `me` and `me6` (no `--me` was given): a rule that names this
    /// host's addresses is an error, not a rule that never matches.
    pub no_me: bool,
}

/// Compiles every rule; any error means no program.
pub fn compile(
    rs: &ast::Ruleset,
    names: &Names,
    opts: &CompileOptions,
) -> Result<Program, Vec<Diagnostic>> {
    let mut prog = Program::default();
    let mut errors = Errors::default();
    match crate::tables::build(&opts.tables, &rs.tables, names) {
        Ok(built) => {
            prog.table_names = built.names;
            prog.tables = built.tables.into_iter().map(std::sync::Arc::new).collect();
            prog.table_values = built.values.into_iter().map(std::sync::Arc::new).collect();
        }
        Err(e) => e.into_iter().for_each(|e| errors.push(e)),
    }
    let mut default_allow = opts.default_allow;
    let mut layer2 = None;
    prog.one_pass = true;
    for setting in &rs.settings {
        let on = setting.value != 0;
        match setting.name.as_str() {
            "one_pass" => prog.one_pass = on,
            "default_to_accept" => default_allow |= on,
            "net.link.ether.ipfw" => layer2 = Some(on),
            name if prog.state_config.set(name, setting.value) => {}
            name => errors.push(Diagnostic::new(
                setting.span,
                format!("unknown setting '{name}'"),
            )),
        }
    }
    let disabled = opts.disabled_sets | rs.disabled_sets;
    // ipfw keeps rules sorted by number, equal numbers in the order added.
    let mut order: Vec<&ast::Rule> = rs
        .rules
        .iter()
        .filter(|r| disabled >> r.head.set & 1 == 0)
        .collect();
    order.sort_by_key(|r| r.number);
    if let Err(e) = register_names(&mut prog, &order) {
        errors.push(e);
    }
    for rule in order {
        match compile_rule(&mut prog, names, opts, rule) {
            Ok(r) => prog.rules.push(r),
            Err(e) => errors.push(e),
        }
    }
    let mut prog = errors.finish(prog)?;
    // Rules that test the layer 2 only mean something on a host with
    // net.link.ether.ipfw=1: a ruleset that has them gets the layer-2
    // pass unless it says otherwise.
    prog.layer2 = layer2.unwrap_or_else(|| {
        prog.insns
            .iter()
            .any(|i| matches!(i.op, Op::Layer2 | Op::MacAddr | Op::MacType))
    });
    prog.rules
        .push(default_rule(prog.insns.len() as u32, default_allow));
    resolve_jumps(&mut prog.rules);
    skip_steps(&mut prog.rules);
    prog.verify()
        .map_err(|msg| vec![Diagnostic::new(Span::default(), msg)])?;
    Ok(prog)
}

/// Gives every tag number that a `tag`/`untag` names a bit, and every
/// state name an index (0 is the default name), before any rule compiles.
fn register_names(prog: &mut Program, rules: &[&ast::Rule]) -> Result<(), Diagnostic> {
    prog.state_names = vec!["default".to_owned()];
    for r in rules {
        if let Some(ast::TagOp::Tag(n) | ast::TagOp::Untag(n)) = r.head.tag {
            if !prog.tag_values.contains(&n) {
                if prog.tag_values.len() == MAX_TAGS {
                    return Err(Diagnostic::new(
                        r.span,
                        format!("more than {MAX_TAGS} distinct tag numbers in one ruleset"),
                    ));
                }
                prog.tag_values.push(n);
            }
        }
        let named = r.body.options.iter().filter_map(|o| match &o.opt {
            ast::Opt::KeepState(n) | ast::Opt::RecordState(n) | ast::Opt::Limit { name: n, .. } => {
                n.as_deref()
            }
            _ => None,
        });
        let checked = match &r.action {
            ast::Action::CheckState(Some(n)) if n != "any" => Some(n.as_str()),
            _ => None,
        };
        for name in named.chain(checked) {
            if !prog.state_names.iter().any(|n| n == name) {
                if prog.state_names.len() == MAX_STATE_NAMES {
                    return Err(Diagnostic::new(
                        r.span,
                        format!("more than {MAX_STATE_NAMES} distinct state names in one ruleset"),
                    ));
                }
                prog.state_names.push(name.to_owned());
            }
        }
    }
    Ok(())
}

/// The index of a state name (the default for None, [`ANY_STATE`] for `any`).
fn state_index(prog: &Program, name: &ast::StateName) -> u8 {
    match name.as_deref() {
        None => 0,
        Some("any") => ANY_STATE,
        Some(n) => prog.state_names.iter().position(|s| s == n).unwrap_or(0) as u8,
    }
}

fn compile_rule(
    prog: &mut Program,
    names: &Names,
    opts: &CompileOptions,
    rule: &ast::Rule,
) -> Result<Rule, Diagnostic> {
    let start = prog.insns.len();
    let mut c = body::RuleCompiler::new(prog, names, rule, opts.no_me);
    let compiled = c.body().and_then(|()| c.check_tablearg());
    let (state_op, state_name, defer) = (c.state_op, c.state_name, c.defer);
    if let Err(e) = compiled {
        prog.insns.truncate(start);
        return Err(e);
    }
    let act = Act::of(&rule.action);
    let check_state = act == Act::CheckState;
    // Without a state a check-state never matches, and a defer-action rule
    // without one never runs its action (ipfw's O_SKIP_ACTION); with a
    // state both fire before their instructions run.
    if check_state || (defer && state_op == StateOp::None) {
        prog.insns.push(Insn::new(Op::Never, 0));
    }
    let (proto, mut class_mask, mut class_bits) = hoist_header(&mut prog.insns, start);
    // A probe rule's header requires "no state": a packet of a known flow
    // fails it whatever else the rule says, and the evaluator's
    // header-failure path fires the state.
    let probe =
        check_state || matches!(state_op, StateOp::Keep | StateOp::Limit { probe: true, .. });
    if probe {
        class_mask |= class::STATE;
        class_bits &= !class::STATE;
    }
    let state_name = match &rule.action {
        ast::Action::CheckState(name) => state_index(prog, name),
        _ => state_index(prog, &state_name),
    };
    let tag_bit = |n: u16| 1u64 << prog.tag_values.iter().position(|&t| t == n).unwrap_or(0);
    let tag = match rule.head.tag {
        Some(ast::TagOp::Tag(n)) => TagChange {
            set: tag_bit(n),
            clear: 0,
        },
        Some(ast::TagOp::Untag(n)) => TagChange {
            set: 0,
            clear: tag_bit(n),
        },
        None => TagChange::default(),
    };
    let mut compiled = Rule {
        number: rule.number,
        set: rule.head.set,
        action: rule.action.clone(),
        act,
        quick: Quick::Slow,
        prob: rule.head.prob.map(|p| p.0),
        tag,
        state_name,
        defer,
        // `logamount 0` is no limit (ipfw(8) "A value of 0 removes any
        // limit"), as is no `logamount` with verbose_limit at its 0.
        log_limit: rule
            .log
            .map(|l| l.amount.filter(|&n| n > 0).unwrap_or(u32::MAX)),
        start: start as u32,
        end: prog.insns.len() as u32,
        jump: 0,
        proto,
        class_mask,
        class_bits,
        skip_proto: 0,
        skip_class: 0,
        probe,
        state_op,
        text: rule.to_string(),
        action_text: shown_action(&rule.action, names).to_string(),
        line: rule.span.line,
    };
    compiled.settle();
    Ok(compiled)
}

/// The action as `ipfw show` prints it: a divert or tee port by number
/// (ipfw resolves `natd` when the rule is added).
fn shown_action(action: &RuleAction, names: &Names) -> RuleAction {
    use ast::{DivertPort, Port};
    let number = |p: &DivertPort| match p {
        DivertPort::Port(Port::Name(n, _)) => ast::divert_service(n, names)
            .map_or_else(|| p.clone(), |n| DivertPort::Port(Port::Number(n))),
        p => p.clone(),
    };
    match action {
        RuleAction::Divert(p) => RuleAction::Divert(number(p)),
        RuleAction::Tee(p) => RuleAction::Tee(number(p)),
        a => a.clone(),
    }
}

/// The implicit rule 65535: deny (or allow) everything.
fn default_rule(end: u32, allow: bool) -> Rule {
    let action = if allow {
        RuleAction::Allow
    } else {
        RuleAction::Deny
    };
    let mut rule = Rule {
        number: DEFAULT_RULE,
        set: ast::RESERVED_SET,
        act: Act::of(&action),
        quick: Quick::Slow,
        text: format!("{action} ip from any to any"),
        action_text: action.to_string(),
        action,
        prob: None,
        tag: TagChange::default(),
        state_name: 0,
        defer: false,
        log_limit: None,
        start: end,
        end,
        jump: 0,
        proto: None,
        class_mask: 0,
        class_bits: 0,
        skip_proto: 0,
        skip_class: 0,
        probe: false,
        state_op: StateOp::None,
        line: 0,
    };
    rule.settle();
    rule
}

/// `skipto N` / `call N` continue at the first rule numbered N or more.
fn resolve_jumps(rules: &mut [Rule]) {
    for i in 0..rules.len() {
        if let RuleAction::Skipto(n) | RuleAction::Call(n) = rules[i].action {
            rules[i].jump = rules.partition_point(|r| r.number < n) as u32;
        }
    }
}

/// Moves tests that need no operand out of a rule's instructions into its
/// header: a plain `proto`, and one-bit facts (direction, version, `frag`,
/// `established`, `setup`, `ipoptions`) as class bits, negated or not.
/// Or-block members stay instructions. Returns (proto, class mask, bits).
fn hoist_header(insns: &mut Vec<Insn>, start: usize) -> (Option<u8>, u32, u32) {
    let (mut proto, mut mask, mut bits) = (None, 0u32, 0u32);
    let mut k = start;
    while k < insns.len() {
        let ins = insns[k];
        let in_or_block = ins.flags & F_OR != 0 || (k > start && insns[k - 1].flags & F_OR != 0);
        let not = ins.flags & F_NOT != 0;
        let hoisted = !in_or_block
            && match (ins.op, class_test(&ins)) {
                (Op::Proto, _) if !not && proto.is_none() => {
                    proto = Some(ins.arg as u8);
                    true
                }
                (_, Some((m, b))) if mask & m == 0 && (!not || m.count_ones() == 1) => {
                    mask |= m;
                    bits |= if not { m & !b } else { b };
                    true
                }
                _ => false,
            };
        if hoisted {
            insns.remove(k);
        } else {
            k += 1;
        }
    }
    (proto, mask, bits)
}

/// The class bits an instruction tests: (mask, required bits), if it is one.
fn class_test(ins: &Insn) -> Option<(u32, u32)> {
    let bit = |b: u32| Some((b, b));
    match ins.op {
        Op::In => bit(class::IN),
        Op::Out => bit(class::OUT),
        Op::Frag => bit(class::LATER_FRAG),
        Op::Established => bit(class::ESTABLISHED),
        Op::Setup => bit(class::SETUP),
        Op::IpVersion if ins.arg == 4 => bit(class::V4),
        Op::IpVersion if ins.arg == 6 => bit(class::V6),
        Op::IpOptions => {
            let (set, clear) = (ins.arg & 0xff, (ins.arg >> 8) & 0xff);
            // IPv4 only, so the version bit is part of the test.
            (set & clear == 0 && set | clear != 0).then(|| {
                let shift = class::IPOPT_SHIFT;
                ((set | clear) << shift | class::V4, set << shift | class::V4)
            })
        }
        _ => None,
    }
}

/// Computes pf-style skip steps, from the end backwards.
fn skip_steps(rules: &mut [Rule]) {
    for i in (0..rules.len().saturating_sub(1)).rev() {
        let next = &rules[i + 1];
        // A probe rule fires for a packet with a state whatever its
        // protocol, so no protocol skip may jump over one.
        let same_proto = next.proto == rules[i].proto && !next.probe;
        let same_class =
            (next.class_mask, next.class_bits) == (rules[i].class_mask, rules[i].class_bits);
        let (np, nc) = (next.skip_proto, next.skip_class);
        rules[i].skip_proto = if same_proto { np } else { i as u32 + 1 };
        rules[i].skip_class = if same_class { nc } else { i as u32 + 1 };
    }
}
