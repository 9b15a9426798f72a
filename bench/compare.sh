#!/usr/bin/env bash
# Peers in the same run, on the same trace and equivalent filters:
#
#   tcpdump -r TRACE -w OUT 'tcp dst port 80'             end-to-end, file to file
#   weir run one-rule.rules -r TRACE -w OUT               end-to-end, file to file
#   crates/weir-bench/bpf/harness.c: pcap_offline_filter per packet   in memory (libpcap's BPF)
#   weir bench one-rule.rules -r TRACE                    in memory (weir's engine)
#
# where one-rule.rules is `100 allow tcp from any to any 80` (default deny,
# --non-ip drop), the same packets as tcpdump's expression. Prints each
# figure, the medians of RUNS runs, and the ratios (not asserted).
#
#   bash bench/compare.sh [PACKETS] [RUNS]
#
# PACKETS defaults to 1,000,000 (`weir gen --seed 7`), RUNS to 5. Work files
# go to ${WORK:-/tmp/weir-compare}. Needs tcpdump, cc and libpcap-dev; exits
# 3 (after saying which) when one is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
packets="${1:-1000000}"
runs="${2:-5}"
work="${WORK:-/tmp/weir-compare}"
mkdir -p "$work"
missing=()
command -v tcpdump >/dev/null 2>&1 || missing+=(tcpdump)
command -v "${CC:-cc}" >/dev/null 2>&1 || missing+=(cc)
[ -e /usr/include/pcap/pcap.h ] || missing+=(libpcap-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "compare.sh: SKIPPED, missing: ${missing[*]} (apt-get install tcpdump gcc libpcap-dev)" >&2
  exit 3
fi
weir="${WEIR:-}"
if [ -z "$weir" ]; then
  cargo build --release -q -p weir
  weir=target/release/weir
fi
harness="$work/weir-bpf-harness"
"${CC:-cc}" -O2 -o "$harness" crates/weir-bench/bpf/harness.c -lpcap
trace="$work/trace-$packets.pcap"
[ -s "$trace" ] || "$weir" gen -n "$packets" --seed 7 -o "$trace"
rules="$work/one-rule.rules"
echo "100 allow tcp from any to any 80" > "$rules"
expr='tcp dst port 80'

. bench/quantile.sh
time_of() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN {printf "%.6f\n", e - s}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }

echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine: $(nproc) CPUs, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
echo "trace:   $trace ($packets packets, $(du -h "$trace" | cut -f1))"
echo "filter:  tcpdump/libpcap '$expr'  ==  weir '$(cat "$rules")' --non-ip drop"
: > "$work/tcpdump.t"; : > "$work/run.t"; : > "$work/bpf.ns"; : > "$work/bench.ns"
for i in $(seq "$runs"); do
  # Alternate, so every peer sees the same page cache and machine load.
  t=$(time_of tcpdump -r "$trace" -w "$work/tcpdump.pcap" "$expr"); echo "$t" >> "$work/tcpdump.t"
  w=$(time_of "$weir" run "$rules" -r "$trace" -w "$work/weir.pcap" -q --non-ip drop); echo "$w" >> "$work/run.t"
  b=$("$harness" "$trace" 200 "$expr" | awk '{print $4}'); echo "$b" >> "$work/bpf.ns"
  e=$("$weir" bench "$rules" -r "$trace" --non-ip drop --duration 0.2 --json \
      | sed -n 's/.*"ns_per_packet_mean":\([0-9.e+-]*\).*/\1/p'); echo "$e" >> "$work/bench.ns"
  printf 'run %d: tcpdump %.3f s, weir run %.3f s; pcap_offline_filter %.2f ns/pkt, weir bench %.2f ns/pkt\n' "$i" "$t" "$w" "$b" "$e"
done
T=$(median < "$work/tcpdump.t"); W=$(median < "$work/run.t")
B=$(median < "$work/bpf.ns"); E=$(median < "$work/bench.ns")
n_t=$(tcpdump -nr "$work/tcpdump.pcap" 2>/dev/null | wc -l); n_w=$(tcpdump -nr "$work/weir.pcap" 2>/dev/null | wc -l)
echo "packets written: tcpdump $n_t, weir run $n_w"
echo
printf '%-44s %12s\n' "median of $runs runs" "value"
printf '%-44s %10.3f s\n' "tcpdump -r -w (end-to-end)" "$T"
printf '%-44s %10.3f s\n' "weir run -r -w (end-to-end)" "$W"
printf '%-44s %9.2f ns\n' "pcap_offline_filter per packet (in memory)" "$B"
printf '%-44s %9.2f ns\n' "weir bench per packet (in memory)" "$E"
echo
echo "ratio end-to-end  tcpdump / weir run:             $(ratio "$T" "$W")x  (>1: weir faster)"
echo "ratio in memory   pcap_offline_filter / weir bench: $(ratio "$B" "$E")x  (>1: weir faster)"
