//! weir's one packet pipeline, for every mode:
//!
//! ```text
//! Source ──chunks of frames──► run loop: decode → place → decide ──► Sink
//! (file, AF_PACKET ring,       (budget, stop signal,                 (pass/drop files,
//!  NFQUEUE; verdicts back)      between-batch work)                   --annotate, --verdicts)
//! ```
//!
//! [`source`] says what a source is and reads files; [`ring`] and
//! [`queue`] adapt the live sources of `weir-capture` and `weir-live`;
//! [`run`] is the loop; [`sink`] the per-packet outputs; [`report`] what a
//! run prints at its end. The command line is wiring over these.
#![forbid(unsafe_code)]

pub mod labels;
pub mod log;
pub mod output;
pub mod parquet_verdicts;
pub mod place;
pub mod queue;
pub mod report;
pub mod ring;
pub mod run;
pub mod sink;
pub mod source;
/// The stop signal and `-c` budget, shared with `weir probe`.
pub use weir_stop as stop;
pub mod verdict_table;
pub mod workers;

pub use output::Output;
pub use place::Placement;
pub use run::{run, Between, Ended, Shared};
pub use sink::{Decided, FileOutputs, Files, Sink};
pub use source::{FileSource, Source};
pub use stop::{Budget, Reason, Stop};
