//! Outputs never lie or clobber: a closed pipe ends any command quietly,
//! any other write error exits 1 naming the output, an output that is an
//! input (or another output) under any name is refused before anything is
//! written, and a failed run leaves no file that looks complete.

mod common;

use common::*;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// The write end of a pipe whose read end is already closed: every write
/// to it fails with EPIPE, deterministically.
fn closed_pipe() -> Stdio {
    let (read, write) = std::io::pipe().expect("pipe(2)");
    drop(read);
    Stdio::from(write)
}

/// `/dev/full`: every write fails with ENOSPC.
fn full() -> Stdio {
    Stdio::from(File::options().write(true).open("/dev/full").unwrap())
}

/// Where a command's stdout or stderr goes in a case.
#[derive(Clone, Copy, Debug)]
enum Sink {
    ClosedPipe,
    Full,
}

impl Sink {
    fn stdio(self) -> Stdio {
        match self {
            Sink::ClosedPipe => closed_pipe(),
            Sink::Full => full(),
        }
    }
}

/// Runs weir with stdout sent to `sink`; stderr captured.
fn stdout_to(sink: Sink, args: &[&OsStr]) -> Output {
    Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(sink.stdio())
        .stderr(Stdio::piped())
        .output()
        .expect("spawn weir")
}

/// Runs weir with stderr sent to `sink`; stdout captured.
fn stderr_to(sink: Sink, args: &[&OsStr]) -> Output {
    Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(sink.stdio())
        .output()
        .expect("spawn weir")
}

fn os<'a>(args: &'a [&'a str]) -> Vec<&'a OsStr> {
    args.iter().map(OsStr::new).collect()
}

/// Every command that prints to stdout, with what it needs.
fn stdout_commands(dir: &Path) -> Vec<Vec<String>> {
    let trace = gen_trace(dir, "t.pcap", 300, 3).display().to_string();
    let rules = demo_rules().display().to_string();
    let cb = dir.join("cb.rules").display().to_string();
    let cb_trace = dir.join("cb.trace").display().to_string();
    weir_ok([
        "gen-rules",
        "--like",
        "acl",
        "-n",
        "20",
        "-o",
        &cb,
        "--trace",
        &cb_trace,
        "--trace-n",
        "100",
    ]);
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    vec![
        s(&["run", &rules, "-r", &trace, "--json", "-q"]),
        s(&["run", &rules, "-r", &trace, "--counters", "-q"]),
        s(&["run", &rules, "-r", &trace, "--unmatched", "-q"]),
        s(&["run", &rules, "-r", &trace, "-w", "-", "-q"]),
        s(&["run", &rules, "-r", &trace, "--verdicts", "-", "-q"]),
        s(&["check", "--print", &rules]),
        s(&["check", "--stats", &rules]),
        s(&["check", "--stats", "--json", &rules]),
        s(&["explain", &rules, "-r", &trace, "--packet", "5"]),
        s(&["bench", &rules, "-r", &trace, "--rounds", "1"]),
        s(&["bench", &rules, "-r", &trace, "--rounds", "1", "--json"]),
        s(&["demo", "-n", "2000"]),
        s(&["demo", "-n", "2000", "--json"]),
        s(&["gen", "-n", "100", "-o", "-"]),
        s(&["gen-rules", "--like", "fw", "-n", "10"]),
        s(&["import", "classbench", &cb]),
        s(&["classbench", &cb, &cb_trace, "--iter", "1"]),
        s(&["--help"]),
    ]
}

#[test]
fn a_closed_stdout_pipe_ends_every_command_quietly() {
    let dir = tmp();
    for cmd in stdout_commands(dir.path()) {
        let args: Vec<&OsStr> = cmd.iter().map(OsStr::new).collect();
        let out = stdout_to(Sink::ClosedPipe, &args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "weir {cmd:?} | (closed): {}",
            stderr(&out)
        );
        let err = stderr(&out);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{cmd:?}: {err}"
        );
    }
}

