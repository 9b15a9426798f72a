//! Rule file bytes → `Source` → `parse_source`; errors are capped and
//! render without panicking; whatever parses must print and re-parse to the
//! same tree (`parse(print(r)) == r`), and the printed text must compile (or
//! be rejected with diagnostics) without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_engine::{CompileOptions, Engine};
use weir_rules::{parse, parse_source, print_ruleset, render_all, Names, Source, MAX_ERRORS};

fuzz_target!(|data: &[u8]| {
    let source = Source::new(data);
    let text = source.text();
    let rs = match parse_source(&source, &Names::default()) {
        Ok(rs) => rs,
        Err(errors) => {
            assert!(errors.len() <= MAX_ERRORS + 1, "{} errors kept", errors.len());
            let _ = render_all("fuzz.rules", text, &errors);
            return;
        }
    };
    let printed = print_ruleset(&rs);
    let reparsed = match parse(&printed) {
        Ok(r) => r,
        Err(e) => panic!("printed ruleset does not parse: {e:?}\ninput: {text:?}\nprinted: {printed:?}"),
    };
    assert_eq!(rs, reparsed, "round trip changed the ruleset\ninput: {text:?}\nprinted: {printed:?}");
    // Printing is canonical: a second round gives the same text.
    assert_eq!(printed, print_ruleset(&reparsed), "printing is not a fixed point");

    let names = Names::default();
    for default_allow in [false, true] {
        let opts = CompileOptions {
            default_allow,
            ..Default::default()
        };
        if let Ok(prog) = weir_engine::load(&printed, &names, &opts) {
            // A compiled program must also evaluate: a TCP SYN, an ICMPv6
            // echo, an ARP frame.
            let mut engine = Engine::new(prog);
            for (link, frame) in PACKETS {
                let p = weir_wire::decode(weir_wire::LinkType(*link), frame, 0);
                engine.decide(&p);
            }
        }
    }
});

/// Raw IPv4 TCP SYN 10.1.2.3:1234 → 192.0.2.1:80, an IPv6 ICMPv6 echo,
/// and an ARP request in an Ethernet frame (the layer-2 pass).
static PACKETS: &[(u32, &[u8])] = &[
    (
        228,
        &[
            0x45, 0x00, 0x00, 0x28, 0x00, 0x01, 0x00, 0x00, 0x40, 0x06, 0x00, 0x00, 10, 1, 2, 3,
            192, 0, 2, 1, 0x04, 0xd2, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0x20, 0x00,
            0, 0, 0, 0,
        ],
    ),
    (
        229,
        &[
            0x60, 0, 0, 0, 0x00, 0x08, 58, 64, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 1, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 128, 0, 0, 0, 0,
            1, 0, 1,
        ],
    ),
    (
        1,
        &[
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x06,
            0, 1, 8, 0, 6, 4, 0, 1, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 10, 0, 0, 1, 0, 0, 0, 0,
            0, 0, 10, 0, 0, 2,
        ],
    ),
];
