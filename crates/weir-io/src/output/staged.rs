//! Output files written under a temporary name and renamed into place only
//! when the run succeeded, so a failed run leaves no file that looks whole.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::OutputError;

/// Where an output's bytes go.
#[derive(Debug)]
pub enum Sink {
    Stdout(io::Stdout),
    File(File),
}

impl Write for Sink {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Stdout(w) => w.write(buf),
            Sink::File(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout(w) => w.flush(),
            Sink::File(w) => w.flush(),
        }
    }
}

/// What makes an output visible once it is complete. Dropped without
/// [`commit`](Self::commit), it removes the temporary file.
#[derive(Debug)]
pub struct Pending {
    name: String,
    /// The temporary file and the target it becomes; `None` for stdout,
    /// devices and pipes, which are written directly.
    rename: Option<(PathBuf, PathBuf)>,
}

impl Pending {
    /// The output's name as the user gave it (`stdout` for `-`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the output is a file that appears only on commit.
    pub fn is_staged(&self) -> bool {
        self.rename.is_some()
    }

    /// Renames the temporary file over the target. Every writer of the
    /// output must have flushed first.
    pub fn commit(mut self) -> Result<(), OutputError> {
        if let Some((temp, target)) = self.rename.take() {
            if let Err(e) = fs::rename(&temp, &target) {
                let _ = fs::remove_file(&temp);
                return Err(OutputError::new(self.name.clone(), e));
            }
        }
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some((temp, _)) = self.rename.take() {
            let _ = fs::remove_file(temp);
        }
    }
}

/// Opens `path` for writing (`-` is stdout). A regular file, or one that
/// does not exist yet, is written as `.NAME.weir-PID-N.tmp` in the target's
/// directory (same file system, so the rename is atomic) with the target's
/// permissions, and becomes `NAME` on [`Pending::commit`]. A symlink is
/// followed, so the file it points to is replaced, not the link.
pub fn create(path: &Path) -> Result<(Sink, Pending), OutputError> {
    let name = if path.as_os_str() == "-" {
        "stdout".to_owned()
    } else {
        path.display().to_string()
    };
    let fail = |e| OutputError::new(name.clone(), e);
    if path.as_os_str() == "-" {
        let pending = Pending { name, rename: None };
        return Ok((Sink::Stdout(io::stdout()), pending));
    }
    let target = resolve(path).map_err(fail)?;
    let existing = match fs::metadata(&target) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(fail(e)),
    };
    match &existing {
        Some(m) if !m.is_file() => {
            // A device or a pipe: nothing to replace, write straight in.
            // (A directory fails here, with the system's own message.)
            let file = OpenOptions::new().write(true).open(&target).map_err(fail)?;
            return Ok((Sink::File(file), Pending { name, rename: None }));
        }
        // A file we may not write stays ours to leave alone, though its
        // directory would let a rename replace it.
        Some(_) => drop(OpenOptions::new().write(true).open(&target).map_err(fail)?),
        None => {}
    }
    let temp = temp_beside(&target);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(fail)?;
    let pending = Pending {
        name,
        rename: Some((temp, target)),
    };
    if let Some(m) = existing {
        file.set_permissions(m.permissions())
            .map_err(|e| OutputError::new(pending.name.clone(), e))?;
    }
    Ok((Sink::File(file), pending))
}

/// `DIR/.NAME.weir-PID-N.tmp` for target `DIR/NAME`.
fn temp_beside(target: &Path) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let temp = format!(".{name}.weir-{}-{n}.tmp", std::process::id());
    target.with_file_name(temp)
}

/// Follows symlinks to the file a path names (which need not exist yet),
/// at most 40 of them, as the kernel does.
pub(super) fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(p),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}
