#!/usr/bin/env bash
# Does the metrics server slow the packet path while clients attack it?
# Verdicts per second of a packet thread that decides a generated trace
# with rules/realistic-100.rules and publishes a metrics snapshot every
# 100 ms between batches (as `weir inline` does), with the server beside
# it and one scrape every 100 ms, in three phases of SECONDS, rotating over
# ROUNDS rounds: quiet; an attack on the server (100 clients that sent half
# a request and wait, 10 that send garbage as fast as they can); and the
# same attack on a sink that is not weir's server (the control: what the
# attack's traffic alone costs the machine). Per phase: verdicts/s, the
# packet thread's share of CPU time and its verdicts per CPU-second, and
# scrape latency; then medians and ratios.
# See crates/weir-live/examples/metrics_hostile.rs.
#
# On 2 cores the attackers take CPU time from everything, the packet thread
# included: compare "attack weir" with "attack a sink", and look at the
# verdicts per CPU-second. PIN=1 puts the packet thread on CPU 0 and the
# rest (server, clients, scraper) on CPU 1; on a machine shared with other
# work the scheduler then moves that work onto CPU 0 during the attack, so
# pin only on a machine of your own.
#
#   bash bench/metrics-hostile.sh [SECONDS] [ROUNDS]      (defaults 3 5)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-3}"
rounds="${2:-5}"
cargo build --release -q -p weir-live --example metrics_hostile
pin=()
[ "${PIN:-0}" = 1 ] && pin=(--pin)
target/release/examples/metrics_hostile rules/realistic-100.rules "$secs" "$rounds" "${pin[@]}"
