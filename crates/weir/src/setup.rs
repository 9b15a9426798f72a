//! Start-up work shared by the commands: load a ruleset, build an engine,
//! attach its log. Everything here runs once, never per packet.

use crate::cli::{
    ContextArgs, DirArg, DispatchArg, EngineArgs, LogFormatArg, TableArgs, VerdictArg,
};
use crate::counting::counted;
use crate::outputs::{self, Output};
use crate::Failure;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use weir_engine::{
    CompileOptions, DispatchKind, Engine, LogFormat, Logger, Policy, Program, Verdict,
};
use weir_io::output::{ErrorWatch, OutputError, Watched};
use weir_pipeline::Placement;
use weir_rules::ppp::FilterSet;
use weir_rules::{Diagnostic, Names, Source};
use weir_wire::{addr_to_u128, Direction};

/// Parses and compiles an ipfw rule file; errors come back rendered with
/// carets.
pub fn compile_source(
    file: &str,
    source: &Source,
    names: &Names,
    opts: &CompileOptions,
) -> Result<Program, Failure> {
    weir_rules::parse_source(source, names)
        .and_then(|ast| weir_engine::compile(&ast, names, opts))
        .map_err(|errors| rules_failure(file, source.text(), &errors))
}

/// A rule file's errors, rendered: the first hundred in full, then a count.
pub fn rules_failure(file: &str, text: &str, errors: &[Diagnostic]) -> Failure {
    Failure::Rules(weir_rules::render_all(file, text, errors))
}

/// Reads a file the user gave, or stdin for `-`.
fn read_bytes(path: &Path) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    let res = if path.as_os_str() == "-" {
        io::stdin().read_to_end(&mut bytes)
    } else {
        File::open(path).and_then(|mut f| f.read_to_end(&mut bytes))
    };
    res.map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
    Ok(bytes)
}

/// Reads a rule or table file as people save it: a byte-order mark, CRLF
/// line ends and non-UTF-8 comments are fine ([`Source`]).
pub fn read_source(path: &Path) -> Result<Source<'static>, Failure> {
    Ok(Source::from_vec(read_bytes(path)?))
}

