#!/usr/bin/env bash
# The Python tests, after the Rust ones (scripts/test.sh calls this):
# a virtualenv under target/ with what the tests need (maturin, pyarrow,
# duckdb, pandas, pytest, pyspark), the `weir` package built by maturin
# with the Rust tests' profile (ci) into the same target/ so the engine
# crates' artifacts are shared, then pytest. pyspark needs Java 17.
#
#   bash scripts/test-python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="$PWD/target"
# Nothing in the clone may change: no bytecode, no pytest cache.
export PYTHONDONTWRITEBYTECODE=1

venv=target/python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check \
  'maturin>=1.5,<2' pyarrow duckdb pandas pytest pyspark

# The extension crate is a workspace of its own: its gates, here.
cargo fmt --manifest-path python/Cargo.toml --check
cargo clippy --manifest-path python/Cargo.toml --all-targets --profile ci -- -D warnings

rm -rf target/python-wheels
(cd python && "../$venv/bin/maturin" build --quiet --profile ci -o ../target/python-wheels)
"$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps target/python-wheels/weir-*.whl

# The CLI the tests compare with: the one `cargo test --workspace --profile
# ci` built (the same command, so nothing is built again after it).
cargo test --quiet --workspace --profile ci --no-run
WEIR_BIN="$PWD/target/ci/weir" "$venv/bin/pytest" -p no:cacheprovider -q python/tests
