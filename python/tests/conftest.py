"""Shared fixtures: the `weir` binary the results are compared with (built by
the same cargo profile as the extension), the demo ruleset and generated
captures."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO_RULES = REPO / "crates" / "weir" / "rules" / "demo.rules"


def weir_binary():
    """$WEIR_BIN, else the newest of target/{ci,debug}/weir."""
    if os.environ.get("WEIR_BIN"):
        return os.environ["WEIR_BIN"]
    built = [REPO / "target" / p / "weir" for p in ("ci", "debug", "release")]
    built = [b for b in built if b.exists()]
    if not built:
        pytest.fail("no weir binary: build it (cargo build --profile ci) or set WEIR_BIN")
    return str(max(built, key=lambda b: b.stat().st_mtime))


WEIR = weir_binary()


def weir(*args, check=True):
    """Runs the CLI; returns the completed process (text)."""
    p = subprocess.run([WEIR, *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"weir {args} exited {p.returncode}: {p.stderr}")
    return p


def gen(path, n, seed):
    weir("gen", "-n", n, "--seed", seed, "-o", path)
    return path


@pytest.fixture(scope="session")
def trace(tmp_path_factory):
    """A generated capture with every kind of packet (IPv4/6, non-IP,
    malformed, fragments), more than one record batch long."""
    return gen(tmp_path_factory.mktemp("trace") / "t.pcap", 70_000, 21)
