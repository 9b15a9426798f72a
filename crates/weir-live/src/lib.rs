//! Live filtering with the weir engine.
//!
//! [`nfqueue::Queue`] binds an NFQUEUE and answers each packet with one
//! verdict, a batch at a time; [`filter::Filter`] decides queued packets
//! with an [`weir_engine::Engine`] and swaps in reloaded ones; the
//! operational pieces are independent of where packets come from:
//! [`metrics::Metrics`] (Prometheus text over HTTP from published
//! snapshots), [`reload::Reloader`] (SIGHUP builds a new engine off the
//! packet thread) and [`signals::Stop`] (SIGINT/SIGTERM).

pub mod filter;
pub mod metrics;
pub mod netlink;
pub mod nfqueue;
pub mod reload;
pub mod signals;
mod sys;
#[cfg(test)]
mod test_packets;
