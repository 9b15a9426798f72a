"""The Python bindings against the CLI on the same files: counters, summary
and every verdict row; bad inputs raise the CLI's errors."""

import csv
import faulthandler
import json
import os
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import weir
from conftest import DEMO_RULES, gen, weir as run_weir


@pytest.fixture(scope="module")
def demo():
    return weir.Ruleset.load(DEMO_RULES)


def cli_json(rules, trace, *extra):
    out = run_weir("run", rules, "-r", trace, "--json", "-q", *extra).stdout
    return json.loads(out)["weir"]


def test_counters_and_summary_equal_the_cli(demo, trace):
    r = demo.replay(trace, verdicts=False)
    report = cli_json(DEMO_RULES, trace)
    summary = next(i["summary"] for i in report if "summary" in i)
    assert r.summary == {
        "read": summary["packets"],
        "passed": summary["passed"],
        "dropped": summary["dropped"],
        "malformed": summary["malformed"],
        "non_ip": summary["non_ip"],
    }
    rules = [i["rule"] for i in report if "rule" in i]
    want = [(x["number"], x["action"], x["text"], x["counter"]["packets"], x["counter"]["bytes"]) for x in rules]
    got = [(c["rule"], c["action"], c["text"], c["packets"], c["bytes"]) for c in r.counters.to_pylist()]
    assert got == want
    assert r.verdicts is None
    assert r.summary["malformed"] > 0 and r.summary["non_ip"] > 0


def test_counters_print_as_the_cli_prints_them(demo, trace):
    r = demo.replay(trace, verdicts=False)
    cli = run_weir("run", DEMO_RULES, "-r", trace, "--counters", "-q").stdout
    assert weir.counters_text(r.counters) == cli


