// Placeholder: the decoder is being written.
use crate::packet::Packet;

/// A libpcap LINKTYPE_* value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinkType(pub u32);

pub fn decode(_link: LinkType, _frame: &[u8], _orig_len: u32) -> Packet {
    Packet::default()
}
