#!/usr/bin/env python3
"""Tables for BENCHMARKS.md's "Client over TLS" section from a run_tls.sh results file.

    python3 bench/client/report_tls.py bench/client/results/tls-<date>.jsonl

Medians (min-max) over the measured repeats (warm-ups left out); ratios of medians. Exits
non-zero if a cell has no measured run or two runs of one consume cell read different data.
"""
import json
import statistics
import sys
from collections import defaultdict


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    runs = defaultdict(list)
    checksums = defaultdict(set)
    for r in rows:
        if r.get("meta") or r.get("warmup"):
            continue
        key = (r["phase"], r["scenario"], r["protocol"], r["client"])
        runs[key].append(r)
        if r["phase"] == "consume":
            checksums[(r["scenario"],)].add((r["msgs"], r["checksum"]))
    for k, v in checksums.items():
        if len(v) != 1:
            sys.exit("consume %s: runs read different data: %s" % (k, v))
    cells = sorted({k[:3] for k in runs})

    def med(key, field):
        vals = [r[field] for r in runs[key]]
        if not vals:
            sys.exit("no measured run for %s" % (key,))
        return statistics.median(vals), min(vals), max(vals)

    fmt = lambda m: "%s (%s-%s)" % tuple(f"{x:,.0f}" for x in m)
    out = ["| phase | scenario | protocol | odradek msgs/s | librdkafka msgs/s | ratio | CPU ratio |",
           "|---|---|---|---:|---:|---:|---:|"]
    for phase, scen, proto in cells:
        o, r = (phase, scen, proto, "odradek"), (phase, scen, proto, "rdkafka")
        mo, mr = med(o, "msgs_per_s"), med(r, "msgs_per_s")
        co, cr = med(o, "cpu_us_per_msg")[0], med(r, "cpu_us_per_msg")[0]
        out.append(f"| {phase} | {scen} | {proto} | {fmt(mo)} | {fmt(mr)} | {mo[0] / mr[0]:.2f}x | {cr / co:.2f}x |")
    out += ["", "| phase | scenario | odradek SSL / PLAINTEXT | librdkafka SSL / PLAINTEXT |",
            "|---|---|---:|---:|"]
    for phase, scen in sorted({c[:2] for c in cells}):
        ratio = lambda client: (med((phase, scen, "SSL", client), "msgs_per_s")[0]
                                / med((phase, scen, "PLAINTEXT", client), "msgs_per_s")[0])
        out.append(f"| {phase} | {scen} | {ratio('odradek'):.2f}x | {ratio('rdkafka'):.2f}x |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
