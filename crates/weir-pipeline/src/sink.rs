//! Where decided packets go. A [`Sink`] receives every packet with its
//! frame, its decoded [`Packet`] and its [`Decision`]; [`Files`] is the set
//! every mode offers: passed and dropped packets mirrored (`-w`,
//! `--drop-out`), an annotated pcapng (`--annotate`) and the verdicts
//! (`--verdicts`: CSV, or Parquet for a name ending in `.parquet`). It is one concrete type, so the run loop's calls are
//! static; workers of one run share it behind a lock taken once per batch.

use crate::labels::Labels;
use crate::output::Output;
use crate::parquet_verdicts::{wants_parquet, ParquetVerdicts};
use std::io::{BufWriter, Write};
use weir_engine::{Decision, Engine, Verdict};
use weir_io::output::OutputError;
use weir_io::{CaptureWriter, Format, Frame, Interface};
use weir_wire::Packet;

/// A writer the pipeline's outputs write into.
pub type Out = Box<dyn Write + Send>;

/// One decided packet, as a sink sees it.
pub struct Decided<'a> {
    pub frame: &'a Frame<'a>,
    /// The source's interfaces so far (`frame.iface` indexes them).
    pub ifaces: &'a [Interface],
    pub packet: &'a Packet,
    pub decision: &'a Decision,
    /// The engine that decided, for labels that need its rules.
    pub engine: &'a Engine,
}

pub trait Sink {
    /// Takes one decided packet.
    fn packet(&mut self, d: &Decided<'_>) -> Result<(), OutputError>;

    /// The ruleset was replaced (a reload): per-rule state is made again.
    fn reloaded(&mut self, engine: &Engine);

    /// Flushes, completing what needs the source's final interface list.
    fn finish(&mut self, ifaces: &[Interface]) -> Result<(), OutputError>;
}

type Capture = Output<CaptureWriter<Out>>;

/// The per-packet files of a run; any of them may be absent.
pub struct Files {
    pass: Option<Capture>,
    drop: Option<Capture>,
    annotate: Option<Capture>,
    verdicts: Option<Verdicts>,
    /// Made only for the files that name rules (`--annotate`,
    /// `--verdicts`): a big ruleset's texts cost start-up time.
    labels: Option<Labels>,
    /// Packets handed to these files so far: the verdict CSV's index.
    index: u64,
}

/// The `--verdicts` file, in the format its name asks for.
enum Verdicts {
    Csv(Output<BufWriter<Out>>),
    Parquet(Box<ParquetVerdicts>),
}

impl Verdicts {
    fn open(o: Output<Out>) -> Result<Verdicts, OutputError> {
        if wants_parquet(o.name()) {
            return Ok(Verdicts::Parquet(Box::new(ParquetVerdicts::new(o)?)));
        }
        let mut o = o.map(|w| Ok(BufWriter::with_capacity(1 << 20, w)))?;
        let header = o.w.write_all(b"index,rule,action,note\n");
        header.map_err(|e| o.fail(e))?;
        Ok(Verdicts::Csv(o))
    }

    fn finish(&mut self) -> Result<(), OutputError> {
        match self {
            Verdicts::Csv(o) => o.w.flush().map_err(|e| o.fail(e)),
            Verdicts::Parquet(p) => p.finish(),
        }
    }

    fn commit(self) -> Result<(), OutputError> {
        match self {
            Verdicts::Csv(o) => o.commit(),
            Verdicts::Parquet(p) => p.commit(),
        }
    }

    fn discard(self) -> Option<String> {
        match self {
            Verdicts::Csv(o) => o.discard(),
            Verdicts::Parquet(p) => p.discard(),
        }
    }
}

/// The files to open, each an opened output (the caller names and stages
/// them).
#[derive(Default)]
pub struct FileOutputs {
    pub pass: Option<Output<Out>>,
    pub drop: Option<Output<Out>>,
    pub annotate: Option<Output<Out>>,
    pub verdicts: Option<Output<Out>>,
}

impl Files {
    /// Starts the files for a source in `format` with `ifaces` so far:
    /// pass and drop files mirror it; the annotated file is pcapng.
    pub fn new(
        outs: FileOutputs,
        format: Format,
        ifaces: &[Interface],
        engine: &Engine,
    ) -> Result<Files, OutputError> {
        let mirror = |o: Option<Output<Out>>| {
            o.map(|o| o.map(|w| CaptureWriter::mirror(w, format, ifaces)))
                .transpose()
        };
        let verdicts = outs.verdicts.map(Verdicts::open).transpose()?;
        let labels = (outs.annotate.is_some() || verdicts.is_some()).then(|| Labels::new(engine));
        Ok(Files {
            pass: mirror(outs.pass)?,
            drop: mirror(outs.drop)?,
            annotate: outs
                .annotate
                .map(|o| o.map(|w| CaptureWriter::pcapng_like(w, format)))
                .transpose()?,
            verdicts,
            labels,
            index: 0,
        })
    }

