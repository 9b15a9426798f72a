"""The Spark example in local mode (local[2]) on a dozen generated captures:
its merged counters are `weir run --counters` over the same captures one
after another, exactly, and each capture's Parquet verdicts are the CLI's."""

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import DEMO_RULES, gen, weir as run_weir

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "spark_replay.py"

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed")


def cli_counters(rules, captures):
    """`weir run --counters` over each capture in turn, summed per rule, as
    one table in `weir run --counters`'s format."""
    import weir

    totals = None
    for c in captures:
        out = run_weir("run", rules, "-r", c, "--counters", "-q").stdout
        rows = [line.split(None, 3) for line in out.splitlines()]
        if totals is None:
            totals = [{"rule": int(n), "packets": int(p), "bytes": int(b), "text": t} for n, p, b, t in rows]
        else:
            for tot, (n, p, b, t) in zip(totals, rows, strict=True):
                assert (tot["rule"], tot["text"]) == (int(n), t)
                tot["packets"] += int(p)
                tot["bytes"] += int(b)
    import pyarrow as pa

    return weir.counters_text(pa.Table.from_pylist(totals))


def test_spark_replay_merges_counters_exactly(tmp_path):
    caps = tmp_path / "caps"
    caps.mkdir()
    captures = [gen(caps / f"c{i:02}.pcap", 2000 + 500 * i, 100 + i) for i in range(12)]
    out = tmp_path / "out"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    p = subprocess.run(
        [sys.executable, EXAMPLE, DEMO_RULES, str(caps / "*.pcap"), out, "--master", "local[2]"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout == cli_counters(DEMO_RULES, captures)
    read = sum(2000 + 500 * i for i in range(12))
    assert f"{read} packets read" in p.stderr
    for c in captures:
        run_weir("run", DEMO_RULES, "-r", c, "-q", "--verdicts", tmp_path / "v.parquet")
        assert pq.read_table(out / (c.name + ".parquet")).equals(pq.read_table(tmp_path / "v.parquet"))
