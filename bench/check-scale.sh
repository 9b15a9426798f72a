#!/usr/bin/env bash
# `weir check` on large and hostile rule files: the time must follow the
# file's size. Each shape is checked at full size and, as its peer in the
# same run, at a quarter of it; a linear check takes about 4 times as long
# for the full file (a quadratic one 16 times).
#
#   commas    one line of 1 MiB of commas                  (peer: 256 KiB)
#   errors    200,000 lines, each an error (port 99999)    (peer: 50,000)
#   autonum   200,000 rules without numbers: ipfw's automatic numbers reach
#             65500 after 655 rules, and every later rule shares it
#   valid     200,000 numbered rules, each its own /24 and port
#   script    100,000 numbered rules in 30 sets, then 100,000 housekeeping
#             commands (`delete N`, `set swap`, `set move`, `set move rule`)
#
#   bash bench/check-scale.sh [RUNS]
#
# SHAPES="errors script" picks shapes (default: all).
#
# Prints the median of RUNS runs (default 5) per file and the ratio of the
# two sizes (not asserted). Work files go to ${WORK:-/tmp/weir-check-scale};
# WEIR=path picks a binary (default: cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
work="${WORK:-/tmp/weir-check-scale}"
mkdir -p "$work"
weir="${WEIR:-}"
if [ -z "$weir" ]; then
  cargo build --release -q -p weir
  weir=target/release/weir
fi

# shape N FILE: writes the shape with N lines (or N bytes for commas).
shape() {
  case "$1" in
    commas)  awk -v n="$2" 'BEGIN { s = ","; while (length(s) < n) s = s s; print substr(s, 1, n) }' ;;
    errors)  awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) print "deny tcp from any to any 99999" }' ;;
    autonum) awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "allow tcp from 10.%d.%d.0/24 to any 80\n", int(i / 256) % 256, i % 256 }' ;;
    script)  awk -v n="$2" 'BEGIN { h = n / 2
               for (i = 0; i < h; i++) printf "%d set %d allow tcp from 10.%d.%d.0/24 to any\n", i % 65534 + 1, i % 30, int(i / 256) % 256, i % 256
               for (i = 0; i < h; i++) { k = i % 4
                 if (k == 0) printf "delete %d\n", (i * 7) % 65534 + 1
                 else if (k == 1) printf "set swap %d %d\n", i % 30, (i + 1) % 30
                 else if (k == 2) printf "set move %d to %d\n", i % 30, (i + 3) % 30
                 else printf "set move rule %d to %d\n", (i * 11) % 65534 + 1, i % 30 } }' ;;
    valid)   awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%d allow tcp from 10.%d.%d.0/24 to any %d\n", i % 65534 + 1, int(i / 256) % 256, i % 256, i % 60000 + 1 }' ;;
  esac
}

. bench/quantile.sh
time_of() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN {printf "%.3f\n", e - s}'; }

echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary:  $weir"
printf '%-8s %12s %10s %12s %10s %7s\n' shape "full size" "median s" "peer size" "median s" ratio
for s in ${SHAPES:-commas errors autonum valid script}; do
  if [ "$s" = commas ]; then full=$((1 << 20)); unit=bytes; else full=200000; unit=lines; fi
  quarter=$((full / 4))
  shape "$s" "$full" > "$work/$s-full.rules"
  shape "$s" "$quarter" > "$work/$s-quarter.rules"
  : > "$work/full.t"; : > "$work/quarter.t"
  for _ in $(seq "$runs"); do
    # Alternate, so both sizes see the same machine load.
    time_of "$weir" check "$work/$s-full.rules" >> "$work/full.t"
    time_of "$weir" check "$work/$s-quarter.rules" >> "$work/quarter.t"
  done
  f=$(median < "$work/full.t"); q=$(median < "$work/quarter.t")
  printf '%-8s %12s %10s %12s %10s %7s\n' "$s" "$full $unit" "$f" "$quarter" "$q" \
    "$(awk -v a="$f" -v b="$q" 'BEGIN {if (b > 0) printf "%.1f", a / b; else print "n/a"}')"
done
