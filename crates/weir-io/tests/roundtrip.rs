//! Read → mirror-write → read gives the same frames, for every format variant.

mod common;

use common::*;
use std::io::Read;
use weir_io::{CaptureReader, CaptureWriter, Format, Interface, PcapWriter, PcapngWriter};
use weir_wire::{Direction, LinkType};

fn payload(i: usize) -> Vec<u8> {
    (0..(i * 37) % 101).map(|b| (b * 7 + i) as u8).collect()
}

fn pcap_roundtrip(be: bool, nanos: bool) {
    let scale = if nanos { 1 } else { 1_000 };
    let mut file = pcap_header(be, nanos, 65535, 113);
    let mut expect = Vec::new();
    for i in 0..50usize {
        let data = payload(i);
        let (sec, frac) = (1_700_000_000 + i as u32, (i as u32 * 12_345) % 999_999);
        file.extend(pcap_record(be, sec, frac, data.len() as u32 + 3, &data));
        expect.push((
            u64::from(sec) * 1_000_000_000 + u64::from(frac) * scale,
            data,
        ));
    }
    let (format, ifaces, frames) = read_all(&file);
    assert_eq!(
        format,
        Format::Pcap {
            nanos,
            big_endian: be
        }
    );
    assert_eq!(
        ifaces,
        vec![Interface {
            link_type: LinkType(113),
            snaplen: 65535,
            name: None
        }]
    );
    assert_eq!(frames.len(), 50);
    let mut off = 24;
    for (f, (ts, data)) in frames.iter().zip(&expect) {
        assert_eq!(f.ts_ns, *ts);
        assert_eq!(&f.data, data);
        assert_eq!(f.orig_len, data.len() as u32 + 3);
        assert_eq!(
            (f.iface, f.link_type, f.direction),
            (0, LinkType(113), Direction::Unknown)
        );
        assert_eq!(f.offset, off);
        off += 16 + data.len() as u64;
    }

    let out = mirror(&file, |i| Some(format!("ignored {i}")));
    let (format2, ifaces2, frames2) = read_all(&out);
    // Written little-endian; resolution, link type and snaplen are kept.
    assert_eq!(
        format2,
        Format::Pcap {
            nanos,
            big_endian: false
        }
    );
    assert_eq!(ifaces2, ifaces);
    let a: Vec<_> = frames.iter().map(Owned::content).collect();
    let b: Vec<_> = frames2.iter().map(Owned::content).collect();
    assert_eq!(a, b);
    if !be {
        assert_eq!(out, file, "LE pcap mirrors byte for byte");
    }
}

#[test]
fn pcap_micro_le_roundtrip() {
    pcap_roundtrip(false, false);
}

#[test]
fn pcap_micro_be_roundtrip() {
    pcap_roundtrip(true, false);
}

#[test]
fn pcap_nano_le_roundtrip() {
    pcap_roundtrip(false, true);
}

#[test]
fn pcap_nano_be_roundtrip() {
    pcap_roundtrip(true, true);
}

#[test]
fn pcap_writer_saturates_far_future_timestamps() {
    let mut w = PcapWriter::new(Vec::new(), LinkType(1), 100, true).unwrap();
    w.write_frame(u64::MAX, 4, b"abcd").unwrap();
    let (_, _, f) = read_all(&w.into_inner().unwrap());
    assert_eq!(
        f[0].ts_ns,
        u64::from(u32::MAX) * 1_000_000_000 + 999_999_999
    );
}

fn two_iface_pcapng() -> Vec<u8> {
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    let eth = w
        .add_interface(&Interface {
            link_type: LinkType(1),
            snaplen: 262_144,
            name: Some("eth0".into()),
        })
        .unwrap();
    let tun = w
        .add_interface(&Interface {
            link_type: LinkType(101),
            snaplen: 0,
            name: Some("tun0 ünïcode".into()),
        })
        .unwrap();
    assert_eq!((eth, tun), (0, 1));
    let dirs = [Direction::In, Direction::Out, Direction::Unknown];
    for i in 0..30usize {
        let comment = (i % 3 == 0).then(|| format!("rule {:05} deny", i * 100));
        w.write_frame(
            (i % 2) as u32,
            1_700_000_000_123_456_789 + i as u64 * 1_001,
            payload(i).len() as u32 + 10,
            &payload(i),
            dirs[i % 3],
            comment.as_deref(),
        )
        .unwrap();
    }
    w.into_inner().unwrap()
}

