#!/usr/bin/env bash
# File-to-file replay, weir against tcpdump, on the same capture with an
# equivalent one-rule filter. Prints each run's wall time, the medians and
# the ratio.
#
#   bash bench/replay-vs-tcpdump.sh [PACKETS] [RUNS]
#
# PACKETS defaults to 3,100,000 (about 1 GB from `weir gen`), RUNS to 5.
# Work files go to ${WORK:-/tmp/weir-bench}; they are large. PEER=BINARY
# also times another weir build (another branch's) in every run, between
# the two, and prints its median and its ratio to this tree's weir.
set -euo pipefail
cd "$(dirname "$0")/.."
packets="${1:-3100000}"
runs="${2:-5}"
work="${WORK:-/tmp/weir-bench}"
mkdir -p "$work"
command -v tcpdump >/dev/null || { echo "tcpdump is needed (apt-get install tcpdump)" >&2; exit 2; }
cargo build --release -q -p weir
weir=target/release/weir
trace="$work/trace-$packets.pcap"
[ -s "$trace" ] || "$weir" gen -n "$packets" --seed 7 -o "$trace"
echo "100 allow tcp from any to any 80" > "$work/one-rule.rules"
expr='tcp dst port 80'

. bench/quantile.sh
time_of() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN {print e - s}'; }

echo "capture: $trace ($(du -h "$trace" | cut -f1), $packets packets)"
echo "weir:    $weir run one-rule.rules -r TRACE -w OUT -q --non-ip drop"
echo "tcpdump: tcpdump -r TRACE -w OUT '$expr'"
: > "$work/weir.times"; : > "$work/tcpdump.times"; : > "$work/peer.times"
for i in $(seq "$runs"); do
  # Alternate, so all see the same page cache and machine load.
  t=$(time_of "$weir" run "$work/one-rule.rules" -r "$trace" -w "$work/weir.pcap" -q --non-ip drop)
  echo "$t" >> "$work/weir.times"
  peer=""
  if [ -n "${PEER:-}" ]; then
    p=$(time_of "$PEER" run "$work/one-rule.rules" -r "$trace" -w "$work/peer.pcap" -q --non-ip drop)
    echo "$p" >> "$work/peer.times"
    peer=$(printf ', peer %.3f s' "$p")
  fi
  u=$(time_of tcpdump -r "$trace" -w "$work/tcpdump.pcap" "$expr")
  echo "$u" >> "$work/tcpdump.times"
  printf 'run %d: weir %.3f s%s, tcpdump %.3f s\n' "$i" "$t" "$peer" "$u"
done
w=$(median < "$work/weir.times"); t=$(median < "$work/tcpdump.times")
printf 'median: weir %.3f s, tcpdump %.3f s, tcpdump/weir = %.2fx\n' "$w" "$t" "$(awk -v t="$t" -v w="$w" 'BEGIN {print t / w}')"
if [ -n "${PEER:-}" ]; then
  p=$(median < "$work/peer.times")
  printf 'median: peer %.3f s (%s), tcpdump/peer = %.2fx, peer/weir = %.3f\n' "$p" "$PEER" \
    "$(awk -v t="$t" -v p="$p" 'BEGIN {print t / p}')" "$(awk -v p="$p" -v w="$w" 'BEGIN {print p / w}')"
fi
echo "packets written: weir $(tcpdump -r "$work/weir.pcap" 2>/dev/null | wc -l),${PEER:+ peer $(tcpdump -r "$work/peer.pcap" 2>/dev/null | wc -l),} tcpdump $(tcpdump -r "$work/tcpdump.pcap" 2>/dev/null | wc -l)"
