//! ClassBench filter set and header trace parsers. Input: filter text, a
//! NUL byte, trace text (without a NUL, both parsers read the whole input).
//! Whatever parses must print and re-parse to the same values; parsed
//! filters must compile for the engine and answer every parsed header as
//! the brute-force reference does, on the 5-tuple and with the flags; the
//! ipfw import must parse back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_classbench::to_weir::{import, import_text, Compiled};
use weir_classbench::{first_match, gen, parse_filters, parse_trace, Fields};
use weir_engine::{CompileOptions, Engine};
use weir_rules::Names;

fuzz_target!(|data: &[u8]| {
    let (rules, trace) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, data),
    };
    let rules = String::from_utf8_lossy(rules);
    let trace = String::from_utf8_lossy(trace);
    let filters = parse_filters(&rules).ok();
    let headers = parse_trace(&trace).ok();
    if let Some(f) = &filters {
        assert_eq!(parse_filters(&gen::write_filters(f)).as_ref(), Ok(f), "filters round trip");
        let parsed = weir_rules::parse(&import_text(f, "fuzz")).expect("import parses");
        assert_eq!(parsed, import(f), "import round trip");
    }
    if let Some(h) = &headers {
        assert_eq!(parse_trace(&gen::write_trace(h)).as_ref(), Ok(h), "trace round trip");
    }
    let (Some(f), Some(h)) = (filters, headers) else { return };
    if f.len() > 256 || h.len() > 256 {
        return;
    }
    for fields in [Fields::FiveTuple, Fields::WithFlags] {
        let c = Compiled::with_fields(&f, fields).expect("at most 256 flags values");
        let prog = weir_engine::compile(&c.ruleset, &Names::default(), &CompileOptions::default())
            .expect("parsed filters always compile");
        for linear in [false, true] {
            let mut e = Engine::builder(prog.clone()).linear(linear).build();
            for x in &h {
                let got = c.filter_number(e.decide(&c.packet(x)).rule);
                let want = first_match(&f, x, fields);
                assert_eq!(got, want, "header {x:?}, {fields:?}, linear {linear}");
            }
        }
    }
});