#[test]
fn pcapng_two_interfaces_comments_and_directions() {
    let file = two_iface_pcapng();
    assert!(file.windows(4).any(|w| w == b"weir"), "shb_userappl");
    assert!(file.windows(15).any(|w| w == b"rule 00300 deny"));
    let (format, ifaces, frames) = read_all(&file);
    assert_eq!(format, Format::Pcapng);
    assert_eq!(ifaces.len(), 2);
    assert_eq!(ifaces[0].name.as_deref(), Some("eth0"));
    assert_eq!(ifaces[0].snaplen, 262_144);
    assert_eq!(ifaces[1].name.as_deref(), Some("tun0 ünïcode"));
    assert_eq!(ifaces[1].link_type, LinkType(101));
    assert_eq!(frames.len(), 30);
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.iface, (i % 2) as u32);
        assert_eq!(f.link_type, [LinkType(1), LinkType(101)][i % 2]);
        assert_eq!(f.ts_ns, 1_700_000_000_123_456_789 + i as u64 * 1_001);
        assert_eq!(f.data, payload(i));
        assert_eq!(f.orig_len, payload(i).len() as u32 + 10);
        assert_eq!(
            f.direction,
            [Direction::In, Direction::Out, Direction::Unknown][i % 3]
        );
    }

    let out = mirror(&file, |i| Some(format!("second pass {i}")));
    assert!(out.windows(13).any(|w| w == b"second pass 7"));
    let (format2, ifaces2, frames2) = read_all(&out);
    assert_eq!(format2, Format::Pcapng);
    assert_eq!(ifaces2, ifaces);
    let a: Vec<_> = frames.iter().map(Owned::content).collect();
    let b: Vec<_> = frames2.iter().map(Owned::content).collect();
    assert_eq!(a, b);
}

/// Hand-built pcapng exercising what our own writer never produces: other
/// timestamp resolutions and offsets, a big-endian section, a second section,
/// SPB and OPB, and blocks that must be skipped.
fn exotic_pcapng() -> Vec<u8> {
    let mut f = ng_shb(false, 1);
    // iface 0: microseconds (default), name with trailing NULs.
    f.extend(ng_idb(false, 1, 1500, &[(2, b"en0\0\0".to_vec())]));
    // iface 1: 2^-20 s units, 10 s offset.
    f.extend(ng_idb(
        false,
        228,
        0,
        &[(9, vec![0x80 | 20]), (14, 10u64.to_le_bytes().to_vec())],
    ));
    f.extend(ng_block(false, 4, &[0u8; 12])); // NRB
    f.extend(ng_epb(
        false,
        0,
        5_000_001,
        60,
        &[1; 60],
        &[(2, 1u32.to_le_bytes().to_vec())],
    ));
    f.extend(ng_epb(false, 1, 3 << 20, 20, &[2; 20], &[]));
    f.extend(ng_spb(false, 2000, &[3; 1500])); // snaplen 1500 caps it
    f.extend(ng_block(false, 0x0BAD, &[9; 40])); // custom
    f.extend(ng_opb(false, 1, 1 << 19, 9, &[4; 9]));
    f.extend(ng_block(false, 5, &[0u8; 20])); // ISB
                                              // Section 2, big-endian: its interfaces are global 2 and 3.
    f.extend(ng_shb(true, 1));
    f.extend(ng_idb(true, 113, 65535, &[(9, vec![3])])); // milliseconds
    f.extend(ng_idb(
        true,
        101,
        65535,
        &[(2, b"wg0".to_vec()), (9, vec![9])],
    ));
    f.extend(ng_epb(
        true,
        1,
        42,
        5,
        &[5; 5],
        &[(2, 2u32.to_be_bytes().to_vec())],
    ));
    f.extend(ng_epb(
        true,
        0,
        1_700_000_000_123,
        7,
        &[6; 7],
        &[(1, b"hi".to_vec())],
    ));
    f
}

