//! What the capture, not the frame bytes, says about a packet: its
//! interface and direction, with the flags' defaults where it says nothing.

use weir_io::{Frame, Interface};
use weir_wire::{addr_to_u128, Direction, Packet};

/// The direction a packet whose capture does not say takes: `--dir`, or
/// else what `--me` says (to me: in, from me: out), or else in. Made
/// once, used per packet without allocating.
pub struct Placement {
    dir: Option<Direction>,
    me: Vec<u128>,
    /// `--iface`: the name of interfaces the capture does not name.
    iface: Option<String>,
}

impl Placement {
    pub fn new(
        dir: Option<Direction>,
        me: &[std::net::IpAddr],
        iface: Option<String>,
    ) -> Placement {
        Placement {
            dir,
            me: me.iter().map(|a| addr_to_u128(*a)).collect(),
            iface,
        }
    }

    /// The direction of a packet whose capture does not say.
    #[inline]
    pub fn default_dir(&self, p: &Packet) -> Direction {
        if let Some(d) = self.dir {
            return d;
        }
        if self.me.contains(&p.dst) {
            Direction::In
        } else if self.me.contains(&p.src) {
            Direction::Out
        } else {
            Direction::In
        }
    }

    /// Fills in the packet's interface slot and direction.
    #[inline]
    pub fn place(&self, p: &mut Packet, frame: &Frame<'_>) {
        p.iface = u16::try_from(frame.iface).unwrap_or(u16::MAX);
        if frame.direction != Direction::Unknown {
            p.direction = frame.direction;
        } else if p.direction == Direction::Unknown {
            p.direction = self.default_dir(p);
        }
    }

    /// Names of the capture's interfaces, `--iface` filling in unnamed ones.
    pub fn interface_names<'a>(&'a self, ifaces: &'a [Interface]) -> Vec<Option<&'a str>> {
        ifaces
            .iter()
            .map(|i| i.name.as_deref().or(self.iface.as_deref()))
            .collect()
    }
}
