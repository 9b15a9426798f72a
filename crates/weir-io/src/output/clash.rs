//! Refuses an output that is an input, or another output, under any name.
//!
//! Names are compared by what they open: the device and inode of an
//! existing file (after symlinks; `-` is stdin or stdout, whatever they
//! are), and for a file yet to be made, its directory's device and inode
//! with its own name. Character devices (a terminal, `/dev/null`) are
//! shared freely: writing there twice loses nothing.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, Metadata};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::staged::resolve;

/// A file a command reads or writes, as the user named it: `role` is how
/// messages call it (`-r`, `--table blocklist`, `the ruleset`, `--json`),
/// `path` is `-` for stdin (an input) or stdout (an output).
#[derive(Clone, Copy, Debug)]
pub struct Endpoint<'a> {
    pub role: &'a str,
    pub path: &'a Path,
}

impl<'a> Endpoint<'a> {
    pub fn new(role: &'a str, path: &'a Path) -> Endpoint<'a> {
        Endpoint { role, path }
    }

    fn is_std(&self) -> bool {
        self.path.as_os_str() == "-"
    }
}

/// Two endpoints that are one file.
#[derive(Debug)]
pub struct Clash {
    output: String,
    other: String,
    other_is_input: bool,
}

impl fmt::Display for Clash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.other_is_input {
            write!(
                f,
                "{} is the same file as {}; an output never overwrites an input",
                self.output, self.other
            )
        } else {
            write!(
                f,
                "{} is the same file as {}; two outputs cannot share a file",
                self.output, self.other
            )
        }
    }
}

impl std::error::Error for Clash {}

/// What a name opens.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Id {
    /// An existing file, directory, pipe or socket.
    File { dev: u64, ino: u64 },
    /// A file an output will create: its directory and name.
    New { dev: u64, ino: u64, name: OsString },
}

/// Checks every output against every input and against every other output,
/// before anything is opened for writing. A name that cannot be looked up
/// is passed over: opening it fails later, with its own message.
pub fn check_clashes(inputs: &[Endpoint<'_>], outputs: &[Endpoint<'_>]) -> Result<(), Clash> {
    let inputs: Vec<(Endpoint<'_>, Id)> = inputs
        .iter()
        .filter_map(|e| input_id(e).map(|id| (*e, id)))
        .collect();
    let mut seen: Vec<(Endpoint<'_>, Id)> = Vec::new();
    for out in outputs {
        let Some(id) = output_id(out) else { continue };
        if let Some((input, _)) = inputs.iter().find(|(_, i)| *i == id) {
            return Err(clash(out, input, true));
        }
        if let Some((other, _)) = seen.iter().find(|(_, i)| *i == id) {
            return Err(clash(out, other, false));
        }
        seen.push((*out, id));
    }
    Ok(())
}

fn clash(output: &Endpoint<'_>, other: &Endpoint<'_>, other_is_input: bool) -> Clash {
    Clash {
        output: describe(output, "stdout"),
        other: describe(other, if other_is_input { "stdin" } else { "stdout" }),
        other_is_input,
    }
}

/// `-w pass.pcap`, `the ruleset rules.conf`, `--json (stdout)`.
fn describe(e: &Endpoint<'_>, std_name: &str) -> String {
    if e.is_std() {
        if e.role == "-" || e.role.is_empty() {
            std_name.to_owned()
        } else {
            format!("{} ({std_name})", e.role)
        }
    } else {
        format!("{} {}", e.role, e.path.display())
    }
}

fn input_id(e: &Endpoint<'_>) -> Option<Id> {
    let meta = if e.is_std() {
        std_meta(io::stdin().as_fd())
    } else {
        fs::metadata(e.path).ok()
    }?;
    id_of(&meta)
}

fn output_id(e: &Endpoint<'_>) -> Option<Id> {
    if e.is_std() {
        return id_of(&std_meta(io::stdout().as_fd())?);
    }
    let target = resolve(e.path).ok()?;
    match fs::metadata(&target) {
        Ok(meta) => id_of(&meta),
        Err(_) => new_id(&target),
    }
}

fn std_meta(fd: std::os::fd::BorrowedFd<'_>) -> Option<Metadata> {
    File::from(fd.try_clone_to_owned().ok()?).metadata().ok()
}

/// An existing file's identity; none for a character device, which any
/// number of readers and writers may share.
fn id_of(meta: &Metadata) -> Option<Id> {
    (!meta.file_type().is_char_device()).then(|| Id::File {
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

fn new_id(target: &Path) -> Option<Id> {
    let name = target.file_name()?.to_os_string();
    let dir: PathBuf = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let meta = fs::metadata(dir).ok()?;
    Some(Id::New {
        dev: meta.dev(),
        ino: meta.ino(),
        name,
    })
}