#[test]
fn pcapng_sections_resolutions_and_block_kinds() {
    let file = exotic_pcapng();
    let (_, ifaces, frames) = read_all(&file);
    let lts: Vec<u32> = ifaces.iter().map(|i| i.link_type.0).collect();
    assert_eq!(lts, [1, 228, 113, 101]);
    assert_eq!(ifaces[0].name.as_deref(), Some("en0"));
    assert_eq!(ifaces[3].name.as_deref(), Some("wg0"));
    let got: Vec<_> = frames
        .iter()
        .map(|f| (f.iface, f.ts_ns, f.orig_len, f.data.len(), f.direction))
        .collect();
    assert_eq!(
        got,
        [
            (0, 5_000_001_000, 60, 60, Direction::In),
            (1, 13_000_000_000, 20, 20, Direction::Unknown),
            (0, 0, 2000, 1500, Direction::Unknown),
            (1, 10_500_000_000, 9, 9, Direction::Unknown),
            (3, 42, 5, 5, Direction::Out),
            (2, 1_700_000_000_123_000_000, 7, 7, Direction::Unknown),
        ]
    );
    assert_eq!(frames[4].link_type, LinkType(101));

    let out = mirror(&file, |_| None);
    let (_, ifaces2, frames2) = read_all(&out);
    assert_eq!(ifaces2, ifaces);
    let a: Vec<_> = frames.iter().map(Owned::content).collect();
    let b: Vec<_> = frames2.iter().map(Owned::content).collect();
    assert_eq!(a, b);
}

#[test]
fn mirror_writes_interfaces_lazily_keeping_ids() {
    let mut f = ng_shb(false, 1);
    f.extend(ng_idb(false, 1, 0, &[]));
    f.extend(ng_idb(false, 101, 0, &[]));
    f.extend(ng_idb(false, 113, 0, &[]));
    f.extend(ng_epb(false, 1, 1, 1, &[1], &[]));
    let out = mirror(&f, |_| None);
    let (_, ifaces, frames) = read_all(&out);
    // Interface 2 never carried a frame, so it is never written; 0 is
    // written ahead of 1 so the id stays 1.
    assert_eq!(ifaces.len(), 2);
    assert_eq!(frames[0].iface, 1);
    assert_eq!(frames[0].link_type, LinkType(101));

    // No frames at all: just the SHB.
    let empty = mirror(&ng_shb(false, 1), |_| None);
    let (_, ifaces, frames) = read_all(&empty);
    assert!(ifaces.is_empty() && frames.is_empty());
}

#[test]
fn annotate_pcap_as_pcapng_with_comments() {
    let mut file = pcap_header(false, false, 65535, 1);
    file.extend(pcap_record(false, 10, 20, 3, b"abc"));
    file.extend(pcap_record(false, 11, 0, 1, b"d"));
    let out = annotate(&file, "rule 00100 allow");
    assert_eq!(
        out.windows(16).filter(|w| w == b"rule 00100 allow").count(),
        2
    );
    let (format, ifaces, frames) = read_all(&out);
    assert_eq!(format, Format::Pcapng);
    assert_eq!(ifaces[0].link_type, LinkType(1));
    assert_eq!(frames[0].ts_ns, 10_000_020_000);
    assert_eq!(frames[1].data, b"d");
}

/// Copies a capture into an annotated pcapng, `comment` on every packet.
fn annotate(bytes: &[u8], comment: &str) -> Vec<u8> {
    let mut r = CaptureReader::new(bytes).unwrap();
    let mut w = CaptureWriter::pcapng_like(Vec::new(), r.format()).unwrap();
    while let Some((f, ifaces)) = r.next_with_interfaces().unwrap() {
        w.write(&f, ifaces, Some(comment)).unwrap();
    }
    w.finish_interfaces(r.interfaces()).unwrap();
    w.into_inner().unwrap()
}

