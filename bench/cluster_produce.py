#!/usr/bin/env python3
"""acks=all on a 3-node cluster (issue 17): produce throughput and latency percentiles,
odradek-broker's own cluster (scripts/cluster.sh) next to a 3-node Apache Kafka
(tests/cluster/kafka-cluster.sh) in one interleaved run.

Run through bench/cluster_produce.sh (it builds the broker in release and installs the
peers). Both clusters run at once, started with ODRADEK_CLUSTER_DIRECT=1 (clients connect to
the brokers themselves, not through the fault harness's cut proxies), every node a combined
broker and controller, replication factor 3, min.insync.replicas=2.

The client is the same for both: Kafka's ProducerPerformance (the Java producer from the same
jars; acks=all, idempotent, linger.ms=5, batch.size=64 KiB), so the ratio compares brokers.
Cells: record sizes 100 B and 1 KiB, 1 and 6 partitions. Per repeat, every cell runs once on
each cluster (the cluster order alternates per cell), each into a fresh topic:

  throughput: --records records as fast as the producer goes (records/s, MB/s, p50/p99);
  latency:    the same topic shape at a fixed --rate for --latency-seconds (p50/p99/p99.9,
              the producer not saturated).

Every run checks its work: ProducerPerformance's summary must count every record and print no
error, the topic's high watermarks must add up to exactly the records sent (none lost, none
duplicated), and the Java consumer (bench/BenchClient.java) must read them all back.

Prints one JSON object (and writes --json): per cluster and cell the runs and their medians,
and odradek's median over Kafka's (throughput above 1.0 and latency below 1.0: odradek better).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import kafka_java

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KAFKA_SH = os.path.join(ROOT, "tests", "compat", "kafka.sh")
HARNESSES = {
    "odradek": os.path.join(ROOT, "scripts", "cluster.sh"),
    "kafka": os.path.join(ROOT, "tests", "cluster", "kafka-cluster.sh"),
}
PRODUCER_CLASS = "org.apache.kafka.tools.ProducerPerformance"
SUMMARY = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")
PRODUCER_PROPS = ["acks=all", "enable.idempotence=true", "linger.ms=5", "batch.size=65536",
                  "compression.type=none", "client.id=bench-cluster-producer"]


def log(msg):
    print("cluster_produce.py: [%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr,
          flush=True)


def harness(name, *args):
    env = dict(os.environ, ODRADEK_CLUSTER_DIRECT="1")
    out = subprocess.run([HARNESSES[name], *args], check=True, stdout=subprocess.PIPE,
                         text=True, env=env)
    return out.stdout.strip()


def create_topic(bootstrap, topic, partitions):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(topic, partitions, 3)], request_timeout=60)[topic]
    fut.result(60)
    # Every partition led and fully in sync before the clock starts.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md and len(md.partitions) == partitions and all(
                p.leader >= 0 and len(p.isrs) == 3 for p in md.partitions.values()):
            return
        time.sleep(0.2)
    raise RuntimeError("topic %s never had %d led, fully replicated partitions" % (topic, partitions))


def high_watermarks(bootstrap, topic, partitions):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-hw-check",
                  "enable.auto.commit": False})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                   for p in range(partitions))
    finally:
        c.close()


def produce(bootstrap, topic, records, size, rate):
    cmd = [KAFKA_SH, "run", PRODUCER_CLASS, "--topic", topic, "--num-records", str(records),
           "--record-size", str(size), "--throughput", str(rate), "--reporting-interval",
           "600000", "--command-property", "bootstrap.servers=" + bootstrap, *PRODUCER_PROPS]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600, stdin=subprocess.DEVNULL)
    out = p.stdout + p.stderr
    # The producer's failed sends (printed stack traces) and error log lines; warnings of
    # retried requests are not failures.
    errors = [line for line in out.splitlines()
              if re.match(r"[\w.$]+(Exception|Error)\b", line.strip())
              or re.search(r"\bERROR\b", line)]
    if p.returncode != 0 or errors:
        raise RuntimeError("ProducerPerformance failed (%d): %s" % (p.returncode,
                                                                    "\n".join(errors[:5]) or out[-2000:]))
    m = None
    for line in p.stdout.splitlines():
        m = SUMMARY.search(line) or m
    if not m:
        raise RuntimeError("no ProducerPerformance summary in: %s" % p.stdout[-1000:])
    sent = int(m.group(1))
    if sent != records:
        raise RuntimeError("ProducerPerformance sent %d of %d records" % (sent, records))
    return {"records": sent, "msgs_per_s": float(m.group(2)), "mb_per_s": float(m.group(3)),
            "lat_avg_ms": float(m.group(4)), "lat_p50_ms": int(m.group(6)),
            "lat_p95_ms": int(m.group(7)), "lat_p99_ms": int(m.group(8)),
            "lat_p999_ms": int(m.group(9))}


def read_back(java, bootstrap, topic, expected):
    out = subprocess.run(java + ["consume", bootstrap, topic, str(expected)], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300,
                         stdin=subprocess.DEVNULL)
    got = json.loads(out.stdout.strip().splitlines()[-1])["records"]
    if got != expected:
        raise RuntimeError("read back %d of %d records of %s" % (got, expected, topic))


def prepare_java(workdir):
    """Compiles BenchClient against the Kafka client jars; returns its command prefix."""
    return kafka_java.compile_main(workdir, "BenchClient", ["-Xmx512m"])


def run_cell(name, bootstrap, java, cell, kind, a, serial):
    topic = "bench-%s-%s-%d" % (kind, cell["id"], serial)
    create_topic(bootstrap, topic, cell["partitions"])
    if kind == "throughput":
        records, rate = a.records if cell["size"] < 1000 else a.records // 4, -1
    else:
        records, rate = int(a.rate * a.latency_seconds), a.rate
    result = produce(bootstrap, topic, records, cell["size"], rate)
    hw = high_watermarks(bootstrap, topic, cell["partitions"])
    if hw != records:
        raise RuntimeError("%s: %s holds %d records, %d were sent" % (name, topic, hw, records))
    read_back(java, bootstrap, topic, records)
    log("%-7s %-10s %-12s %9.0f msgs/s  p50 %4d ms  p99 %4d ms" % (
        name, kind, cell["id"], result["msgs_per_s"], result["lat_p50_ms"], result["lat_p99_ms"]))
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--records", type=int, default=300000,
                    help="records per 100 B throughput run (a quarter of it for 1 KiB)")
    ap.add_argument("--rate", type=int, default=2000, help="records/s of the latency runs")
    ap.add_argument("--latency-seconds", type=int, default=15)
    ap.add_argument("--json")
    a = ap.parse_args()
    cells = [{"size": s, "partitions": p, "id": "%dB-%dp" % (s, p)}
             for s in (100, 1024) for p in (1, 6)]
    java = prepare_java(a.workdir)
    bootstraps = {}
    try:
        for name in HARNESSES:
            bootstraps[name] = harness(name, "start", os.path.join(a.workdir, name), "3")
            log("%s cluster: %s" % (name, bootstraps[name]))
        # One warm-up run per cluster (JIT, page cache, connections), not reported.
        for name, bootstrap in bootstraps.items():
            run_cell(name, bootstrap, java, cells[0], "throughput", a, 0)
        runs = {name: {} for name in HARNESSES}
        serial = 0
        for rep in range(a.repeats):
            for i, cell in enumerate(cells):
                for kind in ("throughput", "latency"):
                    order = list(HARNESSES) if (rep + i) % 2 == 0 else list(reversed(HARNESSES))
                    for name in order:
                        serial += 1
                        r = run_cell(name, bootstraps[name], java, cell, kind, a, serial)
                        runs[name].setdefault(kind + ":" + cell["id"], []).append(r)
    finally:
        for name in bootstraps:
            try:
                harness(name, "stop", os.path.join(a.workdir, name))
            except subprocess.CalledProcessError as e:
                log("stopping %s: %s" % (name, e))
    report = {"repeats": a.repeats, "records": a.records, "latency_rate": a.rate,
              "latency_seconds": a.latency_seconds, "producer": PRODUCER_PROPS,
              "clusters": {}, "ratio_odradek_over_kafka": {}}
    for name, by_cell in runs.items():
        report["clusters"][name] = {}
        for key, rs in by_cell.items():
            report["clusters"][name][key] = {
                "runs": rs,
                "median_msgs_per_s": statistics.median(r["msgs_per_s"] for r in rs),
                "median_p50_ms": statistics.median(r["lat_p50_ms"] for r in rs),
                "median_p99_ms": statistics.median(r["lat_p99_ms"] for r in rs),
                "median_p999_ms": statistics.median(r["lat_p999_ms"] for r in rs),
            }
    for key in runs["odradek"]:
        o, k = report["clusters"]["odradek"][key], report["clusters"]["kafka"][key]
        report["ratio_odradek_over_kafka"][key] = {
            "msgs_per_s": round(o["median_msgs_per_s"] / k["median_msgs_per_s"], 3),
            "p99": round(o["median_p99_ms"] / max(k["median_p99_ms"], 1), 3),
        }
    text = json.dumps(report, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
