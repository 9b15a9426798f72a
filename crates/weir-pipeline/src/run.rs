//! The run loop: batches from a [`Source`], a chunk of frames at a time
//! decoded, placed, decided by the [`Engine`] (together when its
//! classifier walks several packets interleaved, else frame by frame) and
//! handed to the [`Sink`]; between batches (never per packet) the stop
//! signal, the budget and the caller's own work (metrics, reloads,
//! progress).

use crate::place::Placement;
use crate::sink::{Decided, Sink};
use crate::source::{Source, CHUNK};
use crate::stop::{Budget, Reason, Stop};
use std::sync::{Mutex, MutexGuard, PoisonError};
use weir_engine::{Decision, Engine};
use weir_io::output::OutputError;
use weir_io::{Frame, Interface};
use weir_wire::{decode_with, Packet};

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

/// A worker's way into the shared sink for one batch. The lock is taken
/// at the batch's first frame, not before: a live source may wait for its
/// batch, and the other workers must not wait with it. After an output
/// fails, packets are still decided (their verdicts go back) but not
/// handed on.
struct Handing<'a, S> {
    shared: &'a Mutex<S>,
    guard: Option<MutexGuard<'a, S>>,
    failed: Option<OutputError>,
}

impl<S: Sink> Handing<'_, S> {
    #[inline(always)]
    fn hand(
        &mut self,
        frame: &Frame<'_>,
        ifaces: &[Interface],
        packet: &Packet,
        decision: &Decision,
        engine: &Engine,
    ) {
        if self.failed.is_some() {
            return;
        }
        let x = Decided {
            frame,
            ifaces,
            packet,
            decision,
            engine,
        };
        let sink = self.guard.get_or_insert_with(|| lock(self.shared));
        if let Err(e) = sink.packet(&x) {
            self.failed = Some(e);
        }
    }
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
    // A chunk's packets and decisions, made once for the run.
    let mut packets: Vec<Packet> = Vec::with_capacity(CHUNK);
    let mut decisions: Vec<Decision> = Vec::with_capacity(CHUNK);
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
        let mut out = Handing {
            shared: shared.sink,
            guard: None,
            failed: None,
        };
        // Decode fills what the rules read; the sinks read only what
        // decode always fills.
        let fields = engine.fields();
        let got = source.next_batch(shared.budget, |frames, ifaces, verdicts| {
            if ifaces.len() != known_ifaces {
                known_ifaces = ifaces.len();
                engine.set_interfaces(&shared.place.interface_names(ifaces));
            }
            if !engine.walks_in_batches() {
                // Nothing to interleave: each frame is decoded, decided and
                // handed on while its packet is still hot (a chunk's worth
                // of packets and decisions in memory cost ~20% wall time on
                // a one-rule replay).
                for (frame, v) in frames.iter().zip(verdicts) {
                    // Written out, not a helper returning the packet: LLVM
                    // copies a returned packet (callgrind: +3% one rule).
                    let mut p = decode_with(frame.link_type, frame.data, frame.orig_len, fields);
                    shared.place.place(&mut p, frame);
                    // States age by the packets' own timestamps.
                    engine.set_time(frame.ts_ns);
                    let d = engine.decide(&p);
                    *v = d.verdict;
                    out.hand(frame, ifaces, &p, &d, engine);
                }
                return;
            }
            // The trie walks a chunk's packets interleaved, so their cache
            // misses overlap: decoded all, decided all, then handed on.
            packets.clear();
            packets.extend(frames.iter().map(|frame| {
                let mut p = decode_with(frame.link_type, frame.data, frame.orig_len, fields);
                shared.place.place(&mut p, frame);
                p
            }));
            engine.decide_batch_at(&packets, |i| frames[i].ts_ns, &mut decisions);
            let decided = frames.iter().zip(&packets).zip(&decisions);
            for (((frame, p), d), v) in decided.zip(verdicts) {
                *v = d.verdict;
                out.hand(frame, ifaces, p, d, engine);
            }
        });
        let failed = out.failed.take();
        drop(out);
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

