//! The weir rule language: ipfw syntax in, a syntax tree out, and back.
//!
//! `lex` splits a line into words → `parse` builds a [`Rule`] per line
//! (auto-numbering as ipfw does) → `print` writes the canonical form.
//! Errors carry a [`Span`] and render as `file:line:col: message` with a
//! caret; a file read as bytes ([`Source`]) may carry a byte-order mark,
//! CRLF line ends and non-UTF-8 comments. Names (protocols, services) stay names here; the engine resolves
//! them with [`Names`] when it compiles the ruleset. [`ppp`] reads FreeBSD
//! ppp's `set filter` lines (alone, or in a ppp.conf) and translates them
//! into the same tree.
#![forbid(unsafe_code)]

pub mod ast;
mod diag;
mod lex;
pub mod names;
mod parse;
pub mod ppp;
mod print;
mod source;

pub use ast::*;
pub use diag::{render_all, Diagnostic, Errors, MAX_ERRORS};
pub use names::Names;
pub use parse::{
    divert_service, is_option_keyword, parse, parse_addr, parse_rule, parse_source, parse_with,
    AUTOINC_STEP, MAX_RULE_NUMBER, OPTION_KEYWORDS, REFUSED_OPTIONS,
};
pub use print::{print_ruleset, range_list};
pub use source::{BadByte, Source};
