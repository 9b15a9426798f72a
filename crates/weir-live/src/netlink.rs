//! nfnetlink_queue messages, built and parsed in safe code.
//!
//! Layouts from `<linux/netlink.h>`, `<linux/netfilter/nfnetlink.h>` and
//! `<linux/netfilter/nfnetlink_queue.h>`: a 16-byte `nlmsghdr` (host byte
//! order), a 4-byte `nfgenmsg` (family, version, queue number big-endian),
//! then attributes (`nlattr`: length, type, value padded to 4 bytes).
//! nfqueue's own values are big-endian. Parsing treats every byte as
//! untrusted: lengths are checked, nothing panics.

/// `NFNL_SUBSYS_QUEUE << 8 | message`.
const SUBSYS_QUEUE: u16 = 3 << 8;
const MSG_PACKET: u16 = SUBSYS_QUEUE;
const MSG_VERDICT: u16 = SUBSYS_QUEUE | 1;
const MSG_CONFIG: u16 = SUBSYS_QUEUE | 2;
/// Netlink control messages.
const NLMSG_ERROR: u16 = 2;

const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;

const NLMSG_HDRLEN: usize = 16;
const NFGEN_HDRLEN: usize = 4;
const NLA_HDRLEN: usize = 4;
/// Attribute type bits that are flags, not the type.
const NLA_TYPE_MASK: u16 = 0x3fff;

// Config attributes and commands.
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
const CMD_BIND: u8 = 1;
const CMD_UNBIND: u8 = 2;
const COPY_PACKET: u8 = 2;
/// Accept instead of drop when the queue is full (`NFQA_CFG_F_FAIL_OPEN`).
const CFG_F_FAIL_OPEN: u32 = 1;

// Packet and verdict attributes.
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_IFINDEX_INDEV: u16 = 5;
const NFQA_IFINDEX_OUTDEV: u16 = 6;
const NFQA_PAYLOAD: u16 = 10;
const NFQA_CAP_LEN: u16 = 13;

pub const NF_DROP: u32 = 0;
pub const NF_ACCEPT: u32 = 1;

/// Bytes one verdict message takes (header, nfgenmsg, verdict attribute).
pub const VERDICT_LEN: usize = NLMSG_HDRLEN + NFGEN_HDRLEN + NLA_HDRLEN + 8;

const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Appends one netlink message: header, nfgenmsg, then what `body` adds.
fn message(out: &mut Vec<u8>, kind: u16, flags: u16, queue: u16, body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]); // length, patched below
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes()); // sequence
    out.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel
    out.extend_from_slice(&[libc::AF_UNSPEC as u8, 0]); // family, NFNETLINK_V0
    out.extend_from_slice(&queue.to_be_bytes());
    body(out);
    let len = u32::try_from(out.len() - start).unwrap_or(u32::MAX);
    out[start..start + 4].copy_from_slice(&len.to_ne_bytes());
}

