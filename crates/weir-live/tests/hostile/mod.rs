//! Clients for the metrics server, well-behaved and not: a plain scrape
//! ([`exchange`]), and an [`Attack`] of slow clients (half a request, then
//! silence) and garbage senders (as fast as they can, reconnecting when
//! the server hangs up). Shared by tests/metrics_server.rs and
//! examples/metrics_hostile.rs.
#![allow(dead_code)]

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// 10.0.0.1:1234 → 10.0.0.2:53, UDP, no payload (28 bytes of raw IPv4).
pub fn ipv4_udp() -> Vec<u8> {
    vec![
        0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x04, 0xd2, 0, 53, 0,
        8, 0, 0,
    ]
}

/// A response as read off the wire.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `request` on a new connection and reads the response to its end.
pub fn exchange(addr: SocketAddr, request: &[u8]) -> io::Result<Reply> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    s.write_all(request)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("{text:?}"));
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(bad)?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.strip_prefix("HTTP/1.1 ").or(l.strip_prefix("HTTP/1.0 ")))
        .and_then(|l| l.get(..3))
        .and_then(|c| c.parse().ok())
        .ok_or_else(bad)?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(Reply {
        status,
        headers,
        body: body.to_owned(),
    })
}

/// True if the peer has not closed `s` (nothing to read, no end of stream).
pub fn still_open(s: &TcpStream) -> bool {
    !closed_within(s, Duration::from_millis(1))
}

/// True if the peer closes `s` (end of stream or reset) within `wait`.
pub fn closed_within(s: &TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut buf = [0u8; 256];
    let mut s = s;
    match s.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => closed_within(s, wait),
        Err(e) => !matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ),
    }
}

/// Slow and garbage clients against one server, until stopped.
pub struct Attack {
    slow: Vec<TcpStream>,
    garbage: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    connections: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

/// What an attack did.
#[derive(Debug)]
pub struct Report {
    pub slow_still_open: usize,
    pub garbage_connections: u64,
    pub garbage_bytes: u64,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} slow clients still connected; garbage: {} connections, {:.1} MB sent",
            self.slow_still_open,
            self.garbage_connections,
            self.garbage_bytes as f64 / 1e6
        )
    }
}

impl Attack {
    /// Opens `slow` connections that each send half a request and wait,
    /// and starts `garbage` threads. Odd threads send binary junk, even
    /// ones a request head that never ends (header after header).
    pub fn start(addr: SocketAddr, slow: usize, garbage: usize) -> Attack {
        let slow = (0..slow)
            .map(|_| {
                let mut s = TcpStream::connect(addr).expect("slow client connects");
                s.write_all(b"GET /metrics HTTP/1.0\r\nX: ").unwrap();
                s
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicU64::new(0));
        let bytes = Arc::new(AtomicU64::new(0));
        let garbage = (0..garbage)
            .map(|i| {
                let (stop, connections, bytes) = (
                    Arc::clone(&stop),
                    Arc::clone(&connections),
                    Arc::clone(&bytes),
                );
                std::thread::spawn(move || {
                    let (first, chunk) = junk(i);
                    while !stop.load(Ordering::Relaxed) {
                        let Ok(mut s) = connect_small(addr) else {
                            continue;
                        };
                        connections.fetch_add(1, Ordering::Relaxed);
                        let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
                        if s.write_all(&first).is_err() {
                            continue;
                        }
                        while !stop.load(Ordering::Relaxed) {
                            match s.write(&chunk) {
                                Ok(n) if n > 0 => bytes.fetch_add(n as u64, Ordering::Relaxed),
                                _ => break,
                            };
                        }
                    }
                })
            })
            .collect();
        Attack {
            slow,
            garbage,
            stop,
            connections,
            bytes,
        }
    }

    /// Waits until the garbage clients have each had a connection or so.
    pub fn wait_until_busy(&self) {
        let start = Instant::now();
        let want = self.garbage.len() as u64 * 2;
        while self.connections.load(Ordering::Relaxed) < want
            && start.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the garbage threads, then counts the slow clients the server
    /// has not closed.
    pub fn stop(self) -> Report {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.garbage {
            t.join().expect("garbage thread");
        }
        Report {
            slow_still_open: self.slow.iter().filter(|s| still_open(s)).count(),
            garbage_connections: self.connections.load(Ordering::Relaxed),
            garbage_bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

/// A connection whose send buffer is small, so what a garbage client
/// sends goes to the server instead of piling up in its own kernel buffer
/// (Linux lets that grow to 4 MiB, all thrown away when the server hangs
/// up: the client's memcpy, not an attack on the server).
fn connect_small(addr: SocketAddr) -> io::Result<TcpStream> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    s.set_send_buffer_size(16 << 10)?;
    s.connect(&addr.into())?;
    Ok(s.into())
}

/// Garbage thread `i`'s opening bytes and what it repeats after them.
fn junk(i: usize) -> (Vec<u8>, Vec<u8>) {
    if i % 2 == 1 {
        // xorshift bytes: never a valid method.
        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ i as u64;
        let bytes = (0..16 << 10)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        (Vec::new(), bytes)
    } else {
        let header = "X-Garbage: 0123456789abcdef0123456789abcdef\r\n".repeat(256);
        (
            b"GET /metrics HTTP/1.1\r\nHost: a\r\n".to_vec(),
            header.into_bytes(),
        )
    }
}
