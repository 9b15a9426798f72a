"""README's "Python and Spark" examples run as shown: the Python block with
the files it names (rules.conf is the demo ruleset, trace.pcap a generated
trace, v.parquet what the section's `weir run` line writes) and the
spark-submit line on generated captures."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DEMO_RULES, REPO, gen, weir as run_weir


def section():
    text = (REPO / "README.md").read_text()
    start = text.index("## Python and Spark\n")
    return text[start : text.index("\n## ", start + 1)]


def blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", section(), re.S)


@pytest.fixture
def place(tmp_path, monkeypatch):
    shutil.copy(DEMO_RULES, tmp_path / "rules.conf")
    gen(tmp_path / "trace.pcap", 2000, 7)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_python_example_runs(place, capsys):
    (cli_line,) = [l for l in blocks("sh")[0].splitlines() if l.startswith("weir ")]
    run_weir(*cli_line.split("#")[0].split()[1:])
    (code,) = blocks("python")
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "'read': 2000" in out
    assert "00100 " in out and "65535 " in out
    assert "2000" in out
    assert "<string>:1:31: unknown option 'frob'" in out


def test_the_spark_submit_line_runs(place):
    (line,) = [l for l in blocks("text")[1].splitlines() if l.startswith("spark-submit")]
    os.mkdir("captures")
    for i in range(3):
        gen(place / "captures" / f"c{i}.pcap", 500, i)
    args = line.replace("'", "").split()
    submit = Path(sys.executable).parent / "spark-submit"
    args = [str(submit)] + [str(REPO / a) if a.startswith("python/") else a for a in args[1:]]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    # spark-submit may print its own warnings among the script's lines.
    assert re.search(r"^00100 +\d+ +\d+ deny", p.stdout, re.M)
    assert re.search(r"^65535 +\d+ +\d+ deny ip from any to any$", p.stdout, re.M)
    assert "1500 packets read" in p.stdout + p.stderr
    assert sorted(os.listdir("out")) == ["c0.pcap.parquet", "c1.pcap.parquet", "c2.pcap.parquet"]