fn attr(out: &mut Vec<u8>, kind: u16, value: &[u8]) {
    let len = u16::try_from(NLA_HDRLEN + value.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(value);
    out.resize(align4(out.len()), 0);
}

/// How the queue is set up when bound.
#[derive(Clone, Copy, Debug)]
pub struct QueueConfig {
    pub queue: u16,
    /// Bytes of each packet copied to us (the headers are in the first 128).
    pub copy_range: u32,
    /// Packets the kernel holds waiting for a verdict.
    pub max_len: u32,
    /// Accept packets the queue has no room for, instead of dropping them.
    pub fail_open: bool,
}

/// Bind to the queue (acknowledged), as `nfq_create_queue` does.
pub fn bind(out: &mut Vec<u8>, queue: u16) {
    message(out, MSG_CONFIG, NLM_F_ACK, queue, |b| {
        attr(b, NFQA_CFG_CMD, &[CMD_BIND, 0, 0, 0]);
    });
}

pub fn unbind(out: &mut Vec<u8>, queue: u16) {
    message(out, MSG_CONFIG, NLM_F_ACK, queue, |b| {
        attr(b, NFQA_CFG_CMD, &[CMD_UNBIND, 0, 0, 0]);
    });
}

/// Copy mode, queue length and the fail-open flag (acknowledged).
pub fn configure(out: &mut Vec<u8>, c: &QueueConfig) {
    message(out, MSG_CONFIG, NLM_F_ACK, c.queue, |b| {
        // nfqnl_msg_config_params is packed: copy_range (be32), copy_mode.
        let mut params = [0u8; 5];
        params[..4].copy_from_slice(&c.copy_range.to_be_bytes());
        params[4] = COPY_PACKET;
        attr(b, NFQA_CFG_PARAMS, &params);
        attr(b, NFQA_CFG_QUEUE_MAXLEN, &c.max_len.to_be_bytes());
        let flags = if c.fail_open { CFG_F_FAIL_OPEN } else { 0 };
        attr(b, NFQA_CFG_MASK, &CFG_F_FAIL_OPEN.to_be_bytes());
        attr(b, NFQA_CFG_FLAGS, &flags.to_be_bytes());
    });
}

/// Appends a verdict for packet `id`; many can share one send.
#[inline]
pub fn verdict(out: &mut Vec<u8>, queue: u16, id: u32, verdict: u32) {
    message(out, MSG_VERDICT, 0, queue, |b| {
        let mut v = [0u8; 8];
        v[..4].copy_from_slice(&verdict.to_be_bytes());
        v[4..].copy_from_slice(&id.to_be_bytes());
        attr(b, NFQA_VERDICT_HDR, &v);
    });
}

/// One queued packet, borrowed from the receive buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuedPacket<'a> {
    pub id: u32,
    /// Netfilter hook (0 prerouting, 1 input, 2 forward, 3 output, 4 postrouting).
    pub hook: u8,
    pub indev: u32,
    pub outdev: u32,
    /// The IP packet (raw IP), possibly cut at the copy range.
    pub payload: &'a [u8],
    /// The packet's length on the wire.
    pub orig_len: u32,
}

impl QueuedPacket<'_> {
    /// No packet, to fill a batch's array before it is received.
    pub const EMPTY: QueuedPacket<'static> = QueuedPacket {
        id: 0,
        hook: 0,
        indev: 0,
        outdev: 0,
        payload: &[],
        orig_len: 0,
    };
}

/// What one datagram from the queue socket was.
#[derive(Debug, PartialEq, Eq)]
pub enum Received<'a> {
    Packet(QueuedPacket<'a>),
    /// An acknowledgement (errno 0) or an error from the kernel (errno > 0).
    Ack(i32),
    /// Anything else, or bytes that do not parse: counted, never trusted.
    Other,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be32(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(..4)?.try_into().ok()?))
}

/// Parses the first message of a datagram (the kernel sends one packet
/// per datagram; acknowledgements come alone too).
pub fn parse(buf: &[u8]) -> Received<'_> {
    parse_message(buf).unwrap_or(Received::Other)
}

