//! The AF_PACKET ring walks on arbitrary bytes: a TPACKET_V3 block and a
//! TPACKET_V2 frame slot whose headers point anywhere. Every frame handed
//! out must lie inside the input, and the walk must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let range = data.as_ptr_range();
    let inside = |f: &weir_capture::Frame<'_>| {
        let r = f.data.as_ptr_range();
        assert!(range.start <= r.start && r.end <= range.end, "frame outside the block");
    };
    let mut seen = 0usize;
    let n = weir_capture::walk_v3_block(data, |f| {
        inside(f);
        seen += 1;
    });
    assert_eq!(n, seen);
    if let Some(f) = weir_capture::v2_frame(data) {
        inside(&f);
    }
});
