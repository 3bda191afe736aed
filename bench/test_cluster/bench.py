"""Per-test cost of odradek.testing from Python: start + stop of an empty cluster, and start +
one produce/consume round trip + stop, with odradek's client and (if installed) confluent-kafka's,
for 1 and 3 brokers. Prints one JSON object per measurement (milliseconds).

    python bench/test_cluster/bench.py [rounds]
"""
import importlib
import json
import sys
import time

from odradek.testing import Cluster


def round_trip(kafka, bootstrap):
    p = kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    p.produce("t", value=b"hello", partition=0)
    assert p.flush(30) == 0
    c = kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                        "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([kafka.TopicPartition("t", 0, 0)])
    while True:
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            break
    c.close()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    clients = []
    for name in ("odradek", "confluent_kafka"):
        try:
            clients.append((name, importlib.import_module(name)))
        except ImportError:
            pass
    for brokers in (1, 3):
        Cluster(brokers=brokers).stop()
        for _ in range(rounds):
            t0 = time.perf_counter()
            c = Cluster(brokers=brokers)
            t1 = time.perf_counter()
            c.stop()
            t2 = time.perf_counter()
            print(json.dumps({"lang": "python", "client": "none", "scenario": "empty",
                              "brokers": brokers, "start_ms": (t1 - t0) * 1e3,
                              "stop_ms": (t2 - t1) * 1e3, "total_ms": (t2 - t0) * 1e3}), flush=True)
        for name, kafka in clients:
            for _ in range(rounds):
                t0 = time.perf_counter()
                c = Cluster(brokers=brokers, topics={"t": 1})
                t1 = time.perf_counter()
                round_trip(kafka, c.bootstrap_servers)
                t2 = time.perf_counter()
                c.stop()
                t3 = time.perf_counter()
                print(json.dumps({"lang": "python", "client": name, "scenario": "round_trip",
                                  "brokers": brokers, "start_ms": (t1 - t0) * 1e3,
                                  "round_trip_ms": (t2 - t1) * 1e3, "stop_ms": (t3 - t2) * 1e3,
                                  "total_ms": (t3 - t0) * 1e3}), flush=True)


if __name__ == "__main__":
    main()
