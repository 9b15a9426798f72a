//! The client: send trains of probes, collect the echoes, and work out per
//! probe the round trip, the server's stack time, the filter's time and,
//! from its own timestamps, the client's stack times.
//!
//! A train is `train` probes of one size sent back to back; then the client
//! reads echoes until the whole train is back (or `timeout`), and goes on
//! reading for `gap` so the server is idle, asleep in `recvmsg`, when the
//! next train's first probe arrives: the first probe pays for the wake-up.
//! Sizes take turns train by train. The run ends after `count` trains of
//! every size, or at `deadline`, whichever is first.

use crate::sys::{self, CmsgBuf};
use crate::wire::{self, flags, Bad, Kind, HEADER_LEN};
use crate::Error;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub server: SocketAddr,
    /// UDP payload sizes in bytes (each at least [`HEADER_LEN`]).
    pub sizes: Vec<usize>,
    /// Probes per train (1..=255).
    pub train: u16,
    /// Idle time after a train is back, before the next.
    pub gap: Duration,
    /// Trains of each size.
    pub count: u32,
    /// How long to wait for a train's echoes.
    pub timeout: Duration,
    /// The whole run stops by then.
    pub deadline: Duration,
    /// Ask for software transmit timestamps too.
    pub tx_stamps: bool,
}

impl ClientConfig {
    pub fn new(server: SocketAddr) -> ClientConfig {
        ClientConfig {
            server,
            sizes: vec![32, 64, 96, 512, 1400],
            train: 5,
            gap: Duration::from_millis(10),
            count: 200,
            timeout: Duration::from_millis(200),
            deadline: Duration::from_secs(60),
            tx_stamps: false,
        }
    }

    fn check(&self) -> Result<(), Error> {
        if self.sizes.is_empty() {
            return Err(Error::Config("no probe sizes".into()));
        }
        let max = if self.server.is_ipv4() {
            65_507
        } else {
            65_527
        };
        if let Some(s) = self.sizes.iter().find(|&&s| s < HEADER_LEN || s > max) {
            return Err(Error::Config(format!(
                "probe size {s} is outside {HEADER_LEN}..={max} (the probe header is {HEADER_LEN} bytes)"
            )));
        }
        if self.train == 0 || self.train > 255 {
            return Err(Error::Config("--train must be 1..=255".into()));
        }
        let total = self.sizes.len() as u64 * u64::from(self.count) * u64::from(self.train);
        if total > u64::from(u32::MAX) || total > 50_000_000 {
            return Err(Error::Config(format!(
                "{total} probes is too many for one run"
            )));
        }
        Ok(())
    }
}

/// One probe: what was sent, and what came back. Times in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    pub seq: u32,
    pub size: u32,
    /// Position in its train, 0 = first.
    pub pos: u8,
    /// Client's CLOCK_REALTIME just before `send`.
    pub sent_ns: u64,
    /// The send failed: never on the wire, counted as lost.
    pub send_failed: bool,
    pub echoed: bool,
    /// Client send → client has the echo (application round trip).
    pub rtt_ns: Option<u64>,
    /// Server: kernel receive → server process has the data.
    pub server_stack_ns: Option<u64>,
    /// Server: building the packet record and the filter's decision.
    pub engine_ns: Option<u64>,
    /// Client: kernel receive of the echo → client process has it.
    pub client_rx_stack_ns: Option<u64>,
    /// Client: `send` called → kernel's software transmit stamp.
    pub client_tx_stack_ns: Option<u64>,
}

/// Everything one client run measured.
#[derive(Clone, Debug, Default)]
pub struct ClientRun {
    pub samples: Vec<Sample>,
    /// Echoes that were not valid probes, by reason.
    pub bad: [u64; Bad::COUNT],
    /// Echoes for a probe already echoed.
    pub duplicates: u64,
    /// Echoes whose sequence number was never sent, or whose size or train
    /// position disagrees with what was sent.
    pub mismatched: u64,
    /// What ended the run: "count" or "deadline".
    pub stopped_by: &'static str,
    pub elapsed: Duration,
}

impl ClientRun {
    /// Probes the client tried to send (a failed send counts as lost).
    pub fn sent(&self) -> u64 {
        self.samples.len() as u64
    }
    /// Sends the kernel refused (e.g. ECONNREFUSED after an ICMP port
    /// unreachable: nobody listens there).
    pub fn send_errors(&self) -> u64 {
        self.samples.iter().filter(|s| s.send_failed).count() as u64
    }
    pub fn received(&self) -> u64 {
        self.samples.iter().filter(|s| s.echoed).count() as u64
    }
    pub fn lost(&self) -> u64 {
        self.samples.len() as u64 - self.received()
    }

    /// What to tell the user when probes went out and none came back.
    pub fn no_echo(&self, server: SocketAddr) -> Option<String> {
        (self.received() == 0 && self.sent() > 0).then(|| {
            format!(
                "no echo from {server} ({} probes sent): is `weir probe server` running there?",
                self.sent()
            )
        })
    }
}

struct Client {
    sock: UdpSocket,
    buf: Vec<u8>,
    cmsg: CmsgBuf,
    run: ClientRun,
    /// Send index (the kernel's OPT_ID counter) → sequence number.
    sent_seq: Vec<u32>,
}

