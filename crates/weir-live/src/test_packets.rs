//! What the unit tests of this crate and of weir-pipeline's run loop share
//! (the `testing` feature): an engine from rule text and a raw IPv4/UDP
//! datagram (10.0.0.1:1234 → 10.0.0.2:`dport`, 28 bytes, as a queue or a
//! raw socket hands it over).

use weir_engine::Engine;

pub fn engine(text: &str) -> Engine {
    let names = weir_rules::Names::default();
    Engine::new(weir_engine::load(text, &names, &Default::default()).expect("rules"))
}

pub fn ipv4_udp(dport: u16) -> Vec<u8> {
    let mut p = vec![0u8; 28];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&28u16.to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    p[20..22].copy_from_slice(&1234u16.to_be_bytes());
    p[22..24].copy_from_slice(&dport.to_be_bytes());
    p[24..26].copy_from_slice(&8u16.to_be_bytes());
    p
}
