//! Capture bytes → `CaptureReader` → every frame decoded, and written back
//! with a mirroring `CaptureWriter`; the copy must read back with the same
//! number of frames, each with the comments it had (a pcapng copy keeps
//! them, cut at most to the writer's longest option).
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_io::{CaptureReader, CaptureWriter};

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = CaptureReader::new(data) else { return };
    let format = reader.format();
    let mut writer: Option<CaptureWriter<Vec<u8>>> = None;
    let mut frames = 0usize;
    let mut written = 0usize;
    let mut comments: Vec<Vec<Vec<u8>>> = Vec::new();
    loop {
        let (frame, ifaces) = match reader.next_with_interfaces() {
            Ok(Some(f)) => f,
            Ok(None) | Err(_) => break,
        };
        frames += 1;
        let _ = weir_wire::decode(frame.link_type, frame.data, frame.orig_len);
        if writer.is_none() {
            writer = Some(CaptureWriter::mirror(Vec::new(), format, ifaces).expect("writing to a Vec"));
        }
        // The writer may refuse a frame (a pcapng link type over 16 bits, …);
        // that is an error, not a panic, and such frames are not counted.
        if let Some(w) = writer.as_mut() {
            if w.write(&frame, ifaces, None).is_ok() {
                written += 1;
                comments.push(frame.comments.map(<[u8]>::to_vec).collect());
            }
        }
    }
    let Some(w) = writer else { return };
    let out = w.into_inner().expect("flushing to a Vec");
    let mut again = CaptureReader::new(&out[..])
        .unwrap_or_else(|e| panic!("written capture does not open: {e}"));
    let mut n = 0usize;
    loop {
        match again.next_frame() {
            Ok(Some(f)) => {
                let _ = weir_wire::decode(f.link_type, f.data, f.orig_len);
                let kept: Vec<&[u8]> = f.comments.collect();
                // pcap has nowhere to put comments.
                if format == weir_io::Format::Pcapng {
                    let had = &comments[n];
                    assert_eq!(kept.len(), had.len(), "frame {n}: comments lost");
                    for (k, h) in kept.iter().zip(had) {
                        // Whole, or cut to 0xfffc bytes less at most 3 (a
                        // UTF-8 character is not split).
                        let whole = k.len() == h.len();
                        let cut = h.len() > 0xfffc && k.len() + 3 >= 0xfffc;
                        assert!(h.starts_with(k) && (whole || cut), "frame {n}: comment changed");
                    }
                }
                n += 1;
            }
            Ok(None) => break,
            Err(e) => panic!("written capture fails after {n} of {written} frames: {e}"),
        }
    }
    assert_eq!(n, written, "wrote {written} frames (of {frames} read), read back {n}");
    chunks_read_the_same(data);
});

/// Read a chunk at a time (the chunk size from the input's last byte), the
/// input gives the frames and the error that reading one by one gives.
fn chunks_read_the_same(data: &[u8]) {
    type Seen = (u64, u32, u64, Vec<u8>, Vec<Vec<u8>>);
    let seen = |f: &weir_io::Frame<'_>| -> Seen {
        (f.ts_ns, f.iface, f.offset, f.data.to_vec(), f.comments.map(<[u8]>::to_vec).collect())
    };
    let chunk = 1 + usize::from(*data.last().unwrap_or(&0)) % weir_io::MAX_CHUNK;
    let (Ok(mut one), Ok(mut many)) = (CaptureReader::new(data), CaptureReader::new(data)) else {
        return;
    };
    let mut singly = Vec::new();
    let e1 = loop {
        match one.next_frame() {
            Ok(Some(f)) => singly.push(seen(&f)),
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    let mut chunked = Vec::new();
    let e2 = loop {
        let mut frames = [weir_io::Frame::EMPTY; weir_io::MAX_CHUNK];
        let got = many.next_chunk(&mut frames[..chunk]);
        chunked.extend(frames[..got.len].iter().map(seen));
        if got.error.is_some() || got.len == 0 {
            break got.error.map(|e| e.to_string());
        }
    };
    assert_eq!(chunked, singly, "chunks of {chunk}");
    assert_eq!(e1, e2);
}
