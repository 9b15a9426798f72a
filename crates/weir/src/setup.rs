//! Start-up work shared by the commands: load a ruleset, build an engine,
//! open outputs. Everything here runs once, never per packet.

use crate::cli::{DirArg, DispatchArg, EngineArgs, LogFormatArg, TableArgs, VerdictArg};
use crate::counting::counted;
use crate::Failure;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use weir_engine::{
    CompileOptions, DispatchKind, Engine, LogFormat, Logger, Policy, Program, Verdict,
};
use weir_rules::ppp::FilterSet;
use weir_rules::Names;
use weir_wire::{addr_to_u128, Direction};

/// Compiles ipfw rule text; errors come back rendered with carets.
pub fn compile_text(
    file: &str,
    text: &str,
    names: &Names,
    opts: &CompileOptions,
) -> Result<Program, Failure> {
    weir_engine::load(text, names, opts).map_err(|errors| {
        let rendered: Vec<String> = errors
            .iter()
            .map(|d| d.render(file, text).to_string())
            .collect();
        Failure::Rules(rendered.join("\n"))
    })
}

pub fn read_text(path: &Path) -> Result<String, Failure> {
    let mut text = String::new();
    let res = if path.as_os_str() == "-" {
        io::stdin().read_to_string(&mut text)
    } else {
        File::open(path).and_then(|mut f| f.read_to_string(&mut text))
    };
    res.map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
    Ok(text)
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

/// The direction a packet whose capture does not say takes: `--dir`, or
/// else what `--me` says (to me: in, from me: out), or else in.
pub fn default_direction(dir: Option<DirArg>, me: &[std::net::IpAddr]) -> DefaultDir {
    DefaultDir {
        dir: dir.map(Direction::from),
        me: me.iter().map(|a| addr_to_u128(*a)).collect(),
    }
}

/// See [`default_direction`]; made once, used per packet without
/// allocating.
pub struct DefaultDir {
    dir: Option<Direction>,
    me: Vec<u128>,
}

impl DefaultDir {
    #[inline]
    pub fn of(&self, p: &weir_wire::Packet) -> Direction {
        if let Some(d) = self.dir {
            return d;
        }
        if self.me.contains(&p.dst) {
            Direction::In
        } else if self.me.contains(&p.src) {
            Direction::Out
        } else {
            Direction::In
        }
    }
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
        let text = read_text(path)?;
        let builder = weir_table::parse_table_file(name, &text).map_err(|errors| {
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
    let mut engine = Engine::new(program);
    engine.env.fib = args.fib;
    engine.env.seed = args.seed;
    engine.dispatch = args.dispatch.into();
    if args.linear {
        engine.set_linear(true);
    }
    engine.policy = Policy {
        non_ip: args.non_ip.into(),
        malformed: args.malformed.into(),
    };
    engine.env.me = args
        .me
        .iter()
        .map(|a| (addr_to_u128(*a), if a.is_ipv4() { 4 } else { 6 }))
        .collect();
    Ok((engine, set))
}

/// Attaches a logger writing to `path`, or to stderr.
pub fn attach_logger(
    engine: &mut Engine,
    path: Option<&Path>,
    format: LogFormat,
    names: &Names,
) -> Result<(), Failure> {
    let out: Box<dyn Write + Send> = match path {
        // Counted for `weir run --json` (see counting.rs).
        Some(p) => counted(create(p)?),
        None => counted(io::stderr()),
    };
    let logger = Logger::new(out, format, names, &engine.program.rules);
    engine.set_logger(logger);
    Ok(())
}

/// Creates an output file, or stdout for `-`. Writers buffer themselves.
pub fn create_output(path: &Path) -> Result<Box<dyn Write + Send>, Failure> {
    // Counted for `weir run --json` (see counting.rs).
    if path.as_os_str() == "-" {
        Ok(counted(io::stdout()))
    } else {
        Ok(counted(create(path)?))
    }
}

fn create(path: &Path) -> Result<File, Failure> {
    File::create(path).map_err(|e| Failure::Runtime(format!("{}: {e}", path.display())))
}