    /// The index of the last packet handed to the files.
    pub fn packets(&self) -> u64 {
        self.index
    }

    /// Makes the files appear; returns the names of pcapng files left
    /// unmade because the source never described an interface (libpcap
    /// refuses a pcapng without one, and weir cannot say what the link was).
    pub fn commit(self) -> Result<Vec<String>, OutputError> {
        let mut unmade = Vec::new();
        for o in [self.pass, self.drop, self.annotate].into_iter().flatten() {
            if o.w.has_interfaces() {
                o.commit()?;
            } else {
                unmade.extend(o.discard());
            }
        }
        self.verdicts.map_or(Ok(()), Verdicts::commit)?;
        Ok(unmade)
    }

    /// Gives every file up; the names of the files left unmade.
    pub fn discard(self) -> Vec<String> {
        let captures = [self.pass, self.drop, self.annotate].into_iter().flatten();
        captures
            .filter_map(Output::discard)
            .chain(self.verdicts.and_then(Verdicts::discard))
            .collect()
    }
}

impl Sink for Files {
    // Inlined into the run loop (a call cost ~35 instructions a packet,
    // callgrind): it is the per-packet path of every mode.
    #[inline(always)]
    fn packet(&mut self, x: &Decided<'_>) -> Result<(), OutputError> {
        self.index += 1;
        let split = match x.decision.verdict {
            Verdict::Pass => &mut self.pass,
            Verdict::Drop => &mut self.drop,
        };
        if let Some(o) = split {
            o.w.write(x.frame, x.ifaces, None).map_err(|e| o.fail(e))?;
        }
        if let (Some(o), Some(labels)) = (&mut self.annotate, &self.labels) {
            let comment = labels.comment(x.decision, x.packet, x.engine);
            o.w.write(x.frame, x.ifaces, Some(comment.as_str()))
                .map_err(|e| o.fail(e))?;
        }
        match (&mut self.verdicts, &self.labels) {
            (Some(Verdicts::Csv(o)), Some(labels)) => {
                let label = labels.csv(x.decision, x.packet, x.engine);
                let line =
                    o.w.write_all(itoa::Buffer::new().format(self.index).as_bytes())
                        .and_then(|()| o.w.write_all(label.as_bytes()));
                line.map_err(|e| o.fail(e))?;
            }
            (Some(Verdicts::Parquet(p)), Some(labels)) => p.packet(self.index, x, labels)?,
            _ => {}
        }
        Ok(())
    }

    fn reloaded(&mut self, engine: &Engine) {
        if self.labels.is_some() {
            self.labels = Some(Labels::new(engine));
        }
    }

    /// Completes interface lists (an empty pcapng still names them all)
    /// and flushes everything.
    fn finish(&mut self, ifaces: &[Interface]) -> Result<(), OutputError> {
        for o in [&mut self.pass, &mut self.drop, &mut self.annotate]
            .into_iter()
            .flatten()
        {
            let res = o.w.finish_interfaces(ifaces).and_then(|()| o.w.flush());
            res.map_err(|e| o.fail(e))?;
        }
        if let Some(v) = &mut self.verdicts {
            v.finish()?;
        }
        Ok(())
    }
}

/// A sink that keeps nothing: for packets that must still be decided
/// after the outputs failed (an NFQUEUE answers every packet it holds).
pub struct Discard;

impl Sink for Discard {
    fn packet(&mut self, _: &Decided<'_>) -> Result<(), OutputError> {
        Ok(())
    }

    fn reloaded(&mut self, _: &Engine) {}

    fn finish(&mut self, _: &[Interface]) -> Result<(), OutputError> {
        Ok(())
    }
}
