//! weir-stats: how weir's reports summarise measured samples.
//!
//! - [`quantile`]: nearest-rank quantiles, the median, median and IQR
//!   ([`Spread`]). One definition for every report: a quantile is always
//!   one of the samples ([`METHOD`] names it in reports).
//! - [`cdf`]: the samples' CDF drawn as a small SVG, one or more panels of
//!   one or more lines, its marks at the same quantiles the reports print.
//!
//! Leaf crate (serde only), so every crate that measures can use it.
#![forbid(unsafe_code)]

pub mod cdf;
pub mod quantile;

pub use quantile::{median, quantile, sorted, Spread, METHOD};
