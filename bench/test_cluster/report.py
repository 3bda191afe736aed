"""Markdown table of bench/test_cluster.sh's JSON lines: median (min-max) per language, client,
scenario and broker count.

    python3 bench/test_cluster/report.py bench/results/test_cluster-<date>.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict


def fmt(values):
    if not values:
        return "-"
    med = statistics.median(values)
    def f(v):
        return "%.1f" % v if v < 100 else "{:,.0f}".format(v)
    return "%s (%s-%s)" % (f(med), f(min(values)), f(max(values)))


def main(path):
    cells = defaultdict(lambda: defaultdict(list))
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        key = (r["lang"], r["client"], r["scenario"], r["brokers"])
        for k in ("start_ms", "round_trip_ms", "stop_ms", "total_ms"):
            if k in r:
                cells[key][k].append(float(r[k]))
    order = {"rust": 0, "python": 1, "node": 2, "c": 3, "kafka": 4}
    print("| language | client | scenario | brokers | n | start ms | round trip ms | stop ms | total ms |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for key in sorted(cells, key=lambda k: (order.get(k[0], 9), k[2] != "empty", k[3], k[1])):
        lang, client, scenario, brokers = key
        c = cells[key]
        name = {"kafka": "Apache Kafka 4.4 (JVM, KRaft)"}.get(lang, lang)
        print("| %s | %s | %s | %d | %d | %s | %s | %s | %s |" % (
            name, client, "empty start+stop" if scenario == "empty" else "start + round trip + stop",
            brokers, len(c["total_ms"]), fmt(c["start_ms"]), fmt(c.get("round_trip_ms", [])),
            fmt(c["stop_ms"]), fmt(c["total_ms"])))


if __name__ == "__main__":
    main(sys.argv[1])
