//! Inputs shared by the engine benches.

use weir_gen::{GenConfig, Generator};
use weir_wire::{decode, Direction, LinkType, Packet};

/// `n` generated packets (seed 7), decoded, inbound: the benches' trace.
#[allow(dead_code)] // not every bench uses it
pub fn packets(n: u64) -> Vec<Packet> {
    let mut g = Generator::new(GenConfig {
        seed: 7,
        count: n,
        ..GenConfig::default()
    });
    let mut out = Vec::with_capacity(n as usize);
    while let Some(f) = g.next_frame() {
        let mut p = decode(LinkType::ETHERNET, f.data, f.data.len() as u32);
        p.direction = Direction::In;
        out.push(p);
    }
    out
}
pub mod rulegen;
