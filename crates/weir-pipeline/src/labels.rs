//! What a decision is called in the outputs: the `--verdicts` CSV line's
//! suffix (or its Parquet columns) and the `--annotate` comment. Every text is made once per rule
//! at start-up; a packet only picks its own, except for a `tablearg`
//! action, whose value is the packet's.

use weir_engine::{Decision, Engine, Verdict};
use weir_wire::{Malformed, Packet};

/// Text attached to each decision, made once.
pub struct Labels {
    /// Per rule and verdict (`2 * rule + drop`): ",300,deny,\n" style CSV
    /// suffix and "rule 300 deny" comment, with the action that decided
    /// ("pipe 1"), and the verdict too when the action does not say it.
    rule_csv: Vec<String>,
    rule_comment: Vec<String>,
    non_ip_csv: String,
    non_ip_comment: String,
    malformed_csv: Vec<String>,
    malformed_comment: Vec<String>,
    /// The same decisions as (rule number, action, note) columns, for
    /// the Parquet verdicts (`-` rule: none).
    rule_parts: Vec<(String, String)>,
    non_ip_parts: (String, String),
    malformed_parts: Vec<(String, String)>,
    /// Per rule: whether its action reads `tablearg`, so that a packet it
    /// decides gets its label made with the value resolved.
    tablearg: Vec<bool>,
}

/// What one packet's label is: made once, or made for this packet.
pub enum Label<'a> {
    Made(&'a str),
    Resolved(String),
}

/// A decision's action and note, each made once or for this packet.
pub struct Parts<'a> {
    pub action: Label<'a>,
    pub note: Label<'a>,
}

impl Label<'_> {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Label::Made(s) => s.as_bytes(),
            Label::Resolved(s) => s.as_bytes(),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Label::Made(s) => s,
            Label::Resolved(s) => s,
        }
    }
}

impl Labels {
    pub fn new(engine: &Engine) -> Labels {
        let word = |v: Verdict| if v == Verdict::Pass { "allow" } else { "deny" };
        let policy = engine.policy();
        // Each rule with each verdict, as (action, note).
        let per_verdict = || {
            engine.program().rules.iter().flat_map(|r| {
                [Verdict::Pass, Verdict::Drop].map(move |v| {
                    let (action, note) = action_and_note(r.act, &r.action_text, v);
                    (r, action, note)
                })
            })
        };
        Labels {
            rule_csv: per_verdict()
                .map(|(r, action, note)| csv_suffix(r.number, action, note))
                .collect(),
            rule_comment: per_verdict()
                .map(|(r, action, note)| comment_text(r.number, &action, &note))
                .collect(),
            tablearg: engine
                .program()
                .rules
                .iter()
                .map(|r| r.action.takes_tablearg())
                .collect(),
            non_ip_csv: format!(",-,{},non-ip\n", word(policy.non_ip)),
            non_ip_comment: format!("non-ip {}", word(policy.non_ip)),
            malformed_csv: Malformed::ALL
                .iter()
                .map(|m| format!(",-,{},malformed:{}\n", word(policy.malformed), m.name()))
                .collect(),
            malformed_comment: Malformed::ALL
                .iter()
                .map(|m| format!("malformed {} {}", m.name(), word(policy.malformed)))
                .collect(),
            rule_parts: per_verdict()
                .map(|(_, action, note)| (action, note))
                .collect(),
            non_ip_parts: (word(policy.non_ip).to_owned(), "non-ip".to_owned()),
            malformed_parts: Malformed::ALL
                .iter()
                .map(|m| {
                    let note = format!("malformed:{}", m.name());
                    (word(policy.malformed).to_owned(), note)
                })
                .collect(),
        }
    }

