#!/usr/bin/env bash
# `weir inline` on NFQUEUE against the kernel alone, in the same run, on
# the same traffic: three network namespaces (sender — router — receiver)
# made for the run and removed at exit, the router forwarding.
#
# 1. Verdicts per second: udpflood (crates/weir-live/examples) sends 18-byte
#    UDP datagrams from the sender for SECONDS; the router's forward hook
#      kernel-accept   a plain accept rule           (packets counted by the rule)
#      kernel-drop     a plain drop rule             (idem)
#      weir-allow      queue → weir, rule allows     (packets weir decided)
#      weir-deny       queue → weir, rule denies     (idem)
#    Each figure is packets / SECONDS; the median of RUNS runs is printed.
#    weir's count includes the ≤ 4096 packets still queued when the flood
#    stops (< 1% at these rates); the queue's kernel drops are printed.
# 2. Latency: ping RTT (PINGS echoes, 2 ms apart) through the router with a
#    plain accept rule and with the queue rule; median and p99. Request and
#    reply both cross the forward hook, so the difference is two queue trips.
#
#   bash bench/inline.sh [SECONDS] [RUNS] [PINGS]      (defaults 3 3 1000)
#
# Needs root, iproute2, iputils-ping and nft's queue expression or
# iptables' NFQUEUE target (this kernel has only the latter; the script
# takes whichever works). Addresses exist only in the namespaces it makes.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-3}"
runs="${2:-3}"
pings="${3:-1000}"
[ "$(id -u)" = 0 ] || { echo "inline.sh: needs root" >&2; exit 3; }
cargo build --release -q -p weir
cargo build --release -q -p weir-live --example udpflood
weir="$PWD/target/release/weir"
flood="$PWD/target/release/examples/udpflood"

tag="wib-$$"
S="$tag-s" R="$tag-r" D="$tag-d"
work=$(mktemp -d)
weir_pid=""
cleanup() {
  [ -n "$weir_pid" ] && kill "$weir_pid" 2>/dev/null && wait "$weir_pid" 2>/dev/null || true
  for ns in "$S" "$R" "$D"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for ns in "$S" "$R" "$D"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip -n "$R" link add r1 type veth peer name s0 netns "$S"
ip -n "$R" link add r2 type veth peer name d0 netns "$D"
ip -n "$S" addr add 10.201.1.2/24 dev s0
ip -n "$R" addr add 10.201.1.1/24 dev r1
ip -n "$R" addr add 10.201.2.1/24 dev r2
ip -n "$D" addr add 10.201.2.2/24 dev d0
for x in "$S s0" "$R r1" "$R r2" "$D d0"; do set -- $x; ip -n "$1" link set "$2" up; done
ip -n "$S" route add default via 10.201.1.1
ip -n "$D" route add default via 10.201.2.1
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
ip netns exec "$S" ping -c 1 -W 2 10.201.2.2 >/dev/null
# Nothing listens on the port: the receiver answers ICMP port unreachable,
# rate-limited; the forward hook sees those too (counted as they come).
dst=10.201.2.2:9

in_r() { ip netns exec "$R" "$@"; }

# steer MODE: the router's forward hook: accept, drop, or queue to 0.
steer() {
  in_r nft flush ruleset 2>/dev/null || true
  in_r iptables -F FORWARD 2>/dev/null || true
  case "$1" in
    accept) in_r iptables -A FORWARD -j ACCEPT ;;
    drop) in_r iptables -A FORWARD -p udp -j DROP ;;
    queue)
      if ! printf 'table inet weir {\n chain forward {\n  type filter hook forward priority 0;\n  queue num 0 bypass\n }\n}\n' |
        in_r nft -f - 2>/dev/null; then
        in_r iptables -A FORWARD -j NFQUEUE --queue-num 0 --queue-bypass
      fi ;;
  esac
}

