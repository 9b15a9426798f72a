//! Hostile input never panics the reader: random bytes, and valid files with
//! random damage.

mod common;

use common::*;
use proptest::prelude::*;
use weir_io::CaptureReader;

/// Reads to the end or the first error, checking invariants that must hold
/// whatever the input.
fn drain(bytes: &[u8]) {
    let Ok(mut r) = CaptureReader::new(bytes) else {
        return;
    };
    let mut last = None;
    while let Ok(Some((f, ifaces))) = r.next_with_interfaces() {
        assert!(last < Some(f.offset));
        last = Some(f.offset);
        assert!(f.data.len() <= 16 << 20);
        assert!((f.iface as usize) < ifaces.len());
        assert!(f.offset + f.data.len() as u64 <= bytes.len() as u64);
    }
    assert!(r.bytes_read() <= bytes.len() as u64);
}

fn valid_pcap() -> Vec<u8> {
    let mut f = pcap_header(false, true, 128, 1);
    for i in 0..6u8 {
        f.extend(pcap_record(false, 1, 2, 40, &vec![i; 10 + i as usize * 7]));
    }
    f
}

fn valid_pcapng() -> Vec<u8> {
    let mut f = ng_shb(false, 1);
    f.extend(ng_idb(false, 1, 64, &[(2, b"eth0".to_vec()), (9, vec![6])]));
    f.extend(ng_epb(
        false,
        0,
        77,
        9,
        b"123456789",
        &[(2, 1u32.to_le_bytes().to_vec())],
    ));
    f.extend(ng_spb(false, 5, b"abcde"));
    f.extend(ng_shb(true, 1));
    f.extend(ng_idb(
        true,
        101,
        0,
        &[(9, vec![0x8a]), (14, vec![0xff; 8])],
    ));
    f.extend(ng_opb(true, 0, u64::MAX, 3, b"xyz"));
    f.extend(ng_epb(true, 0, 1, 4, b"tail", &[(1, b"note".to_vec())]));
    f
}

fn mutated(base: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let n = base.len();
    (prop::collection::vec((0..n, any::<u8>()), 1..8), 0..=n).prop_map(move |(edits, cut)| {
        let mut v = base.clone();
        for (i, b) in edits {
            v[i] = b;
        }
        v.truncate(cut.max(1));
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        drain(&bytes);
    }

    #[test]
    fn random_bodies_after_magic_never_panic(
        magic in prop::sample::select(vec![
            [0xd4u8, 0xc3, 0xb2, 0xa1], [0xa1, 0xb2, 0xc3, 0xd4],
            [0x4d, 0x3c, 0xb2, 0xa1], [0x0a, 0x0d, 0x0d, 0x0a],
        ]),
        rest in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let mut v = magic.to_vec();
        v.extend(rest);
        drain(&v);
    }

    #[test]
    fn mutated_pcap_never_panics(v in mutated(valid_pcap())) {
        drain(&v);
    }

    #[test]
    fn mutated_pcapng_never_panics(v in mutated(valid_pcapng())) {
        drain(&v);
    }

    /// Damaged or not, a file read in chunks gives the frames and the
    /// error that reading it one frame at a time gives.
    #[test]
    fn chunks_read_what_single_frames_read(
        v in prop_oneof![mutated(valid_pcap()), mutated(valid_pcapng())],
        chunk in 1..=weir_io::MAX_CHUNK,
    ) {
        let (Ok(mut a), Ok(mut b)) = (CaptureReader::new(&v[..]), CaptureReader::new(&v[..])) else {
            return Ok(());
        };
        let (singly, e1) = read_singly(&mut a);
        let (chunked, e2) = read_chunks(&mut b, chunk);
        prop_assert_eq!(chunked, singly);
        prop_assert_eq!(e1.map(|e| e.to_string()), e2.map(|e| e.to_string()));
    }
}

#[test]
fn fuzz_seeds_are_valid() {
    assert_eq!(read_all(&valid_pcap()).2.len(), 6);
    assert_eq!(read_all(&valid_pcapng()).2.len(), 4);
}