    // Per packet, inside the sink: a call costs more than the pick.
    #[inline(always)]
    pub fn csv(&self, d: &Decision, p: &Packet, engine: &Engine) -> Label<'_> {
        match (d.rule, p.l3) {
            (Some(r), _) => match self.resolved(d, r, p, engine) {
                Some((number, action, note)) => Label::Resolved(csv_suffix(number, action, note)),
                None => {
                    Label::Made(&self.rule_csv[2 * r + usize::from(d.verdict == Verdict::Drop)])
                }
            },
            (None, weir_wire::L3::Malformed(m)) => Label::Made(&self.malformed_csv[m as usize]),
            (None, _) => Label::Made(&self.non_ip_csv),
        }
    }

    // Per packet, inside the sink: a call costs more than the pick.
    #[inline(always)]
    pub fn comment(&self, d: &Decision, p: &Packet, engine: &Engine) -> Label<'_> {
        match (d.rule, p.l3) {
            (Some(r), _) => match self.resolved(d, r, p, engine) {
                Some((number, action, note)) => {
                    Label::Resolved(comment_text(number, &action, &note))
                }
                None => {
                    Label::Made(&self.rule_comment[2 * r + usize::from(d.verdict == Verdict::Drop)])
                }
            },
            (None, weir_wire::L3::Malformed(m)) => Label::Made(&self.malformed_comment[m as usize]),
            (None, _) => Label::Made(&self.non_ip_comment),
        }
    }

    /// The decision as columns: the rule's number (none for non-IP and
    /// malformed packets), its action and its note, as the CSV says them.
    // Per packet, inside the sink.
    #[inline(always)]
    pub fn parts(&self, d: &Decision, p: &Packet, engine: &Engine) -> Parts<'_> {
        fn made((action, note): &(String, String)) -> Parts<'_> {
            Parts {
                action: Label::Made(action),
                note: Label::Made(note),
            }
        }
        match (d.rule, p.l3) {
            (Some(r), _) => match self.resolved(d, r, p, engine) {
                Some((_, action, note)) => Parts {
                    action: Label::Resolved(action),
                    note: Label::Resolved(note),
                },
                None => made(&self.rule_parts[2 * r + usize::from(d.verdict == Verdict::Drop)]),
            },
            (None, weir_wire::L3::Malformed(m)) => made(&self.malformed_parts[m as usize]),
            (None, _) => made(&self.non_ip_parts),
        }
    }

    /// A `tablearg` rule's number, action and note with the packet's
    /// table value in the action (`pipe 1`); None for every other rule.
    #[cold]
    fn resolved_slow(
        d: &Decision,
        r: usize,
        p: &Packet,
        engine: &Engine,
    ) -> Option<(u16, String, String)> {
        let rule = &engine.program().rules[r];
        let action = engine.resolved_action(p, r)?.to_string();
        let (action, note) = action_and_note(rule.act, &action, d.verdict);
        Some((rule.number, action, note))
    }

    #[inline]
    fn resolved(
        &self,
        d: &Decision,
        r: usize,
        p: &Packet,
        engine: &Engine,
    ) -> Option<(u16, String, String)> {
        if self.tablearg[r] {
            Self::resolved_slow(d, r, p, engine)
        } else {
            None
        }
    }
}

/// A decision's action and note: "allow" and "deny" say theirs; other
/// actions add the verdict. A drop by an action that does not drop (a
/// state refused at `allow … limit`, `nat` of a packet NAT does not take)
/// is a "deny", the note naming the action refused.
fn action_and_note(act: weir_engine::Act, text: &str, v: Verdict) -> (String, String) {
    match (act, v) {
        (weir_engine::Act::Accept, Verdict::Pass) | (weir_engine::Act::Deny, _) => {
            (text.to_owned(), String::new())
        }
        (_, Verdict::Pass) => (text.to_owned(), "pass".to_owned()),
        (_, Verdict::Drop) => ("deny".to_owned(), format!("{text} refused")),
    }
}

/// ",300,pipe 1,pass\n": a --verdicts line after its index.
fn csv_suffix(number: u16, action: String, note: String) -> String {
    let quoted = |t: String| {
        if t.contains(',') {
            format!("\"{t}\"")
        } else {
            t
        }
    };
    format!(",{number},{},{}\n", quoted(action), quoted(note))
}

/// "rule 300 pipe 1 (pass)": an --annotate comment.
fn comment_text(number: u16, action: &str, note: &str) -> String {
    match note {
        "" => format!("rule {number} {action}"),
        note => format!("rule {number} {action} ({note})"),
    }
}
