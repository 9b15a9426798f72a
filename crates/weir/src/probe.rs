//! `weir probe`: the host's UDP/IP stack time, NetDyn-style, and what the
//! filter adds. Glue over `weir-probe`: flags, the engine for `--through`,
//! output files.

use crate::cli::EngineArgs;
use crate::outputs::{self, Output};
use crate::Failure;
use clap::{Args, Subcommand};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use weir_engine::Verdict;
use weir_probe::client::{self, ClientConfig};
use weir_probe::report::{self, ClientReport, ServerReport};
use weir_probe::server::{Server, ServerConfig};

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

pub fn probe(args: &ProbeArgs) -> Result<(), Failure> {
    match &args.mode {
        ProbeMode::Server(a) => server(a),
        ProbeMode::Client(a) => client(a),
    }
}

fn probe_error(e: weir_probe::Error) -> Failure {
    match e {
        weir_probe::Error::Config(m) => Failure::Usage(m),
        other => Failure::Runtime(other.to_string()),
    }
}

fn server(args: &ServerArgs) -> Result<(), Failure> {
    // Load the ruleset before the socket: a bad ruleset changes nothing.
    let mut engine = match &args.through {
        Some(rules) => {
            let names = weir_rules::Names::system();
            let mut e = crate::setup::build_engine(rules, &args.engine, &names)?;
            if let Some(name) = &args.context.iface {
                e.set_interfaces(&[Some(name.as_str())]);
            }
            Some(e)
        }
        None => None,
    };
    let mut cfg = ServerConfig::new(args.bind);
    cfg.count = args.count;
    cfg.duration = args.duration;
    let mut srv = Server::bind(cfg).map_err(probe_error)?;
    let bound = srv.local_addr().to_string();
    // One line when ready, so scripts (and tests) know when to start clients.
    outputs::note(&format!("weir probe server: listening on {bound}"))?;
    let stats = match engine.as_mut() {
        Some(e) => srv.run_filtered(|p| e.decide(p).verdict == Verdict::Pass),
        None => srv.run(),
    };
    let rep = ServerReport::new(&bound, &stats);
    if args.json {
        let json = serde_json::to_string(&rep).map_err(|e| Failure::Runtime(e.to_string()))?;
        outputs::print(&(json + "\n"))?;
    } else {
        outputs::note(rep.text().trim_end_matches('\n'))?;
    }
    if let Some(e) = &engine {
        let s = e.stats();
        outputs::note(&format!(
            "filter: {} packets decided, {} passed, {} dropped",
            s.packets, s.passed, s.dropped
        ))?;
    }
    Ok(())
}

fn client(args: &ClientArgs) -> Result<(), Failure> {
    let outs = outputs::given(&[("--packets", &args.packets), ("--plot", &args.plot)]);
    outputs::refuse_clashes(&[], &outs)?;
    let mut cfg = ClientConfig::new(args.server);
    cfg.sizes = args.sizes.clone();
    cfg.train = args.train;
    cfg.gap = args.gap;
    cfg.count = args.count;
    cfg.timeout = args.timeout;
    cfg.deadline = args.deadline;
    cfg.tx_stamps = args.tx_stamps;
    let run = client::run(&cfg).map_err(probe_error)?;
    let rep = ClientReport::new(&cfg, &run);
    let csv = match &args.packets {
        Some(path) => {
            let mut out = outputs::open(path)?.map(|w| Ok(std::io::BufWriter::new(w)))?;
            let res = report::write_packets_csv(&mut out.w, &run).and_then(|_| out.w.flush());
            res.map_err(|e| out.fail(e))?;
            Some(out)
        }
        None => None,
    };
    let plot = match &args.plot {
        Some(path) => {
            let mut out = outputs::open(path)?;
            out.write_text(&weir_probe::plot::svg(&run, &cfg.sizes))?;
            Some(out)
        }
        None => None,
    };
    csv.map_or(Ok(()), Output::commit)?;
    plot.map_or(Ok(()), Output::commit)?;
    let text = if args.json {
        serde_json::to_string_pretty(&rep).map_err(|e| Failure::Runtime(e.to_string()))? + "\n"
    } else {
        rep.table()
    };
    outputs::print(&text)?;
    if run.received() == 0 && run.sent() > 0 {
        return Err(Failure::Runtime(format!(
            "no echo from {} ({} probes sent): is `weir probe server` running there?",
            args.server,
            run.sent()
        )));
    }
    Ok(())
}
