//! The tables beside the conformance corpus's rule files (`NAME.expect`):
//! what each file's documentation says about crafted packets. The format
//! is described in `conformance/ipfw/README.md`; in short:
//!
//! ```text
//! refuse WORD                   # the rule naming WORD is refused, by name
//! run [WEIR RUN ARGS...]        # a replay; the packets below go into it
//! [xN] IFACE[/ether] in|out PACKET -> RULE ACTION [ARG] [@P | RULE ACTION [ARG]]
//! counter RULE PACKETS          # the rules numbered RULE counted PACKETS
//! ```
//!
//! `PACKET` is `tcp A:P > B:P [FLAGS]`, `udp A:P > B:P`,
//! `icmp A > B TYPE[/CODE]`, `icmp6 A > B TYPE[/CODE]` or `proto N A > B`,
//! followed by any of `frag` (a later fragment) and `tos 0xNN`. IPv6
//! addresses with a port are written `[ADDR]:PORT`; TCP flags as tcpdump
//! prints them (`[S]`, `[S.]`, `[.]`, `[P.]`, `[F.]`, `[R]`).

use std::net::IpAddr;

#[derive(Debug, Default)]
pub struct Expectations {
    /// Keywords the rule file must be refused for, each at its place.
    pub refusals: Vec<String>,
    pub runs: Vec<Run>,
}

#[derive(Debug)]
pub struct Run {
    pub line: usize,
    /// Extra `weir run` arguments: replay context and settings.
    pub args: Vec<String>,
    pub packets: Vec<PacketLine>,
    /// A rule number and the packets the rules of that number must count.
    pub counters: Vec<(u32, u64)>,
}

#[derive(Debug)]
pub struct PacketLine {
    pub line: usize,
    /// The line as written, for messages.
    pub text: String,
    pub repeat: usize,
    pub iface: String,
    /// Captured with its Ethernet header (`IFACE/ether`), else raw IP.
    pub ether: bool,
    pub dir: Dir,
    pub packet: Packet,
    pub outcome: Outcome,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    In,
    Out,
}

#[derive(Clone, Debug)]
pub struct Packet {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub l4: L4,
    /// A later fragment: offset 1480, no transport header.
    pub frag: bool,
    /// IPv4 TOS byte or IPv6 traffic class.
    pub tos: u8,
}

#[derive(Clone, Copy, Debug)]
pub enum L4 {
    Tcp { sport: u16, dport: u16, flags: u8 },
    Udp { sport: u16, dport: u16 },
    Icmp { typ: u8, code: u8 },
    Icmp6 { typ: u8, code: u8 },
    Proto(u8),
}

impl L4 {
    pub fn proto(self) -> u8 {
        match self {
            L4::Tcp { .. } => 6,
            L4::Udp { .. } => 17,
            L4::Icmp { .. } => 1,
            L4::Icmp6 { .. } => 58,
            L4::Proto(p) => p,
        }
    }
}

/// The deciding rule's number and its action as a verdict file shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub rule: u32,
    pub action: String,
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.rule, self.action)
    }
}

#[derive(Clone, Debug)]
pub enum Outcome {
    Always(Decision),
    /// A share `p` of the packets get `first`, the others `rest` (`prob`).
    Share {
        first: Decision,
        p: f64,
        rest: Decision,
    },
}

/// TCP flags in tcpdump's letters and order; `.` is ACK.
const TCP_FLAGS: [(char, u8); 8] = [
    ('F', 0x01),
    ('S', 0x02),
    ('R', 0x04),
    ('P', 0x08),
    ('U', 0x20),
    ('E', 0x40),
    ('W', 0x80),
    ('.', 0x10),
];

/// Flags as tcpdump prints them: `S.` for SYN+ACK.
pub fn tcp_flags_text(flags: u8) -> String {
    TCP_FLAGS
        .iter()
        .filter(|(_, bit)| flags & bit != 0)
        .map(|(c, _)| *c)
        .collect()
}

