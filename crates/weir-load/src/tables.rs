//! Lookup tables from files (`--table NAME=FILE`).

use crate::files::read_source;
use crate::LoadError;
use std::path::PathBuf;

/// Reads each table; errors as `FILE:LINE:COL: message`.
pub fn load_tables(
    specs: &[(String, PathBuf)],
) -> Result<Vec<(String, weir_table::Builder)>, LoadError> {
    let mut out: Vec<(String, weir_table::Builder)> = Vec::new();
    for (name, path) in specs {
        if out.iter().any(|(n, _)| n == name) {
            return Err(LoadError::Usage(format!("--table {name} given twice")));
        }
        let source = read_source(path).map_err(|e| match e {
            LoadError::Usage(why) => LoadError::Usage(format!("--table {name}: {why}")),
            other => other,
        })?;
        let builder = weir_table::parse_table_source(name, &source).map_err(|errors| {
            let lines: Vec<String> = errors
                .iter()
                .map(|e| format!("{}:{e}", path.display()))
                .collect();
            LoadError::Rules(lines.join("\n"))
        })?;
        out.push((name.clone(), builder));
    }
    Ok(out)
}