fn parse_message(buf: &[u8]) -> Option<Received<'_>> {
    let len = u32_at(buf, 0)? as usize;
    let kind = u16_at(buf, 4)?;
    let msg = buf.get(..len)?;
    if len < NLMSG_HDRLEN {
        return None;
    }
    if kind == NLMSG_ERROR {
        let errno = i32::from_ne_bytes(msg.get(16..20)?.try_into().ok()?);
        return Some(Received::Ack(errno.checked_neg()?));
    }
    if kind != MSG_PACKET {
        return Some(Received::Other);
    }
    let mut attrs = msg.get(NLMSG_HDRLEN + NFGEN_HDRLEN..)?;
    let mut id = None;
    let mut p = QueuedPacket::EMPTY;
    let mut cap_len = None;
    while attrs.len() >= NLA_HDRLEN {
        let alen = usize::from(u16_at(attrs, 0)?);
        let kind = u16_at(attrs, 2)? & NLA_TYPE_MASK;
        let value = attrs.get(NLA_HDRLEN..alen)?;
        match kind {
            // nfqnl_msg_packet_hdr is packed: id (be32), hw_protocol, hook.
            NFQA_PACKET_HDR => {
                id = Some(be32(value)?);
                p.hook = *value.get(6)?;
            }
            NFQA_IFINDEX_INDEV => p.indev = be32(value)?,
            NFQA_IFINDEX_OUTDEV => p.outdev = be32(value)?,
            NFQA_PAYLOAD => p.payload = value,
            NFQA_CAP_LEN => cap_len = Some(be32(value)?),
            _ => {}
        }
        attrs = attrs.get(align4(alen)..).unwrap_or(&[]);
    }
    p.id = id?;
    let payload_len = u32::try_from(p.payload.len()).unwrap_or(u32::MAX);
    p.orig_len = cap_len.unwrap_or(payload_len).max(payload_len);
    Some(Received::Packet(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet message as the kernel lays it out (built by hand here).
    fn kernel_packet(id: u32, hook: u8, payload: &[u8], cap_len: Option<u32>) -> Vec<u8> {
        let mut out = Vec::new();
        message(&mut out, MSG_PACKET, 0, 7, |b| {
            let mut hdr = [0u8; 7];
            hdr[..4].copy_from_slice(&id.to_be_bytes());
            hdr[4..6].copy_from_slice(&0x0800u16.to_be_bytes());
            hdr[6] = hook;
            attr(b, NFQA_PACKET_HDR, &hdr);
            attr(b, NFQA_IFINDEX_INDEV, &3u32.to_be_bytes());
            attr(b, NFQA_IFINDEX_OUTDEV, &4u32.to_be_bytes());
            if let Some(c) = cap_len {
                attr(b, NFQA_CAP_LEN, &c.to_be_bytes());
            }
            attr(b, NFQA_PAYLOAD, payload);
        });
        out
    }

    #[test]
    fn parses_a_packet_message() {
        let payload = [0x45u8, 0, 0, 20, 1, 2, 3];
        let buf = kernel_packet(0xdead_beef, 2, &payload, None);
        let Received::Packet(p) = parse(&buf) else {
            panic!("not a packet")
        };
        assert_eq!(
            p,
            QueuedPacket {
                id: 0xdead_beef,
                hook: 2,
                indev: 3,
                outdev: 4,
                payload: &payload,
                orig_len: 7,
            }
        );
        let cut = kernel_packet(1, 0, &payload, Some(1500));
        let Received::Packet(p) = parse(&cut) else {
            panic!("not a packet")
        };
        assert_eq!(p.orig_len, 1500);
    }

    #[test]
    fn verdict_layout_matches_the_kernel_header() {
        let mut out = Vec::new();
        verdict(&mut out, 0x0102, 0x0a0b_0c0d, NF_ACCEPT);
        verdict(&mut out, 0x0102, 5, NF_DROP);
        assert_eq!(out.len(), 2 * VERDICT_LEN);
        let first = &out[..VERDICT_LEN];
        assert_eq!(u32_at(first, 0), Some(VERDICT_LEN as u32));
        assert_eq!(u16_at(first, 4), Some(MSG_VERDICT));
        assert_eq!(u16_at(first, 6), Some(NLM_F_REQUEST));
        assert_eq!(&first[16..20], &[0, 0, 1, 2]);
        assert_eq!(u16_at(first, 20), Some(12));
        assert_eq!(u16_at(first, 22), Some(NFQA_VERDICT_HDR));
        assert_eq!(&first[24..], &[0, 0, 0, 1, 0x0a, 0x0b, 0x0c, 0x0d]);
        assert_eq!(&out[VERDICT_LEN + 24..], &[0, 0, 0, 0, 0, 0, 0, 5]);
    }

    #[test]
    fn config_params_are_packed() {
        let mut out = Vec::new();
        configure(
            &mut out,
            &QueueConfig {
                queue: 3,
                copy_range: 0xffff,
                max_len: 4096,
                fail_open: true,
            },
        );
        // header 16 + nfgen 4 + params (4+5 → 12) + maxlen 8 + mask 8 + flags 8
        assert_eq!(out.len(), 56);
        assert_eq!(&out[20..29], &[9, 0, 2, 0, 0, 0, 0xff, 0xff, COPY_PACKET]);
        assert_eq!(&out[52..56], &1u32.to_be_bytes());
    }

    #[test]
    fn acks_and_errors() {
        let mut buf = vec![0u8; 36];
        buf[..4].copy_from_slice(&36u32.to_ne_bytes());
        buf[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        assert_eq!(parse(&buf), Received::Ack(0));
        buf[16..20].copy_from_slice(&(-1i32).to_ne_bytes());
        assert_eq!(parse(&buf), Received::Ack(1));
    }

    #[test]
    fn every_prefix_and_corruption_parses_without_panic() {
        let buf = kernel_packet(9, 2, &[0x45; 40], None);
        for n in 0..=buf.len() {
            let _ = parse(&buf[..n]);
            let mut bad = buf.clone();
            if n < bad.len() {
                bad[n] ^= 0xff;
                let _ = parse(&bad);
            }
        }
        // Cut inside the packet header attribute: no id, so not a packet.
        assert_eq!(parse(&buf[..24]), Received::Other);
    }
}