pub fn parse(text: &str) -> Result<Expectations, String> {
    let mut ex = Expectations::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        let words: Vec<&str> = content.split_whitespace().collect();
        let fail = |msg: String| format!("line {line}: {msg}");
        match words.first() {
            None => continue,
            Some(&"refuse") => match words.as_slice() {
                [_, word] => ex.refusals.push((*word).to_owned()),
                _ => return Err(fail("refuse takes one word".into())),
            },
            Some(&"run") => ex.runs.push(Run {
                line,
                args: words[1..].iter().map(|w| (*w).to_owned()).collect(),
                packets: Vec::new(),
                counters: Vec::new(),
            }),
            Some(&"counter") => {
                let run = ex
                    .runs
                    .last_mut()
                    .ok_or_else(|| fail("counter before run".into()))?;
                match words.as_slice() {
                    [_, rule, n] => run.counters.push((
                        rule.parse().map_err(|_| fail(format!("rule {rule:?}")))?,
                        n.parse().map_err(|_| fail(format!("count {n:?}")))?,
                    )),
                    _ => return Err(fail("counter takes RULE PACKETS".into())),
                }
            }
            Some(_) => {
                let run = ex
                    .runs
                    .last_mut()
                    .ok_or_else(|| fail("packet before run".into()))?;
                let p = packet_line(content, line).map_err(fail)?;
                run.packets.push(p);
            }
        }
    }
    if !ex.refusals.is_empty() && !ex.runs.is_empty() {
        return Err("a refused file has no runs".into());
    }
    Ok(ex)
}

fn packet_line(content: &str, line: usize) -> Result<PacketLine, String> {
    let (lhs, rhs) = content
        .split_once("->")
        .ok_or("a packet line needs '-> RULE ACTION'")?;
    let mut words = lhs.split_whitespace().peekable();
    let count = words.peek().and_then(|w| w.strip_prefix('x'));
    let repeat = match count.filter(|n| n.bytes().all(|b| b.is_ascii_digit())) {
        Some(n) => {
            let n = n.parse().map_err(|_| format!("repeat count {n:?}"))?;
            words.next();
            n
        }
        None => 1,
    };
    let iface_word = words.next().ok_or("missing interface")?;
    let (iface, ether) = match iface_word.split_once('/') {
        Some((name, "ether")) => (name, true),
        Some(_) => return Err(format!("interface {iface_word:?}: only /ether")),
        None => (iface_word, false),
    };
    let dir = match words.next() {
        Some("in") => Dir::In,
        Some("out") => Dir::Out,
        w => return Err(format!("direction {w:?}: in or out")),
    };
    let rest: Vec<&str> = words.collect();
    Ok(PacketLine {
        line,
        text: lhs.trim().to_owned(),
        repeat,
        iface: iface.to_owned(),
        ether,
        dir,
        packet: packet(&rest)?,
        outcome: outcome(rhs)?,
    })
}

fn packet(w: &[&str]) -> Result<Packet, String> {
    let kind = *w.first().ok_or("missing packet")?;
    let (l4_src, rest) = match kind {
        "tcp" | "udp" => {
            let [_, a, ">", b, rest @ ..] = w else {
                return Err(format!("{kind} A:P > B:P"));
            };
            let (src, sport) = endpoint(a)?;
            let (dst, dport) = endpoint(b)?;
            if kind == "udp" {
                ((src, dst, L4::Udp { sport, dport }), rest)
            } else {
                let [flags, rest @ ..] = rest else {
                    return Err("tcp needs [FLAGS]".into());
                };
                let flags = tcp_flags(flags)?;
                (
                    (
                        src,
                        dst,
                        L4::Tcp {
                            sport,
                            dport,
                            flags,
                        },
                    ),
                    rest,
                )
            }
        }
        "icmp" | "icmp6" => {
            let [_, a, ">", b, t, rest @ ..] = w else {
                return Err(format!("{kind} A > B TYPE[/CODE]"));
            };
            let (typ, code) = match t.split_once('/') {
                Some((t, c)) => (num(t)?, num(c)?),
                None => (num(t)?, 0),
            };
            let l4 = if kind == "icmp" {
                L4::Icmp { typ, code }
            } else {
                L4::Icmp6 { typ, code }
            };
            ((addr(a)?, addr(b)?, l4), rest)
        }
        "proto" => {
            let [_, n, a, ">", b, rest @ ..] = w else {
                return Err("proto N A > B".into());
            };
            ((addr(a)?, addr(b)?, L4::Proto(num(n)?)), rest)
        }
        _ => return Err(format!("unknown packet kind {kind:?}")),
    };
    let (src, dst, l4) = l4_src;
    if src.is_ipv4() != dst.is_ipv4() {
        return Err("source and destination of different families".into());
    }
    let mut p = Packet {
        src,
        dst,
        l4,
        frag: false,
        tos: 0,
    };
    let mut it = rest.iter();
    while let Some(m) = it.next() {
        match *m {
            "frag" => p.frag = true,
            "tos" => {
                let v = it.next().ok_or("tos needs a value")?;
                let hex = v.strip_prefix("0x").ok_or("tos in hex, 0xNN")?;
                p.tos = u8::from_str_radix(hex, 16).map_err(|_| format!("tos {v:?}"))?;
            }
            _ => return Err(format!("unknown packet modifier {m:?}")),
        }
    }
    Ok(p)
}

