//! Hand-built capture bytes for tests: each helper writes exactly the fields
//! the format specifies, in the byte order asked for.
#![allow(dead_code)]

use weir_io::{CaptureReader, CaptureWriter, Format, Frame, Interface};
use weir_wire::{Direction, LinkType};

pub fn u16b(be: bool, v: u16) -> [u8; 2] {
    if be {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    }
}

pub fn u32b(be: bool, v: u32) -> [u8; 4] {
    if be {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    }
}

pub fn pcap_header(be: bool, nanos: bool, snaplen: u32, link: u32) -> Vec<u8> {
    let magic = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
    let mut v = Vec::new();
    v.extend(u32b(be, magic));
    v.extend(u16b(be, 2));
    v.extend(u16b(be, 4));
    v.extend(u32b(be, 0));
    v.extend(u32b(be, 0));
    v.extend(u32b(be, snaplen));
    v.extend(u32b(be, link));
    v
}

pub fn pcap_record(be: bool, sec: u32, frac: u32, orig: u32, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend(u32b(be, sec));
    v.extend(u32b(be, frac));
    v.extend(u32b(be, data.len() as u32));
    v.extend(u32b(be, orig));
    v.extend_from_slice(data);
    v
}

fn pad(v: &mut Vec<u8>) {
    while v.len() & 3 != 0 {
        v.push(0);
    }
}

/// A pcapng block with correct lengths around `body` (padded to 4).
pub fn ng_block(be: bool, btype: u32, body: &[u8]) -> Vec<u8> {
    let mut b = body.to_vec();
    pad(&mut b);
    let len = b.len() as u32 + 12;
    let mut v = Vec::new();
    v.extend(u32b(be, btype));
    v.extend(u32b(be, len));
    v.extend(b);
    v.extend(u32b(be, len));
    v
}

pub fn ng_opt(be: bool, code: u16, val: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend(u16b(be, code));
    v.extend(u16b(be, val.len() as u16));
    v.extend_from_slice(val);
    pad(&mut v);
    v
}

/// Options followed by opt_endofopt, or nothing when there are none.
pub fn ng_opts(be: bool, opts: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut v = Vec::new();
    for (c, val) in opts {
        v.extend(ng_opt(be, *c, val));
    }
    if !opts.is_empty() {
        v.extend([0u8; 4]);
    }
    v
}

pub fn ng_shb(be: bool, major: u16) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u32b(be, 0x1a2b_3c4d));
    body.extend(u16b(be, major));
    body.extend(u16b(be, 0));
    body.extend([0xff; 8]);
    ng_block(be, 0x0a0d_0d0a, &body)
}

pub fn ng_idb(be: bool, link: u16, snaplen: u32, opts: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u16b(be, link));
    body.extend(u16b(be, 0));
    body.extend(u32b(be, snaplen));
    body.extend(ng_opts(be, opts));
    ng_block(be, 1, &body)
}

pub fn ng_epb(
    be: bool,
    iface: u32,
    units: u64,
    orig: u32,
    data: &[u8],
    opts: &[(u16, Vec<u8>)],
) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u32b(be, iface));
    body.extend(u32b(be, (units >> 32) as u32));
    body.extend(u32b(be, units as u32));
    body.extend(u32b(be, data.len() as u32));
    body.extend(u32b(be, orig));
    body.extend_from_slice(data);
    pad(&mut body);
    body.extend(ng_opts(be, opts));
    ng_block(be, 6, &body)
}

pub fn ng_spb(be: bool, orig: u32, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u32b(be, orig));
    body.extend_from_slice(data);
    ng_block(be, 3, &body)
}

pub fn ng_opb(be: bool, iface: u16, units: u64, orig: u32, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u16b(be, iface));
    body.extend(u16b(be, 0));
    body.extend(u32b(be, (units >> 32) as u32));
    body.extend(u32b(be, units as u32));
    body.extend(u32b(be, data.len() as u32));
    body.extend(u32b(be, orig));
    body.extend_from_slice(data);
    ng_block(be, 2, &body)
}

