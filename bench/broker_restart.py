#!/usr/bin/env python3
"""Restart time of odradek-broker on a filled data dir (see bench/broker_restart.sh).

Each binary gets its own copy of the data dir. Runs are interleaved: for each repeat, every
binary is started (launch -> ApiVersions + Metadata answered, the probe of broker_vs_kafka.py)
and stopped with SIGTERM (a clean shutdown). One unmeasured warm-up start per binary first.
Prints one JSON object: per binary the restart and stop times (median, min, max) in ms."""

import argparse
import json
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_vs_kafka import Odradek, proc_mem_kb  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="filled data dir (copied per binary)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("bins", nargs="+", help="NAME=PATH")
    a = ap.parse_args()
    brokers = []
    for spec in a.bins:
        name, path = spec.split("=", 1)
        work = os.path.join(a.workdir, name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        shutil.copytree(a.data, os.path.join(work, "data"))
        brokers.append((name, Odradek(path, []), work))
    res = {name: {"ready_ms": [], "stop_ms": [], "rss_kb": []} for name, _, _ in brokers}
    for rep in range(a.repeats + 1):
        order = brokers if rep % 2 == 0 else list(reversed(brokers))
        for name, b, work in order:
            os.sync()
            st = b.start(work, fresh=False)
            mem = proc_mem_kb(b.pid)
            stop_s, rc = b.stop()
            if rc != 0:
                raise SystemExit(f"{name} exited with {rc}")
            if rep > 0:
                res[name]["ready_ms"].append(round(st["ready_ms"], 2))
                res[name]["stop_ms"].append(round(stop_s * 1e3, 2))
                res[name]["rss_kb"].append(mem["rss_kb"])
            print(f"{name} rep {rep}: ready {st['ready_ms']:.1f} ms, stop {stop_s * 1e3:.1f} ms",
                  file=sys.stderr)
    out = {}
    for name, r in res.items():
        out[name] = {k: {"median": statistics.median(v), "min": min(v), "max": max(v), "all": v}
                     for k, v in r.items()}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
