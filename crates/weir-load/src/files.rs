//! Files the user names: rule, table and hosts files, `-` for stdin.

use crate::LoadError;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use weir_rules::Source;

/// Reads a file the user gave, or stdin for `-`.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, LoadError> {
    let mut bytes = Vec::new();
    let res = if path.as_os_str() == "-" {
        io::stdin().read_to_end(&mut bytes)
    } else {
        File::open(path).and_then(|mut f| f.read_to_end(&mut bytes))
    };
    res.map_err(|e| LoadError::Usage(format!("{}: {e}", path.display())))?;
    Ok(bytes)
}

/// Reads a rule, table or hosts file as people save it: a byte-order
/// mark, CRLF line ends and non-UTF-8 comments are fine ([`Source`]).
pub fn read_source(path: &Path) -> Result<Source<'static>, LoadError> {
    Ok(Source::from_vec(read_bytes(path)?))
}
