//! A ruleset from a file or a string to an [`Engine`], as `weir run` loads
//! one with the same options: ipfw rules, or FreeBSD ppp filters (one
//! set); lookup tables from files; `me` addresses; the implicit rule's
//! verdict. Errors are the command line's messages, rendered the same way.

use std::net::IpAddr;
use weir_engine::{compile, CompileOptions, Engine, Program};
use weir_rules::ppp::{self, Bindings, FilterSet, Format};
use weir_rules::{Names, Source};
use weir_wire::addr_to_u128;

/// How to read and build a ruleset.
#[derive(Default)]
pub struct Options {
    /// `(name, file)`: `--table NAME=FILE`.
    pub tables: Vec<(String, String)>,
    pub syntax: Syntax,
    pub filter_set: Option<FilterSet>,
    /// A ppp.conf's label.
    pub label: Option<String>,
    pub me: Vec<IpAddr>,
    pub default_allow: bool,
}

#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub enum Syntax {
    #[default]
    Auto,
    Ipfw,
    Ppp,
}

/// A ruleset that did not load: the message `weir` prints.
#[derive(Debug)]
pub struct LoadError(pub String);

pub fn read_file(path: &str) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|e| LoadError(format!("{path}: {e}")))
}

/// Compiles `bytes` (the ruleset file called `name`) into an engine.
pub fn engine(name: &str, bytes: Vec<u8>, opts: &Options) -> Result<Engine, LoadError> {
    let names = Names::system();
    let compile_opts = CompileOptions {
        default_allow: opts.default_allow,
        tables: tables(&opts.tables)?,
        disabled_sets: 0,
        no_me: opts.me.is_empty(),
    };
    let source = Source::from_vec(bytes);
    let program = program(name, &source, opts, &names, &compile_opts)?;
    let me = opts
        .me
        .iter()
        .map(|a| (addr_to_u128(*a), if a.is_ipv4() { 4 } else { 6 }))
        .collect();
    Ok(Engine::builder(program).me(me).build())
}

fn rendered(name: &str, source: &Source, errors: &[weir_rules::Diagnostic]) -> LoadError {
    LoadError(weir_rules::render_all(name, source.text(), errors))
}

fn program(
    name: &str,
    source: &Source,
    opts: &Options,
    names: &Names,
    compile_opts: &CompileOptions,
) -> Result<Program, LoadError> {
    let format = match opts.syntax {
        Syntax::Auto => ppp::detect(source.text()),
        Syntax::Ipfw => None,
        Syntax::Ppp => Some(ppp::detect(source.text()).unwrap_or(Format::Filters)),
    };
    let Some(format) = format else {
        if opts.filter_set.is_some() || opts.label.is_some() {
            return Err(LoadError(format!(
                "--filter-set is for ppp filter files, and {name} reads as ipfw rules (--syntax ppp to say otherwise)"
            )));
        }
        let ast =
            weir_rules::parse_source(source, names).map_err(|e| rendered(name, source, &e))?;
        return compile(&ast, names, compile_opts).map_err(|e| rendered(name, source, &e));
    };
    let set = opts.filter_set.ok_or_else(|| {
        LoadError(format!(
            "{name} is a ppp filter file: say which set decides with --filter-set in|out|dial|alive"
        ))
    })?;
    let loaded = match (format, opts.label.as_deref()) {
        (Format::Filters, _) => ppp::parse_source(source, names),
        (Format::Conf, Some(label)) => ppp::parse_conf_source(source, label, names),
        (Format::Conf, None) => {
            return Err(LoadError(format!(
                "{name} is a ppp.conf: say which label's filters decide with --label NAME (labels with filters: {})",
                ppp::conf_labels(source.text()).join(", ")
            )))
        }
    }
    .map_err(|e| rendered(name, source, &e))?;
    let t = ppp::translate(&loaded.filters, set, &Bindings::default(), names)
        .map_err(|e| rendered(name, source, &e))?;
    compile(&t.ruleset, names, compile_opts).map_err(|e| rendered(name, source, &e))
}

/// `--table NAME=FILE` tables; errors as `FILE:LINE:COL: message`.
fn tables(specs: &[(String, String)]) -> Result<Vec<(String, weir_table::Builder)>, LoadError> {
    let mut out: Vec<(String, weir_table::Builder)> = Vec::new();
    for (name, path) in specs {
        if out.iter().any(|(n, _)| n == name) {
            return Err(LoadError(format!("--table {name} given twice")));
        }
        let bytes = read_file(path).map_err(|e| LoadError(format!("--table {name}: {}", e.0)))?;
        let source = Source::from_vec(bytes);
        let builder = weir_table::parse_table_source(name, &source).map_err(|errors| {
            let lines: Vec<String> = errors.iter().map(|e| format!("{path}:{e}")).collect();
            LoadError(lines.join("\n"))
        })?;
        out.push((name.clone(), builder));
    }
    Ok(out)
}
