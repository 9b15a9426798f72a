//! What `weir classbench` reports: the answers compared with the trace's
//! filter# column, the `--verdicts` lines, the table and JSON. The numbers
//! (build time, ns per packet) are measured by the caller.

use crate::{Fields, Header};
use serde::Serialize;

/// How the trace's filter# column compares with the answers.
#[derive(Debug, Default, Serialize)]
pub struct ExpectedCheck {
    /// Headers with a filter#.
    pub checked: u64,
    /// Answered by the filter the header was drawn from.
    pub same: u64,
    /// Answered by an earlier filter (it shadows the one drawn from).
    pub earlier: u64,
    /// Answered by a later filter or none, or drawn from a filter the set
    /// does not have: the trace does not belong to this set (or to this
    /// comparison: a trace drawn with flags, checked without them, stays
    /// consistent; the reverse need not).
    pub contradicting: u64,
}

impl ExpectedCheck {
    /// Counts one header: `index` its 0-based filter#, `answer` the
    /// 1-based first match (0: none), `filters` the set's size.
    pub fn count(&mut self, index: u32, answer: u32, filters: usize) {
        self.checked += 1;
        let own = u64::from(index) + 1;
        let answer = u64::from(answer);
        if own > filters as u64 || answer == 0 || answer > own {
            self.contradicting += 1;
        } else if answer == own {
            self.same += 1;
        } else {
            self.earlier += 1;
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub rules: String,
    pub trace: String,
    pub filters: usize,
    pub headers: usize,
    /// The fields compared: `5-tuple` or `5-tuple+flags`.
    pub fields: &'static str,
    /// How headers became packets (see weir_classbench::to_weir).
    pub encoding: &'static str,
    pub classified: bool,
    /// The SIMD lanes the classifier's automata stepped in, or its bit
    /// sets were ANDed in (`off`: scalar).
    pub simd: &'static str,
    /// Compile plus engine (classifier) construction, milliseconds.
    pub build_ms: f64,
    pub classifier_bytes: usize,
    pub iterations: u32,
    /// Median over the timed passes.
    pub ns_per_packet: f64,
    pub packets_per_second: f64,
    pub min_ns_per_packet: f64,
    pub max_ns_per_packet: f64,
    /// Over every timed pass: their time over their packets, as
    /// dpdk-test-acl reports its passes (`bench/compare-acl.sh` sets the
    /// two side by side).
    pub mean_ns_per_packet: f64,
    /// Headers with a matching filter.
    pub matched: u64,
    pub expected: ExpectedCheck,
}

impl ExpectedCheck {
    /// Compares each header's filter# (where it has one) with its answer.
    pub fn of(headers: &[Header], answers: &[u32], filters: usize) -> ExpectedCheck {
        let mut expected = ExpectedCheck::default();
        for (h, &a) in headers.iter().zip(answers) {
            if let Some(index) = h.filter {
                expected.count(index, a, filters);
            }
        }
        expected
    }
}

/// The fields to compare: with `match_flags`, every header must have the
/// flags column; the error is `LINE:1: message` for the first that lacks it.
pub fn fields_for(headers: &[Header], match_flags: bool) -> Result<Fields, String> {
    if !match_flags {
        return Ok(Fields::FiveTuple);
    }
    match headers.iter().position(|h| h.flags.is_none()) {
        Some(i) => Err(format!(
            "{}:1: --match-flags needs the flags column (sa da sp dp proto flags [extra...] filter#), and this line has none",
            i + 1
        )),
        None => Ok(Fields::WithFlags),
    }
}

/// `--verdicts`: each header's answer (1-based filter, 0: none), a line each.
pub fn verdicts_text(answers: &[u32]) -> String {
    let mut text = String::with_capacity(answers.len() * 6);
    let mut buf = itoa::Buffer::new();
    for a in answers {
        text.push_str(buf.format(*a));
        text.push('\n');
    }
    text
}

impl Report {
    /// As printed: pretty JSON, or the table.
    pub fn render(&self, json: bool) -> serde_json::Result<String> {
        match json {
            true => Ok(serde_json::to_string_pretty(self)? + "\n"),
            false => Ok(table(self)),
        }
    }
}

fn table(r: &Report) -> String {
    let e = &r.expected;
    let mut s = format!(
        "filters          {}\n\
         headers          {} ({} matched a filter)\n\
         fields           {}\n\
         encoding         {}\n\
         walk             {}\n\
         build            {:.1} ms, classifier {} KiB\n\
         ns/packet        {:.1} median of {} passes (nearest-rank; min {:.1}, mean {:.1}, max {:.1})\n\
         packets/s        {:.0}\n",
        r.filters,
        r.headers,
        r.matched,
        r.fields,
        r.encoding,
        match (r.classified, r.simd) {
            (false, _) => "linear".to_string(),
            (true, "off") => "classifier".to_string(),
            (true, simd) => format!("classifier, {simd} lanes"),
        },
        r.build_ms,
        r.classifier_bytes / 1024,
        r.ns_per_packet,
        r.iterations,
        r.min_ns_per_packet,
        r.mean_ns_per_packet,
        r.max_ns_per_packet,
        r.packets_per_second,
    );
    if e.checked > 0 {
        s += &format!(
            "trace filter#    {} checked: {} answered by their own filter, {} by an earlier one, {} contradicting\n",
            e.checked, e.same, e.earlier, e.contradicting
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_answer_is_counted_against_the_filter_it_was_drawn_from() {
        let mut e = ExpectedCheck::default();
        e.count(2, 3, 5); // its own filter (filter# is 0-based, answers 1-based)
        e.count(2, 1, 5); // an earlier filter shadows it
        e.count(2, 4, 5); // a later one: cannot be first
        e.count(2, 0, 5); // none
        e.count(9, 1, 5); // a filter the set does not have
        assert_eq!(
            (e.checked, e.same, e.earlier, e.contradicting),
            (5, 1, 1, 3)
        );
    }

    #[test]
    fn match_flags_names_the_first_header_without_the_column() {
        let trace = "1\t2\t3\t4\t6\t16\t0\n1\t2\t3\t4\t6\t0\n";
        let headers = crate::parse_trace(trace).expect("parses");
        assert!(matches!(fields_for(&headers, false), Ok(Fields::FiveTuple)));
        let err = fields_for(&headers, true).expect_err("line 2 has no flags");
        assert!(err.starts_with("2:1: --match-flags needs"), "{err}");
        assert_eq!(verdicts_text(&[3, 0, 12]), "3\n0\n12\n");
    }
}
