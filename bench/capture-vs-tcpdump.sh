#!/usr/bin/env bash
# Live capture, weir against tcpdump, on the same veth flood.
#
#   bash bench/capture-vs-tcpdump.sh [SECONDS] [ROUNDS] [RATES]
#
# Two network namespaces joined by a veth pair (made here, removed on
# exit). A flooder (crates/weir-capture/examples/flood.rs) in namespace B
# sends 18-byte UDP datagrams from 256 ports to 10.204.0.1 in namespace A,
# for SECONDS (default 5) at each rate in RATES (packets/s, default
# "100000 200000 0"; 0 = as fast as it can). In A, one capturer at a time
# runs on the veth, alternating round by round:
#   weir:    weir capture -i IF rules/realistic-100.rules -w /dev/null --json
#   tcpdump: tcpdump -i IF -w /dev/null          (no filter: it keeps all)
# Both use a 2 MiB ring (tcpdump's default; weir's -B default) and
# TPACKET_V3. Each run prints the flooder's packets sent, the capturer's
# "received by filter" and "dropped by kernel", and its CPU seconds
# (user+sys from wait4, bench/cputime.py) and that per packet received.
# Needs root, iproute2, tcpdump, python3. The machine has 2 cores: the
# flooder takes one, the capturer the other. PIN=N puts flooder and
# capturer on core N together, so the capturer gets only what the flooder
# leaves: then the drops show how much CPU each capturer needs per packet.
# BUFFER_KIB=N gives both rings N KiB (-B) instead of the 2 MiB default.
# PEER="BINARY..." runs other weir builds (other commits') the same way in
# every round, after this tree's (tools peer, or peer1, peer2, ... for
# several). WEIR_ARGS adds flags to every weir capturer (e.g. --linear);
# NO_TCPDUMP=1 leaves tcpdump out. The end prints each rate's and tool's
# medians over the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-5}"
rounds="${2:-3}"
rates="${3:-100000 200000 0}"
pin=()
[ -n "${PIN:-}" ] && pin=(taskset -c "$PIN")
buf=()
[ -n "${BUFFER_KIB:-}" ] && buf=(-B "$BUFFER_KIB")
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces, packet sockets)" >&2; exit 2; }
for t in ip tcpdump python3; do
  command -v "$t" >/dev/null || { echo "$t is needed" >&2; exit 2; }
