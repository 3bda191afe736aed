#!/usr/bin/env python3
"""Broker over TLS: produce and consume throughput with confluent-kafka (librdkafka) over
PLAINTEXT and SSL, against odradek-broker and Apache Kafka 4.4 in one interleaved run.

Driven by bench/broker_tls.sh (installs the peers, builds the release broker, makes the PKI);
run that. Both brokers run at once with a PLAINTEXT and an SSL listener (the same PEM
certificates). A cell is (broker, protocol): one producer sends --records records of --size bytes
(acks=1, linger.ms=5, batch.size=256 KiB, no compression) into a fresh 1-partition topic, then one
consumer reads them back from offset 0 (assign, librdkafka's fetch defaults). Cells are shuffled per
round (fixed seed) after one warm-up round; the median of --rounds rounds is reported, with the
SSL/PLAINTEXT ratio per broker and the odradek/Kafka ratio per protocol.
"""
import argparse
import json
import os
import random
import statistics
import sys
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition


def produce(conf, topic, n, size):
    p = Producer(dict(conf, **{"acks": "1", "linger.ms": 5, "batch.size": 262144,
                               "queue.buffering.max.kbytes": 1048576, "compression.type": "none"}))
    value = os.urandom(size)
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=value, partition=0)
                break
            except BufferError:
                p.poll(0.01)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(120) == 0
    return time.perf_counter() - start


def consume(conf, topic, n):
    c = Consumer(dict(conf, **{"group.id": "bench-" + topic, "enable.auto.commit": False,
                               "fetch.wait.max.ms": 100}))
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    start = time.perf_counter()
    while got < n:
        msgs = c.consume(10000, 5)
        for m in msgs:
            if m.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoints", required=True, help="JSON: {broker: {PLAINTEXT: addr, SSL: addr}}")
    ap.add_argument("--ca", required=True)
    ap.add_argument("--records", type=int, default=100000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    endpoints = json.loads(a.endpoints)
    cells = [(b, proto) for b in sorted(endpoints) for proto in ("PLAINTEXT", "SSL")]

    def conf(b, proto):
        c = {"bootstrap.servers": endpoints[b][proto]}
        if proto == "SSL":
            c.update({"security.protocol": "SSL", "ssl.ca.location": a.ca})
        return c

    results = {f"{b}/{p}": {"produce": [], "consume": []} for b, p in cells}
    rng = random.Random(7)
    for rnd in range(a.rounds + 1):
        order = cells[:]
        rng.shuffle(order)
        for b, p in order:
            topic = "tls-bench-" + uuid.uuid4().hex[:8]
            tp = produce(conf(b, p), topic, a.records, a.size)
            tc = consume(conf(b, p), topic, a.records)
            print(f"round {rnd} {b}/{p}: produce {a.records / tp:,.0f} msg/s, consume {a.records / tc:,.0f} msg/s",
                  file=sys.stderr, flush=True)
            if rnd > 0:
                results[f"{b}/{p}"]["produce"].append(a.records / tp)
                results[f"{b}/{p}"]["consume"].append(a.records / tc)
    med = {k: {phase: statistics.median(v) for phase, v in r.items()} for k, r in results.items()}
    out = {"records": a.records, "size": a.size, "rounds": a.rounds, "runs": results, "median": med}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    mb = lambda rate: rate * a.size / 1e6
    lines = ["| broker | protocol | produce msg/s | produce MB/s | consume msg/s | consume MB/s |",
             "|---|---|---|---|---|---|"]
    for b, p in cells:
        m = med[f"{b}/{p}"]
        lines.append(f"| {b} | {p} | {m['produce']:,.0f} | {mb(m['produce']):.1f} | {m['consume']:,.0f} | {mb(m['consume']):.1f} |")
    lines += ["", "| ratio | produce | consume |", "|---|---|---|"]
    for b in sorted(endpoints):
        s, pl = med[f"{b}/SSL"], med[f"{b}/PLAINTEXT"]
        lines.append(f"| {b} SSL / PLAINTEXT | {s['produce'] / pl['produce']:.2f}x | {s['consume'] / pl['consume']:.2f}x |")
    if "odradek" in endpoints and "kafka" in endpoints:
        for p in ("PLAINTEXT", "SSL"):
            o, k = med[f"odradek/{p}"], med[f"kafka/{p}"]
            lines.append(f"| odradek / Kafka over {p} | {o['produce'] / k['produce']:.2f}x | {o['consume'] / k['consume']:.2f}x |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
