//! `weir probe`'s flags: server and client modes.

use crate::cli::EngineArgs;
use clap::{Args, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

const PROBE_EXAMPLES: &str = "Examples:
  weir probe server --bind 127.0.0.1:7777 &
  weir probe client 127.0.0.1:7777 --train 5 --count 200 --sizes 32,64,96,512,1400
  weir probe server --bind 0.0.0.0:7777 --through rules.conf --duration 60s
  weir probe client 10.77.0.1:7777 --json --plot probe.svg --packets probe.csv";

#[derive(Args, Debug)]
#[command(after_help = PROBE_EXAMPLES)]
pub struct ProbeArgs {
    #[command(subcommand)]
    pub mode: ProbeMode,
}

#[derive(Subcommand, Debug)]
pub enum ProbeMode {
    /// Echo probes; stamp each with the kernel's receive time and ours.
    Server(ServerArgs),
    /// Send trains of probes to a server and tabulate the times.
    Client(ClientArgs),
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  weir probe server                                   # 0.0.0.0:7777 until SIGINT/SIGTERM
  weir probe server --bind [::]:7777 --count 10000
  weir probe server --through rules.conf --json       # the filter's time beside the stack's")]
pub struct ServerArgs {
    /// Address and port to listen on.
    #[arg(long, default_value = "0.0.0.0:7777", value_name = "ADDR:PORT")]
    pub bind: SocketAddr,
    /// Stop after this many datagrams (good or malformed).
    #[arg(short = 'c', long, value_name = "N")]
    pub count: Option<u64>,
    /// Stop after this long (e.g. 30s, 500ms).
    #[arg(long, value_name = "TIME", value_parser = crate::duration::parse)]
    pub duration: Option<Duration>,
    /// Run each probe through this ruleset before echoing; time it. A probe
    /// the rules drop is not echoed.
    #[arg(long, value_name = "RULES")]
    pub through: Option<PathBuf>,
    /// Print the closing summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub context: crate::cli::ContextArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  weir probe client 127.0.0.1:7777
  weir probe client 10.77.0.1:7777 --train 5 --gap 10ms --count 200 --sizes 32,64,96,512,1400
  weir probe client 127.0.0.1:7777 --tx-stamps --json --plot probe.svg --packets probe.csv")]
pub struct ClientArgs {
    /// The server's address and port.
    pub server: SocketAddr,
    /// Probes per train, sent back to back.
    #[arg(long, default_value_t = 5, value_name = "K")]
    pub train: u16,
    /// Idle time after a train's echoes are back, before the next train.
    #[arg(long, default_value = "10ms", value_name = "TIME", value_parser = crate::duration::parse)]
    pub gap: Duration,
    /// Trains of each size.
    #[arg(short = 'c', long, default_value_t = 200, value_name = "N")]
    pub count: u32,
    /// UDP payload sizes in bytes (at least 32, the probe header).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "32,64,96,512,1400",
        value_name = "N,..."
    )]
    pub sizes: Vec<usize>,
    /// How long to wait for a train's echoes before counting them lost.
    #[arg(long, default_value = "200ms", value_name = "TIME", value_parser = crate::duration::parse)]
    pub timeout: Duration,
    /// Stop the whole run by then, whatever the count.
    #[arg(long, default_value = "60s", value_name = "TIME", value_parser = crate::duration::parse)]
    pub deadline: Duration,
    /// Also take the kernel's software transmit timestamps (client tx stack).
    #[arg(long)]
    pub tx_stamps: bool,
    /// Print the report as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write CDFs of the times per size as SVG.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Write one CSV line per probe (seq,size,pos,sent_ns,echoed,rtt_ns,…).
    #[arg(long, value_name = "FILE")]
    pub packets: Option<PathBuf>,
}