/// Each packet's `opt_comment`s as the reader gives them (checked first
/// against hand-built input, then used to read the writers' output).
fn comments_of(ng: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let mut r = CaptureReader::new(ng).unwrap();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        out.push(f.comments.map(<[u8]>::to_vec).collect());
    }
    out
}

#[test]
fn packet_comments_are_kept_and_the_annotation_added_after_them() {
    // Two comments on the first packet (one not UTF-8, kept as bytes),
    // other options around them, none on the second; an OPB with one.
    for be in [false, true] {
        let mut f = ng_shb(be, 1);
        f.extend(ng_idb(be, 1, 0, &[]));
        let opts = [
            (2, u32b(be, 1).to_vec()),
            (1, b"first, from the capture".to_vec()),
            (3, vec![0; 8]), // epb_hash, not a comment
            (1, vec![b'x', 0xff, b'y']),
        ];
        f.extend(ng_epb(be, 0, 1, 3, b"abc", &opts));
        f.extend(ng_epb(be, 0, 2, 1, b"d", &[]));
        let mut opb = ng_opb(be, 0, 3, 2, b"ef");
        // An OPB's options follow its data: rebuild it with a comment.
        opb.truncate(opb.len() - 4);
        opb.extend(ng_opts(be, &[(1, b"opb note".to_vec())]));
        let len = opb.len() as u32 + 4;
        opb[4..8].copy_from_slice(&u32b(be, len));
        opb.extend(u32b(be, len));
        f.extend(opb);
        let want_in: Vec<Vec<Vec<u8>>> = vec![
            vec![b"first, from the capture".to_vec(), vec![b'x', 0xff, b'y']],
            vec![],
            vec![b"opb note".to_vec()],
        ];
        assert_eq!(comments_of(&f), want_in, "read, be={be}");
        // -w / --drop-out: the comments as they were.
        assert_eq!(comments_of(&mirror(&f, |_| None)), want_in, "mirror");
        // --annotate: weir's comment after the capture's own.
        let want_annotated: Vec<Vec<Vec<u8>>> = want_in
            .iter()
            .map(|c| [c.clone(), vec![b"rule 100 allow".to_vec()]].concat())
            .collect();
        assert_eq!(comments_of(&annotate(&f, "rule 100 allow")), want_annotated);
    }
}

#[test]
fn pcap_input_interfaces_declare_no_snap_length_below_a_record() {
    // tcpdump's snaplen64 case: the header says 64, the records hold 74.
    let mut file = pcap_header(false, false, 64, 1);
    file.extend(pcap_record(false, 1, 0, 74, &[0xaa; 74]));
    let (_, ifaces, _) = read_all(&annotate(&file, "x"));
    assert_eq!(ifaces[0].snaplen, 262_144, "annotated pcapng");
    // A pcap output keeps the header, which libpcap reads as it reads the input.
    let (_, ifaces, frames) = read_all(&mirror(&file, |_| None));
    assert_eq!((ifaces[0].snaplen, frames[0].data.len()), (64, 74));
    // A larger snap length, and 0 ("no limit"), are kept.
    for snap in [0, 300_000] {
        let mut file = pcap_header(false, false, snap, 1);
        file.extend(pcap_record(false, 1, 0, 4, b"abcd"));
        let (_, ifaces, _) = read_all(&annotate(&file, "x"));
        assert_eq!(ifaces[0].snaplen, snap);
    }
    // A pcapng input's interfaces keep their own snap length.
    let mut ng = ng_shb(false, 1);
    ng.extend(ng_idb(false, 1, 96, &[]));
    ng.extend(ng_epb(false, 0, 1, 60, &[0; 60], &[]));
    let (_, ifaces, _) = read_all(&annotate(&ng, "x"));
    assert_eq!(ifaces[0].snaplen, 96);
}

/// Hands out at most `n` bytes per read and counts calls.
struct Dribble<'a> {
    data: &'a [u8],
    n: usize,
    calls: usize,
}

impl Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.calls += 1;
        let k = buf.len().min(self.n).min(self.data.len());
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

