//! Decoding only the fields a program reads decides every packet as full
//! decoding does: generated traces, and rulesets that use every option
//! whose field decode may skip, with operands taken from the trace's own
//! packets so that they match some of them.

use proptest::prelude::*;
use weir_engine::{load, CompileOptions, Decision, Engine, Op, RuleCounter};
use weir_gen::{GenConfig, Generator};
use weir_rules::Names;
use weir_wire::{decode, decode_with, Direction, Fields, LinkType, Packet, L3};

/// A trace's frames, kept as bytes: each run decodes them its own way.
fn trace(seed: u64, count: u64) -> Vec<Vec<u8>> {
    let mut g = Generator::new(GenConfig {
        seed,
        count,
        ..GenConfig::default()
    });
    let mut frames = Vec::new();
    while let Some(f) = g.next_frame() {
        frames.push(f.data.to_vec());
    }
    frames
}

fn mac(m: [u8; 6]) -> String {
    m.map(|b| format!("{b:02x}")).join(":")
}

/// One rule option per template, reading a field decode may skip, with
/// its operand from packet `p` (so `p`, and packets like it, match).
fn option(template: usize, p: &Packet) -> String {
    match template % 12 {
        0 => format!("tcpseq {}", p.tcp_seq),
        1 => format!("tcpack {}", p.tcp_ack),
        2 => format!("tcpwin {}-{}", p.tcp_win / 2, p.tcp_win),
        3 => format!("tcpdatalen {}", p.tcp_data_len),
        4 => "tcpoptions mss".into(),
        5 => format!("tcpmss {}-1460", p.tcp_mss.min(1460)),
        6 => format!("ipid {}-{}", p.ip_id / 2, p.ip_id),
        7 => format!("flow-id {}", p.flow_label),
        8 => format!("mac {} any", mac(p.mac_dst)),
        9 => format!("mac any {}", mac(p.mac_src)),
        10 => format!("mac-type {}", p.ether_type),
        _ => "tcpoptions sack,!cc".into(),
    }
}

/// A ruleset of `count` rules (so each rule's counter tells whether it
/// read its field right), some negated, and the layer-2 pass when
/// `layer2`. Nothing else: a field one option reads must not be decoded
/// because some fixed rule asks for it too.
fn ruleset(picks: &[(usize, usize, bool)], packets: &[Packet], layer2: bool) -> String {
    let mut text = String::new();
    if layer2 {
        text += "sysctl net.link.ether.ipfw=1\n";
    }
    for (k, &(template, at, not)) in picks.iter().enumerate() {
        let p = &packets[at % packets.len()];
        let not = if not { "not " } else { "" };
        text += &format!(
            "{} count ip from any to any {not}{}\n",
            100 + k,
            option(template, p)
        );
    }
    text += "5000 allow ip from any to any\n";
    text
}

struct Run {
    decisions: Vec<Decision>,
    counters: Vec<RuleCounter>,
}

fn run(text: &str, frames: &[Vec<u8>], fields: Option<Fields>) -> (Run, Fields) {
    let prog = load(text, &Names::default(), &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{text}: {e:?}"));
    let mut e = Engine::new(prog);
    let fields = fields.unwrap_or(e.fields());
    let decisions = frames
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let mut p = decode_with(LinkType::ETHERNET, f, f.len() as u32, fields);
            // Both directions, so the layer-2 pass runs in both orders.
            p.direction = if k % 2 == 0 {
                Direction::In
            } else {
                Direction::Out
            };
            e.decide(&p)
        })
        .collect();
    let counters = e.counters().to_vec();
    (
        Run {
            decisions,
            counters,
        },
        fields,
    )
}

fn decoded(frames: &[Vec<u8>]) -> Vec<Packet> {
    frames
        .iter()
        .map(|f| decode(LinkType::ETHERNET, f, f.len() as u32))
        .filter(|p| p.l3 == L3::Ip)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn the_programs_fields_decide_as_full_decoding(
        seed in any::<u64>(),
        picks in proptest::collection::vec((0usize..12, any::<usize>(), any::<bool>()), 1..14),
        layer2 in any::<bool>(),
    ) {
        let frames = trace(seed, 400);
        let packets = decoded(&frames);
        prop_assume!(!packets.is_empty());
        let text = ruleset(&picks, &packets, layer2);
        let (full, _) = run(&text, &frames, Some(Fields::ALL));
        let (some, fields) = run(&text, &frames, None);
        prop_assert_eq!(&some.decisions, &full.decisions, "{}\nfields {:?}", text, fields);
        prop_assert_eq!(&some.counters, &full.counters, "{}\nfields {:?}", text, fields);
    }
}

/// Every opcode says which fields it reads: the table's column, checked
/// against what a program of each option asks decode for.
#[test]
fn each_option_asks_for_its_own_field() {
    let cases = [
        ("tcpseq 1", Fields::TCP_HEADER),
        ("tcpack 1", Fields::TCP_HEADER),
        ("tcpwin 1", Fields::TCP_HEADER),
        ("tcpdatalen 0", Fields::TCP_DATA_LEN),
        ("tcpoptions mss", Fields::TCP_OPTIONS),
        ("tcpmss 536", Fields::TCP_OPTIONS),
        ("ipid 1", Fields::IP_ID),
        ("flow-id 1", Fields::FLOW_LABEL),
        ("mac any any", Fields::MAC),
        ("mac-type ip", Fields::MAC),
        (
            "dst-port 80 tcpflags syn setup frag ipttl 1 iptos lowdelay",
            Fields::NONE,
        ),
    ];
    for (opt, want) in cases {
        let text = format!("100 count ip from any to any {opt}\n");
        let prog = load(&text, &Names::default(), &CompileOptions::default()).unwrap();
        // `mac` rules turn the layer-2 pass on, which reads the MAC header.
        assert_eq!(Engine::new(prog).fields(), want, "{opt}");
    }
    let setmss = "100 tcp-setmss 1000 tcp from any to any\n";
    let prog = load(setmss, &Names::default(), &CompileOptions::default()).unwrap();
    assert_eq!(Engine::new(prog).fields(), Fields::TCP_OPTIONS);
    let l2 = "sysctl net.link.ether.ipfw=1\n100 allow ip from any to any\n";
    let prog = load(l2, &Names::default(), &CompileOptions::default()).unwrap();
    assert_eq!(Engine::new(prog).fields(), Fields::MAC);
    let skipping: Vec<Op> = Op::ALL
        .iter()
        .copied()
        .filter(|op| op.reads() != Fields::NONE)
        .collect();
    assert_eq!(skipping.len(), 10, "{skipping:?}");
}

/// The property above has teeth: on these rulesets, decoding nothing
/// optional decides differently from full decoding.
#[test]
fn skipping_a_read_field_would_show() {
    let frames = trace(7, 400);
    let packets = decoded(&frames);
    for template in 0..12 {
        let picks: Vec<(usize, usize, bool)> = (0..8).map(|k| (template, k * 37, false)).collect();
        let text = ruleset(&picks, &packets, template >= 8);
        let (full, _) = run(&text, &frames, Some(Fields::ALL));
        let (none, _) = run(&text, &frames, Some(Fields::NONE));
        assert_ne!(none.counters, full.counters, "template {template}:\n{text}");
    }
}