fn num(s: &str) -> Result<u8, String> {
    s.parse().map_err(|_| format!("number 0-255: {s:?}"))
}

fn addr(s: &str) -> Result<IpAddr, String> {
    s.parse().map_err(|_| format!("address {s:?}"))
}

/// `A.B.C.D:PORT` or `[IPV6]:PORT`.
fn endpoint(s: &str) -> Result<(IpAddr, u16), String> {
    let (a, p) = match s.strip_prefix('[') {
        Some(v6) => v6.split_once("]:").ok_or(format!("endpoint {s:?}"))?,
        None => s.rsplit_once(':').ok_or(format!("endpoint {s:?}"))?,
    };
    Ok((addr(a)?, p.parse().map_err(|_| format!("port {p:?}"))?))
}

fn tcp_flags(s: &str) -> Result<u8, String> {
    let inner = s
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or(format!("TCP flags {s:?}: [S.] and the like"))?;
    inner.chars().try_fold(0u8, |acc, c| {
        TCP_FLAGS
            .iter()
            .find(|(l, _)| *l == c)
            .map(|(_, bit)| acc | bit)
            .ok_or(format!("TCP flag {c:?}"))
    })
}

fn outcome(s: &str) -> Result<Outcome, String> {
    match s.split_once('|') {
        Some((first, rest)) => {
            let (first, p) = first
                .rsplit_once('@')
                .ok_or("a shared outcome is 'RULE ACTION @P | RULE ACTION'")?;
            let p: f64 = p.trim().parse().map_err(|_| format!("share {p:?}"))?;
            Ok(Outcome::Share {
                first: decision(first)?,
                p,
                rest: decision(rest)?,
            })
        }
        None => Ok(Outcome::Always(decision(s)?)),
    }
}

fn decision(s: &str) -> Result<Decision, String> {
    let mut w = s.split_whitespace();
    let rule = w.next().ok_or("missing rule number")?;
    let rule = rule.parse().map_err(|_| format!("rule number {rule:?}"))?;
    let action: Vec<&str> = w.collect();
    if action.is_empty() {
        return Err("missing action".into());
    }
    Ok(Decision {
        rule,
        action: action.join(" "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_parses() {
        let ex = parse(
            "# c\nrun --me 192.0.2.5\n\
             x3 em0/ether in tcp [2001:db8::1]:40000 > [2001:db8::2]:80 [S.] tos 0x28 -> 100 pipe 1 # w\n\
             em1 out proto 17 192.0.2.1 > 192.0.2.2 frag -> 100 deny @0.05 | 65535 allow\n\
             counter 100 4\n",
        )
        .unwrap();
        let run = &ex.runs[0];
        assert_eq!(run.args, ["--me", "192.0.2.5"]);
        assert_eq!(run.counters, [(100, 4)]);
        let p = &run.packets[0];
        assert_eq!((p.repeat, p.iface.as_str(), p.ether), (3, "em0", true));
        assert!(matches!(
            p.packet.l4,
            L4::Tcp {
                sport: 40000,
                dport: 80,
                flags: 0x12
            }
        ));
        assert_eq!(p.packet.tos, 0x28);
        assert!(matches!(&p.outcome, Outcome::Always(d) if d.action == "pipe 1"));
        assert!(run.packets[1].packet.frag);
        assert!(matches!(&run.packets[1].outcome, Outcome::Share { p, .. } if *p == 0.05));
        assert_eq!(tcp_flags_text(0x12), "S.");
    }

    #[test]
    fn mistakes_are_refused() {
        for bad in [
            "em0 in udp 1.2.3.4:1 > 5.6.7.8:2 -> 100 allow", // before run
            "run\nem0 in udp 1.2.3.4:1 > 5.6.7.8:2",         // no outcome
            "run\nem0 sideways udp 1.2.3.4:1 > 5.6.7.8:2 -> 1 allow",
            "run\nem0 in tcp 1.2.3.4:1 > 5.6.7.8:2 [Q] -> 1 allow",
            "run\nem0 in udp 1.2.3.4:1 > ::1:2 -> 1 allow",
            "refuse verrevpath\nrun",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
    }
}
