//! Each kind of corruption gives an error naming the offending record's byte
//! offset, after every good frame before it has been returned.

mod common;

use common::*;
use weir_io::{CaptureError, CaptureReader};

fn two_good_pcap() -> Vec<u8> {
    let mut f = pcap_header(false, false, 65535, 1);
    f.extend(pcap_record(false, 1, 0, 4, b"abcd"));
    f.extend(pcap_record(false, 2, 0, 2, b"ef"));
    f
}

fn ng_prefix() -> Vec<u8> {
    let mut f = ng_shb(false, 1);
    f.extend(ng_idb(false, 1, 0, &[]));
    f.extend(ng_epb(false, 0, 1, 3, b"one", &[]));
    f
}

#[test]
fn bad_magic() {
    let (frames, err) = read_until_error(b"GIF89a and then some");
    let err = err.unwrap();
    assert!(frames.is_empty());
    assert!(matches!(err, CaptureError::BadMagic { offset: 0, .. }));
    assert_eq!(
        err.to_string(),
        "byte offset 0: not a pcap or pcapng file (magic 0x38464947)"
    );
}

#[test]
fn empty_and_short_headers() {
    for bytes in [&b""[..], &b"\xd4\xc3"[..]] {
        let err = CaptureReader::new(bytes).err().unwrap();
        assert!(matches!(err, CaptureError::Truncated { offset: 0, .. }));
    }
    let short = &pcap_header(false, false, 65535, 1)[..20];
    let err = CaptureReader::new(short).err().unwrap();
    assert_eq!(err.to_string(), "byte offset 0: truncated pcap file header");
}

#[test]
fn pcap_clean_eof_after_last_record() {
    let (frames, err) = read_until_error(&two_good_pcap());
    assert_eq!(frames.len(), 2);
    assert!(err.is_none());
}

#[test]
fn pcap_truncated_record_header() {
    let mut f = two_good_pcap();
    let at = f.len() as u64;
    f.extend(&pcap_record(false, 3, 0, 8, b"ghijklmn")[..10]);
    let (frames, err) = read_until_error(&f);
    assert_eq!(frames.len(), 2);
    let err = err.unwrap();
    assert_eq!(err.offset(), Some(at));
    assert_eq!(
        err.to_string(),
        format!("byte offset {at}: truncated record")
    );
}

#[test]
fn pcap_truncated_record_data() {
    let mut f = two_good_pcap();
    let at = f.len() as u64;
    f.extend(&pcap_record(false, 3, 0, 8, b"ghijklmn")[..20]);
    let (frames, err) = read_until_error(&f);
    assert_eq!(frames.len(), 2);
    assert!(matches!(err, Some(CaptureError::Truncated { offset, .. }) if offset == at));
}

#[test]
fn pcap_oversize_incl_len() {
    let mut f = two_good_pcap();
    let at = f.len() as u64;
    let mut rec = pcap_record(false, 3, 0, 4, b"");
    rec[8..12].copy_from_slice(&262_145u32.to_le_bytes());
    f.extend(rec);
    f.extend(vec![0; 300_000]);
    let (frames, err) = read_until_error(&f);
    assert_eq!(frames.len(), 2);
    let err = err.unwrap();
    assert!(matches!(
        err,
        CaptureError::OversizeRecord {
            len: 262_145,
            limit: 262_144,
            ..
        }
    ));
    assert_eq!(err.offset(), Some(at));
    assert_eq!(
        err.to_string(),
        format!("byte offset {at}: record captured length 262145 exceeds limit 262144")
    );
}

#[test]
fn pcap_incl_len_above_small_snaplen_is_accepted() {
    // libpcap reads these (the corpus has some); only the 256 KiB cap applies.
    let mut f = pcap_header(true, false, 64, 1);
    f.extend(pcap_record(true, 1, 0, 100, &[0; 100]));
    let (frames, err) = read_until_error(&f);
    assert!(err.is_none());
    assert_eq!(frames[0].data.len(), 100);
}

/// Appends a block header claiming `len` and returns its offset.
fn push_bad_block(f: &mut Vec<u8>, len: u32) -> u64 {
    let at = f.len() as u64;
    f.extend(6u32.to_le_bytes());
    f.extend(len.to_le_bytes());
    f.extend([0u8; 64]);
    at
}

#[test]
fn pcapng_bad_block_length() {
    for len in [3, 0, 8, 14] {
        let mut f = ng_prefix();
        let at = push_bad_block(&mut f, len);
        let (frames, err) = read_until_error(&f);
        assert_eq!(frames.len(), 1);
        let err = err.unwrap();
        assert_eq!(err.offset(), Some(at));
        assert_eq!(
            err.to_string(),
            format!("byte offset {at}: bad pcapng block length {len}")
        );
    }
}

#[test]
fn pcapng_block_too_large() {
    let mut f = ng_prefix();
    let at = push_bad_block(&mut f, (16 << 20) + 4);
    let (frames, err) = read_until_error(&f);
    assert_eq!(frames.len(), 1);
    assert!(matches!(err, Some(CaptureError::BlockTooLarge { offset, .. }) if offset == at));
}