#[test]
fn a_full_stdout_exits_1_naming_it() {
    let dir = tmp();
    for cmd in stdout_commands(dir.path()) {
        let args: Vec<&OsStr> = cmd.iter().map(OsStr::new).collect();
        let out = stdout_to(Sink::Full, &args);
        assert_eq!(out.status.code(), Some(1), "weir {cmd:?} > /dev/full");
        assert!(
            stderr(&out).ends_with("weir: stdout: No space left on device\n"),
            "weir {cmd:?} > /dev/full: {}",
            stderr(&out)
        );
    }
}

/// A ruleset whose rule 100 logs (to stderr unless told otherwise).
fn logging_rules(dir: &Path) -> PathBuf {
    write_rules(
        dir,
        "100 count log ip from any to any\n200 allow ip from any to any\n",
    )
}

/// `weir run RULES -r TRACE -w PASS EXTRA…` over 500 generated packets,
/// every one passed, stderr sent to `sink`.
fn run_to_stderr(sink: Sink, dir: &Path, rules: &Path, pass: &Path, extra: &[&str]) -> Output {
    let trace = gen_trace(dir, "t.pcap", 500, 4);
    let mut args = vec![
        OsStr::new("run"),
        rules.as_os_str(),
        OsStr::new("-r"),
        trace.as_os_str(),
        OsStr::new("-w"),
        pass.as_os_str(),
        OsStr::new("--malformed"),
        OsStr::new("pass"),
    ];
    args.extend(extra.iter().map(OsStr::new));
    stderr_to(sink, &args)
}

#[test]
fn log_lines_and_the_summary_to_a_closed_stderr_end_quietly_and_keep_the_files() {
    let dir = tmp();
    let d = dir.path();
    let pass = d.join("pass.pcap");
    let out = run_to_stderr(Sink::ClosedPipe, d, &logging_rules(d), &pass, &[]);
    assert_eq!(out.status.code(), Some(0));
    // The run went to the end: every packet is in the file.
    assert_eq!(read_capture(&pass).frames.len(), 500);
}

#[test]
fn log_lines_to_a_full_stderr_fail_the_run_and_keep_no_file() {
    let dir = tmp();
    let d = dir.path();
    let pass = d.join("pass.pcap");
    let out = run_to_stderr(Sink::Full, d, &logging_rules(d), &pass, &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!pass.exists(), "no pass.pcap from a failed run");
    assert!(out.stdout.is_empty(), "no report for a failed run");
    let left = fs::read_dir(d).unwrap().count();
    assert_eq!(left, 2, "the trace and the rules; no temporary file");
    // Without log lines, a full stderr fails only at the closing summary,
    // after the outputs are complete: they are kept, and the exit is 1.
    let quiet_rules = write_rules(d, "allow ip from any to any\n");
    let out = run_to_stderr(Sink::Full, d, &quiet_rules, &pass, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(read_capture(&pass).frames.len(), 500);
}

#[test]
fn a_full_output_file_exits_1_and_the_failed_run_keeps_nothing() {
    let dir = tmp();
    let d = dir.path();
    let trace = gen_trace(d, "t.pcap", 5000, 2);
    let old = d.join("pass.pcap");
    fs::write(&old, "yesterday's pass.pcap").unwrap();
    let drop = d.join("drop.pcap");
    let out = weir(
        [
            "run",
            &demo_rules().display().to_string(),
            "-r",
            &trace.display().to_string(),
            "-w",
            &old.display().to_string(),
            "--drop-out",
            &drop.display().to_string(),
            "--verdicts",
            "/dev/full",
        ]
        .map(OsStr::new),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.ends_with("weir: /dev/full: No space left on device\n"),
        "{err}"
    );
    assert!(
        !err.contains("packets read"),
        "no summary for what was not written: {err}"
    );
    assert!(
        err.contains(&format!(
            "not written, as the run did not finish: {}, {}",
            old.display(),
            drop.display()
        )),
        "{err}"
    );
    assert_eq!(fs::read(&old).unwrap(), b"yesterday's pass.pcap");
    assert!(!drop.exists());
    let left: Vec<_> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "only t.pcap and the old pass.pcap: {left:?}");
}

