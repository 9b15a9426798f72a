//! Every command README.md shows is run here, so the README cannot drift.
//!
//! The harness finds the commands itself: every line of the README's
//! shell code blocks, and any `weir …` line of its other code blocks
//! (`cargo run … -- ARGS` runs as `weir ARGS`). A command runs with bash,
//! in a directory holding the files the README names (`rules.conf` is
//! crates/weir/rules/demo.rules, `trace.pcap`, `in.pcap`, `in.pcapng`,
//! `ppp.conf` (FreeBSD's sample, also for `/etc/ppp/ppp.conf`), `acl1` and
//! `acl1_trace` (ClassBench samples with flags, tests/classbench), and the files
//! whose code block starts with `# NAME`, such as `ppp.filter`), and must
//! exit 0. A command it cannot run is listed in [`NOT_RUN`] with the
//! reason; anything else it meets, it runs.
//!
//! As root, everything runs inside network and mount namespaces made for
//! the test: loopback up, a veth named `eth0` (as the README names it)
//! with pings arriving on it, and a private `/run/netns` for the README's
//! own `ip netns add`. Commands that run until stopped ([`LIVE`]) get a
//! moment, then SIGINT; a line ending in `&` runs in the background
//! until the next such line or the end of its block, then gets SIGINT.
//! Without root, the commands that need it are reported SKIPPED.
//!
//! Where the README shows an error (a block starting `FILE:LINE:COL:`),
//! the same file is written and `weir check` must print exactly that.

mod common;

use rustix::process::{Pid, Signal};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// README commands not run here, and why.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "cargo build --release",
        "builds the binary; these tests run the one cargo built for them",
    ),
    (
        "bash scripts/test.sh",
        "the test command itself: it runs this test",
    ),
    (
        "bash bench/compare-acl.sh",
        "a benchmark: minutes of timing, and it installs DPDK with apt-get",
    ),
];

/// README code blocks not run, named by their first command, and why.
const BLOCKS_NOT_RUN: &[(&str, &str)] = &[(
    "ip netns exec weirp-a weir probe server --bind 10.77.0.1:7777 &",
    "the command lines behind the probe measurements: they repeat the block above, \
     inside the namespaces that block makes and removes",
)];

/// Files the README names by a system path, and the fixture that stands
/// for each (the commands run with the fixture's name instead).
const SYSTEM_PATHS: &[(&str, &str)] = &[("/etc/ppp/ppp.conf", "ppp.conf")];

/// Commands the README says may fail on some systems, the command it
/// gives for them instead (which must then work), and why.
const FALLBACKS: &[(&str, &str, &str)] = &[(
    "nft add rule inet weir forward queue num 0 bypass",
    "iptables -A FORWARD -j NFQUEUE --queue-num 0 --queue-bypass",
    "kernels without nft's queue expression refuse the rule; the README gives the iptables line",
)];

/// Commands that run until stopped: each gets a moment, then SIGINT (to
/// the first process of a pipeline: tcpdump stops, weir reads to the end).
const LIVE: &[&str] = &["weir capture ", "weir inline ", "tcpdump -i "];

/// Words of a command that needs root (namespaces, packet sockets, queues).
const NEEDS_ROOT: &[&str] = &[
    "ip ",
    "nft ",
    "tcpdump ",
    "weir capture",
    "weir inline",
    "weir sockbench",
    "weir probe",
];

/// Longest a command that stops by itself may take.
const TIMEOUT: Duration = Duration::from_secs(300);

struct Block {
    /// The info string after the fence: `sh`, or empty.
    lang: String,
    lines: Vec<String>,
}

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    fs::read_to_string(path).expect("README.md")
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<Block> = None;
    for line in text.lines() {
        match (line.trim_start().strip_prefix("```"), current.take()) {
            (Some(_), Some(block)) => out.push(block),
            (Some(lang), None) => {
                current = Some(Block {
                    lang: lang.trim().to_owned(),
                    lines: Vec::new(),
                })
            }
            (None, Some(mut block)) => {
                block.lines.push(line.to_owned());
                current = Some(block);
            }
            (None, None) => {}
        }
    }
    out
}

