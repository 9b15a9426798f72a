//! Start-up work shared by the commands: the rule file's flags as
//! `weir_load`'s options, the engine built from what it loads, its log
//! attached. Everything here runs once, never per packet.

use crate::cli::{
    ContextArgs, DirArg, DispatchArg, EngineArgs, LogFormatArg, TableArgs, VerdictArg,
};
use crate::counting::counted;
use crate::outputs::{self, Output};
use crate::ppp::PppArgs;
use crate::Failure;
use std::io::{self, Write};
use std::path::Path;
use weir_engine::{DispatchKind, Engine, LogFormat, Logger, Policy, Verdict};
use weir_io::output::{ErrorWatch, OutputError, Watched};
use weir_load::Options;
use weir_pipeline::Placement;
use weir_rules::ppp::FilterSet;
use weir_rules::Names;
use weir_wire::Direction;

/// Reads a file that must be UTF-8 throughout.
pub fn read_text(path: &Path) -> Result<String, Failure> {
    String::from_utf8(weir_load::read_bytes(path)?).map_err(|e| {
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

/// What a file's flags say about reading and compiling it, as the
/// loader takes them (`weir check` has only these).
pub fn file_options(tables: &TableArgs, ppp: &PppArgs) -> Options {
    Options {
        syntax: ppp.syntax.into(),
        ppp: ppp.options(),
        tables: tables.specs.clone(),
        ..Options::default()
    }
}

/// The engine flags as the loader takes them.
pub fn load_options(args: &EngineArgs) -> Options {
    Options {
        default_allow: args.default_allow,
        disabled_sets: args.disable_set.iter().fold(0, |m, s| m | 1 << s),
        me: args.me.clone(),
        sysctl: args.sysctl.clone(),
        layer2: args.layer2,
        ..file_options(&args.tables, &args.ppp)
    }
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
    let loaded = weir_load::load(rules, &load_options(args), names, &mut outputs::write_note)?;
    let set = loaded.set;
    let engine = loaded
        .builder()
        .fib(args.fib)
        .seed(args.seed)
        .dispatch(args.dispatch.into())
        .linear(args.linear)
        .simd(args.simd)
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
