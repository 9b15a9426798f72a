//! `log` rules: ipfw-style lines, formatted only for packets that are logged.
//!
//! The ppp lesson: name tables are built once here, and text is made only
//! when a rule with `log` matches and its `logamount` allows. Output goes
//! through a buffered writer, so logging costs no system call per line.

use crate::program::{Rule, RuleAction};
use serde::Serialize;
use std::io::{self, Write};
use std::net::IpAddr;
use weir_rules::ppp::{role_of, FilterSet, Role};
use weir_rules::Names;
use weir_wire::{proto, Direction, Packet};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `weir: 400 Deny TCP 10.0.0.1:1234 10.0.0.2:23 in via eth0`
    #[default]
    Text,
    /// One JSON object per line.
    Json,
    /// FreeBSD ppp's LogFILTER lines for a translated ppp set:
    /// `Filter: INbound rule = 3 deny tcp src = 10.0.0.1/1234 dst = 10.0.0.2/23`.
    Ppp(FilterSet),
}

/// Writes log lines for matching `log` rules.
pub struct Logger {
    out: io::BufWriter<Box<dyn Write + Send>>,
    format: LogFormat,
    /// Upper-case protocol names by number ("TCP", "GRE", …).
    proto_names: Vec<Option<String>>,
    iface_names: Vec<Option<String>>,
    /// ppp's protocol names, as getprotobynumber gives them (ppp format only).
    ppp_proto_names: Vec<String>,
    /// Lines each rule may still write (`logamount`).
    left: Vec<u32>,
    /// Lines written, and lines suppressed by `logamount`.
    pub lines: u64,
    pub suppressed: u64,
    /// Write errors (logging never stops the filter).
    pub errors: u64,
}

impl Logger {
    pub fn new(
        out: Box<dyn Write + Send>,
        format: LogFormat,
        names: &Names,
        rules: &[Rule],
    ) -> Logger {
        Logger {
            out: io::BufWriter::with_capacity(64 * 1024, out),
            format,
            proto_names: (0..=255u8)
                .map(|n| names.protocol_name(n).map(str::to_ascii_uppercase))
                .collect(),
            iface_names: Vec::new(),
            ppp_proto_names: match format {
                LogFormat::Ppp(_) => (0..=255u8)
                    .map(|n| {
                        names
                            .protocol_name(n)
                            .map_or_else(|| n.to_string(), str::to_owned)
                    })
                    .collect(),
                _ => Vec::new(),
            },
            left: rules.iter().map(|r| r.log_limit.unwrap_or(0)).collect(),
            lines: 0,
            suppressed: 0,
            errors: 0,
        }
    }

    pub fn set_interfaces(&mut self, names: &[Option<&str>]) {
        self.iface_names = names.iter().map(|n| n.map(str::to_owned)).collect();
    }

    /// Logs packet number `index` (1-based) matched by rule `ri`.
    pub fn log(&mut self, ri: usize, rule: &Rule, p: &Packet, index: u64) {
        match self.left.get_mut(ri) {
            Some(0) | None => {
                self.suppressed += 1;
                return;
            }
            Some(n) => *n -= 1,
        }
        let res = match self.format {
            LogFormat::Text => self.text_line(rule, p),
            LogFormat::Json => self.json_line(rule, p, index),
            LogFormat::Ppp(set) => self.ppp_line(set, rule, p),
        };
        match res {
            Ok(()) => self.lines += 1,
            Err(_) => self.errors += 1,
        }
    }