/// A tmpfs of `kib` KiB mounted on a new directory, unmounted on drop;
/// `None` (said loudly) where mounting is not allowed.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn new(kib: u32) -> Option<SmallDisk> {
        let dir = tmp();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "weir-test"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!(
                "\n!!!!!!!! SKIPPED: cannot mount a tmpfs here (needs root); \
                 the full-disk test did NOT run. !!!!!!!!\n"
            );
            return None;
        }
        Some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_disk_names_the_file_and_leaves_no_partial_output() {
    let Some(disk) = SmallDisk::new(256) else {
        return;
    };
    let dir = tmp();
    // About 1.6 MB of capture: every output overflows 256 KiB.
    let trace = gen_trace(dir.path(), "t.pcap", 5000, 6);
    let on_disk = |name: &str| disk.path().join(name);
    let out = weir([
        "run".as_ref(),
        demo_rules().as_os_str(),
        "-r".as_ref(),
        trace.as_os_str(),
        "-w".as_ref(),
        on_disk("pass.pcap").as_os_str(),
        "--drop-out".as_ref(),
        on_disk("drop.pcap").as_os_str(),
        "--verdicts".as_ref(),
        on_disk("v.csv").as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.starts_with(&format!("weir: {}/", disk.path().display()))
            && last.ends_with(": No space left on device"),
        "names the file that filled the disk: {err}"
    );
    assert!(err.contains("weir: stopped after packet "), "{err}");
    assert!(!err.contains("packets read"), "{err}");
    let left: Vec<_> = fs::read_dir(disk.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing left on the full disk: {left:?}");
}

#[test]
fn an_output_that_is_an_input_under_any_name_is_refused_and_nothing_is_written() {
    let dir = tmp();
    let d = dir.path();
    let trace = gen_trace(d, "in.pcap", 200, 8);
    let rules = d.join("my.rules");
    fs::copy(demo_rules(), &rules).unwrap();
    let table = d.join("t.txt");
    fs::write(&table, "10.0.0.0/8\n").unwrap();
    fs::hard_link(&trace, d.join("hl.pcap")).unwrap();
    std::os::unix::fs::symlink(&rules, d.join("sym.rules")).unwrap();
    let before: Vec<(PathBuf, Vec<u8>)> = [&trace, &rules, &table]
        .iter()
        .map(|p| (p.to_path_buf(), fs::read(p).unwrap()))
        .collect();
    let new = d.join("new.pcap");
    let cases: [(&str, PathBuf, &str); 5] = [
        ("-w", rules.clone(), "the ruleset"),
        ("--verdicts", table.clone(), "--table t"),
        ("--log-file", rules.clone(), "the ruleset"),
        ("-w", d.join("hl.pcap"), "-r"),
        ("--annotate", d.join("sym.rules"), "the ruleset"),
    ];
    for (flag, target, input) in cases {
        let out = weir([
            "run".as_ref(),
            rules.as_os_str(),
            "-r".as_ref(),
            trace.as_os_str(),
            "--table".as_ref(),
            format!("t={}", table.display()).as_ref(),
            "--drop-out".as_ref(),
            new.as_os_str(),
            flag.as_ref(),
            target.as_os_str(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{flag} {}", target.display());
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!(
                "weir: {flag} {} is the same file as {input} ",
                target.display()
            )) && err.ends_with("; an output never overwrites an input\n"),
            "{err}"
        );
        assert!(
            !new.exists(),
            "refused before anything is opened for writing"
        );
        for (p, bytes) in &before {
            assert_eq!(&fs::read(p).unwrap(), bytes, "{} untouched", p.display());
        }
    }
}

#[test]
fn stdout_aliases_are_outputs_too() {
    let dir = tmp();
    let d = dir.path();
    let trace = gen_trace(d, "in.pcap", 200, 8);
    let rules = demo_rules();
    let run = |extra: &[&OsStr], stdout: Stdio| {
        Command::new(bin())
            .arg("run")
            .arg(&rules)
            .arg("-r")
            .arg(&trace)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    };
    // -w /dev/stdout beside --json, with stdout a file: one file, refused.
    let report = d.join("report.txt");
    let out = run(
        &os(&["-w", "/dev/stdout", "--json"]),
        Stdio::from(File::create(&report).unwrap()),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("two outputs cannot share a file"));
    // `-w -` appending into the capture being read.
    let size = fs::metadata(&trace).unwrap().len();
    let append = File::options().append(true).open(&trace).unwrap();
    let out = run(&os(&["-w", "-"]), Stdio::from(append));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("weir: -w (stdout) is the same file as -r "),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::metadata(&trace).unwrap().len(), size);
}

#[test]
fn other_commands_refuse_clashing_outputs() {
    let dir = tmp();
    let d = dir.path();
    let trace = gen_trace(d, "t.pcap", 100, 1);
    let cb = d.join("cb.rules").into_os_string();
    let arg = |a: &str| OsString::from(a);
    // gen-rules: the set and its trace in one file.
    let out = weir([
        arg("gen-rules"),
        arg("--like"),
        arg("acl"),
        arg("-n"),
        arg("5"),
        arg("-o"),
        cb.clone(),
        arg("--trace"),
        cb.clone(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("two outputs cannot share a file"));
    assert!(!Path::new(&cb).exists());
    // bench --plot over its own trace.
    let out = weir([
        arg("bench"),
        demo_rules().into_os_string(),
        arg("-r"),
        trace.clone().into_os_string(),
        arg("--plot"),
        trace.clone().into_os_string(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("an output never overwrites an input"));
    assert_eq!(
        read_capture(&trace).frames.len(),
        100,
        "the trace is intact"
    );
}

#[test]
fn a_pcapng_that_fails_before_its_first_interface_writes_no_capture() {
    let dir = tmp();
    let d = dir.path();
    // A section header, then a block whose length is not a multiple of 4.
    let mut bytes = Vec::new();
    for v in [0x0a0d_0d0au32, 28, 0x1a2b_3c4d, 1, u32::MAX, u32::MAX, 28] {
        bytes.extend(v.to_le_bytes());
    }
    bytes.extend([1, 0, 0, 0, 13, 0, 0, 0, 0, 0, 0, 0]);
    let input = d.join("broken.pcapng");
    fs::write(&input, &bytes).unwrap();
    let (ann, pass, csv) = (d.join("a.pcapng"), d.join("p.pcapng"), d.join("v.csv"));
    let out = weir([
        "run".as_ref(),
        demo_rules().as_os_str(),
        "-r".as_ref(),
        input.as_os_str(),
        "--annotate".as_ref(),
        ann.as_os_str(),
        "-w".as_ref(),
        pass.as_os_str(),
        "--verdicts".as_ref(),
        csv.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "weir: {} not written: the capture described no interface",
            ann.display()
        )) && err.ends_with("byte offset 28: bad pcapng block length 13\n"),
        "{err}"
    );
    assert!(
        !ann.exists() && !pass.exists(),
        "no pcapng without an interface"
    );
    // The verdicts file is honest as it is: a header and no packets.
    assert_eq!(
        fs::read_to_string(&csv).unwrap(),
        "index,rule,action,note\n"
    );
}

#[test]
fn live_capture_refuses_clashing_outputs_before_opening_a_socket() {
    let dir = tmp();
    let rules = dir.path().join("r.rules");
    fs::write(&rules, "allow ip from any to any\n").unwrap();
    let out = weir([
        "capture".as_ref(),
        "-i".as_ref(),
        "lo".as_ref(),
        rules.as_os_str(),
        "-w".as_ref(),
        rules.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("an output never overwrites an input"));
    assert_eq!(
        fs::read_to_string(&rules).unwrap(),
        "allow ip from any to any\n"
    );
}