fn big_pcap() -> Vec<u8> {
    let mut file = pcap_header(false, true, 262_144, 1);
    for i in 0..12_000u32 {
        let len = (i * 131 % 1500) as usize;
        file.extend(pcap_record(false, i, i, len as u32, &vec![i as u8; len]));
    }
    // One maximum-size record, then a few more after it.
    file.extend(pcap_record(false, 1, 2, 262_144, &vec![7; 262_144]));
    file.extend(pcap_record(false, 3, 4, 5, b"tail!"));
    file
}

#[test]
fn reads_across_buffer_boundaries_in_large_chunks() {
    let file = big_pcap();
    assert!(file.len() > 3 << 20);
    let (_, _, whole) = read_all(&file);
    assert_eq!(whole.len(), 12_002);
    assert_eq!(whole[12_000].data.len(), 262_144);

    // Odd-sized short reads give the same frames.
    let mut d = Dribble {
        data: &file,
        n: 4093,
        calls: 0,
    };
    let mut r = CaptureReader::new(&mut d).unwrap();
    let mut n = 0;
    while let Some(f) = r.next_frame().unwrap() {
        assert_eq!(Owned::of(&f), whole[n]);
        n += 1;
    }
    assert_eq!(n, whole.len());

    // Unlimited reads: about one call per MiB, not one per packet.
    let mut d = Dribble {
        data: &file,
        n: usize::MAX,
        calls: 0,
    };
    let mut r = CaptureReader::new(&mut d).unwrap();
    while r.next_frame().unwrap().is_some() {}
    drop(r);
    assert!(
        d.calls <= 2 * (file.len() >> 20) + 4,
        "{} read calls",
        d.calls
    );
}

#[test]
fn large_pcapng_block_grows_buffer() {
    let mut f = ng_shb(false, 1);
    f.extend(ng_idb(false, 1, 0, &[]));
    let big = vec![0xab; 3 << 20];
    f.extend(ng_epb(false, 0, 1, big.len() as u32, &big, &[]));
    f.extend(ng_epb(false, 0, 2, 1, &[1], &[]));
    let (_, _, frames) = read_all(&f);
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].data, big);
}

#[test]
fn open_capture_reads_files() {
    let dir = std::env::temp_dir().join(format!("weir-io-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("two.pcapng");
    std::fs::write(&path, two_iface_pcapng()).unwrap();
    let mut r = weir_io::open_capture(&path).unwrap();
    let mut n = 0;
    while r.next_frame().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 30);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_comment_too_long_for_one_option_is_cut_between_characters() {
    let mut file = pcap_header(false, false, 65535, 1);
    file.extend(pcap_record(false, 1, 0, 1, b"a"));
    // 'é' is two bytes; 0xfffc is even, so the cut would fall between them
    // after an odd lead-in byte.
    let long = format!("x{}", "é".repeat(40_000));
    let out = annotate(&file, &long);
    let got = &comments_of(&out)[0][0];
    let text = std::str::from_utf8(got).expect("still UTF-8");
    assert!(long.starts_with(text));
    assert_eq!(got.len(), 0xfffc - 1, "cut at the last whole character");
}

/// Frames read a chunk at a time are the frames read one by one, with
/// their comments, through short reads that make the buffer move and grow
/// (a 256 KiB record) while a chunk's earlier frames must stay put.
#[test]
fn chunks_hold_the_frames_read_one_by_one() {
    for file in [big_pcap(), exotic_pcapng(), two_iface_pcapng()] {
        let (singly, none) = read_singly(&mut CaptureReader::new(&file[..]).unwrap());
        assert!(none.is_none());
        for (chunk, n) in [(1, 4093), (7, 4093), (64, 100_000), (64, usize::MAX)] {
            let mut d = Dribble {
                data: &file,
                n,
                calls: 0,
            };
            let mut r = CaptureReader::new(&mut d).unwrap();
            let (chunked, error) = read_chunks(&mut r, chunk);
            assert!(error.is_none());
            assert_eq!(chunked, singly, "chunks of {chunk}, reads of {n}");
            assert_eq!(r.bytes_read(), file.len() as u64);
        }
    }
}