    fn iface<'a>(names: &'a [Option<String>], p: &Packet) -> Option<&'a str> {
        names.get(usize::from(p.iface)).and_then(|n| n.as_deref())
    }

    fn text_line(&mut self, rule: &Rule, p: &Packet) -> io::Result<()> {
        let out = &mut self.out;
        write!(out, "weir: {} ", rule.number)?;
        write_action(out, &rule.action)?;
        let (src, dst) = (p.src_ip(), p.dst_ip());
        if p.has_ports {
            let name = self.proto_names[usize::from(p.proto)]
                .as_deref()
                .unwrap_or("P");
            write!(out, " {name} ")?;
            write_endpoint(out, src, p.src_port)?;
            out.write_all(b" ")?;
            write_endpoint(out, dst, p.dst_port)?;
        } else if p.has_icmp {
            let kind = if p.ip_version == 6 { "ICMPv6" } else { "ICMP" };
            write!(out, " {kind}:{}.{} {src} {dst}", p.icmp_type, p.icmp_code)?;
        } else {
            write!(out, " P:{} {src} {dst}", p.proto)?;
        }
        let dir = match p.direction {
            Direction::Out => " out",
            _ => " in",
        };
        out.write_all(dir.as_bytes())?;
        if let Some(name) = Self::iface(&self.iface_names, p) {
            write!(out, " via {name}")?;
        }
        out.write_all(b"\n")
    }

    /// ppp's `FilterCheck` wording (usr.sbin/ppp/ip.c): denies with `/`
    /// before the ports, the dial set's accepts with `:`, the implicit
    /// deny, and the later-fragment error. The "port" of an ICMP packet is
    /// its type; other protocols print 0.
    fn ppp_line(&mut self, set: FilterSet, rule: &Rule, p: &Packet) -> io::Result<()> {
        let out = &mut self.out;
        let (sport, dport) = match p.proto {
            proto::TCP | proto::UDP if p.has_ports => (p.src_port, p.dst_port),
            proto::ICMP | proto::ICMPV6 if p.has_icmp => (u16::from(p.icmp_type), 0),
            _ => (0, 0),
        };
        let proto = self
            .ppp_proto_names
            .get(usize::from(p.proto))
            .map_or("?", String::as_str);
        let name = set.log_name();
        let (src, dst) = (p.src_ip(), p.dst_ip());
        match role_of(rule.number) {
            Role::Fragment => out.write_all(b"Filter:  error: illegal fragmentation\n"),
            Role::Rule(n) if rule.action == RuleAction::Allow => writeln!(
                out,
                "Filter: {name}bound rule = {n} accept {proto} src = {src}:{sport} dst = {dst}:{dport}"
            ),
            Role::Rule(n) => writeln!(
                out,
                "Filter: {name}bound rule = {n} deny {proto} src = {src}/{sport} dst = {dst}/{dport}"
            ),
            Role::ImplicitDeny => writeln!(
                out,
                "Filter: {name}bound rule = implicit deny {proto} src = {src}/{sport} dst = {dst}/{dport}"
            ),
        }
    }

    fn json_line(&mut self, rule: &Rule, p: &Packet, index: u64) -> io::Result<()> {
        #[derive(Serialize)]
        struct Line<'a> {
            packet: u64,
            rule: u16,
            action: &'static str,
            proto: u8,
            src: IpAddr,
            dst: IpAddr,
            #[serde(skip_serializing_if = "Option::is_none")]
            src_port: Option<u16>,
            #[serde(skip_serializing_if = "Option::is_none")]
            dst_port: Option<u16>,
            #[serde(skip_serializing_if = "Option::is_none")]
            icmp_type: Option<u8>,
            #[serde(skip_serializing_if = "Option::is_none")]
            icmp_code: Option<u8>,
            direction: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            iface: Option<&'a str>,
        }
        let line = Line {
            packet: index,
            rule: rule.number,
            action: rule.action.word(),
            proto: p.proto,
            src: p.src_ip(),
            dst: p.dst_ip(),
            src_port: p.has_ports.then_some(p.src_port),
            dst_port: p.has_ports.then_some(p.dst_port),
            icmp_type: p.has_icmp.then_some(p.icmp_type),
            icmp_code: p.has_icmp.then_some(p.icmp_code),
            direction: if p.direction == Direction::Out {
                "out"
            } else {
                "in"
            },
            iface: Self::iface(&self.iface_names, p),
        };
        serde_json::to_writer(&mut self.out, &line)?;
        self.out.write_all(b"\n")
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The action as ipfw's log lines name it (`Accept`, `Pipe 1`, …).
fn write_action(out: &mut impl Write, action: &RuleAction) -> io::Result<()> {
    use weir_rules::{Arg, DivertPort, NatArg};
    let arg = |a: &Arg| match a {
        Arg::Number(n) => n.to_string(),
        Arg::Tablearg => "tablearg".to_owned(),
    };
    let port = |p: &DivertPort| match p {
        DivertPort::Port(p) => p.to_string(),
        DivertPort::Tablearg => "tablearg".to_owned(),
    };
    match action {
        RuleAction::Allow => out.write_all(b"Accept"),
        RuleAction::Deny => out.write_all(b"Deny"),
        RuleAction::Reject => out.write_all(b"Unreach 1"),
        RuleAction::Unreach(c) | RuleAction::Unreach6(c) => write!(out, "Unreach {c}"),
        RuleAction::Reset | RuleAction::Reset6 => out.write_all(b"Reset"),
        RuleAction::Abort | RuleAction::Abort6 => out.write_all(b"Abort"),
        RuleAction::Count => out.write_all(b"Count"),
        RuleAction::Skipto(n) => write!(out, "SkipTo {n}"),
        RuleAction::SkiptoTablearg => out.write_all(b"SkipTo tablearg"),
        RuleAction::Call(n) => write!(out, "Call {n}"),
        RuleAction::Return => out.write_all(b"Return"),
        RuleAction::CheckState(_) => out.write_all(b"Check-State"),
        RuleAction::Pipe(a) => write!(out, "Pipe {}", arg(a)),
        RuleAction::Queue(a) => write!(out, "Queue {}", arg(a)),
        RuleAction::Netgraph(a) => write!(out, "Netgraph {}", arg(a)),
        RuleAction::Ngtee(a) => write!(out, "Ngtee {}", arg(a)),
        RuleAction::Divert(p) => write!(out, "Divert {}", port(p)),
        RuleAction::Tee(p) => write!(out, "Tee {}", port(p)),
        RuleAction::Nat(NatArg::Number(n)) => write!(out, "Nat {n}"),
        RuleAction::Nat(_) => out.write_all(b"Nat"),
        RuleAction::Fwd(t) => match (t.addr, t.port) {
            (Some(a), Some(p)) => write!(out, "Forward to {a}:{p}"),
            (Some(a), None) => write!(out, "Forward to {a}"),
            (None, _) => out.write_all(b"Forward to tablearg"),
        },
        RuleAction::SetFib(a) => write!(out, "SetFib {}", arg(a)),
        RuleAction::SetDscp(a) => write!(out, "SetDscp {}", arg(a)),
        RuleAction::Reass => out.write_all(b"Reass"),
        RuleAction::TcpSetMss(n) => write!(out, "Eaction tcp-setmss {n}"),
    }
}

fn write_endpoint(out: &mut impl Write, addr: IpAddr, port: u16) -> io::Result<()> {
    match addr {
        IpAddr::V4(a) => write!(out, "{a}:{port}"),
        IpAddr::V6(a) => write!(out, "[{a}]:{port}"),
    }
}