def test_every_verdict_row_equals_the_cli_parquet_and_csv(demo, trace, tmp_path):
    r = demo.replay(trace)
    run_weir("run", DEMO_RULES, "-r", trace, "-q", "--verdicts", tmp_path / "v.parquet")
    run_weir("run", DEMO_RULES, "-r", trace, "-q", "--verdicts", tmp_path / "v.csv")
    from_cli = pq.read_table(tmp_path / "v.parquet")
    assert r.verdicts.schema == from_cli.schema
    assert r.verdicts.num_rows == 70_000
    assert r.verdicts.equals(from_cli)
    with open(tmp_path / "v.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    got = r.verdicts.select(["index", "rule", "action", "note"]).to_pylist()
    for g, c in zip(got, rows, strict=True):
        rule = None if c["rule"] == "-" else int(c["rule"])
        assert (g["index"], g["rule"], g["action"], g["note"]) == (int(c["index"]), rule, c["action"], c["note"])


def test_duckdb_and_pandas_read_the_parquet_verdicts(demo, trace, tmp_path):
    import duckdb
    import pandas as pd

    path = tmp_path / "v.parquet"
    run_weir("run", DEMO_RULES, "-r", trace, "-q", "--verdicts", path)
    counts = dict(
        duckdb.sql(f"select action, count(*) from read_parquet('{path}') group by action").fetchall()
    )
    r = demo.replay(trace)
    want = {}
    for a in r.verdicts.column("action").to_pylist():
        want[a] = want.get(a, 0) + 1
    assert counts == want
    by_rule = duckdb.sql(
        f"select rule, count(*), sum(length) from read_parquet('{path}') where rule is not null group by rule"
    ).fetchall()
    counters = {c["rule"]: (c["packets"], c["bytes"]) for c in r.counters.to_pylist()}
    # Only the deciding rule's row: count rules count more packets than decide.
    for rule, n, nbytes in by_rule:
        assert n <= counters[rule][0] and nbytes <= counters[rule][1]
    df = pd.read_parquet(path)
    assert len(df) == r.summary["read"]
    assert (df["action"].isin(["allow", "deny"]) | df["note"].ne("")).all()
    assert df.equals(r.verdicts.to_pandas())


def test_bytes_and_paths_replay_alike(demo, tmp_path):
    t = gen(tmp_path / "s.pcap", 2000, 5)
    by_path = demo.replay(t)
    by_bytes = demo.replay(t.read_bytes())
    assert by_path.verdicts.equals(by_bytes.verdicts)
    assert by_path.counters.equals(by_bytes.counters)
    assert by_path.summary == by_bytes.summary


def test_each_replay_starts_with_fresh_counters(demo, tmp_path):
    t = gen(tmp_path / "s.pcap", 1000, 6)
    a, b = demo.replay(t), demo.replay(t)
    assert a.counters.equals(b.counters)


def test_options_are_the_flags(tmp_path):
    t = gen(tmp_path / "s.pcap", 3000, 8)
    rules = tmp_path / "r.rules"
    rules.write_text("100 deny tcp from any to me 25\n200 deny ip from table(bad) to any\n300 count ip from any to any\n")
    table = tmp_path / "bad.table"
    table.write_text("10.1.0.0/20\n2001:db8:ff00::/40\n")
    rs = weir.Ruleset.load(
        rules, tables={"bad": str(table)}, me=["192.0.2.16", "198.51.100.31"], default_allow=True
    )
    r = rs.replay(t)
    flags = ["--table", f"bad={table}", "--me", "192.0.2.16,198.51.100.31", "--default-allow"]
    cli = cli_json(rules, t, *flags)
    want = [x["rule"]["counter"]["packets"] for x in cli if "rule" in x]
    assert r.counters.column("packets").to_pylist() == want
    assert all(w > 0 for w in want), want
    run_weir("run", rules, "-r", t, "-q", "--verdicts", tmp_path / "v.parquet", *flags)
    assert r.verdicts.equals(pq.read_table(tmp_path / "v.parquet"))


def test_ppp_filters_with_a_set(tmp_path):
    t = gen(tmp_path / "s.pcap", 3000, 9)
    rules = tmp_path / "f.ppp"
    rules.write_text("set filter in 0 deny any any tcp dst eq 25\nset filter in 1 permit 10.0.0.0/8 any\n")
    with pytest.raises(weir.RulesetError) as e:
        weir.Ruleset.load(rules)
    cli = run_weir("run", rules, "-r", t, check=False)
    assert cli.returncode == 2 and cli.stderr == f"weir: {e.value}\n"
    r = weir.Ruleset.load(rules, filter_set="in").replay(t)
    run_weir("run", rules, "--filter-set", "in", "-r", t, "-q", "--verdicts", tmp_path / "v.parquet")
    assert r.verdicts.equals(pq.read_table(tmp_path / "v.parquet"))


def test_ppp_options_raise_the_cli_message_where_they_do_not_fit(tmp_path):
    ipfw = tmp_path / "r.rules"
    ipfw.write_text("100 allow ip from any to any\n")
    filters = tmp_path / "f.ppp"
    filters.write_text("set filter in 0 permit 0/0 0/0\n")
    conf = tmp_path / "ppp.conf"
    conf.write_text("office:\n set filter in 0 permit 0/0 0/0\n")
    t = gen(tmp_path / "s.pcap", 10, 1)
    cases = [
        (ipfw, {"label": "x"}, ["--label", "x"]),
        (ipfw, {"filter_set": "in"}, ["--filter-set", "in"]),
        (filters, {"filter_set": "in", "label": "x"}, ["--filter-set", "in", "--label", "x"]),
        (conf, {"filter_set": "in"}, ["--filter-set", "in"]),
    ]
    for rules, kwargs, flags in cases:
        with pytest.raises(weir.RulesetError) as e:
            weir.Ruleset.load(rules, **kwargs)
        cli = run_weir("run", rules, *flags, "-r", t, "-q", check=False)
        assert cli.returncode == 2 and cli.stderr == f"weir: {e.value}\n", kwargs


def test_a_bad_ruleset_raises_the_cli_message(tmp_path):
    rules = tmp_path / "bad.rules"
    rules.write_text("100 allow ip from any to any\n200 deny tcp from any to any port frob\n300 bogus\n")
    cli = run_weir("check", rules, check=False)
    assert cli.returncode == 2
    with pytest.raises(weir.RulesetError) as e:
        weir.Ruleset.load(rules)
    assert str(e.value) + "\n" == cli.stderr
    assert str(e.value).startswith(f"{rules}:2:")
    with pytest.raises(weir.RulesetError) as e:
        weir.Ruleset.parse(rules.read_text())
    assert str(e.value) == cli.stderr.rstrip("\n").replace(str(rules), "<string>")


def test_a_missing_file_raises_the_cli_message(demo, tmp_path):
    missing = tmp_path / "nope"
    cli = run_weir("check", missing, check=False)
    with pytest.raises(weir.RulesetError) as e:
        weir.Ruleset.load(missing)
    assert cli.returncode == 2 and cli.stderr == f"weir: {e.value}\n"
    cli = run_weir("run", DEMO_RULES, "-r", missing, check=False)
    with pytest.raises(weir.CaptureError) as e:
        demo.replay(missing)
    assert cli.returncode == 1 and cli.stderr == f"weir: {e.value}\n"


def test_a_corrupt_capture_raises_the_cli_message(demo, tmp_path):
    t = gen(tmp_path / "s.pcap", 500, 10)
    data = bytearray(t.read_bytes())
    # Record 250's header claims a length past pcap's cap.
    at = 24
    for _ in range(249):
        at += 16 + int.from_bytes(data[at + 8 : at + 12], "little")
    data[at + 8 : at + 16] = b"\xff" * 8
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(bytes(data))
    cli = run_weir("run", DEMO_RULES, "-r", bad, "-q", check=False)
    assert cli.returncode == 1
    with pytest.raises(weir.CaptureError) as e:
        demo.replay(bad)
    assert cli.stderr.splitlines()[-1] == f"weir: {e.value}"
    with pytest.raises(weir.CaptureError, match="not a pcap or pcapng"):
        demo.replay(b"not a capture at all")
    with pytest.raises(TypeError):
        demo.replay(42)
    # The interpreter is alive and the ruleset still works.
    assert demo.replay(t).summary["read"] == 500


def test_the_gil_is_released_while_replaying(demo, tmp_path):
    """The replay blocks reading a FIFO inside Rust; only this thread can
    feed it, which needs the GIL. Were it held, this would deadlock (the
    watchdog then ends the run)."""
    t = gen(tmp_path / "s.pcap", 1000, 11)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    faulthandler.dump_traceback_later(120, exit=True)
    try:
        result = {}
        th = threading.Thread(target=lambda: result.update(r=demo.replay(fifo)))
        th.start()
        with open(fifo, "wb") as w:
            w.write(t.read_bytes())
        th.join()
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert result["r"].verdicts.equals(demo.replay(t).verdicts)


def test_record_batches_are_zero_copy_arrow(demo, trace):
    r = demo.replay(trace)
    assert isinstance(r.verdicts, pa.Table)
    # One chunk per 65,536 rows: the batches Rust built, not rows.
    assert r.verdicts.column("index").num_chunks == 2