/// An owned copy of a frame, for comparing across reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owned {
    pub ts_ns: u64,
    pub iface: u32,
    pub link_type: LinkType,
    pub orig_len: u32,
    pub data: Vec<u8>,
    pub direction: Direction,
    pub offset: u64,
}

impl Owned {
    pub fn of(f: &Frame<'_>) -> Owned {
        Owned {
            ts_ns: f.ts_ns,
            iface: f.iface,
            link_type: f.link_type,
            orig_len: f.orig_len,
            data: f.data.to_vec(),
            direction: f.direction,
            offset: f.offset,
        }
    }

    /// Everything but the offset, which legitimately changes on rewrite.
    pub fn content(&self) -> (u64, u32, LinkType, u32, &[u8], Direction) {
        (
            self.ts_ns,
            self.iface,
            self.link_type,
            self.orig_len,
            &self.data,
            self.direction,
        )
    }
}

/// Reads every frame; panics on any error.
pub fn read_all(bytes: &[u8]) -> (Format, Vec<Interface>, Vec<Owned>) {
    let mut r = CaptureReader::new(bytes).expect("header");
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().expect("frame") {
        out.push(Owned::of(&f));
    }
    assert_eq!(r.bytes_read(), bytes.len() as u64);
    (r.format(), r.interfaces().to_vec(), out)
}

/// Reads every frame up to the first error, returning both.
pub fn read_until_error(bytes: &[u8]) -> (Vec<Owned>, Option<weir_io::CaptureError>) {
    let mut r = match CaptureReader::new(bytes) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut out = Vec::new();
    loop {
        match r.next_frame() {
            Ok(Some(f)) => out.push(Owned::of(&f)),
            Ok(None) => return (out, None),
            Err(e) => {
                // The reader stays stopped after an error.
                assert!(r.next_frame().unwrap().is_none());
                return (out, Some(e));
            }
        }
    }
}

/// Frames with their comments, and the error that ended the reading.
pub type FramesRead = (Vec<(Owned, Vec<Vec<u8>>)>, Option<weir_io::CaptureError>);

/// Reads every frame `chunk` at a time with `next_chunk` up to the first
/// error, keeping each frame's comments too.
pub fn read_chunks(r: &mut CaptureReader<impl std::io::Read>, chunk: usize) -> FramesRead {
    let mut out = Vec::new();
    loop {
        // The frames borrow the reader until its next call.
        let mut frames = [Frame::EMPTY; weir_io::MAX_CHUNK];
        let got = r.next_chunk(&mut frames[..chunk]);
        assert!(got.len <= chunk);
        for f in &frames[..got.len] {
            assert!((f.iface as usize) < got.interfaces.len());
            let comments = f.comments.map(<[u8]>::to_vec).collect();
            out.push((Owned::of(f), comments));
        }
        if got.error.is_some() || got.len == 0 {
            return (out, got.error);
        }
    }
}

/// Reads every frame one by one up to the first error, with its comments.
pub fn read_singly(r: &mut CaptureReader<impl std::io::Read>) -> FramesRead {
    let mut out = Vec::new();
    loop {
        match r.next_frame() {
            Ok(Some(f)) => {
                let comments = f.comments.map(<[u8]>::to_vec).collect();
                out.push((Owned::of(&f), comments));
            }
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

/// Copies a capture through the mirror writer, the way the CLI does.
pub fn mirror(bytes: &[u8], comment: impl Fn(usize) -> Option<String>) -> Vec<u8> {
    let mut r = CaptureReader::new(bytes).expect("header");
    let mut w = CaptureWriter::mirror(Vec::new(), r.format(), r.interfaces()).unwrap();
    let mut i = 0;
    while let Some((f, ifaces)) = r.next_with_interfaces().expect("frame") {
        w.write(&f, ifaces, comment(i).as_deref()).unwrap();
        i += 1;
    }
    w.into_inner().unwrap()
}
