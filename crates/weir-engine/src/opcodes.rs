//! The opcode table: every micro-instruction once, with its name, the
//! function that tests it and the packet fields beyond the always-decoded
//! ones that it reads (in brackets, see [`weir_wire::Fields`]). The `Op` enum,
//! [`Op::name`], [`Op::reads`], [`Op::ALL`] (the list tests walk) and both
//! dispatchers (`MatchDispatch`'s `match` and `TableDispatch`'s array of
//! function pointers) are all made from it, so a new opcode is one line
//! here plus its function in `ops.rs`.

use crate::ops::*;
use crate::program::{Insn, Program};
use serde::Serialize;
use weir_wire::{Fields, Packet};

macro_rules! opcodes {
    ($($(#[$doc:meta])* $op:ident = $name:literal => $test:ident $([$reads:ident])?,)*) => {
        /// Micro-instruction opcodes. `repr(u8)` so a dispatch table can
        /// index by it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
        #[repr(u8)]
        pub enum Op {
            $($(#[$doc])* $op,)*
        }

        impl Op {
            /// Every opcode, in opcode order.
            pub const ALL: &'static [Op] = &[$(Op::$op,)*];
            pub const COUNT: usize = Op::ALL.len();

            /// The opcode's name, as `weir explain` and `--json` show it.
            pub fn name(self) -> &'static str {
                match self {
                    $(Op::$op => $name,)*
                }
            }

            /// The optional packet fields the opcode's test reads: what
            /// decode must fill for it.
            pub fn reads(self) -> Fields {
                match self {
                    $(Op::$op => Fields::NONE $(.with(Fields::$reads))?,)*
                }
            }
        }

        impl Dispatch for MatchDispatch {
            #[inline(always)]
            fn matches(ins: &Insn, p: &Packet, prog: &Program, env: &Env, ctx: &Ctx) -> bool {
                match ins.op {
                    $(Op::$op => $test(ins, p, prog, env, ctx),)*
                }
            }
        }

        /// Indexed by `Op as usize`: the enum and this array come from the
        /// same list, in the same order.
        static TABLE: [OpFn; Op::COUNT] = [$($test,)*];
    };
}

type OpFn = fn(&Insn, &Packet, &Program, &Env, &Ctx) -> bool;

impl Dispatch for TableDispatch {
    #[inline(always)]
    fn matches(ins: &Insn, p: &Packet, prog: &Program, env: &Env, ctx: &Ctx) -> bool {
        TABLE[ins.op as usize](ins, p, prog, env, ctx)
    }
}

opcodes! {
    /// Never matches: `not any`, and the body of a `check-state` rule, which
    /// acts only through a state fired before its body runs.
    Never = "never" => never,
    /// `proto == arg`.
    Proto = "proto" => proto,
    /// `ip_version == arg` (`ip4`, `ip6`, `ipversion`).
    IpVersion = "ipversion" => ip_version,
    /// Source address in `nets[arg .. arg+len]`.
    SrcNet = "src-net" => src_net,
    DstNet = "dst-net" => dst_net,
    /// Source address is one of this host's (`--me`); arg = 4 or 6.
    SrcMe = "src-me" => src_me,
    DstMe = "dst-me" => dst_me,
    /// Source port in `ranges[arg .. arg+len]`; needs a port-carrying header.
    SrcPort = "src-port" => src_port,
    DstPort = "dst-port" => dst_port,
    /// Direction is in / out.
    In = "in" => dir_in,
    Out = "out" => dir_out,
    /// Interface matches pattern number `arg` (any direction / in / out).
    Via = "via" => via,
    Recv = "recv" => recv,
    Xmit = "xmit" => xmit,
    /// TCP with ACK or RST.
    Established = "established" => established,
    /// TCP with SYN and without ACK.
    Setup = "setup" => setup,
    /// TCP flags: low byte must be set, next byte must be clear.
    TcpFlags = "tcpflags" => tcp_flags,
    /// ICMP type in the bitmap `arg`.
    IcmpTypes = "icmptypes" => icmp_types,
    /// A later fragment (offset != 0).
    Frag = "frag" => is_frag,
    /// IPv4 options: low byte must be present, next byte absent.
    IpOptions = "ipoptions" => ip_options,
    /// TOS bits: low byte must be set, next byte clear.
    IpTos = "iptos" => ip_tos,
    /// IP length in `ranges[arg .. arg+len]`.
    IpLen = "iplen" => ip_len,
    /// TTL in `ranges[arg .. arg+len]`.
    IpTtl = "ipttl" => ip_ttl,
    /// The packet carries ports: guards a negated port list, since a later
    /// fragment never matches a rule with ports, `not` or not (ipfw(8)).
    HasPorts = "has ports" => has_ports,
    /// Specialised forms of the common cases, operands inline (no pool):
    /// one IPv4 prefix, `arg` = network, `len` = prefix length.
    SrcPrefix4 = "src-prefix4" => src_prefix4,
    DstPrefix4 = "dst-prefix4" => dst_prefix4,
    /// One port range, `arg` = lo | hi << 16.
    SrcPortRange = "src-port-range" => src_port_range,
    DstPortRange = "dst-port-range" => dst_port_range,
    /// ICMPv6 type in the 256-bit map `icmp6_types[arg]`.
    Icmp6Types = "icmp6types" => icmp6_types,
    /// IPv6 with any of the extension headers in `arg` (weir_wire's `ext6`).
    Ext6Hdr = "ext6hdr" => ext6_hdr,
    /// Source (destination) address in the table `table_refs[arg]` names,
    /// with its value if that reference asks for one.
    SrcTable = "src" => src_table,
    DstTable = "dst" => dst_table,
    /// IPv4 id, TCP data length, window, MSS option in
    /// `ranges[arg .. arg+len]` (the TCP ones need a TCP header).
    IpId = "ipid" => ip_id [IP_ID],
    TcpDataLen = "tcpdatalen" => tcp_data_len [TCP_DATA_LEN],
    TcpWin = "tcpwin" => tcp_win [TCP_HEADER],
    TcpMss = "tcpmss" => tcp_mss [TCP_OPTIONS],
    /// TCP sequence / acknowledgment number equals `arg`.
    TcpSeq = "tcpseq" => tcp_seq [TCP_HEADER],
    TcpAck = "tcpack" => tcp_ack [TCP_HEADER],
    /// TCP options: low byte must be present, next byte absent.
    TcpOpts = "tcpoptions" => tcp_opts [TCP_OPTIONS],
    /// IPv4 precedence (the top 3 TOS bits, as they sit in the byte) = `arg`.
    IpPrecedence = "ipprecedence" => ip_precedence,
    /// DSCP in the 64-bit map `bitmaps[arg]`.
    Dscp = "dscp" => dscp,
    /// IPv4 fragment flags (`rf df mf` as bits 7..5, bit 0 a non-zero
    /// offset): low byte set, next byte clear. IPv6: bare `frag` only.
    FragFlags = "frag-flags" => frag_flags,
    /// The walk's FIB (`--fib`, `setfib`) is `arg`.
    Fib = "fib" => fib,
    /// The walk carries a tag whose bit is in `bitmaps[arg]`.
    Tagged = "tagged" => tagged,
    /// Ethernet addresses as `macs[arg]` (layer-2 pass only).
    MacAddr = "mac" => mac_addr [MAC],
    /// Ethernet type in `ranges[arg .. arg+len]` (layer-2 pass only).
    MacType = "mac-type" => mac_type [MAC],
    /// This is the layer-2 pass.
    Layer2 = "layer2" => layer2,
    /// The packet came back from a divert socket: bit 1 into input,
    /// bit 2 into output (`arg`).
    Diverted = "diverted" => diverted,
    /// IPv6 flow label in `flow_ids[arg .. arg+len]`.
    FlowId = "flow-id" => flow_id [FLOW_LABEL],
    /// Source (destination) IPv4 address in the set `addr_sets[arg]`.
    SrcSet = "src-set" => src_set,
    DstSet = "dst-set" => dst_set,
    /// Source port, destination port, DSCP, the packet's flow in the
    /// table `table_refs[arg]` names.
    SrcPortTable = "src-port" => src_port_table,
    DstPortTable = "dst-port" => dst_port_table,
    DscpTable = "dscp" => dscp_table,
    FlowTable = "flow" => flow_table,
    /// The interface (`len`: 0 via, 1 recv, 2 xmit) in the interface
    /// table `table_refs[arg]` names.
    IfaceTable = "iface-table" => iface_table,
}
