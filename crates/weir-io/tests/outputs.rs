//! Output files: written under a temporary name and renamed into place only
//! on commit; refused when they are an input, or another output, under any
//! name.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use weir_io::output::{check_clashes, create, Endpoint};

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_file_appears_only_when_committed() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("pass.pcap");
    let (mut w, pending) = create(&target).unwrap();
    w.write_all(b"complete").unwrap();
    assert!(pending.is_staged());
    assert!(!target.exists(), "nothing under the target's name yet");
    let temps = names_in(dir.path());
    assert_eq!(temps.len(), 1);
    assert!(temps[0].starts_with(".pass.pcap.weir-") && temps[0].ends_with(".tmp"));
    pending.commit().unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"complete");
    assert_eq!(names_in(dir.path()), ["pass.pcap"]);
}

#[test]
fn an_uncommitted_file_leaves_nothing_and_the_old_file_stays() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("new.pcap");
    let (mut w, pending) = create(&fresh).unwrap();
    w.write_all(b"half").unwrap();
    drop(pending);
    assert!(names_in(dir.path()).is_empty());

    let old = dir.path().join("old.csv");
    fs::write(&old, "yesterday's run\n").unwrap();
    let (mut w, pending) = create(&old).unwrap();
    w.write_all(b"index,rule").unwrap();
    drop(pending);
    assert_eq!(fs::read_to_string(&old).unwrap(), "yesterday's run\n");
    assert_eq!(names_in(dir.path()), ["old.csv"]);
}

#[test]
fn a_replaced_file_keeps_its_permissions_and_symlinks_are_followed() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.pcap");
    fs::write(&real, "old").unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("link.pcap");
    std::os::unix::fs::symlink("real.pcap", &link).unwrap();
    let (mut w, pending) = create(&link).unwrap();
    w.write_all(b"new").unwrap();
    pending.commit().unwrap();
    assert_eq!(fs::read(&real).unwrap(), b"new");
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let mode = fs::metadata(&real).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    // A dangling link makes its target.
    let dangling = dir.path().join("to-be.pcap");
    std::os::unix::fs::symlink("made.pcap", &dangling).unwrap();
    let (_, pending) = create(&dangling).unwrap();
    pending.commit().unwrap();
    assert!(dir.path().join("made.pcap").is_file());
}

#[test]
fn devices_are_written_directly_and_directories_refused() {
    let (mut w, pending) = create(Path::new("/dev/null")).unwrap();
    assert!(!pending.is_staged());
    w.write_all(b"gone").unwrap();
    pending.commit().unwrap();
    let (mut w, pending) = create(Path::new("/dev/full")).unwrap();
    let e = w.write_all(b"x").and_then(|()| w.flush()).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(28));
    drop(pending);
    let dir = tempfile::tempdir().unwrap();
    let e = create(dir.path()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}: Is a directory", dir.path().display())
    );
    assert!(names_in(dir.path()).is_empty());
}

fn ep<'a>(role: &'a str, path: &'a Path) -> Endpoint<'a> {
    Endpoint::new(role, path)
}

#[test]
fn an_output_that_is_an_input_under_another_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rules = d.join("my.rules");
    let input = d.join("in.pcap");
    fs::write(&rules, "allow ip from any to any\n").unwrap();
    fs::write(&input, "pcap").unwrap();
    fs::hard_link(&input, d.join("hl.pcap")).unwrap();
    std::os::unix::fs::symlink(&rules, d.join("sym.rules")).unwrap();
    let inputs = [ep("the ruleset", &rules), ep("-r", &input)];
    let refused = |out: &Path| {
        check_clashes(&inputs, &[ep("-w", out)])
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused(&rules),
        format!(
            "-w {0} is the same file as the ruleset {0}; an output never overwrites an input",
            rules.display()
        )
    );
    assert!(refused(&d.join("hl.pcap")).contains(&format!("-r {}", input.display())));
    assert!(refused(&d.join("sym.rules")).contains("the ruleset"));
    let dotted: PathBuf = d.join(".").join("in.pcap");
    assert!(refused(&dotted).contains("-r"));
    // Outputs that are new files, and devices, are fine.
    let fresh = d.join("pass.pcap");
    check_clashes(
        &inputs,
        &[ep("-w", &fresh), ep("--log-file", Path::new("/dev/null"))],
    )
    .unwrap();
    // Nothing was created by checking.
    assert!(!fresh.exists());
}

#[test]
fn two_outputs_naming_one_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = d.join("a.pcap");
    let same_new = d.join(".").join("a.pcap");
    let e = check_clashes(&[], &[ep("-w", &a), ep("--drop-out", &same_new)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "--drop-out {} is the same file as -w {}; two outputs cannot share a file",
            same_new.display(),
            a.display()
        )
    );
    fs::write(&a, "").unwrap();
    std::os::unix::fs::symlink(&a, d.join("l.pcap")).unwrap();
    let l = d.join("l.pcap");
    assert!(check_clashes(&[], &[ep("-w", &a), ep("--annotate", &l)]).is_err());
    // /dev/null twice is fine: nothing written there is kept.
    let null = Path::new("/dev/null");
    check_clashes(&[], &[ep("-w", null), ep("--drop-out", null)]).unwrap();
}
