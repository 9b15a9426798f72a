//! Live filtering with the weir engine.
//!
//! [`nfqueue::Queue`] binds an NFQUEUE and answers each packet with one
//! verdict, a batch at a time (`weir-pipeline` decides them); the
//! operational pieces are independent of where packets come from:
//! [`metrics::Metrics`] (Prometheus text over HTTP from published
//! snapshots; the queue's own series in [`metrics::queue_samples`]) and
//! [`reload::Reloader`] (SIGHUP builds a new engine off the packet thread).

pub mod metrics;
pub mod netlink;
pub mod nfqueue;
pub mod reload;
mod sys;

pub use sys::interface_name;
#[cfg(any(test, feature = "testing"))]
pub mod test_packets;
