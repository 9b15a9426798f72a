//! ClassBench filter sets and header traces for weir.
//!
//! ClassBench (Taylor & Turner) describes packet classifiers with two text
//! formats: a filter set, one filter per line
//! (`@sa/len  da/len  lo : hi  lo : hi  0xPP/0xMM [0xVVVV/0xMMMM [extra...]]`),
//! and a header trace (`sa da sp dp proto [[flags [extra...]] filter#]`,
//! unsigned integers, the filter index 0-based).
//! A header's answer is the first filter, in line order, whose five fields
//! all hold it; ports are compared whatever the protocol. [`Fields`] adds
//! ClassBench's sixth dimension, the flags, on request.
//!
//! - [`parse`]: strict parsers for both formats (`line:col: message`).
//! - [`reference`]: the brute-force first-match answer, the oracle.
//! - [`to_weir`]: filters as weir rules, two ways: [`to_weir::import`] for
//!   people (ipfw semantics), [`to_weir::Compiled`] for exact evaluation.
//! - [`gen`]: seeded acl/fw/ipc-like filter sets and traces.
#![forbid(unsafe_code)]

pub mod gen;
pub mod parse;
pub mod reference;
pub mod report;
pub mod to_weir;

pub use parse::{parse_filters, parse_trace, Filter, Header, ParseError, Prefix};
pub use reference::{first_match, Fields};
