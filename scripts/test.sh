#!/usr/bin/env bash
# The test command: installs what the tests need, checks formatting and
# lints, then runs every test.
#
#   bash scripts/test.sh
#
# Needs root (or sudo) the first time, for Debian's tcpdump, tshark, strace
# and libpcap-dev: the differential test compares weir with tcpdump/libpcap on
# the same captures, the readers test has tcpdump and Wireshark (tshark,
# capinfos, editcap) read weir's outputs, the syscall test counts system
# calls under strace, and Debian's `prometheus` (promtool and the server)
# checks and scrapes the metrics endpoint; Java 17 runs the Spark test and
# python3-venv the Python tests' virtualenv.
# FUZZ_SECONDS (default 10) sets how long each fuzz target runs at the end:
# a smoke run that keeps the whole command under CI's 30 minutes on two
# slow cores (29 min with 20 s a target, 2026-12-02); fuzz/README.md has
# longer campaigns.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v tcpdump >/dev/null 2>&1 || need+=(tcpdump)
command -v tshark >/dev/null 2>&1 || need+=(tshark)
command -v strace >/dev/null 2>&1 || need+=(strace)
[ -e /usr/include/pcap/pcap.h ] || need+=(libpcap-dev)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v nft >/dev/null 2>&1 || need+=(nftables)
command -v ping >/dev/null 2>&1 || need+=(iputils-ping)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  echo "scripts/test.sh: installing ${need[*]}" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# The gates: formatting, then clippy with warnings as errors. Clippy uses the
# tests' profile so both share the dependencies' build where they can.
cargo fmt --all --check
cargo clippy --workspace --all-targets --profile ci -- -D warnings

# Optimised (the property, corpus and differential tests do real work),
# with overflow checks and debug assertions on: see [profile.ci].
cargo test --workspace --profile ci --no-fail-fast

# The Python package (python/) and its tests against the CLI, Spark included.
bash scripts/test-python.sh

if [ -x scripts/fuzz-smoke.sh ] && [ "${SKIP_FUZZ:-0}" != 1 ]; then
  FUZZ_SECONDS="${FUZZ_SECONDS:-10}" bash scripts/fuzz-smoke.sh
fi