#[test]
fn pcapng_trailing_length_mismatch() {
    let mut f = ng_prefix();
    let at = f.len() as u64;
    let mut b = ng_epb(false, 0, 2, 3, b"two", &[]);
    let n = b.len();
    b[n - 4] ^= 4;
    f.extend(b);
    let (frames, err) = read_until_error(&f);
    assert_eq!(frames.len(), 1);
    let err = err.unwrap();
    assert!(matches!(err, CaptureError::BlockLengthMismatch { .. }));
    assert_eq!(err.offset(), Some(at));
}

#[test]
fn pcapng_truncated_block() {
    let mut f = ng_prefix();
    let at = f.len() as u64;
    f.extend(&ng_epb(false, 0, 2, 3, b"two", &[])[..20]);
    let (frames, err) = read_until_error(&f);
    assert_eq!(frames.len(), 1);
    let err = err.unwrap();
    assert_eq!(
        err.to_string(),
        format!("byte offset {at}: truncated block")
    );
}

#[test]
fn pcapng_epb_unknown_interface() {
    let mut f = ng_prefix();
    let at = f.len() as u64;
    f.extend(ng_epb(false, 1, 2, 3, b"two", &[]));
    let (frames, err) = read_until_error(&f);
    assert_eq!(frames.len(), 1);
    let err = err.unwrap();
    assert!(matches!(
        err,
        CaptureError::UnknownInterface {
            id: 1,
            known: 1,
            ..
        }
    ));
    assert_eq!(err.offset(), Some(at));
    assert_eq!(
        err.to_string(),
        format!("byte offset {at}: packet refers to interface 1 but the section has 1")
    );
}

#[test]
fn pcapng_interfaces_do_not_carry_into_next_section() {
    let mut f = ng_prefix();
    f.extend(ng_shb(true, 1));
    let at = f.len() as u64;
    f.extend(ng_epb(true, 0, 2, 3, b"two", &[]));
    let (frames, err) = read_until_error(&f);
    assert_eq!(frames.len(), 1);
    assert!(
        matches!(err, Some(CaptureError::UnknownInterface { offset, known: 0, .. }) if offset == at)
    );
}

#[test]
fn pcapng_spb_without_interface() {
    let mut f = ng_shb(false, 1);
    let at = f.len() as u64;
    f.extend(ng_spb(false, 4, b"abcd"));
    let (frames, err) = read_until_error(&f);
    assert!(frames.is_empty());
    assert!(matches!(err, Some(CaptureError::UnknownInterface { offset, .. }) if offset == at));
}

#[test]
fn pcapng_epb_caplen_beyond_block() {
    let mut f = ng_prefix();
    let at = f.len() as u64;
    let mut b = ng_epb(false, 0, 2, 3, b"two", &[]);
    b[20..24].copy_from_slice(&100u32.to_le_bytes());
    f.extend(b);
    let (frames, err) = read_until_error(&f);
    assert_eq!(frames.len(), 1);
    assert!(matches!(err, Some(CaptureError::Malformed { offset, .. }) if offset == at));
}

#[test]
fn pcapng_unsupported_version() {
    let err = CaptureReader::new(&ng_shb(false, 2)[..]).err().unwrap();
    assert_eq!(
        err.to_string(),
        "byte offset 0: unsupported pcapng version 2.0"
    );
    let mut f = ng_prefix();
    let at = f.len() as u64;
    f.extend(ng_shb(true, 3));
    let (frames, err) = read_until_error(&f);
    assert_eq!(frames.len(), 1);
    assert_eq!(err.unwrap().offset(), Some(at));
}

#[test]
fn pcapng_bad_byte_order_magic() {
    let mut shb = ng_shb(false, 1);
    shb[8] = 0;
    let err = CaptureReader::new(&shb[..]).err().unwrap();
    assert!(matches!(err, CaptureError::BadByteOrder { offset: 0, .. }));
}

#[test]
fn damaged_options_do_not_cost_the_packet() {
    let mut f = ng_shb(false, 1);
    f.extend(ng_idb(false, 1, 0, &[]));
    // An option claiming 200 bytes in a block that has 8 left.
    let mut b = ng_epb(false, 0, 2, 3, b"two", &[(2, 1u32.to_le_bytes().to_vec())]);
    let opt = b.len() - 4 - 12;
    b[opt + 2..opt + 4].copy_from_slice(&200u16.to_le_bytes());
    f.extend(b);
    let (frames, err) = read_until_error(&f);
    assert!(err.is_none());
    assert_eq!(frames[0].data, b"two");
}

#[test]
fn open_missing_file_has_no_offset() {
    let err = weir_io::open_capture(std::path::Path::new("/nonexistent/x.pcap"))
        .err()
        .unwrap();
    assert_eq!(err.offset(), None);
    assert!(err
        .to_string()
        .starts_with("cannot open /nonexistent/x.pcap: "));
}

#[test]
fn io_error_names_offset() {
    struct Failing(usize);
    impl std::io::Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::other("disk on fire"));
            }
            let f = two_good_pcap();
            let n = f.len().min(buf.len());
            buf[..n].copy_from_slice(&f[..n]);
            self.0 -= 1;
            Ok(n)
        }
    }
    let mut r = CaptureReader::new(Failing(1)).unwrap();
    assert!(r.next_frame().unwrap().is_some());
    assert!(r.next_frame().unwrap().is_some());
    let err = r.next_frame().unwrap_err();
    assert_eq!(err.offset(), Some(two_good_pcap().len() as u64));
    assert!(err.to_string().ends_with("read error: disk on fire"));
}
