"""Replay many captures through one weir ruleset on Spark.

Each capture file is one Spark task (a pcap cannot be split without
scanning it): the task replays it with the `weir` package, writes its
verdicts to OUT_DIR/NAME.parquet (one Parquet file per capture, the columns
of `weir run --verdicts x.parquet`), and returns its per-rule counters. The
driver adds them up and prints them as `weir run --counters` prints them,
with the closing summary on stderr.

    python spark_replay.py RULES 'captures/*.pcap' OUT_DIR [--master local[2]]

The captures must be readable by every executor under the same path (a
shared file system; in local mode, the machine's).

Shipping weir to the executors: the package is a native extension, so
`--py-files` (zip imports) cannot carry it. Pack a virtualenv that has it
and let Spark unpack it on each executor (venv-pack, as PySpark's "Python
Package Management" guide shows):

    python -m venv env && env/bin/pip install pyarrow venv-pack weir-*.whl
    env/bin/venv-pack -o env.tar.gz
    PYSPARK_PYTHON=./env/bin/python spark-submit --master yarn \\
        --archives env.tar.gz#env spark_replay.py rules.conf 'hdfs-mounted/*.pcap' out/

(the wheel comes from `maturin build --release -m python/Cargo.toml`).
"""

import argparse
import glob
import os
import sys


def replay_files(rules_text, options, out_dir, paths):
    """One partition's captures: each replayed and its verdicts written;
    yields (path, counters rows, summary) per capture. The ruleset is
    compiled once per partition."""
    import pyarrow.parquet as pq

    import weir

    rs = weir.Ruleset.parse(rules_text, **options)
    for path in paths:
        r = rs.replay(path)
        pq.write_table(r.verdicts, os.path.join(out_dir, verdict_name(path)))
        yield path, r.counters.to_pylist(), r.summary


def verdict_name(path):
    return os.path.basename(path) + ".parquet"


def merge(results):
    """Per-rule counters and summaries of every capture, added up."""
    counters, summary = None, {}
    for _, rows, s in results:
        if counters is None:
            counters = [dict(r) for r in rows]
        else:
            for total, r in zip(counters, rows):
                total["packets"] += r["packets"]
                total["bytes"] += r["bytes"]
        for k, v in s.items():
            summary[k] = summary.get(k, 0) + v
    return counters or [], summary


def main(argv=None):
    ap = argparse.ArgumentParser(description="Replay captures through a weir ruleset on Spark.")
    ap.add_argument("rules")
    ap.add_argument("captures", help="a directory, or a glob of capture files")
    ap.add_argument("out_dir")
    ap.add_argument("--master", help="Spark master (default: spark-submit's)")
    ap.add_argument("--filter-set", help="for FreeBSD ppp filter files")
    args = ap.parse_args(argv)

    import pyarrow as pa
    from pyspark.sql import SparkSession

    import weir

    options = {"filter_set": args.filter_set}
    # Errors in the ruleset stop the job here, before any task starts.
    weir.Ruleset.load(args.rules, **options)
    with open(args.rules, encoding="utf-8") as f:
        rules_text = f.read()
    pattern = os.path.join(args.captures, "*") if os.path.isdir(args.captures) else args.captures
    paths = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
    if not paths:
        sys.exit(f"spark_replay: no capture matches {args.captures}")
    names = [verdict_name(p) for p in paths]
    if len(set(names)) != len(names):
        sys.exit("spark_replay: two captures share a file name; their verdict files would clash")
    os.makedirs(args.out_dir, exist_ok=True)

    builder = SparkSession.builder.appName("weir replay")
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    try:
        out_dir = os.path.abspath(args.out_dir)
        results = (
            spark.sparkContext.parallelize(paths, numSlices=len(paths))
            .mapPartitions(lambda part: replay_files(rules_text, options, out_dir, part))
            .collect()
        )
    finally:
        spark.stop()
    counters, s = merge(results)
    sys.stdout.write(weir.counters_text(pa.Table.from_pylist(counters)))
    print(
        f"{s['read']} packets read, {s['passed']} passed, {s['dropped']} dropped, "
        f"{s['malformed']} malformed, {s['non_ip']} non-IP ({len(paths)} captures)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
