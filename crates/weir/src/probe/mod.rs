//! `weir probe`: the host's UDP/IP stack time, NetDyn-style, and what the
//! filter adds. Glue over `weir-probe`: flags, the engine for `--through`,
//! output files.

mod args;

use crate::outputs::{self, Output};
use crate::Failure;
pub use args::{ClientArgs, ProbeArgs, ProbeMode, ServerArgs};
use std::io::Write;
use std::path::Path;
use weir_engine::{Engine, Verdict};
use weir_probe::client::{self, ClientConfig, ClientRun};
use weir_probe::report::{self, ClientReport, ServerReport};
use weir_probe::server::{Server, ServerConfig};

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
    let mut engine = args
        .through
        .as_deref()
        .map(|r| filter(r, args))
        .transpose()?;
    let mut cfg = ServerConfig::new(args.bind);
    (cfg.count, cfg.duration) = (args.count, args.duration);
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
        outputs::print(&(serde_json::to_string(&rep)? + "\n"))?;
    } else {
        outputs::note(rep.text().trim_end_matches('\n'))?;
    }
    if let Some(s) = engine.as_ref().map(Engine::stats) {
        outputs::note(&ServerReport::filter_line(s.packets, s.passed, s.dropped))?;
    }
    Ok(())
}

/// The engine `--through` runs each probe through.
fn filter(rules: &Path, args: &ServerArgs) -> Result<Engine, Failure> {
    let names = weir_rules::Names::system();
    let mut engine = crate::setup::build_engine(rules, &args.engine, &names)?;
    if let Some(name) = &args.context.iface {
        engine.set_interfaces(&[Some(name.as_str())]);
    }
    Ok(engine)
}

fn client(args: &ClientArgs) -> Result<(), Failure> {
    let outs = outputs::given(&[("--packets", &args.packets), ("--plot", &args.plot)]);
    outputs::refuse_clashes(&[], &outs)?;
    let cfg = ClientConfig {
        sizes: args.sizes.clone(),
        train: args.train,
        gap: args.gap,
        count: args.count,
        timeout: args.timeout,
        deadline: args.deadline,
        tx_stamps: args.tx_stamps,
        ..ClientConfig::new(args.server)
    };
    let run = client::run(&cfg).map_err(probe_error)?;
    let csv = args
        .packets
        .as_deref()
        .map(|p| packets_csv(p, &run))
        .transpose()?;
    let svg = |path| outputs::written(path, &weir_probe::plot::svg(&run, &cfg.sizes));
    let plot = args.plot.as_deref().map(svg).transpose()?;
    csv.map_or(Ok(()), Output::commit)?;
    plot.map_or(Ok(()), Output::commit)?;
    outputs::print(&ClientReport::new(&cfg, &run).render(args.json)?)?;
    run.no_echo(args.server)
        .map_or(Ok(()), |m| Err(Failure::Runtime(m)))
}

/// `--packets`: one CSV line per probe, written before it is committed.
fn packets_csv(path: &Path, run: &ClientRun) -> Result<Output<impl Write>, Failure> {
    let mut out = outputs::open(path)?.map(|w| Ok(std::io::BufWriter::new(w)))?;
    let res = report::write_packets_csv(&mut out.w, run).and_then(|_| out.w.flush());
    res.map_err(|e| out.fail(e))?;
    Ok(out)
}