/// Runs the client to its count or deadline.
pub fn run(cfg: &ClientConfig) -> Result<ClientRun, Error> {
    cfg.check()?;
    let any: SocketAddr = if cfg.server.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal")
    } else {
        "[::]:0".parse().expect("literal")
    };
    let sock = UdpSocket::bind(any).map_err(|e| Error::Io("bind", e))?;
    sock.connect(cfg.server)
        .map_err(|e| Error::Io("connect", e))?;
    sys::enable_timestamping(&sock, cfg.tx_stamps).map_err(|e| Error::Io("SO_TIMESTAMPING", e))?;
    sys::warm_up_timestamping();
    let total = cfg.sizes.len() * cfg.count as usize * usize::from(cfg.train);
    let max_size = cfg.sizes.iter().copied().max().unwrap_or(HEADER_LEN);
    let mut c = Client {
        sock,
        // One spare byte: a longer echo than any probe shows as a mismatch.
        buf: vec![0u8; max_size.max(2048) + 1],
        cmsg: CmsgBuf::default(),
        run: ClientRun {
            samples: Vec::with_capacity(total),
            ..ClientRun::default()
        },
        sent_seq: Vec::with_capacity(if cfg.tx_stamps { total } else { 0 }),
    };
    let start = Instant::now();
    let deadline = start + cfg.deadline;
    let mut out = vec![0u8; max_size];
    c.run.stopped_by = 'run: {
        for _ in 0..cfg.count {
            for &size in &cfg.sizes {
                if Instant::now() >= deadline {
                    break 'run "deadline";
                }
                let first = c.run.samples.len();
                for pos in 0..cfg.train {
                    let seq = c.run.samples.len() as u32;
                    wire::emit_request(&mut out, seq, pos as u8, cfg.train);
                    let sent_ns = sys::now_ns();
                    let ok = c.sock.send(&out[..size]).is_ok();
                    if ok && cfg.tx_stamps {
                        c.sent_seq.push(seq);
                    }
                    c.run.samples.push(Sample {
                        seq,
                        size: size as u32,
                        pos: pos as u8,
                        sent_ns,
                        send_failed: !ok,
                        ..Sample::default()
                    });
                }
                let train_end = (Instant::now() + cfg.timeout).min(deadline);
                while !c.run.samples[first..]
                    .iter()
                    .all(|s| s.echoed || s.send_failed)
                {
                    if !c.receive_until(train_end) {
                        break;
                    }
                }
                let gap_end = (Instant::now() + cfg.gap).min(deadline);
                while c.receive_until(gap_end) {}
                if cfg.tx_stamps {
                    c.drain_tx_stamps();
                }
            }
        }
        "count"
    };
    if cfg.tx_stamps {
        c.drain_tx_stamps();
    }
    c.run.elapsed = start.elapsed();
    Ok(c.run)
}

impl Client {
    /// Reads at most one datagram before `until`; false once `until` passed.
    fn receive_until(&mut self, until: Instant) -> bool {
        let now = Instant::now();
        if now >= until {
            return false;
        }
        let wait = (until - now).max(Duration::from_micros(1));
        if self.sock.set_read_timeout(Some(wait)).is_err() {
            return false;
        }
        let meta = match sys::recv(&self.sock, &mut self.buf, &mut self.cmsg) {
            Ok(m) => m,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                return Instant::now() < until;
            }
            // ECONNREFUSED (no server yet) and the like: keep waiting.
            Err(_) => return Instant::now() < until,
        };
        let user_rx = sys::now_ns();
        if meta.truncated {
            self.run.bad[Bad::Truncated as usize] += 1;
            return true;
        }
        let data = &self.buf[..meta.len];
        let h = match wire::parse(data, Kind::Echo) {
            Ok(h) => h,
            Err(why) => {
                self.run.bad[why as usize] += 1;
                return true;
            }
        };
        let Some(s) = self.run.samples.get_mut(h.seq as usize) else {
            self.run.mismatched += 1;
            return true;
        };
        if s.size as usize != meta.len || s.pos != h.pos {
            self.run.mismatched += 1;
            return true;
        }
        if s.echoed {
            self.run.duplicates += 1;
            return true;
        }
        s.echoed = true;
        s.rtt_ns = Some(user_rx.saturating_sub(s.sent_ns));
        if h.flags & flags::KERNEL_RX != 0 && h.user_rx_ns >= h.kernel_rx_ns {
            s.server_stack_ns = Some(h.user_rx_ns - h.kernel_rx_ns);
        }
        if h.flags & flags::FILTERED != 0 {
            s.engine_ns = Some(u64::from(h.engine_ns));
        }
        s.client_rx_stack_ns = meta
            .kernel_rx_ns
            .filter(|&k| k <= user_rx)
            .map(|k| user_rx - k);
        true
    }

    fn drain_tx_stamps(&mut self) {
        while let Ok(Some((id, ns))) = sys::recv_tx_stamp(&self.sock, &mut self.cmsg) {
            let Some(&seq) = self.sent_seq.get(id as usize) else {
                continue;
            };
            if let Some(s) = self.run.samples.get_mut(seq as usize) {
                if ns >= s.sent_ns {
                    s.client_tx_stack_ns = Some(ns - s.sent_ns);
                }
            }
        }
    }
}
