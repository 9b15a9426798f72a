//! The run loop: batches from a [`Source`], each frame decoded once,
//! placed, decided by the [`Engine`] and handed to the [`Sink`]; between
//! batches (never per packet) the stop signal, the budget and the
//! caller's own work (metrics, reloads, progress).

use crate::place::Placement;
use crate::sink::{Decided, Sink};
use crate::source::Source;
use crate::stop::{Budget, Reason, Stop};
use std::sync::{Mutex, MutexGuard, PoisonError};
use weir_engine::Engine;
use weir_io::output::OutputError;
use weir_wire::decode_with;

/// What a worker shares with the others of its run.
pub struct Shared<'a, S> {
    pub sink: &'a Mutex<S>,
    pub budget: &'a Budget,
    pub stop: &'a Stop,
    pub place: &'a Placement,
}

/// What the caller does between batches.
pub enum Between {
    Go,
    /// The engine was replaced (a reload): interfaces and per-rule labels
    /// are made again.
    Replaced,
}

/// How a worker's run ended, short of an output failure.
#[derive(Debug, Default)]
pub struct Ended {
    /// The input failed (a corrupt capture, a socket error): the message.
    /// Every frame before it was decided and handed to the sink.
    pub input_error: Option<String>,
}

/// Locks the shared sink; a worker that panicked holding it left it usable.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `source` through `engine` into the shared sink until the input
/// ends, the budget is spent or `stop` asks. An output failure ends the
/// run at once (and asks the other workers to stop).
pub fn run<Src, S>(
    source: &mut Src,
    engine: &mut Engine,
    shared: &Shared<'_, S>,
    mut between: impl FnMut(&mut Engine, &Src) -> Between,
) -> Result<Ended, OutputError>
where
    Src: Source,
    S: Sink,
{
    let mut known_ifaces = usize::MAX;
    loop {
        if shared.budget.exhausted() {
            shared.stop.set(Reason::Count);
        }
        if shared.stop.requested() {
            return Ok(Ended::default());
        }
        if let Between::Replaced = between(engine, source) {
            known_ifaces = usize::MAX;
            lock(shared.sink).reloaded(engine);
        }
        // Taken at the batch's first frame, not before: a live source may
        // wait for its batch, and the other workers must not wait with it.
        let mut sink = None;
        let mut failed = None;
        // Decode fills what the rules read; the sinks read only what
        // decode always fills.
        let fields = engine.fields();
        // The per-frame body is inlined into the source's walk, as one
        // hand-written loop would be (callgrind: a call per frame shows).
        let got = source.next_batch(
            shared.budget,
            #[inline(always)]
            |frame, ifaces| {
                if ifaces.len() != known_ifaces {
                    known_ifaces = ifaces.len();
                    engine.set_interfaces(&shared.place.interface_names(ifaces));
                }
                let mut p = decode_with(frame.link_type, frame.data, frame.orig_len, fields);
                shared.place.place(&mut p, frame);
                // States age by the packets' own timestamps.
                engine.set_time(frame.ts_ns);
                let d = engine.decide(&p);
                if failed.is_none() {
                    let x = Decided {
                        frame,
                        ifaces,
                        packet: &p,
                        decision: &d,
                        engine,
                    };
                    let sink = sink.get_or_insert_with(|| lock(shared.sink));
                    if let Err(e) = sink.packet(&x) {
                        failed = Some(e);
                    }
                }
                d.verdict
            },
        );
        drop(sink);
        if let Some(e) = failed {
            shared.stop.set(Reason::Error);
            return Err(e);
        }
        match got {
            Ok(Some(_)) => {}
            Ok(None) => {
                shared.stop.set(Reason::End);
                return Ok(Ended::default());
            }
            Err(why) => {
                shared.stop.set(Reason::Error);
                return Ok(Ended {
                    input_error: Some(why),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use weir_engine::{Decision, Verdict};
    use weir_io::{Comments, Format, Frame, Interface};
    use weir_live::test_packets::{engine, ipv4_udp};
    use weir_wire::{Direction, LinkType};

    /// Raw-IP datagrams in batches of `batch`, recording the verdicts
    /// handed back, as NFQUEUE would send them.
    struct Datagrams {
        packets: Vec<Vec<u8>>,
        next: usize,
        batch: u64,
        iface: [Interface; 1],
        verdicts: Vec<Verdict>,
    }

    impl Datagrams {
        fn new(ports: &[u16], batch: u64) -> Datagrams {
            Datagrams {
                packets: ports.iter().map(|&p| ipv4_udp(p)).collect(),
                next: 0,
                batch,
                iface: [Interface {
                    link_type: LinkType::RAW,
                    snaplen: 0xffff,
                    name: Some("em0".into()),
                }],
                verdicts: Vec::new(),
            }
        }
    }

    impl Source for Datagrams {
        fn next_batch<F>(&mut self, budget: &Budget, mut each: F) -> Result<Option<usize>, String>
        where
            F: FnMut(&Frame<'_>, &[Interface]) -> Verdict,
        {
            if self.next == self.packets.len() {
                return Ok(None);
            }
            let want = budget.claim(self.batch) as usize;
            let n = want.min(self.packets.len() - self.next);
            budget.give_back((want - n) as u64);
            for data in &self.packets[self.next..self.next + n] {
                let frame = Frame {
                    ts_ns: 0,
                    iface: 0,
                    link_type: LinkType::RAW,
                    orig_len: data.len() as u32,
                    data,
                    direction: Direction::Unknown,
                    comments: Comments::NONE,
                    offset: 0,
                };
                let v = each(&frame, &self.iface);
                self.verdicts.push(v);
            }
            self.next += n;
            Ok(Some(n))
        }

        fn interfaces(&self) -> &[Interface] {
            &self.iface
        }

        fn format(&self) -> Format {
            Format::Pcapng
        }
    }

    /// Keeps each decision; fails at packet `fail_at` (1-based), if given.
    #[derive(Default)]
    struct Record {
        decisions: Vec<(Decision, Direction)>,
        fail_at: Option<usize>,
        reloads: usize,
    }

    impl Sink for Record {
        fn packet(&mut self, d: &Decided<'_>) -> Result<(), OutputError> {
            self.decisions.push((*d.decision, d.packet.direction));
            if Some(self.decisions.len()) == self.fail_at {
                return Err(OutputError::new("out", io::Error::other("disk full")));
            }
            Ok(())
        }

        fn reloaded(&mut self, _: &Engine) {
            self.reloads += 1;
        }

        fn finish(&mut self, _: &[Interface]) -> Result<(), OutputError> {
            Ok(())
        }
    }

    const RULES: &str = "100 deny udp from any to any 53 recv em0\n200 allow ip from any to any\n";

    fn shared<'a>(
        sink: &'a Mutex<Record>,
        budget: &'a Budget,
        stop: &'a Stop,
        place: &'a Placement,
    ) -> Shared<'a, Record> {
        Shared {
            sink,
            budget,
            stop,
            place,
        }
    }

    #[test]
    fn every_packet_is_decided_once_in_order_and_its_verdict_goes_back() {
        let mut source = Datagrams::new(&[53, 80, 53, 443, 53], 2);
        let mut e = engine(RULES);
        let (sink, budget, stop) = (Mutex::default(), Budget::new(None), Stop::new(None));
        let place = Placement::new(None, &[], None);
        let ended = run(
            &mut source,
            &mut e,
            &shared(&sink, &budget, &stop, &place),
            |_, _| Between::Go,
        );
        assert!(ended.unwrap().input_error.is_none());
        assert_eq!(stop.reason(), Reason::End);
        let got = sink.into_inner().unwrap().decisions;
        let rules: Vec<_> = got.iter().map(|(d, _)| d.rule).collect();
        // Rule 100 names the interface: the source's name reached the engine.
        assert_eq!(rules, [Some(0), Some(1), Some(0), Some(1), Some(0)]);
        // Unknown direction: in, as nothing says otherwise.
        assert!(got.iter().all(|(_, dir)| *dir == Direction::In));
        use Verdict::{Drop, Pass};
        assert_eq!(source.verdicts, [Drop, Pass, Drop, Pass, Drop]);
        assert_eq!(e.counters()[0].packets, 3);
    }

    #[test]
    fn the_budget_is_exact_and_stops_the_run_by_count() {
        let mut source = Datagrams::new(&[80; 10], 4);
        let mut e = engine(RULES);
        let (sink, budget, stop) = (Mutex::default(), Budget::new(Some(7)), Stop::new(None));
        let place = Placement::new(None, &[], None);
        let mut betweens = 0;
        run(
            &mut source,
            &mut e,
            &shared(&sink, &budget, &stop, &place),
            |_, _| {
                betweens += 1;
                Between::Go
            },
        )
        .unwrap();
        assert_eq!(e.stats().packets, 7);
        assert_eq!(stop.reason(), Reason::Count);
        // 4 + 3 packets: two batches, the caller's work before each.
        assert_eq!(betweens, 2);
    }

    #[test]
    fn a_failed_output_ends_the_run_and_a_replaced_engine_is_announced() {
        let mut source = Datagrams::new(&[80; 10], 4);
        let mut e = engine(RULES);
        let sink = Mutex::new(Record {
            fail_at: Some(6),
            ..Default::default()
        });
        let (budget, stop) = (Budget::new(None), Stop::new(None));
        let place = Placement::new(None, &[], None);
        let mut first = true;
        let ended = run(
            &mut source,
            &mut e,
            &shared(&sink, &budget, &stop, &place),
            |e, _| {
                if std::mem::take(&mut first) {
                    *e = engine(RULES);
                    return Between::Replaced;
                }
                Between::Go
            },
        );
        let err = ended.expect_err("the output failed");
        assert!(err.to_string().contains("out"), "{err}");
        assert_eq!(stop.reason(), Reason::Error);
        let rec = sink.into_inner().unwrap();
        assert_eq!(rec.reloads, 1);
        // The batch of the failure is decided to its end, not written on.
        assert_eq!(rec.decisions.len(), 6);
        assert_eq!(e.stats().packets, 8);
    }
}
