//! `weir lint`, `weir search`, `weir diff`: wiring of the ruleset
//! analysis (weir-analysis) to flags, files and exit codes — 0 nothing
//! found, 1 findings or a difference (`search`: 0 a packet, 1 none), 2
//! usage or rule-file errors.

mod args;
mod files;
mod trace;

use crate::setup::{build_engine, placement};
use crate::{outputs, Failure};
pub use args::{DiffArgs, Format, LintArgs, SearchArgs};
use weir_analysis::outcome::{json_line, DiffAnswer, LintAnswer, SearchAnswer};
use weir_analysis::search::query_rule;
use weir_analysis::{Analyser, DiffOptions, Goal};
use weir_engine::CompileOptions;
use weir_pipeline::sink::Discard;
use weir_rules::Names;

fn runtime(e: String) -> Failure {
    Failure::Runtime(e)
}

/// The exit status: 1 when something was found.
pub fn code(result: Result<bool, Failure>) -> std::process::ExitCode {
    match result {
        Ok(true) => std::process::ExitCode::from(1),
        Ok(false) => std::process::ExitCode::SUCCESS,
        Err(e) => crate::exit(Err(e)),
    }
}

pub fn lint(args: &LintArgs) -> Result<bool, Failure> {
    let names = Names::system();
    let engine = build_engine(&args.rules, &args.engine, &names)?;
    let mut a = Analyser::new(&[engine.program()]);
    let prog = engine.program();
    let mut findings = weir_analysis::lint(&mut a, prog, engine.env()).map_err(runtime)?;
    if let Some(path) = &args.read {
        let mut replayed = build_engine(&args.rules, &args.engine, &names)?;
        let place = placement(&args.context, &args.engine);
        trace::replay(&mut replayed, &mut trace::open(path)?, &place, Discard)?;
        let unmatched = replayed.unmatched_rules();
        let name = path.display().to_string();
        let notes = weir_analysis::lint::unmatched_in_trace(prog, &findings, unmatched, &name);
        findings.extend(notes);
        findings.sort_by_key(|f| f.rule.index);
    }
    let file = args.rules.display().to_string();
    let answer = LintAnswer {
        file: &file,
        findings: &findings,
    };
    let format = if args.json { Format::Json } else { args.format };
    outputs::print(&match format {
        Format::Text => answer.text(args.explain),
        Format::Json => json_line(&answer),
        Format::Sarif => answer.sarif(),
    })?;
    Ok(answer.found())
}

pub fn search(args: &SearchArgs) -> Result<bool, Failure> {
    files::check_write(&[&args.rules], &args.engine, None, &args.write)?;
    let names = Names::system();
    let engine = build_engine(&args.rules, &args.engine, &names)?;
    let opts = CompileOptions {
        tables: weir_load::load_tables(&args.engine.tables.specs)?,
        no_me: args.engine.me.is_empty(),
        ..CompileOptions::default()
    };
    let text = query_rule(&args.query);
    let query = weir_engine::load(&text, &names, &opts)
        .map_err(|errors| weir_load::rendered("MATCH", &text, &errors))?;
    let goal = Goal::new(args.action.as_deref(), args.decided_by);
    let mut a = Analyser::new(&[engine.program(), &query]);
    let found = weir_analysis::search(&mut a, engine.program(), engine.env(), &query, &goal)
        .map_err(runtime)?;
    let answer = SearchAnswer::of(&found);
    if let (Some(path), Some(w)) = (&args.write, answer.witness) {
        files::write_witnesses(path, &a, [&w.packet])?;
    }
    let out = if args.json {
        json_line(&answer)
    } else {
        answer.text()
    };
    outputs::print(&out)?;
    // Exit 1 when no packet exists, as grep does.
    Ok(!answer.found)
}

pub fn diff(args: &DiffArgs) -> Result<bool, Failure> {
    let rules = [args.old.as_path(), args.new.as_path()];
    files::check_write(&rules, &args.engine, args.read.as_deref(), &args.write)?;
    let names = Names::system();
    let mut old = build_engine(&args.old, &args.engine, &names)?;
    let mut new = build_engine(&args.new, &args.engine, &names)?;
    let mut a = Analyser::new(&[old.program(), new.program()]);
    let opts = DiffOptions { rules: args.rules };
    let d = weir_analysis::diff(&mut a, old.program(), new.program(), old.env(), &opts)
        .map_err(runtime)?;
    let changes = match &args.read {
        Some(t) => Some(trace::diff(args, t, &mut old, &mut new)?.pairs()),
        None => None,
    };
    let answer = DiffAnswer::of(&d, changes);
    if let (Some(path), None) = (&args.write, &args.read) {
        files::write_witnesses(path, &a, d.changes.iter().map(|c| &c.witness))?;
    }
    let out = if args.json {
        json_line(&answer)
    } else {
        answer.text(
            &args.old.display().to_string(),
            &args.new.display().to_string(),
        )
    };
    outputs::print(&out)?;
    Ok(answer.found())
}
