#!/usr/bin/env bash
# Fuzz smoke test: build seed corpora, then run every cargo-fuzz target for a
# short while. Exits non-zero if any target crashes (panic, sanitizer error,
# timeout or out-of-memory), after running all of them.
#
#   scripts/fuzz-smoke.sh                 # every target, 30 s each
#   FUZZ_SECONDS=300 scripts/fuzz-smoke.sh decode
#
# Environment:
#   FUZZ_SECONDS   seconds per target (default 30)
#   WEIR_CAPTURES  directory of .pcap/.pcapng seeds
#                  (default corpus/tcpdump-tests)
#   FUZZ_FRAMES    frames taken from each capture for decode seeds (default 4)
#   FUZZ_SANITIZER cargo-fuzz sanitizer (default none: the weir crates have no
#                  `unsafe`, and without ASan the targets run ~5x faster; use
#                  address for a deeper run)
#
# Needs a nightly toolchain (rustup toolchain install nightly) and crates.io;
# installs cargo-fuzz if it is missing. Crash inputs land in
# fuzz/artifacts/TARGET/; minimize one with
#   cargo +nightly fuzz tmin --sanitizer none TARGET fuzz/artifacts/TARGET/crash-...
# and commit it as fuzz/regressions/TARGET-N (replayed on every run).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

SECONDS_PER_TARGET=${FUZZ_SECONDS:-30}
CAPTURES=${WEIR_CAPTURES:-$ROOT/corpus/tcpdump-tests}
FRAMES=${FUZZ_FRAMES:-4}
SANITIZER=${FUZZ_SANITIZER:-none}
ALL_TARGETS=(rules decode capture table classbench ppp ring nfqueue)
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi

log() { printf '==> %s\n' "$*" >&2; }

# --- tools -----------------------------------------------------------------
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz-smoke: no nightly toolchain (rustup toolchain install nightly)" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# --- seed corpora (fuzz/corpus is gitignored; rebuilt every run) -----------
CORPUS=$ROOT/fuzz/corpus
mkdir -p "$CORPUS/rules" "$CORPUS/decode" "$CORPUS/capture" "$CORPUS/table" "$CORPUS/classbench" "$CORPUS/ppp" "$CORPUS/ring" "$CORPUS/nfqueue"

