#!/usr/bin/env bash
# The Python tests, after the Rust ones (scripts/test.sh calls this). The
# extension is built by the root workspace (python/ is a member) as
# target/ci/lib_weir.so, beside the CLI the tests compare with,
# target/ci/weir; no maturin, no second build of the engine crates.
# This script puts that library beside python/weir/*.py as a package under
# target/, makes it importable from a virtualenv under target/ holding only
# what the tests import (pyarrow, duckdb, pandas, pytest, pyspark), then runs
# pytest. pyspark needs Java 17. Users install with `pip install ./python`
# (maturin); that path is not exercised here.
#
#   bash scripts/test-python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# Nothing in the clone may change: no bytecode, no pytest cache.
export PYTHONDONTWRITEBYTECODE=1

# `cargo test` skips python/ (it has no tests), so its cdylib is built
# here, by the workspace's own build with the tests' profile and the
# tests' targets: with them the dependencies resolve to the features
# `cargo test` gave them (dev-dependencies add some), so the engine
# crates, arrow and clap come from the tests' build and only the
# extension's own code is new. A plain `cargo build` resolved other
# features and built the whole workspace a second time (about five
# minutes of CI on two cores).
cargo build --quiet --workspace --profile ci --lib --bins --tests --examples
out="${CARGO_TARGET_DIR:-target}/ci"
lib="$out/lib_weir.so"

venv=target/python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --prefer-binary \
  pyarrow duckdb pandas pytest pyspark

# The package as maturin lays it out: weir/__init__.py and the extension
# as weir/_weir.abi3.so (one file for every Python from 3.9 on).
pkg=target/python-pkg
rm -rf "$pkg"
mkdir -p "$pkg/weir"
cp python/weir/*.py "$pkg/weir/"
cp "$lib" "$pkg/weir/_weir.abi3.so"
# Importable from the venv (Spark's workers use the same interpreter), and
# no older wheel installed there to shadow it.
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -rf "$site"/weir "$site"/weir-*.dist-info
echo "$PWD/$pkg" >"$site/weir-tests.pth"

WEIR_BIN="$(realpath "$out/weir")" "$venv/bin/pytest" -p no:cacheprovider -q python/tests
