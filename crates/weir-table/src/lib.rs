//! ipfw lookup tables: sets of IPv4 and IPv6 prefixes, each with a `u32`
//! value, and longest-prefix-match lookup.
//!
//! A [`Builder`] collects entries, from a table file
//! ([`parse_table_file`]) or one at a time ([`parse_entry`] for a
//! ruleset's `table NAME add PREFIX [VALUE]`), refusing duplicates as ipfw
//! does. [`Builder::build`] freezes them into a [`Table`], whose lookups
//! (`lookup_v4`, `lookup_v6`, `lookup_ip`) take tens of nanoseconds on a
//! million prefixes and never allocate. Memory is capped by [`Limits`].
//!
//! Flow: `prefix.rs` (text → [`Prefix`]) → `file.rs` (lines → [`Builder`])
//! → `table.rs` (builder → [`Table`]) → `ranges.rs` (the search structure).
#![forbid(unsafe_code)]

mod file;
pub mod naive;
mod prefix;
mod ranges;
mod table;

pub use file::{
    parse_table_file, parse_table_file_with, parse_table_source, parse_table_source_with,
    LineError, MAX_ERRORS,
};
pub use prefix::{parse_entry, parse_prefix, parse_value, Entry, Prefix, TokenError};
pub use table::{AddError, BuildError, Builder, Limits, Table};
