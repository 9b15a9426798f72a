//! `weir capture`: live packets from AF_PACKET rings through the pipeline.
//!
//! Start-up order, as tcpdump's: open every socket (root needed), drop
//! privileges (`-Z`), then create the output files and start the workers
//! (one socket of a PACKET_FANOUT group and one engine each; they share
//! the outputs, locked once per batch, and the `-c` budget).

use crate::cli::CaptureArgs;
use crate::live::{self, LiveLog};
use crate::outputs;
use crate::setup::build_engine;
use crate::Failure;
use std::time::Instant;
use weir_capture::{Config, Iface, RingMode};
use weir_live::metrics::serve_workers;
use weir_pipeline::ring::{link_type, RingSource};
use weir_pipeline::workers::{self, Worker};
use weir_pipeline::{Budget, Files, Placement, Shared, Source, Stop};
use weir_rules::Names;

pub fn capture(args: &CaptureArgs) -> Result<(), Failure> {
    outputs::check_mode_outputs(&args.rules, &args.engine.tables, None, &args.out)?;
    let names = Names::system();
    let template = build_engine(&args.rules, &args.engine, &names)?;
    let iface = Iface::lookup(&args.interface)
        .map_err(|e| Failure::Usage(format!("{}: {e}", args.interface)))?;
    let Some(link) = iface.link() else {
        return Err(Failure::Usage(format!(
            "{}: link type ARPHRD {} is not supported (Ethernet, loopback and raw IP are)",
            iface.name, iface.hatype
        )));
    };
    let cfg = Config {
        mode: if args.immediate {
            RingMode::Immediate
        } else {
            RingMode::Blocks
        },
        buffer: args.buffer_kib as usize * 1024,
        snaplen: args.snaplen,
        // A group id of our own: the pid, as libpcap-based tools do.
        fanout: (args.workers > 1).then(|| std::process::id() as u16),
        block_timeout_ms: 10,
    };
    let sources = (0..args.workers)
        .map(|_| weir_capture::open(&cfg, &iface).map(|c| RingSource::new(c, args.snaplen)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(live::runtime)?;
    if let Some(user) = &args.user {
        weir_capture::drop_privileges(user)
            .map_err(|e| Failure::Runtime(format!("-Z {user}: {e}")))?;
    }
    let first = &sources[0];
    let files = Files::new(
        outputs::open_files(&args.out)?,
        first.format(),
        first.interfaces(),
        &template,
    )?;
    let log = LiveLog::open(&template, &args.out)?;
    let stop =
        Stop::on_signals(args.duration).map_err(|e| Failure::Runtime(format!("signals: {e}")))?;
    let (publishers, server) = match args.metrics {
        Some(addr) => {
            let (p, server) = serve_workers(addr, sources.len())
                .map_err(|e| Failure::Runtime(format!("metrics {addr}: {e}")))?;
            (p.into_iter().map(Some).collect(), Some(server))
        }
        None => (sources.iter().map(|_| None).collect::<Vec<_>>(), None),
    };
    let mut workers: Vec<Worker<RingSource>> = sources
        .into_iter()
        .zip(publishers)
        .map(|(source, metrics)| Worker {
            engine: log.attach(template.replica(), &names, args.out.log_format),
            source,
            metrics,
        })
        .collect();
    if !args.out.quiet {
        let metrics = server
            .as_ref()
            .map(|m| format!(", metrics at http://{}/metrics", m.local_addr()))
            .unwrap_or_default();
        outputs::note(&format!(
            "weir capture: listening on {}, link-type {}, snapshot length {} bytes, {} ring, {} worker{}{metrics}",
            iface.name,
            if link_type(link) == weir_wire::LinkType::RAW { "RAW (Raw IP)" } else { "EN10MB (Ethernet)" },
            args.snaplen,
            if args.immediate { "TPACKET_V2" } else { "TPACKET_V3" },
            args.workers,
            if args.workers == 1 { "" } else { "s" },
        ))?;
    }
    let sink = std::sync::Mutex::new(files);
    let (budget, place) = (Budget::new(args.count), Placement::new(None, &[], None));
    let shared = Shared {
        sink: &sink,
        budget: &budget,
        stop: &stop,
        place: &place,
    };
    let started = Instant::now();
    let outcomes = workers::run_all(&mut workers, &shared);
    let seconds = started.elapsed().as_secs_f64();
    let files = sink.into_inner().unwrap_or_else(|p| p.into_inner());
    let end = live::End {
        iface: &iface.name,
        immediate: args.immediate,
        seconds,
        stop: &stop,
    };
    live::finish_capture(&args.out, &names, workers, files, log, outcomes, &end)
}