done
cargo build --release -q -p weir -p weir-capture --example flood
weir=$PWD/target/release/weir
flood=$PWD/target/release/examples/flood
rules=$PWD/rules/realistic-100.rules
cputime=$PWD/bench/cputime.py
work=$(mktemp -d)
a=weirbench-$$-a b=weirbench-$$-b ifa=wbench$$a ifb=wbench$$b
ifa=${ifa:0:15} ifb=${ifb:0:15}
cleanup() { ip netns del "$a" 2>/dev/null || true; ip netns del "$b" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
ip netns add "$a"; ip netns add "$b"
for n in "$a" "$b"; do
  ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip link add "$ifa" netns "$a" type veth peer name "$ifb" netns "$b"
ip -n "$a" addr add 10.204.0.1/24 dev "$ifa"
ip -n "$b" addr add 10.204.0.2/24 dev "$ifb"
ip -n "$a" link set "$ifa" up; ip -n "$b" link set "$ifb" up
# A static neighbour: no ARP in the flood; and no ICMP errors back.
mac=$(ip -n "$a" -o link show "$ifa" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
ip -n "$b" neigh add 10.204.0.1 lladdr "$mac" dev "$ifb"
# Port unreachables back from A: at most a few (the per-host token bucket).
ip netns exec "$a" sysctl -qw net.ipv4.icmp_ratelimit=100000

read -ra peers <<< "${PEER:-}"
read -ra weir_args <<< "${WEIR_ARGS:-}"
tools=(weir)
if [ "${#peers[@]}" = 1 ]; then tools+=(peer); fi
if [ "${#peers[@]}" -gt 1 ]; then for i in "${!peers[@]}"; do tools+=("peer$((i + 1))"); done; fi
[ -n "${NO_TCPDUMP:-}" ] || tools+=(tcpdump)

run_one() { # tool rate -> "sent received dropped cpu"
  local tool=$1 rate=$2 out=$work/out err=$work/err tm=$work/time pid sent
  if [ "$tool" != tcpdump ]; then
    local bin=$weir n=${tool#peer}
    [ "$tool" = peer ] && bin=${peers[0]}
    [ "$tool" != weir ] && [ -n "$n" ] && bin=${peers[$((n - 1))]}
    ip netns exec "$a" "${pin[@]}" python3 "$cputime" "$tm" \
      "$bin" capture -i "$ifa" "$rules" -w /dev/null --json "${weir_args[@]}" "${buf[@]}" >"$out" 2>"$err" &
  else
    ip netns exec "$a" "${pin[@]}" python3 "$cputime" "$tm" \
      tcpdump -i "$ifa" -w /dev/null "${buf[@]}" >"$out" 2>"$err" &
  fi
  pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$err" 2>/dev/null && break; sleep 0.05; done
  sent=$("${pin[@]}" "$flood" "/run/netns/$b" 10.204.0.2 10.204.0.1:9 "$seconds" "$rate" |
         sed -n 's/.*"sent":\([0-9]*\).*/\1/p')
  sleep 1.2   # tcpdump's ring hands over a block after 1 s at the latest
  # cputime.py ignores SIGINT: signal the capturer, its child, by pid.
  kill -INT $(pgrep -P "$pid") 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  # Both print tcpdump's closing lines.
  local recv drop
  recv=$(sed -n 's/^\([0-9]*\) packets received by filter$/\1/p' "$err")
  drop=$(sed -n 's/^\([0-9]*\) packets dropped by kernel$/\1/p' "$err")
  local cpu; cpu=$(awk '{printf "%.4f", $1}' "$tm")
  echo "$sent ${recv:-?} ${drop:-?} $cpu"
}

echo "flood: $seconds s per run${PIN:+, flooder and capturer both on core $PIN}${BUFFER_KIB:+, -B $BUFFER_KIB for both} of 18-byte UDP datagrams (60-byte frames), 256 flows, veth $ifb -> $ifa"
echo "weir:    weir capture -i IF rules/realistic-100.rules -w /dev/null --json ${WEIR_ARGS:-}"
for t in "${tools[@]}"; do
  case $t in peer) echo "peer:    ${peers[0]}" ;; peer*) echo "$t:   ${peers[$((${t#peer} - 1))]}" ;; esac
done
[ -n "${NO_TCPDUMP:-}" ] || echo "tcpdump: tcpdump -i IF -w /dev/null"
printf '%-8s %-7s %5s %10s %10s %10s %8s %7s %9s\n' rate tool round sent received dropped drop% cpu_s ns/packet
for rate in $rates; do
  for r in $(seq "$rounds"); do
    for tool in "${tools[@]}"; do
      read -r sent recv drop cpu < <(run_one "$tool" "$rate")
      pct=$(awk -v d="$drop" -v r="$recv" 'BEGIN { if (r > 0) printf "%.2f", 100 * d / r; else print "?" }')
      per=$(awk -v c="$cpu" -v r="$recv" -v d="$drop" 'BEGIN { if (r - d > 0) printf "%.0f", 1e9 * c / (r - d); else print "?" }')
      printf '%-8s %-7s %5s %10s %10s %10s %8s %7s %9s\n' "${rate/#0/max}" "$tool" "$r" "$sent" "$recv" "$drop" "$pct" "$cpu" "$per"
      echo "${rate/#0/max} $tool $pct $per" >> "$work/rows"
    done
  done
done
. bench/quantile.sh
echo "medians over $rounds rounds:"
printf '%-8s %-7s %8s %9s\n' rate tool drop% ns/packet
for rate in $rates; do
  for tool in "${tools[@]}"; do
    sel() { awk -v r="${rate/#0/max}" -v t="$tool" -v c="$1" '$1 == r && $2 == t && $c != "?" { print $c }' "$work/rows"; }
    printf '%-8s %-7s %8s %9s\n' "${rate/#0/max}" "$tool" "$(sel 3 | median)" "$(sel 4 | median)"
  done
done
