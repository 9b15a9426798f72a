//! The HTTP side: hyper answers on one thread of its own (a tokio runtime
//! with one worker), so a client that is slow or sends garbage holds a
//! few kilobytes and a task, never the thread, and scrapes keep being
//! answered while others wait. Every client is bounded:
//!
//! - connections: at most [`Limits::max_connections`]; one more closes
//!   the oldest, so a flood of idle connections cannot lock scrapes out;
//! - request size: hyper reads at most [`MAX_REQUEST_BYTES`] of request
//!   head (431 past it) and never reads a body;
//! - time: one request per connection, and [`Limits::client_time`] from
//!   accept to the last byte of the response, then the connection closes.
//!
//! Conventions of a Prometheus exporter: `GET` or `HEAD /metrics` (any
//! query), text format 0.0.4 with its `Content-Type`; 404 for any other
//! path, 405 with `Allow` for any other method; hyper answers what it
//! cannot parse with 400.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpSocket};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

/// Request head bytes read before answering 431; hyper's minimum buffer.
pub const MAX_REQUEST_BYTES: usize = 8192;
/// The exposition format's media type (text format 0.0.4).
pub const CONTENT_TYPE_0_0_4: &str = "text/plain; version=0.0.4; charset=utf-8";
/// SO_RCVBUF of every connection (the kernel doubles it for its own use).
const RECEIVE_BUFFER: u32 = 2 * MAX_REQUEST_BYTES as u32;
/// A failed accept (say, out of file descriptors) waits this long before
/// the next, so the server never spins.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Where scrapes get their text: called on the server's thread, once per
/// `GET` or `HEAD /metrics`.
pub trait Source: Send + 'static {
    fn body(&mut self) -> Bytes;
}

/// What any one client may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once; the oldest is closed to admit one more.
    pub max_connections: usize,
    /// From accept to the end of the response.
    pub client_time: Duration,
}

impl Default for Limits {
    /// 256 connections (a quarter of the usual 1024 descriptors), 5 s each
    /// (half Prometheus's default scrape timeout).
    fn default() -> Limits {
        Limits {
            max_connections: 256,
            client_time: Duration::from_secs(5),
        }
    }
}

/// A running server; dropping it stops it and closes its connections.
pub struct Server {
    addr: SocketAddr,
    _runtime: Runtime,
}

impl Server {
    /// Where it listens (the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Binds `addr` and answers scrapes from `source` on a thread of its own.
pub fn serve(addr: SocketAddr, source: impl Source, limits: Limits) -> io::Result<Server> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(1)
        .thread_name("weir-metrics")
        .enable_all()
        .build()?;
    let listener = {
        let _in_runtime = runtime.enter();
        listen(addr)?
    };
    let addr = listener.local_addr()?;
    let source: Shared = Arc::new(Mutex::new(source));
    runtime.spawn(accept_loop(listener, source, limits));
    Ok(Server {
        addr,
        _runtime: runtime,
    })
}

/// Binds with a receive buffer just over the largest request, which
/// accepted sockets inherit. Without it Linux grows a loopback socket's
/// buffer to `tcp_rmem`'s maximum (32 MiB here), so every garbage sender
/// could park megabytes in the kernel before the server reads 8 KiB and
/// hangs up.
fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_recv_buffer_size(RECEIVE_BUFFER)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// A source as the connections share it (they take turns on one thread).
pub type Shared = Arc<Mutex<dyn Source>>;

async fn accept_loop(listener: TcpListener, source: Shared, limits: Limits) {
    let mut open: VecDeque<JoinHandle<()>> = VecDeque::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        open.retain(|c| !c.is_finished());
        while open.len() >= limits.max_connections.max(1) {
            if let Some(oldest) = open.pop_front() {
                oldest.abort();
            }
        }
        let source = Arc::clone(&source);
        open.push_back(tokio::spawn(answer(TokioIo::new(stream), source, limits)));
    }
}

/// Answers one connection: at most one request, within the client's time.
/// Public for the fuzz target, which drives it over an in-memory pipe.
pub async fn answer<IO>(io: TokioIo<IO>, source: Shared, limits: Limits)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        let response = respond(req.method(), req.uri().path(), &source);
        async move { Ok::<_, Infallible>(response) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .max_buf_size(MAX_REQUEST_BYTES)
        .serve_connection(io, service);
    // A client's failure (or its time running out) is its own.
    let _ = tokio::time::timeout(limits.client_time, connection).await;
}

/// What the server does with a request line's method and path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Metrics,
    NotFound,
    MethodNotAllowed,
}

pub fn route(method: &Method, path: &str) -> Route {
    match (path, method) {
        ("/metrics", &Method::GET | &Method::HEAD) => Route::Metrics,
        ("/metrics", _) => Route::MethodNotAllowed,
        _ => Route::NotFound,
    }
}

fn respond(method: &Method, path: &str, source: &Shared) -> Response<Full<Bytes>> {
    let (status, body) = match route(method, path) {
        Route::Metrics => {
            let body = source.lock().unwrap_or_else(PoisonError::into_inner).body();
            (StatusCode::OK, body)
        }
        Route::NotFound => (
            StatusCode::NOT_FOUND,
            Bytes::from("not found: try /metrics\n"),
        ),
        Route::MethodNotAllowed => (
            StatusCode::METHOD_NOT_ALLOWED,
            Bytes::from("method not allowed: GET or HEAD\n"),
        ),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let content_type = if status == StatusCode::OK {
        CONTENT_TYPE_0_0_4
    } else {
        "text/plain; charset=utf-8"
    };
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if status == StatusCode::METHOD_NOT_ALLOWED {
        headers.insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_connections_keep_the_small_receive_buffer() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _in_runtime = runtime.enter();
        let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
        let _client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = runtime.block_on(listener.accept()).unwrap();
        let size = socket2::SockRef::from(&accepted)
            .recv_buffer_size()
            .unwrap();
        // Linux reports twice what was set (the rest is its bookkeeping).
        assert_eq!(size, 2 * RECEIVE_BUFFER as usize);
    }

    #[test]
    fn routes() {
        for (method, path, want) in [
            (Method::GET, "/metrics", Route::Metrics),
            (Method::HEAD, "/metrics", Route::Metrics),
            (Method::POST, "/metrics", Route::MethodNotAllowed),
            (Method::DELETE, "/metrics", Route::MethodNotAllowed),
            (Method::GET, "/", Route::NotFound),
            (Method::GET, "/metrics/", Route::NotFound),
            (Method::POST, "/x", Route::NotFound),
        ] {
            assert_eq!(route(&method, path), want, "{method} {path}");
        }
    }
}
