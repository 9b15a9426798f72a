//! `-w` of `search` and `diff`: checked before anything is read, and the
//! witness packets written as pcapng.

use crate::cli::EngineArgs;
use crate::{outputs, Failure};
use std::path::{Path, PathBuf};
use weir_analysis::{Analyser, Point};

/// Refuses a `-w` that is an input (a ruleset, a table, the trace) or
/// stdout, where the answer goes, before anything is read.
pub fn check_write(
    rules: &[&Path],
    args: &EngineArgs,
    trace: Option<&Path>,
    w: &Option<PathBuf>,
) -> Result<(), Failure> {
    for r in rules {
        outputs::check_filter_outputs(
            r,
            &args.tables,
            trace,
            &[("-w", w)],
            &[(true, "the answer")],
        )?;
    }
    Ok(())
}

/// Witnesses as pcapng in `path`, which appears once complete.
pub fn write_witnesses<'p>(
    path: &Path,
    a: &Analyser,
    points: impl IntoIterator<Item = &'p Point>,
) -> Result<(), Failure> {
    let mut out = outputs::open(path)?;
    let written = weir_analysis::witness::write_pcapng(&mut out.w, &a.interface_names(), points);
    written.map_err(|e| out.fail(e))?;
    Ok(out.commit()?)
}
