//! `seedgen OUT_DIR FRAMES_PER_FILE CAPTURE...`: writes the first frames of
//! each capture as `decode` target inputs (see fuzz_targets/decode.rs for the
//! layout: link selector byte [+ u32 link type], u16 orig_len, frame bytes).
//!
//! A capture that makes the reader panic is reported and skipped here; the
//! `capture` target, seeded with the same file, will then fail loudly.

use std::fs;
use std::panic;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Must match `LINK_TYPES` in fuzz_targets/decode.rs.
const LINK_TYPES: [u32; 13] = [0, 1, 9, 12, 14, 50, 101, 104, 108, 113, 228, 229, 276];

fn seed(link: u32, orig_len: u32, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 7);
    match LINK_TYPES.iter().position(|&l| l == link) {
        Some(i) => out.push(i as u8),
        None => {
            out.push(0xff);
            out.extend_from_slice(&link.to_be_bytes());
        }
    }
    let len = u16::try_from(orig_len).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(data);
    out
}

fn frames(bytes: &[u8], max: usize) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    let Ok(mut r) = weir_io::CaptureReader::new(bytes) else { return seeds };
    while seeds.len() < max {
        match r.next_frame() {
            Ok(Some(f)) => seeds.push(seed(f.link_type.0, f.orig_len, f.data)),
            Ok(None) | Err(_) => break,
        }
    }
    seeds
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out, max, files @ ..] = args.as_slice() else {
        eprintln!("usage: seedgen OUT_DIR FRAMES_PER_FILE CAPTURE...");
        return ExitCode::from(2);
    };
    let out = PathBuf::from(out);
    let max: usize = max.parse().expect("FRAMES_PER_FILE is a number");
    fs::create_dir_all(&out).expect("create output dir");
    let (mut written, mut panicked) = (0usize, 0usize);
    for file in files {
        let path = Path::new(file);
        let Ok(bytes) = fs::read(path) else {
            eprintln!("seedgen: cannot read {file}, skipped");
            continue;
        };
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("capture");
        match panic::catch_unwind(|| frames(&bytes, max)) {
            Ok(seeds) => {
                for (i, s) in seeds.iter().enumerate() {
                    fs::write(out.join(format!("{stem}-{i}")), s).expect("write seed");
                    written += 1;
                }
            }
            Err(_) => {
                eprintln!("seedgen: reader panicked on {file}");
                panicked += 1;
            }
        }
    }
    eprintln!("seedgen: {written} decode seeds from {} captures", files.len());
    if panicked > 0 {
        eprintln!("seedgen: {panicked} captures made the reader panic (the capture target will crash on them)");
    }
    ExitCode::SUCCESS
}