/// All of `source` through `engine` into `sink`, with no budget, signals
/// or work between batches (what `lint -r`, `diff -r` and the Python
/// package replay): the sink back, and how the input ended.
pub fn whole<Src: Source, S: Sink>(
    source: &mut Src,
    engine: &mut Engine,
    place: &Placement,
    sink: S,
) -> Result<(S, Ended), OutputError> {
    let sink = Mutex::new(sink);
    let (budget, stop) = (Budget::new(None), Stop::new(None));
    let shared = Shared {
        sink: &sink,
        budget: &budget,
        stop: &stop,
        place,
    };
    let ended = run(source, engine, &shared, |_, _| Between::Go)?;
    Ok((
        sink.into_inner().unwrap_or_else(PoisonError::into_inner),
        ended,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Chunker;
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
            Datagrams::from_packets(ports.iter().map(|&p| ipv4_udp(p)).collect(), batch)
        }

        fn from_packets(packets: Vec<Vec<u8>>, batch: u64) -> Datagrams {
            Datagrams {
                packets,
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

    /// A UDP answer from `port` back to port 1234 (of [`ipv4_udp`]'s request).
    fn reply(port: u16) -> Vec<u8> {
        let mut p = ipv4_udp(1234);
        p[12..16].copy_from_slice(&[10, 0, 0, 2]);
        p[16..20].copy_from_slice(&[10, 0, 0, 1]);
        p[20..22].copy_from_slice(&port.to_be_bytes());
        p
    }

    impl Source for Datagrams {
        fn next_batch<F>(&mut self, budget: &Budget, mut each: F) -> Result<Option<usize>, String>
        where
            F: FnMut(&[Frame<'_>], &[Interface], &mut [Verdict]),
        {
            if self.next == self.packets.len() {
                return Ok(None);
            }
            let want = budget.claim(self.batch) as usize;
            let n = want.min(self.packets.len() - self.next);
            budget.give_back((want - n) as u64);
            let mut chunk = Chunker::new();
            for (k, data) in self.packets[self.next..self.next + n].iter().enumerate() {
                let frame = raw_frame(self.next + k, data);
                chunk.push(frame, &self.iface, &mut |frames, ifaces, verdicts| {
                    each(frames, ifaces, verdicts);
                    self.verdicts.extend_from_slice(verdicts);
                });
            }
            chunk.flush(&self.iface, &mut |frames, ifaces, verdicts| {
                each(frames, ifaces, verdicts);
                self.verdicts.extend_from_slice(verdicts);
            });
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

    /// Packet `k` of a source: raw IP, its timestamps 400 ms apart, so
    /// UDP states (10 s) expire within a chunk of 64.
    fn raw_frame(k: usize, data: &[u8]) -> Frame<'_> {
        Frame {
            ts_ns: k as u64 * 400_000_000,
            iface: 0,
            link_type: LinkType::RAW,
            orig_len: data.len() as u32,
            data,
            direction: Direction::Unknown,
            comments: Comments::NONE,
            offset: 0,
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
        // The frame-by-frame path; the batched one has its own test below.
        assert!(!e.walks_in_batches());
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

    /// Past 1,024 rules (byte tries, walked a chunk at a time interleaved,
    /// or one packet at a time as a trie this small is by default): a run
    /// gives the decisions, verdicts and counters of the linear walk
    /// deciding each packet alone at its own time, states (made, matched,
    /// expired) included.
    #[test]
    fn a_batched_run_decides_as_the_linear_walk_one_by_one() {
        let mut rules = String::from("10 check-state\n");
        for i in 0..1500u32 {
            let (n, port) = (100 + i * 10, (i * 37) % 3000);
            rules.push_str(&match i % 5 {
                0 => format!("{n} count udp from any to any {port}\n"),
                1 => format!("{n} allow udp from any to any {port} keep-state\n"),
                2 => format!("{n} skipto {} udp from any to any {port}\n", n + 30),
                _ => format!("{n} deny udp from any to any {port}-{}\n", port + 2),
            });
        }
        rules.push_str("64000 deny udp from any to any 1234\n65000 allow ip from any to any\n");
        // Most even packets ask a keep-state rule's port (each port again after
        // 30 s); odd ones answer the request made 0.4-32 s before, which
        // its state lets through only while it lives (10 s).
        let keep_port = |q: u32| (37 * (5 * (q % 37) + 1) % 3000) as u16;
        let mut packets = Vec::new();
        for k in 0..4000u32 {
            let j = k / 2;
            if k % 10 == 4 {
                // Every kind of rule in turn.
                packets.push(ipv4_udp((k * 7919 % 3100) as u16));
            } else if k % 2 == 0 {
                packets.push(ipv4_udp(keep_port(j)));
            } else {
                packets.push(reply(keep_port(j.saturating_sub(j % 40))));
            }
        }
        for interleave in [true, false] {
            let mut source = Datagrams::from_packets(packets.clone(), 300);
            let names = weir_rules::Names::default();
            let prog = weir_engine::load(&rules, &names, &Default::default()).unwrap();
            // A trie this small is walked one packet at a time unless asked,
            // or unless the CPU walks it in AVX-512 lanes.
            let builder = Engine::builder(prog.clone());
            let mut e = if interleave {
                builder.interleave_always().build()
            } else {
                builder.build()
            };
            assert_eq!(e.walk_kind(), weir_engine::WalkKind::Trie);
            let lanes = e.simd() != weir_engine::Simd::Off;
            assert_eq!(e.walks_in_batches(), interleave || lanes);
            let (sink, budget, stop) = (Mutex::default(), Budget::new(None), Stop::new(None));
            let place = Placement::new(None, &[], None);
            run(
                &mut source,
                &mut e,
                &shared(&sink, &budget, &stop, &place),
                |_, _| Between::Go,
            )
            .unwrap();

            let mut linear = Engine::builder(prog)
                .walk(weir_engine::WalkKind::Linear)
                .build();
            let mut want = Vec::new();
            for (k, data) in source.packets.iter().enumerate() {
                let frame = raw_frame(k, data);
                let mut p = weir_wire::decode(LinkType::RAW, data, frame.orig_len);
                place.place(&mut p, &frame);
                linear.set_time(frame.ts_ns);
                want.push(linear.decide(&p));
            }
            let got: Vec<Decision> = sink
                .into_inner()
                .unwrap()
                .decisions
                .into_iter()
                .map(|(d, _)| d)
                .collect();
            assert_eq!(got, want);
            let verdicts: Vec<Verdict> = want.iter().map(|d| d.verdict).collect();
            assert_eq!(source.verdicts, verdicts);
            assert_eq!(e.counters(), linear.counters());
            // The ruleset's every kind of end was reached.
            let rules_hit: std::collections::BTreeSet<_> = want.iter().map(|d| d.rule).collect();
            assert!(rules_hit.len() > 100, "{} rules decided", rules_hit.len());
            assert_eq!(e.stats().packets, 4000);
            let s = linear.states().expect("a stateful ruleset").stats();
            assert!(s.matched > 100 && s.expired > 100, "{s:?}");
        }
    }
}
