//! A flood of 1M distinct flows against a `keep-state` rule with the
//! default `dyn_max` (65536): the table fills, refuses the rest, counts the
//! refusals, and its memory stays under a fixed bound whatever the flood.

use weir_engine::*;
use weir_rules::Names;
use weir_wire::{v4_mapped, Packet, L3};

/// The documented bound (README, "Stateful rules"): 17.4 MiB at
/// `dyn_max` = 65536, what `StateTable::memory_for` says.
const TABLE_BOUND: usize = 17_800 << 10;
/// And the whole test process's peak resident memory.
const PROCESS_BOUND_KIB: u64 = 96 << 10;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_million_flows_fill_the_table_and_are_refused_beyond_dyn_max() {
    let prog = load(
        "allow udp from any to any keep-state\n",
        &Names::default(),
        &CompileOptions::default(),
    )
    .unwrap();
    let mut engine = Engine::new(prog);
    let flows: u32 = 1_000_000;
    let mut passed = 0u64;
    for k in 0..flows {
        // All within 10 s, inside the UDP lifetime: nothing expires.
        engine.set_time(u64::from(k) * 10_000);
        let p = Packet {
            l3: L3::Ip,
            ip_version: 4,
            proto: 17,
            src: v4_mapped(0x0a00_0000 | k),
            dst: v4_mapped(0xc000_0201),
            src_port: 1024 + (k % 50_000) as u16,
            dst_port: 53,
            has_ports: true,
            l3_len: 28,
            ..Packet::default()
        };
        if engine.decide(&p).verdict == Verdict::Pass {
            passed += 1;
        }
    }
    let table = engine.states().expect("a stateful program has a table");
    let s = table.stats();
    assert_eq!(s.created, 65_536);
    assert_eq!(s.refused_full, u64::from(flows) - 65_536);
    assert_eq!(s.live, 65_536);
    assert_eq!(passed, 65_536, "refused flows are denied");
    assert!(
        table.memory() <= StateTable::memory_for(65_536, false),
        "state table holds {} bytes, more than its own bound",
        table.memory()
    );
    assert!(StateTable::memory_for(65_536, false) <= TABLE_BOUND);
    eprintln!(
        "state table {} KiB at {} states; process peak {:?} KiB",
        table.memory() >> 10,
        s.live,
        peak_rss_kib()
    );
    if let Some(peak) = peak_rss_kib() {
        assert!(
            peak <= PROCESS_BOUND_KIB,
            "peak RSS {peak} KiB over {PROCESS_BOUND_KIB}"
        );
    }
}