/// A line as bash reads it, without its comment, spaces collapsed.
fn command_text(line: &str) -> String {
    let mut quote = None;
    let mut end = line.len();
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if prev.is_whitespace() => {
                end = i;
                break;
            }
            _ => {}
        }
        prev = c;
    }
    line[..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether a line calls weir: at the start, after `|`, `&&`, `;` or `&`,
/// or after `ip netns exec NAME`; `cargo run … --` counts as weir.
fn calls_weir(command: &str) -> bool {
    command.split(['|', ';', '&']).map(str::trim).any(|part| {
        let words: Vec<&str> = part.split_whitespace().collect();
        let words = match words.as_slice() {
            ["ip", "netns", "exec", _, rest @ ..] => rest,
            all => all,
        };
        matches!(words.first(), Some(&"weir")) || words.starts_with(&["cargo", "run"])
    })
}

fn is_shell(block: &Block) -> bool {
    matches!(block.lang.as_str(), "sh" | "bash" | "shell" | "console")
}

/// `cargo run [flags] -- ARGS` runs as `weir ARGS`.
fn as_weir(command: &str) -> String {
    match command
        .strip_prefix("cargo run")
        .and_then(|r| r.split_once(" -- "))
    {
        Some((_, args)) => format!("weir {args}"),
        None => command.to_owned(),
    }
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Where the commands run: the fixtures directory, weir on PATH, and as
/// root the namespaces held open by a `sleep` that the test started.
struct Place {
    dir: tempfile::TempDir,
    path: String,
    holder: Option<Child>,
    pinger: Option<Child>,
}

impl Place {
    fn new() -> Place {
        let dir = tempfile::tempdir().expect("temp dir");
        let bin = dir.path().join(".bin");
        fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(common::bin(), bin.join("weir")).unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut place = Place {
            dir,
            path,
            holder: None,
            pinger: None,
        };
        if is_root() && which("unshare") && which("nsenter") && which("ip") {
            place.enter_namespaces();
        }
        place
    }

    fn enter_namespaces(&mut self) {
        let holder = Command::new("unshare")
            .args([
                "--net",
                "--mount",
                "--propagation",
                "private",
                "sleep",
                "100000",
            ])
            .spawn()
            .expect("unshare");
        self.holder = Some(holder);
        std::thread::sleep(Duration::from_millis(200));
        // eth0 with its peer in a namespace of its own, which pings it.
        let setup = "mount -t tmpfs tmpfs /run/netns 2>/dev/null || { mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns; } \
            && ip link set lo up \
            && ip link add eth0 type veth peer name peer0 \
            && ip netns add peer && ip link set peer0 netns peer \
            && ip addr add 10.99.0.1/24 dev eth0 && ip link set eth0 up \
            && ip -n peer addr add 10.99.0.2/24 dev peer0 && ip -n peer link set peer0 up \
            && ip -n peer link set lo up";
        let status = self.command(setup).status().expect("namespace set-up");
        assert!(status.success(), "namespace set-up failed");
        self.pinger = Some(
            self.command("exec ip netns exec peer ping -q -i 0.2 10.99.0.1")
                .stdout(Stdio::null())
                .spawn()
                .expect("ping"),
        );
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `bash -c LINE` where the commands run, in a process group of its own.
    fn command(&self, line: &str) -> Command {
        let mut c = match &self.holder {
            Some(h) => {
                let mut c = Command::new("nsenter");
                let wd = format!("--wd={}", self.dir.path().display());
                c.args([
                    "-t",
                    &h.id().to_string(),
                    "-n",
                    "-m",
                    &wd,
                    "bash",
                    "-c",
                    line,
                ]);
                c
            }
            None => {
                let mut c = Command::new("bash");
                c.args(["-c", line]);
                c
            }
        };
        use std::os::unix::process::CommandExt;
        c.current_dir(self.dir.path())
            .env("PATH", &self.path)
            .stdin(Stdio::null())
            .process_group(0);
        c
    }

    /// Runs a line to its end; its output goes to files beside the fixtures.
    fn spawn(&self, line: &str, n: usize) -> Child {
        let out = fs::File::create(self.file(&format!(".out-{n}"))).unwrap();
        let err = fs::File::create(self.file(&format!(".err-{n}"))).unwrap();
        self.command(line)
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {line}: {e}"))
    }

    fn stderr_of(&self, n: usize) -> String {
        let text = fs::read_to_string(self.file(&format!(".err-{n}"))).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(8).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        for child in [self.pinger.take(), self.holder.take()]
            .into_iter()
            .flatten()
        {
            stop(child, Signal::KILL);
        }
    }
}

fn which(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Signals a process this test started; one already gone is no error.
fn signal(pid: u32, sig: Signal) {
    if let Some(pid) = Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// Signals the process group a child of this test leads.
fn signal_group(pid: u32, sig: Signal) {
    if let Some(pid) = Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

/// Signals a child (and the process group it leads), then reaps it.
fn stop(mut child: Child, sig: Signal) -> Option<ExitStatus> {
    signal(child.id(), sig);
    let status = wait(&mut child, Duration::from_secs(20));
    // Whatever the line left behind in its group (a server it started
    // with `&`) goes too.
    signal_group(child.id(), Signal::KILL);
    status
}

fn wait(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let end = Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() > end {
            signal_group(child.id(), Signal::KILL);
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first process of a pipeline that bash runs (bash's oldest child),
/// or the line's own process when bash ran one command in its place.
fn first_stage(pid: u32) -> u32 {
    let children =
        fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    children
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .min()
        .unwrap_or(pid)
}

/// The files the README's commands read.
fn fixtures(place: &Place, blocks: &[Block]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    fs::copy(
        root.join("crates/weir/rules/demo.rules"),
        place.file("rules.conf"),
    )
    .unwrap();
    for (name, n, seed) in [("trace.pcap", "2000", "7"), ("in.pcap", "200", "3")] {
        common::weir_ok([
            "gen",
            "-n",
            n,
            "--seed",
            seed,
            "-o",
            place.file(name).to_str().unwrap(),
        ]);
    }
    // FreeBSD's own ppp.conf.sample (crates/weir/tests/ppp names its source).
    fs::copy(
        root.join("crates/weir/tests/ppp/ppp.conf.sample"),
        place.file("ppp.conf"),
    )
    .unwrap();
    // A ClassBench filter set with flags and the trace ClassBench's own
    // trace_generator made from it (tests/classbench names the source).
    let samples = root.join("crates/weir/tests/classbench");
    fs::copy(samples.join("acl-flags.rules"), place.file("acl1")).unwrap();
    fs::copy(samples.join("acl-flags.trace"), place.file("acl1_trace")).unwrap();
    let (rules, input, pcapng) = (
        place.file("rules.conf"),
        place.file("in.pcap"),
        place.file("in.pcapng"),
    );
    common::weir_ok([
        "run".as_ref(),
        rules.as_os_str(),
        "-r".as_ref(),
        input.as_os_str(),
        "--annotate".as_ref(),
        pcapng.as_os_str(),
        "-q".as_ref(),
    ]);
    // A block whose first line is `# NAME` or `# NAME: …` is that file.
    for block in blocks.iter().filter(|b| !is_shell(b)) {
        let Some(first) = block.lines.first() else {
            continue;
        };
        let name = first
            .strip_prefix("# ")
            .and_then(|r| r.split([':', ' ']).next());
        if let Some(name) = name.filter(|n| n.contains('.') && !n.contains('/')) {
            fs::write(place.file(name), block.lines.join("\n") + "\n").unwrap();
        }
    }
}

#[test]
fn every_readme_command_runs() {
    let blocks = blocks(&readme());
    let place = Place::new();
    fixtures(&place, &blocks);
    let root = place.holder.is_some();
    if !root {
        eprintln!(
            "readme: SKIPPED the commands that need root (no root, or no unshare/nsenter/ip)"
        );
    }
    let (mut ran, mut listed, mut failures) = (0, Vec::new(), Vec::new());
    let mut n = 0;
    for block in &blocks {
        let commands: Vec<String> = block
            .lines
            .iter()
            .map(|l| command_text(l))
            .filter(|c| !c.is_empty() && (is_shell(block) || calls_weir(c)))
            .collect();
        let Some(first) = commands.first() else {
            continue;
        };
        if let Some((_, why)) = BLOCKS_NOT_RUN.iter().find(|(b, _)| b == first) {
            eprintln!(
                "readme: not run (block), {why}:\n    {}",
                commands.join("\n    ")
            );
            listed.push(first.clone());
            continue;
        }
        let mut background: Option<(Child, String)> = None;
        for command in commands {
            if let Some((_, why)) = NOT_RUN.iter().find(|(c, _)| *c == command) {
                eprintln!("readme: not run, {why}: {command}");
                listed.push(command.clone());
                continue;
            }
            if !root && NEEDS_ROOT.iter().any(|w| command.contains(w)) {
                eprintln!("readme: SKIPPED (needs root): {command}");
                continue;
            }
            let line = SYSTEM_PATHS
                .iter()
                .fold(as_weir(&command), |l, (path, file)| l.replace(path, file));
            n += 1;
            ran += 1;
            if let Some(line) = line.strip_suffix('&') {
                if let Some((child, what)) = background.take() {
                    check_stopped(&mut failures, &place, child, &what, n - 1);
                }
                background = Some((place.spawn(line, n), command.clone()));
                std::thread::sleep(Duration::from_millis(500));
                continue;
            }
            let mut child = place.spawn(&line, n);
            if LIVE.iter().any(|l| line.starts_with(l)) {
                std::thread::sleep(Duration::from_secs(2));
                signal(first_stage(child.id()), Signal::INT);
            }
            let mut status = wait(&mut child, TIMEOUT);
            signal_group(child.id(), Signal::KILL);
            let fallback = FALLBACKS.iter().find(|(c, _, _)| *c == command);
            if let (false, Some((_, instead, why))) =
                (status.is_some_and(|s| s.success()), fallback)
            {
                eprintln!("readme: `{command}` failed ({why}); running `{instead}`");
                n += 1;
                status = wait(&mut place.spawn(instead, n), TIMEOUT);
            }
            if !status.is_some_and(|s| s.success()) {
                failures.push(format!(
                    "{command}\n  {}\n{}",
                    ended(status),
                    place.stderr_of(n)
                ));
            }
        }
        if let Some((child, what)) = background.take() {
            check_stopped(&mut failures, &place, child, &what, n);
        }
    }
    for (command, _) in NOT_RUN.iter().chain(BLOCKS_NOT_RUN) {
        assert!(
            listed.iter().any(|l| l == command),
            "NOT_RUN lists `{command}`, which the README no longer shows"
        );
    }
    eprintln!(
        "readme: {ran} commands run, {} listed as not run",
        listed.len()
    );
    assert!(
        failures.is_empty(),
        "README commands failed:\n{}",
        failures.join("\n\n")
    );
}

/// A background command, stopped with SIGINT, must end well.
fn check_stopped(failures: &mut Vec<String>, place: &Place, child: Child, command: &str, n: usize) {
    let status = stop(child, Signal::INT);
    if !status.is_some_and(|s| s.success()) {
        failures.push(format!(
            "{command}\n  {} after SIGINT\n{}",
            ended(status),
            place.stderr_of(n)
        ));
    }
}

/// How a command ended, in words.
fn ended(status: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        None => format!("still running after {} s", TIMEOUT.as_secs()),
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => format!("{s}"),
        },
    }
}

#[test]
fn error_examples_are_what_weir_prints() {
    let dir = tempfile::tempdir().unwrap();
    let mut shown = 0;
    for block in blocks(&readme()).iter().filter(|b| !is_shell(b)) {
        let Some((file, line)) = block.lines.first().and_then(|l| error_place(l)) else {
            continue;
        };
        // The file: blank lines, then the line the example shows.
        let source = block
            .lines
            .get(1)
            .and_then(|l| l.strip_prefix("  "))
            .unwrap_or("");
        let path = dir.path().join(file);
        fs::write(&path, "\n".repeat(line - 1) + source + "\n").unwrap();
        let out = Command::new(common::bin())
            .arg("check")
            .arg(file)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            block.lines.join("\n") + "\n"
        );
        shown += 1;
    }
    assert!(
        shown >= 1,
        "the README shows an error example under \"Rules\""
    );
}

/// `FILE:LINE:COL: message` → (FILE, LINE).
fn error_place(line: &str) -> Option<(&str, usize)> {
    let mut parts = line.splitn(4, ':');
    let (file, l, c) = (parts.next()?, parts.next()?, parts.next()?);
    parts.next()?.strip_prefix(' ')?;
    let l: usize = l.parse().ok()?;
    c.parse::<usize>().ok()?;
    (!file.contains(' ') && l > 0).then_some((file, l))
}
