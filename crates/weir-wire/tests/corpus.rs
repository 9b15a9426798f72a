//! Decodes every classic pcap file in the tcpdump test corpus: no panics,
//! and enough IP packets that a decoder regressing to "decode nothing" fails.

use std::path::Path;

use weir_wire::{decode, LinkType, L3};

const CORPUS: &str = "../../corpus/tcpdump-tests";

/// Packets the decoder must see as well-formed IP across the corpus. When
/// this was set the corpus held 535 pcap files, 8005 packets, of which the
/// decoder found 3954 IP, 4002 non-IP (mostly other link types and non-IP
/// ethertypes) and 49 malformed; the margin allows for corpus changes.
const MIN_IP_PACKETS: usize = 3500;

#[derive(Default, Debug)]
struct Tally {
    files: usize,
    packets: usize,
    ip: usize,
    non_ip: usize,
    malformed: usize,
}

/// Reads a classic pcap file by hand (either byte order, micro- or
/// nanosecond magic) and decodes each record; stops at the first bad record.
fn decode_file(bytes: &[u8], tally: &mut Tally) {
    let Some(magic) = bytes.get(..4) else { return };
    let little = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        _ => return,
    };
    let u32_at = |at: usize| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    let Some(network) = u32_at(20) else { return };
    // The upper bits may carry FCS information; the link type is the low 16.
    let link = LinkType(network & 0xffff);
    tally.files += 1;
    let mut at = 24;
    while let (Some(caplen), Some(len)) = (u32_at(at + 8), u32_at(at + 12)) {
        let start = at + 16;
        let Some(frame) = bytes.get(start..start + caplen as usize) else {
            break;
        };
        let p = decode(link, frame, len);
        tally.packets += 1;
        match p.l3 {
            L3::Ip => tally.ip += 1,
            L3::NonIp => tally.non_ip += 1,
            L3::Malformed(_) => tally.malformed += 1,
        }
        at = start + caplen as usize;
    }
}

#[test]
fn tcpdump_corpus_decodes_without_panic() {
    // The corpus lives in the repository (corpus/); WEIR_CORPUS overrides it.
    let dir = std::env::var_os("WEIR_CORPUS")
        .map(Into::into)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS));
    let Ok(entries) = std::fs::read_dir(&dir) else {
        panic!("corpus not found at {}", dir.display());
    };
    let mut tally = Tally::default();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "pcap") {
            decode_file(&std::fs::read(&path).unwrap(), &mut tally);
        }
    }
    eprintln!("{tally:?}");
    assert!(tally.files > 0, "no pcap files read from {}", dir.display());
    assert!(
        tally.ip >= MIN_IP_PACKETS,
        "only {} IP packets decoded: {tally:?}",
        tally.ip
    );
}
