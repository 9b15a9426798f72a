//! The one syntax of every flag that takes a time (`--duration`,
//! `--timeout`, `--gap`, `--deadline`): a number, optionally fractional,
//! then a unit — `ns`, `us` (or `µs`), `ms`, `s`, `m` (or `min`), `h` —
//! or no unit for seconds, as `sleep` and `timeout` read it. README.md,
//! "Times", says the same.

use std::time::Duration;

/// The longest time a flag takes: a year.
const MAX_SECONDS: f64 = 86_400.0 * 365.0;

/// Parses `10ms`, `500us`, `1.5s`, `2m`, `30` (seconds), `0`.
pub fn parse(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?}: expected a time such as 10ms, 500us, 2s or 1m"))?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("{s:?}: the unit must be ns, us, ms, s, m or h")),
    };
    let secs = v * scale;
    if !secs.is_finite() || secs > MAX_SECONDS {
        return Err(format!("{s:?}: longer than a year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// As [`parse`], for times that must not be zero.
pub fn parse_positive(s: &str) -> Result<Duration, String> {
    match parse(s)? {
        Duration::ZERO => Err(format!("{s:?}: must be more than 0")),
        d => Ok(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_and_bare_seconds() {
        assert_eq!(parse("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse("500µs"), Ok(Duration::from_micros(500)));
        assert_eq!(parse("250ns"), Ok(Duration::from_nanos(250)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1min"), Ok(Duration::from_secs(60)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("0.2"), Ok(Duration::from_millis(200)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn refuses_what_is_not_a_time() {
        for bad in ["", "s", "10x", "1e3s", "-1s", "1.2.3s", "ms10", "9999999h"] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(parse_positive("0s").is_err());
        assert_eq!(parse_positive("1s"), Ok(Duration::from_secs(1)));
    }
}
