"""weir from Python: load an ipfw ruleset (or FreeBSD ppp filters) once,
replay pcap/pcapng captures through weir's own pipeline with the GIL
released, and get the per-rule counters, the closing summary and every
packet's verdict as Arrow tables.

    import weir
    rs = weir.Ruleset.load("rules.conf")
    r = rs.replay("trace.pcap")
    r.counters   # pyarrow.Table: rule, action, text, packets, bytes
    r.summary    # {"read": …, "passed": …, "dropped": …, "malformed": …, "non_ip": …}
    r.verdicts   # pyarrow.Table: index, ts_ns, iface, dir, ip_version, src, dst,
                 # proto, sport, dport, length, rule, action, note
"""

from ._weir import CaptureError, Replay, Ruleset, RulesetError, WeirError

__all__ = ["Ruleset", "Replay", "WeirError", "RulesetError", "CaptureError", "counters_text"]


def counters_text(counters):
    """A counters table (rule, text, packets, bytes columns) as
    `weir run --counters` prints it: `ipfw show`'s `%05u`, packets and bytes
    right-aligned to the widest value, then the rule's text."""
    rows = counters.to_pylist()
    pw = max((len(str(r["packets"])) for r in rows), default=1)
    bw = max((len(str(r["bytes"])) for r in rows), default=1)
    return "".join(
        f"{r['rule']:05} {r['packets']:>{pw}} {r['bytes']:>{bw}} {r['text']}\n" for r in rows
    )
