#!/usr/bin/env bash
# Ruleset analysis at scale: `weir lint` and `weir diff` on `weir gen-rules`
# sets (ClassBench-like, imported with `weir import classbench`), with
# `weir check` of the same file as the peer in the same run (the cost of
# reading and compiling it, which the analysis also pays).
#
#   bash bench/analysis.sh [RUNS]
#
# Sets: acl 1,000 and 10,000 rules (seed 1); fw and ipc 10,000 rules.
# diff: the acl 10,000 set against itself with every rule numbered
# 50 mod 100 turned from allow to deny (1% of the rules).
# SETS="acl-1000 fw-10000" picks sets (default: all four).
#
# Prints the median of RUNS runs (default 3) of wall seconds, user
# seconds and maximum resident set size (GNU time), and the ratio of the
# analysis's wall time to check's. Work files go to
# ${WORK:-/tmp/weir-analysis-bench}; WEIR=path picks a binary (default:
# cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/quantile.sh
runs="${1:-3}"
work="${WORK:-/tmp/weir-analysis-bench}"
sets="${SETS:-acl-1000 acl-10000 fw-10000 ipc-10000}"
mkdir -p "$work"
weir="${WEIR:-}"
if [ -z "$weir" ]; then
  cargo build --release -q -p weir
  weir=target/release/weir
fi
weir="$(realpath "$weir")"

rules() { # like n -> path
  local f="$work/$1-$2.rules"
  if [ ! -s "$f" ]; then
    "$weir" gen-rules --like "$1" -n "$2" -o "$work/$1-$2.txt"
    "$weir" import classbench "$work/$1-$2.txt" >"$f"
  fi
  echo "$f"
}

# measure LABEL COMMAND...: RUNS runs; exit 1 (findings) counts as success.
measure() {
  local label="$1" out="$work/times"
  shift
  : >"$out"
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %U %M" -o "$work/one" "$@" >/dev/null 2>"$work/err" || [ $? -eq 1 ] ||
      { cat "$work/err" >&2; exit 2; }
    tail -n 1 "$work/one" >>"$out"
  done
  local wall user rss
  wall=$(cut -d' ' -f1 "$out" | median)
  user=$(cut -d' ' -f2 "$out" | median)
  rss=$(cut -d' ' -f3 "$out" | median)
  printf '%-28s %8s s wall %8s s user %8s MiB\n' "$label" "$wall" "$user" "$((rss / 1024))"
  last_wall="$wall"
}

for set in $sets; do
  like="${set%-*}" n="${set#*-}"
  f=$(rules "$like" "$n")
  measure "check $set" "$weir" check "$f"
  peer="$last_wall"
  measure "lint $set" "$weir" lint "$f"
  echo "  lint/check: $(awk -v a="$last_wall" -v b="$peer" 'BEGIN { printf "%.1f", a / (b > 0 ? b : 0.01) }')x"
done

f=$(rules acl 10000)
g="$work/acl-10000-1pct.rules"
awk '!/^#/ && $1 % 100 == 50 { $2 = "deny" } 1' "$f" >"$g"
measure "check acl-10000 (both)" sh -c "'$weir' check '$f' && '$weir' check '$g'"
peer="$last_wall"
measure "diff acl-10000 vs 1% changed" "$weir" diff "$f" "$g"
echo "  diff/check: $(awk -v a="$last_wall" -v b="$peer" 'BEGIN { printf "%.1f", a / (b > 0 ? b : 0.01) }')x"
