//! The Python arguments of `Ruleset.load` and `Ruleset.parse` as the
//! loader's options (`weir_load`, which `weir` itself loads with: the
//! same syntax detection, ppp sets and labels, tables, `me`, messages).

use pyo3::exceptions::PyValueError;
use pyo3::PyResult;
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use weir_engine::Engine;
use weir_load::{LoadError, Options, PppOptions, Syntax};
use weir_rules::ppp::FilterSet;
use weir_rules::Names;

/// Where the rules come from.
pub enum Rules {
    Path(PathBuf),
    /// Text given in Python, named `<string>` in messages.
    Text(String),
}

/// Options from the keyword arguments; a value no flag of `weir` takes
/// raises `ValueError`.
pub fn options(
    tables: Option<HashMap<String, String>>,
    syntax: &str,
    filter_set: Option<&str>,
    label: Option<String>,
    me: Option<Vec<String>>,
    default_allow: bool,
) -> PyResult<Options> {
    let syntax = match syntax {
        "auto" => Syntax::Auto,
        "ipfw" => Syntax::Ipfw,
        "ppp" => Syntax::Ppp,
        other => {
            return Err(PyValueError::new_err(format!(
                "syntax must be auto, ipfw or ppp, not {other:?}"
            )))
        }
    };
    let filter_set = filter_set
        .map(|w| {
            FilterSet::from_word(w).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "filter_set must be in, out, dial or alive, not {w:?}"
                ))
            })
        })
        .transpose()?;
    let me = me
        .unwrap_or_default()
        .iter()
        .map(|a| {
            a.parse::<IpAddr>()
                .map_err(|_| PyValueError::new_err(format!("me: {a:?} is not an IP address")))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let mut tables: Vec<(String, PathBuf)> = tables
        .unwrap_or_default()
        .into_iter()
        .map(|(name, file)| (name, PathBuf::from(file)))
        .collect();
    tables.sort();
    Ok(Options {
        syntax,
        ppp: PppOptions {
            filter_set,
            label,
            ..PppOptions::default()
        },
        tables,
        default_allow,
        me,
        ..Options::default()
    })
}

/// Compiles the rules into an engine, as `weir run` would with the same
/// flags. Notes (a ppp rule ppp would ignore) are not shown.
pub fn engine(rules: Rules, opts: &Options) -> Result<Engine, LoadError> {
    let names = Names::system();
    let mut quiet = |_: &str| Ok(());
    let loaded = match rules {
        Rules::Path(path) => weir_load::load(&path, opts, &names, &mut quiet)?,
        Rules::Text(text) => {
            weir_load::load_bytes("<string>", text.into_bytes(), opts, &names, &mut quiet)?
        }
    };
    Ok(loaded.builder().build())
}
