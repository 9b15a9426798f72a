//! Golden verdicts: each ruleset in tests/golden/*.rules over every file of
//! the tcpdump corpus, compared line by line with tests/golden/NAME.verdicts.
//!
//! Line format: `FILE<TAB>index,rule,action,note` per packet, or
//! `FILE<TAB>error: <first stderr line>` when weir cannot read the file, or
//! `FILE<TAB>no packets` for a readable capture without packets.
//! `WEIR_BLESS=1 cargo test -p weir --test golden` rewrites the expected
//! files; review the diff before committing it.

mod common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const RULESETS: [&str; 3] = ["web", "mixed", "v6"];

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Every file of the corpus, sorted by name. None is skipped.
fn corpus_files() -> Vec<PathBuf> {
    let dir = corpus_dir();
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {} unreadable ({e}); set WEIR_CORPUS", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(
        files.len() > 100,
        "corpus looks incomplete: {}",
        files.len()
    );
    files
}

/// The golden lines for one capture.
fn verdict_lines(rules: &Path, file: &Path, linear: bool) -> String {
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let out = Command::new(bin())
        .arg("run")
        .arg(rules)
        .arg("-r")
        .arg(file)
        .args(["--verdicts", "-", "-q", "--log-file", "/dev/null"])
        .args(linear.then_some("--linear"))
        .stdin(Stdio::null())
        .output()
        .expect("spawn weir");
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 verdicts");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut text = String::new();
    match out.status.code() {
        Some(0) => {
            let mut lines = stdout.lines();
            assert_eq!(lines.next(), Some("index,rule,action,note"), "{name}");
            for l in lines {
                text.push_str(&name);
                text.push('\t');
                text.push_str(l);
                text.push('\n');
            }
            assert!(stderr.is_empty(), "{name}: unexpected stderr {stderr}");
            if text.is_empty() {
                // Keep the file visible in the golden output.
                text = format!("{name}\tno packets\n");
            }
        }
        Some(1) => {
            // Packets before a corruption still get verdicts.
            for l in stdout.lines().skip(1) {
                text.push_str(&format!("{name}\t{l}\n"));
            }
            let first = stderr.lines().next().unwrap_or("");
            // Strip the path so the golden file does not depend on where
            // the corpus lives.
            let first = first.replace(&file.display().to_string(), &name);
            text.push_str(&format!("{name}\terror: {first}\n"));
        }
        other => panic!("{name}: weir exited {other:?}: {stderr}"),
    }
    text
}

/// Runs one ruleset over the whole corpus, a few files at a time in parallel.
fn actual(rules: &Path, linear: bool) -> String {
    let files = corpus_files();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(4)
        .min(16);
    let chunk = files.len().div_ceil(threads);
    let parts: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|c| {
                s.spawn(move || {
                    c.iter()
                        .map(|f| verdict_lines(rules, f, linear))
                        .collect::<String>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    parts.concat()
}

fn check(name: &str) {
    let rules = golden_dir().join(format!("{name}.rules"));
    let expected_path = golden_dir().join(format!("{name}.verdicts"));
    let got = actual(&rules, false);
    // The classifier only prunes: the linear walk must decide every packet
    // of the corpus the same way.
    let linear = actual(&rules, true);
    assert!(
        got == linear,
        "{name}: the classifier and --linear disagree"
    );
    if std::env::var_os("WEIR_BLESS").is_some_and(|v| v == "1") {
        fs::write(&expected_path, &got).expect("write golden file");
        return;
    }
    let want = fs::read_to_string(&expected_path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with WEIR_BLESS=1 to create it",
            expected_path.display()
        )
    });
    if got == want {
        return;
    }
    let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
    let mut diffs = Vec::new();
    for k in 0..g.len().max(w.len()) {
        let (a, b) = (w.get(k).copied(), g.get(k).copied());
        if a != b {
            diffs.push(format!(
                "line {}:\n  expected {}\n  actual   {}",
                k + 1,
                a.unwrap_or("<none>"),
                b.unwrap_or("<none>")
            ));
            if diffs.len() == 20 {
                break;
            }
        }
    }
    panic!(
        "{name}: verdicts differ from {} ({} vs {} lines); first differences:\n{}\n\
         If the change is intended, rerun with WEIR_BLESS=1 and review the diff.",
        expected_path.display(),
        w.len(),
        g.len(),
        diffs.join("\n")
    );
}

#[test]
fn golden_web() {
    check("web");
}

#[test]
fn golden_mixed() {
    check("mixed");
}

#[test]
fn golden_v6() {
    check("v6");
}

/// The golden files themselves stay sane: every corpus file appears, and
/// every verdict line names a rule of its ruleset (or `-`).
#[test]
fn golden_files_cover_the_corpus() {
    if std::env::var_os("WEIR_BLESS").is_some() {
        return;
    }
    let names: Vec<String> = corpus_files()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for set in RULESETS {
        let text = fs::read_to_string(golden_dir().join(format!("{set}.verdicts"))).unwrap();
        let rules = fs::read_to_string(golden_dir().join(format!("{set}.rules"))).unwrap();
        let mut numbers: Vec<String> = rules
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.bytes().all(|b| b.is_ascii_digit()))
            .map(str::to_owned)
            .collect();
        numbers.push("65535".into());
        let mut seen: Vec<&str> = Vec::new();
        for line in text.lines() {
            let (file, rest) = line.split_once('\t').expect("FILE<TAB>...");
            if seen.last() != Some(&file) {
                seen.push(file);
            }
            if rest.starts_with("error: ") || rest == "no packets" {
                continue;
            }
            let f: Vec<&str> = rest.split(',').collect();
            assert_eq!(f.len(), 4, "{line}");
            assert!(
                f[1] == "-" || numbers.iter().any(|n| n == f[1]),
                "{set}: unknown rule in {line}"
            );
        }
        // Every corpus file appears, in sorted order.
        assert_eq!(seen, names, "{set}: golden files must cover the corpus");
    }
}