# rules: whole rule files, and each of their lines on its own (so that one
# bad line in a file does not hide the rest from the round-trip check).
n=0
for f in "$ROOT"/rules/*.rules "$ROOT"/fuzz/seeds/rules/*.rules; do
    [ -f "$f" ] || continue
    base=$(basename "$f" .rules)
    dir=$(basename "$(dirname "$f")")
    cp "$f" "$CORPUS/rules/$dir-$base"
    i=0
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in '' | '#'*) continue ;; esac
        printf '%s\n' "$line" >"$CORPUS/rules/$dir-$base-$i"
        i=$((i + 1))
    done <"$f"
    n=$((n + i + 1))
done
log "rules: $n seeds"

# ppp: whole ppp filter files, and each of their lines on its own.
for f in "$ROOT"/fuzz/seeds/ppp/*.ppp; do
    [ -f "$f" ] || continue
    base=$(basename "$f" .ppp)
    cp "$f" "$CORPUS/ppp/$base"
    i=0
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in '' | '#'*) continue ;; esac
        printf '%s\n' "$line" >"$CORPUS/ppp/$base-$i"
        i=$((i + 1))
    done <"$f"
done
log "ppp: $(ls "$CORPUS/ppp" | wc -l) seeds"

# capture: whole capture files. decode: the first frames of each, extracted
# with weir's own reader by fuzz/seedgen (stable toolchain, no sanitizers).
captures=()
if [ -d "$CAPTURES" ]; then
    for f in "$CAPTURES"/*.pcap "$CAPTURES"/*.pcapng; do
        [ -f "$f" ] && captures+=("$f")
    done
else
    log "no capture corpus at $CAPTURES; capture/decode start from built-in seeds only"
fi
if [ ${#captures[@]} -gt 0 ]; then
    cp "${captures[@]}" "$CORPUS/capture/"
    CARGO_TARGET_DIR=$ROOT/fuzz/target/seedgen \
        cargo build --quiet --release --manifest-path fuzz/seedgen/Cargo.toml
    "$ROOT/fuzz/target/seedgen/release/weir-fuzz-seedgen" \
        "$CORPUS/decode" "$FRAMES" "${captures[@]}"
fi
# A few built-in seeds so an empty capture corpus still gives the fuzzer a
# start: raw IPv4 TCP SYN, Ethernet + IPv4 UDP, and a minimal pcap file.
printf '\x09\x00\x28\x45\x00\x00\x28\x00\x01\x00\x00\x40\x06\x00\x00\x0a\x01\x02\x03\xc0\x00\x02\x01\x04\xd2\x00\x50\x00\x00\x00\x01\x00\x00\x00\x00\x50\x02\x20\x00\x00\x00\x00\x00' \
    >"$CORPUS/decode/builtin-raw-tcp-syn"
printf '\x01\x00\x2a\x00\x00\x5e\x00\x01\x01\x02\x00\x00\x00\x00\x01\x08\x00\x45\x00\x00\x1c\x00\x00\x40\x00\x40\x11\x00\x00\x0a\x00\x00\x01\x0a\x00\x00\x02\x00\x35\x00\x35\x00\x08\x00\x00' \
    >"$CORPUS/decode/builtin-eth-udp"
printf '\xd4\xc3\xb2\xa1\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\xe4\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x14\x00\x00\x00\x14\x00\x00\x00\x45\x00\x00\x14\x00\x00\x00\x00\x40\x01\x00\x00\x7f\x00\x00\x01\x7f\x00\x00\x01' \
    >"$CORPUS/capture/builtin-pcap-ipv4"
# nfqueue: a queued IPv4 UDP packet (selector 0, then the netlink message:
# header, nfgenmsg, packet header, indev, payload) and HTTP requests
# (selector 1, then what a client sends the metrics server).
printf '\x00\x48\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0b\x00\x01\x00\x00\x00\x00\x2a\x08\x00\x02\x00\x08\x00\x05\x00\x00\x00\x00\x03\x20\x00\x0a\x00\x45\x00\x00\x1c\x00\x00\x40\x00\x40\x11\x00\x00\x0a\x00\x00\x01\x0a\x00\x00\x02\x04\xd2\x00\x35\x00\x08\x00\x00' \
    >"$CORPUS/nfqueue/builtin-udp"
printf '\x01GET /metrics HTTP/1.0\r\n\r\n' >"$CORPUS/nfqueue/builtin-http"
printf '\x01HEAD /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n' >"$CORPUS/nfqueue/builtin-http-head"
printf '\x01POST /metrics HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' >"$CORPUS/nfqueue/builtin-http-post"
printf '\x01GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n' >"$CORPUS/nfqueue/builtin-http-pipelined"
log "decode: $(ls "$CORPUS/decode" | wc -l) seeds; capture: $(ls "$CORPUS/capture" | wc -l) seeds"

# table: the committed table files.
cp "$ROOT"/fuzz/seeds/table/* "$CORPUS/table/"
log "table: $(ls "$CORPUS/table" | wc -l) seeds"
# classbench: small filter sets and traces (filters, NUL, trace).
cp "$ROOT"/fuzz/seeds/classbench/* "$CORPUS/classbench/"
log "classbench: $(ls "$CORPUS/classbench" | wc -l) seeds"

# Committed reproducers of fixed crashes are replayed as seeds.
for f in "$ROOT"/fuzz/regressions/*; do
    [ -f "$f" ] || continue
    name=$(basename "$f")
    target=${name%-*}
    [ -d "$CORPUS/$target" ] && cp "$f" "$CORPUS/$target/regression-$name"
done

# --- run -------------------------------------------------------------------
log "building fuzz targets"
(cd fuzz && cargo +nightly fuzz build --sanitizer "$SANITIZER")

failed=()
for t in "${TARGETS[@]}"; do
    extra=()
    [ "$t" = rules ] && extra+=(-dict="$ROOT/fuzz/dict/rules.dict")
    [ "$t" = ppp ] && extra+=(-dict="$ROOT/fuzz/dict/ppp.dict")
    [ "$t" = nfqueue ] && extra+=(-dict="$ROOT/fuzz/dict/http.dict")
    log "fuzzing $t for ${SECONDS_PER_TARGET}s"
    if ! (cd fuzz && cargo +nightly fuzz run --sanitizer "$SANITIZER" "$t" "corpus/$t" -- \
        -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=25 \
        -print_final_stats=1 ${extra[@]+"${extra[@]}"}); then
        failed+=("$t")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz-smoke: crashes in: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
log "fuzz-smoke: no crashes in ${TARGETS[*]}"
