//! Capture bytes → `CaptureReader` → every frame decoded, and written back
//! with a mirroring `CaptureWriter`; the copy must read back with the same
//! number of frames.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_io::{CaptureReader, CaptureWriter};

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = CaptureReader::new(data) else { return };
    let format = reader.format();
    let mut writer: Option<CaptureWriter<Vec<u8>>> = None;
    let mut frames = 0usize;
    let mut written = 0usize;
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
                n += 1;
                let _ = weir_wire::decode(f.link_type, f.data, f.orig_len);
            }
            Ok(None) => break,
            Err(e) => panic!("written capture fails after {n} of {written} frames: {e}"),
        }
    }
    assert_eq!(n, written, "wrote {written} frames (of {frames} read), read back {n}");
});
