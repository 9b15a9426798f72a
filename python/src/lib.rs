//! `weir._weir`, the extension behind the `weir` Python package: a
//! ruleset loaded once, replays through weir's own pipeline with the GIL
//! released, and results as Arrow tables handed to pyarrow without a
//! Python object per packet.
#![deny(unsafe_code)]

mod arrow_py;
mod counters;
mod load;
mod replay;

use load::Rules;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use replay::{Failed, Input};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use weir_engine::Engine;
use weir_load::{LoadError, Options};

create_exception!(weir, WeirError, PyException, "An error weir reports.");
create_exception!(
    weir,
    RulesetError,
    WeirError,
    "A ruleset (or table file) that does not load: `file:line:col: message`, as `weir` prints it."
);
create_exception!(
    weir,
    CaptureError,
    WeirError,
    "A capture that cannot be read (missing, not a capture, corrupt), as `weir run` says it."
);

/// A compiled ruleset, ready to replay captures.
#[pyclass(module = "weir")]
struct Ruleset {
    engine: Mutex<Engine>,
    me: Vec<IpAddr>,
}

/// What one replay gave: `counters` and `verdicts` are `pyarrow.Table`s,
/// `summary` a dict.
#[pyclass(module = "weir", get_all)]
struct Replay {
    counters: Py<PyAny>,
    summary: Py<PyAny>,
    verdicts: Py<PyAny>,
}

fn ruleset_error(e: LoadError) -> PyErr {
    RulesetError::new_err(e.to_string())
}

impl Ruleset {
    fn build(py: Python<'_>, rules: Rules, opts: Options) -> PyResult<Ruleset> {
        let engine = py
            .detach(|| load::engine(rules, &opts))
            .map_err(ruleset_error)?;
        Ok(Ruleset {
            engine: Mutex::new(engine),
            me: opts.me,
        })
    }
}

#[pymethods]
impl Ruleset {
    /// Loads a rule file (ipfw rules, or FreeBSD ppp filters with
    /// `filter_set`), as `weir run FILE` does.
    #[staticmethod]
    #[pyo3(signature = (path, tables=None, syntax="auto", filter_set=None, me=None, default_allow=false, label=None))]
    // One argument per Python keyword.
    #[allow(clippy::too_many_arguments)]
    fn load(
        py: Python<'_>,
        path: std::path::PathBuf,
        tables: Option<HashMap<String, String>>,
        syntax: &str,
        filter_set: Option<&str>,
        me: Option<Vec<String>>,
        default_allow: bool,
        label: Option<String>,
    ) -> PyResult<Ruleset> {
        let opts = load::options(tables, syntax, filter_set, label, me, default_allow)?;
        Ruleset::build(py, Rules::Path(path), opts)
    }

    /// Compiles rules given as text; errors name the file `<string>`.
    #[staticmethod]
    #[pyo3(signature = (text, tables=None, syntax="auto", filter_set=None, me=None, default_allow=false, label=None))]
    // One argument per Python keyword.
    #[allow(clippy::too_many_arguments)]
    fn parse(
        py: Python<'_>,
        text: &str,
        tables: Option<HashMap<String, String>>,
        syntax: &str,
        filter_set: Option<&str>,
        me: Option<Vec<String>>,
        default_allow: bool,
        label: Option<String>,
    ) -> PyResult<Ruleset> {
        let opts = load::options(tables, syntax, filter_set, label, me, default_allow)?;
        Ruleset::build(py, Rules::Text(text.to_owned()), opts)
    }

    /// The number of rules, the implicit last one included.
    fn __len__(&self) -> usize {
        lock(&self.engine).program().rules.len()
    }

    /// Replays a capture (a path, or the bytes of a pcap or pcapng) with
    /// fresh counters; `verdicts=False` skips the per-packet table.
    #[pyo3(signature = (capture, verdicts=true))]
    fn replay(
        &self,
        py: Python<'_>,
        capture: &Bound<'_, PyAny>,
        verdicts: bool,
    ) -> PyResult<Replay> {
        let input = if let Ok(b) = capture.cast::<PyBytes>() {
            Input::Bytes(b.as_bytes().to_vec())
        } else if let Ok(p) = capture.extract::<std::path::PathBuf>() {
            Input::Path(p.display().to_string())
        } else {
            return Err(PyTypeError::new_err("capture must be a path or bytes"));
        };
        let engine = lock(&self.engine).replica();
        let me = self.me.clone();
        let done = py
            .detach(move || replay::replay(&engine, &me, input, verdicts))
            .map_err(|Failed(why)| CaptureError::new_err(why))?;
        let arrow_error = |e: arrow_schema::ArrowError| WeirError::new_err(e.to_string());
        let counters = counters::batch(&done.engine).map_err(arrow_error)?;
        let counters = arrow_py::table(py, counters::schema(), vec![counters])?;
        let s = replay::summary(&done.engine);
        let summary = PyDict::new(py);
        summary.set_item("read", s.packets)?;
        summary.set_item("passed", s.passed)?;
        summary.set_item("dropped", s.dropped)?;
        summary.set_item("malformed", s.malformed)?;
        summary.set_item("non_ip", s.non_ip)?;
        let verdicts = match done.verdicts {
            Some(batches) => {
                let schema = weir_pipeline::verdict_table::schema();
                arrow_py::table(py, schema, batches)?.unbind()
            }
            None => py.None(),
        };
        Ok(Replay {
            counters: counters.unbind(),
            summary: summary.into_any().unbind(),
            verdicts,
        })
    }
}

fn lock(m: &Mutex<Engine>) -> std::sync::MutexGuard<'_, Engine> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[pymodule]
fn _weir(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Ruleset>()?;
    m.add_class::<Replay>()?;
    m.add("WeirError", py.get_type::<WeirError>())?;
    m.add("RulesetError", py.get_type::<RulesetError>())?;
    m.add("CaptureError", py.get_type::<CaptureError>())?;
    Ok(())
}
