#!/usr/bin/env bash
# weir against DPDK's rte_acl on the same ClassBench filter sets and traces:
#
#   weir gen-rules --like KIND -n SIZE --seed 1 --trace T --trace-n HEADERS
#   weir classbench RULES T --json              (classifier; and --linear up to 10k)
#   dpdk-test-acl --no-huge --no-pci -l 0 -- --rulesf=RULES --tracef=T --alg=ALG
#
# for KIND in acl fw ipc, each SIZE, and every --alg this CPU runs (scalar,
# sse, avx2, avx512x16, avx512x32). Both sides decide one header at a time
# from memory, first match by line order (dpdk-test-acl gives rule N the
# priority MAX-N), ports compared for every protocol. Before timing, every
# header's answer from every alg must equal weir's (dpdk prints 0-based
# indices, 4294967295 for none; weir 1-based, 0 for none): a mismatch stops
# the script with exit 1. Each timed run is 20 passes over the trace on
# both sides, and its figure their mean (dpdk-test-acl's pkt/sec over
# --iter=20; weir's mean_ns_per_packet over --iter 20). dpdk-test-acl's
# first pass is timed, its caches as the build left them; weir's first
# pass, which collects the answers, is not. Prints ns/packet (medians of
# RUNS runs) and the ratios dpdk/weir (above 1: weir is faster), then
# every run's ns/packet.
#
#   bash bench/compare-acl.sh [SIZES] [HEADERS] [RUNS]
#
# SIZES defaults to "1000 10000" (add 100000 for the big sets), HEADERS to
# 100000, RUNS to 3. Work files go to ${WORK:-/tmp/weir-compare-acl}.
# WEIR_ARGS="--simd avx2" passes flags to every timed `weir classbench`.
# ALGS="scalar avx512x32" limits the dpdk algs (each 100k-filter build
# takes dpdk-test-acl about a minute and 5 GB).
# Installs Debian's dpdk-dev (it ships dpdk-test-acl) when missing; exits 3
# if it cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes="${1:-1000 10000}"
headers="${2:-100000}"
runs="${3:-3}"
work="${WORK:-/tmp/weir-compare-acl}"
mkdir -p "$work"

if ! command -v dpdk-test-acl >/dev/null 2>&1; then
  echo "compare-acl.sh: installing dpdk-dev (for dpdk-test-acl)" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq dpdk-dev >/dev/null; }; then
    echo "compare-acl.sh: SKIPPED, could not install dpdk-dev" >&2
    exit 3
  fi
fi
weir="${WEIR:-}"
if [ -z "$weir" ]; then
  cargo build --release -q -p weir
  weir=target/release/weir
fi

# The algs this CPU runs. AVX-512 needs EAL's SIMD width raised to 512.
flags=$(grep -m1 '^flags' /proc/cpuinfo)
algs=(scalar)
[[ $flags == *" sse4_1 "* ]] && algs+=(sse)
[[ $flags == *" avx2 "* ]] && algs+=(avx2)
[[ $flags == *" avx512f "* && $flags == *" avx512bw "* && $flags == *" avx512dq "* ]] && algs+=(avx512x16 avx512x32)
if [ -n "${ALGS:-}" ]; then
  read -r -a algs <<< "$ALGS"
fi
# Without hugepages EAL's memory defaults to 64 MB, too little to build 10k
# rules (rte_acl_build fails with ENOMEM); DPDK_MEM raises it.
# Its own run-time file prefix: another DPDK process may hold the default lock.
# Both sides run on CPU 0: EAL pins its lcore there (-l 0), and the timed
# weir runs are pinned there too (taskset), so neither side's runs move
# between CPUs and lose their caches where the other's do not.
pin=()
command -v taskset >/dev/null 2>&1 && pin=(taskset -c 0)
eal=(--no-huge --no-pci -l 0 -m "${DPDK_MEM:-2048}" --log-level=error --force-max-simd-bitwidth=512
     --file-prefix="weir-compare-$$")

. bench/quantile.sh
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }
json_field() { sed -n "s/.*\"$1\": *\([0-9.e+-]*\).*/\1/p" | head -1; }
# One set's runs of one side, in the order run, to the nearest ns.
runs_of() { awk '{printf "%s%.0f", (NR > 1 ? " " : ""), $1} END {print ""}' "$1"; }

# dpdk-test-acl's answers, as weir writes them (1-based, 0 for none).
dpdk_answers() { # rules trace n alg
  dpdk-test-acl "${eal[@]}" -- --rulesf="$1" --tracef="$2" --rulenum="$3" \
      --tracenum="$headers" --iter=1 --verbose=2 --alg="$4" 2>/dev/null |
    awk '/^ipv4_5tuple:/ {r = $NF; print (r == 4294967295) ? 0 : r + 1}'
}
# ns per packet from one timed dpdk-test-acl run (its pkt/sec figure).
dpdk_ns() { # rules trace n alg
  dpdk-test-acl "${eal[@]}" -- --rulesf="$1" --tracef="$2" --rulenum="$3" \
      --tracenum="$headers" --iter=20 --verbose=0 --alg="$4" 2>/dev/null |
    sed -n 's/.*, \([0-9.]*\) pkt\/sec.*/\1/p' | awk '{printf "%.2f\n", 1e9 / $1}'
}

echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine: $(nproc) CPUs, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
echo "pinned:  CPU 0 (dpdk-test-acl -l 0$([ ${#pin[@]} -gt 0 ] && echo ', weir taskset -c 0' || echo '; weir unpinned: no taskset'))"
echo "weir:    $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo '+dirty'), $("$weir" --version)${WEIR_ARGS:+, $WEIR_ARGS}"
echo "dpdk:    $(dpkg-query -W -f='${Version}' dpdk-dev 2>/dev/null || echo '?'), algs: ${algs[*]}"
echo "trace:   $headers headers per set (weir gen-rules --seed 1); medians of $runs runs of 20 passes' means; ns/packet"
echo

header="set          build-ms   MiB  weir  linear"
for a in "${algs[@]}"; do header+=$(printf ' %9s' "$a"); done
for a in "${algs[@]}"; do header+=$(printf ' %9s' "$a/weir"); done
echo "$header"

run_lines=()
for n in $sizes; do
  for kind in acl fw ipc; do
    rules="$work/$kind-$n.rules"
    trace="$work/$kind-$n.trace"
    "$weir" gen-rules --like "$kind" -n "$n" --seed 1 -o "$rules" --trace "$trace" --trace-n "$headers"
    "$weir" classbench "$rules" "$trace" --iter 1 --verdicts "$work/weir.answers" > /dev/null
    for a in "${algs[@]}"; do
      dpdk_answers "$rules" "$trace" "$n" "$a" > "$work/dpdk.answers" || true
      if [ "$(wc -l < "$work/dpdk.answers")" != "$headers" ]; then
        echo "compare-acl.sh: dpdk-test-acl --alg=$a failed on $kind-$n (more memory: DPDK_MEM=MB)" >&2
        exit 1
      fi
      if ! cmp -s "$work/weir.answers" "$work/dpdk.answers"; then
        echo "compare-acl.sh: MISMATCH on $kind-$n with --alg=$a:" >&2
        diff <(nl "$work/weir.answers") <(nl "$work/dpdk.answers") | head -5 >&2
        exit 1
      fi
    done
    : > "$work/weir.ns"; : > "$work/linear.ns"; : > "$work/build.ms"; : > "$work/bytes"
    for a in "${algs[@]}"; do : > "$work/$a.ns"; done
    for _ in $(seq "$runs"); do
      # Alternate peers within a run so each sees the same machine load.
      # shellcheck disable=SC2086 # WEIR_ARGS is a list of flags
      out=$("${pin[@]}" "$weir" classbench "$rules" "$trace" --iter 20 --json ${WEIR_ARGS:-})
      echo "$out" | json_field mean_ns_per_packet >> "$work/weir.ns"
      echo "$out" | json_field build_ms >> "$work/build.ms"
      echo "$out" | json_field classifier_bytes >> "$work/bytes"
      if [ "$n" -le 10000 ]; then
        "${pin[@]}" "$weir" classbench "$rules" "$trace" --iter 1 --linear --json | json_field ns_per_packet >> "$work/linear.ns"
      fi
      for a in "${algs[@]}"; do dpdk_ns "$rules" "$trace" "$n" "$a" >> "$work/$a.ns"; done
    done
    w=$(median < "$work/weir.ns")
    l=$(median < "$work/linear.ns"); [ -n "$l" ] && l=$(printf '%.0f' "$l") || l="-"
    mib=$(median < "$work/bytes" | awk '{printf "%.1f", $1 / 1048576}')
    line=$(printf '%-12s %8.1f %5s %5.0f %7s' "$kind-$n" "$(median < "$work/build.ms")" "$mib" "$w" "$l")
    for a in "${algs[@]}"; do line+=$(printf ' %9.1f' "$(median < "$work/$a.ns")"); done
    for a in "${algs[@]}"; do line+=$(printf ' %9s' "$(ratio "$(median < "$work/$a.ns")" "$w")"); done
    echo "$line"
    run_lines+=("$(printf '%-12s weir: %s' "$kind-$n" "$(runs_of "$work/weir.ns")")")
    for a in "${algs[@]}"; do run_lines+=("$(printf '%-12s %s: %s' "" "$a" "$(runs_of "$work/$a.ns")")"); done
  done
done
# Every run behind the medians: on a shared host the spread says how
# far one run's ratio can be trusted.
echo
echo "runs (ns/packet, in the order run):"
printf '%s\n' "${run_lines[@]}"
echo
echo "answers: every header equal between weir and dpdk-test-acl for every alg above"