# Packets the FORWARD rule counted (iptables) since the last steer.
rule_packets() { in_r iptables -L FORWARD -v -x -n | awk 'NR == 3 { print $1 }'; }

start_weir() { # RULES
  printf '%s\n' "$1" >"$work/rules.conf"
  ip netns exec "$R" "$weir" inline --queue 0 "$work/rules.conf" 2>"$work/weir.err" &
  weir_pid=$!
  for _ in $(seq 200); do grep -q 'inline on queue' "$work/weir.err" && return; sleep 0.05; done
  echo "weir did not start:" >&2; cat "$work/weir.err" >&2; exit 1
}
stop_weir() { # sets decided: packets weir decided (not in a $(…): wait needs this shell)
  kill -TERM "$weir_pid"; wait "$weir_pid" || true; weir_pid=""
  decided=$(awk '/packets read/ { print $1 }' "$work/weir.err")
}
queue_drops() { in_r awk '$1 == 0 { print $6 + $7 }' /proc/net/netfilter/nfnetlink_queue; }

. bench/quantile.sh
rate() { awk -v p="$1" -v s="$secs" 'BEGIN { printf "%.0f", p / s }'; }

echo "== verdicts per second: ${secs}s UDP flood, $runs runs each, medians"
declare -A results
for mode in kernel-accept kernel-drop weir-allow weir-deny; do
  vals=()
  for _ in $(seq "$runs"); do
    case "$mode" in
      kernel-accept) steer accept ;;
      kernel-drop) steer drop ;;
      weir-*)
        steer queue
        if [ "$mode" = weir-allow ]; then
          start_weir $'100 deny tcp from any to any\n200 allow udp from any to any'
        else
          start_weir $'100 deny tcp from any to any\n200 deny udp from any to any'
        fi ;;
    esac
    ip netns exec "$S" "$flood" "$dst" "$secs" >"$work/flood.out"
    case "$mode" in
      kernel-*) n=$(rule_packets) ;;
      weir-*) drops=$(queue_drops); stop_weir; n=$decided; echo "   ($mode run: $n decided, kernel queue drops $drops)" ;;
    esac
    vals+=("$(rate "$n")")
  done
  results[$mode]=$(printf '%s\n' "${vals[@]}" | median)
  printf '%-14s %10s packets/s   runs: %s   (flood: %s)\n' "$mode" "${results[$mode]}" "${vals[*]}" "$(cat "$work/flood.out")"
done
awk -v a="${results[weir-allow]}" -v b="${results[kernel-accept]}" -v c="${results[weir-deny]}" -v d="${results[kernel-drop]}" \
  'BEGIN { printf "ratio weir-allow / kernel-accept %.2f; weir-deny / kernel-drop %.2f\n", a / b, c / d }'

echo "== latency: ping RTT, $pings echoes 2 ms apart (request and reply both forwarded)"
rtts() { ip netns exec "$S" ping -c "$pings" -i 0.002 -W 1 10.201.2.2 | sed -n 's/.*time=\([0-9.]*\) ms/\1/p' | sort -n; }
pct() { quantile "$1" | awk '{ printf "%.0f", $1 * 1000 }'; }
steer accept
rtts >"$work/plain"
steer queue
start_weir '100 allow ip from any to any'
rtts >"$work/queued"
stop_weir
for f in plain queued; do
  printf '%-8s median %5s µs   p99 %5s µs   (%s replies)\n' "$f" \
    "$(pct 0.5 <"$work/$f")" "$(pct 0.99 <"$work/$f")" "$(wc -l <"$work/$f")"
done
awk -v a="$(pct 0.5 <"$work/queued")" -v b="$(pct 0.5 <"$work/plain")" \
  -v c="$(pct 0.99 <"$work/queued")" -v d="$(pct 0.99 <"$work/plain")" \
  'BEGIN { printf "added by the queue: median %d µs, p99 %d µs\n", a - b, c - d }'