/// Reads a file that must be UTF-8 throughout.
pub fn read_text(path: &Path) -> Result<String, Failure> {
    String::from_utf8(read_bytes(path)?).map_err(|e| {
        Failure::Usage(format!(
            "{}: byte {} is not UTF-8",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

impl From<DispatchArg> for DispatchKind {
    fn from(d: DispatchArg) -> DispatchKind {
        match d {
            DispatchArg::Match => DispatchKind::Match,
            DispatchArg::Table => DispatchKind::Table,
        }
    }
}

impl From<VerdictArg> for Verdict {
    fn from(v: VerdictArg) -> Verdict {
        match v {
            VerdictArg::Pass => Verdict::Pass,
            VerdictArg::Drop => Verdict::Drop,
        }
    }
}

/// Where packets whose capture does not say come from and go: `--dir`,
/// `--me`, `--iface`.
pub fn placement(context: &ContextArgs, engine: &EngineArgs) -> Placement {
    Placement::new(
        context.dir.map(Direction::from),
        &engine.me,
        context.iface.clone(),
    )
}

/// A capture that cannot be read, named.
pub fn capture_failure(path: &Path, e: weir_io::CaptureError) -> Failure {
    Failure::Runtime(format!("{}: {e}", path.display()))
}

impl From<DirArg> for Direction {
    fn from(d: DirArg) -> Direction {
        match d {
            DirArg::In => Direction::In,
            DirArg::Out => Direction::Out,
        }
    }
}

impl From<LogFormatArg> for LogFormat {
    fn from(f: LogFormatArg) -> LogFormat {
        match f {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        }
    }
}

/// Reads `--table NAME=FILE` tables; errors as `FILE:LINE:COL: message`.
pub fn load_tables(args: &TableArgs) -> Result<Vec<(String, weir_table::Builder)>, Failure> {
    let mut out = Vec::new();
    for (name, path) in &args.specs {
        if out.iter().any(|(n, _)| n == name) {
            return Err(Failure::Usage(format!("--table {name} given twice")));
        }
        let source = read_source(path).map_err(|e| match e {
            Failure::Usage(why) => Failure::Usage(format!("--table {name}: {why}")),
            other => other,
        })?;
        let builder = weir_table::parse_table_source(name, &source).map_err(|errors| {
            let lines: Vec<String> = errors
                .iter()
                .map(|e| format!("{}:{e}", path.display()))
                .collect();
            Failure::Rules(lines.join("\n"))
        })?;
        out.push((name.clone(), builder));
    }
    Ok(out)
}

/// Compiles the ruleset and builds an engine configured by the flags.
pub fn build_engine(rules: &Path, args: &EngineArgs, names: &Names) -> Result<Engine, Failure> {
    Ok(build_engine_and_set(rules, args, names)?.0)
}

/// As [`build_engine`], also saying which set a ppp filter file gave.
pub fn build_engine_and_set(
    rules: &Path,
    args: &EngineArgs,
    names: &Names,
) -> Result<(Engine, Option<FilterSet>), Failure> {
    let opts = CompileOptions {
        default_allow: args.default_allow,
        tables: load_tables(&args.tables)?,
        disabled_sets: args.disable_set.iter().fold(0, |m, s| m | 1 << s),
        no_me: args.me.is_empty(),
    };
    let (mut program, set) = crate::ppp::load(rules, &args.ppp, names, &opts)?;
    for (name, value) in &args.sysctl {
        let on = *value != 0;
        match name.as_str() {
            "one_pass" => program.one_pass = on,
            "net.link.ether.ipfw" => program.layer2 = on,
            "default_to_accept" => program.set_default_allow(on),
            _ => {
                program.state_config.set(name, *value);
            }
        }
    }
    program.layer2 |= args.layer2;
    let me = args
        .me
        .iter()
        .map(|a| (addr_to_u128(*a), if a.is_ipv4() { 4 } else { 6 }))
        .collect();
    let engine = Engine::builder(program)
        .fib(args.fib)
        .seed(args.seed)
        .me(me)
        .dispatch(args.dispatch.into())
        .linear(args.linear)
        .policy(Policy {
            non_ip: args.non_ip.into(),
            malformed: args.malformed.into(),
        })
        .build();
    Ok((engine, set))
}

/// Where a run's `log` lines go, and whether writing them failed. The
/// logger itself never stops the filter for a failed line; the command
/// asks at the end.
pub struct LogOutput {
    name: String,
    file: Option<Output<()>>,
    watch: ErrorWatch,
}

impl LogOutput {
    /// Flushes the engine's logger; the failure of the log's output, if any
    /// write to it failed.
    pub fn finish(&mut self, engine: &mut Engine) -> Option<Failure> {
        if let Some(l) = engine.logger_mut() {
            let _ = l.flush();
        }
        let e = self.watch.take()?;
        Some(Failure::Output(OutputError::new(self.name.clone(), e)))
    }

    pub fn commit(self) -> Result<(), Failure> {
        Ok(self.file.map_or(Ok(()), Output::commit)?)
    }

    pub fn discard(self) -> Option<String> {
        self.file.and_then(Output::discard)
    }
}

/// Attaches a logger writing to `path`, or to stderr.
pub fn attach_logger(
    engine: &mut Engine,
    path: Option<&Path>,
    format: LogFormat,
    names: &Names,
) -> Result<LogOutput, Failure> {
    let (out, name, file): (Box<dyn Write + Send>, _, _) = match path {
        Some(p) => {
            let (w, file) = outputs::open(p)?.split();
            (w, file.name().to_owned(), Some(file))
        }
        // Counted for `weir run --json` (see counting.rs).
        None => (counted(io::stderr()), "stderr".to_owned(), None),
    };
    let (out, watch) = Watched::new(out);
    let logger = Logger::new(Box::new(out), format, names, &engine.program().rules);
    engine.set_logger(logger);
    Ok(LogOutput { name, file, watch })
}
