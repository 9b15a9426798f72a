//! Debian's `prometheus` package as a test oracle: finding its tools, and
//! `promtool check metrics`. Shared by tests/metrics_server.rs and
//! crates/weir/tests/inline.rs (which includes this file by path).
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The executable `name` (from Debian's `prometheus` package) on PATH;
/// without it, says loudly that `test` is skipped.
pub fn tool(name: &str, test: &str) -> Option<PathBuf> {
    let found = std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        eprintln!(
            "\n!!!!!!!! SKIPPED {test}: {name} is not on PATH; \
             install it (apt-get install prometheus) !!!!!!!!\n"
        );
    }
    found
}

/// `promtool check metrics` has nothing to say about `text`.
pub fn promtool_check(promtool: &Path, text: &str) {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(text.as_bytes()).expect("feed promtool");
    drop(stdin);
    let out = child.wait_with_output().expect("promtool");
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}\n{}{}\n--- the text:\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
