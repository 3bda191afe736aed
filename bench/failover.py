#!/usr/bin/env python3
"""Failover benchmark (issue 27): on a 3-node Apache Kafka, how long a producer goes without
acknowledgements, and a consumer without records, when its partition's leader is SIGKILLed;
odradek (Python package), librdkafka (confluent-kafka) and the Java client (kafka-clients, the
jars of tests/compat/kafka.sh; worker bench/FailoverWorker.java) side by side, on the same
fault.

Run through bench/failover.sh, which starts nothing itself but installs the clients.

Each round: two fresh topics of one partition (RF 3, min.insync.replicas=2), both led by the
same node (replica assignment [victim, a, b]); one worker process per client library produces
to its topic (idempotent, acks=all, one record every 1/rate s) and consumes it (assign, from the
start). Once both are acknowledging and reading, the victim is SIGKILLed; the workers carry on
for --after seconds, then flush, read everything and report. The victim is restarted before the
next round, and each round picks the next node as the victim.

Per client and round:
  produce gap: from the SIGKILL to the first acknowledgement after the longest pause between
               acknowledgements around it (the first one the new leader gave);
  consume gap: the same over the times records arrived at the consumer.
A round counts only when every worker lost no acknowledged record: no delivery failed, every
acknowledged sequence number was consumed (duplicates are counted and reported).

Prints one JSON object (and writes it to --json): per client the gaps of every round, their
medians, and odradek's median over librdkafka's and over the Java client's (below 1.0: odradek
recovers sooner).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import kafka_java

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The cluster: a 3-node Apache Kafka by default, or any harness with the same commands
# (`--cluster-cmd`, or ODRADEK_CLUSTER_CMD as in the Rust suite: scripts/cluster.sh runs
# odradek-broker's own cluster).
HARNESS = os.environ.get("ODRADEK_CLUSTER_CMD") or os.path.join(ROOT, "tests", "cluster", "kafka-cluster.sh")
CLIENTS = ("odradek", "librdkafka", "java")
PEERS = ("librdkafka", "java")


def log(msg):
    print("failover.py: %s" % msg, file=sys.stderr, flush=True)


# ---- worker: one client library, one topic ----------------------------------------------------

def worker(client, bootstrap, topic, rate):
    if client == "odradek":
        from odradek import Consumer, Producer, TopicPartition
    else:
        from confluent_kafka import Consumer, Producer, TopicPartition
    acks, failed, acked_seqs = [], [0], set()

    def on_delivery(err, msg):
        if err is not None:
            failed[0] += 1
            return
        acks.append(time.time())
        acked_seqs.add(int(msg.value()))

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 5})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "failover-" + topic,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    arrivals, seen = [], {}
    stop_reading = threading.Event()

    def read():
        while not stop_reading.is_set():
            msg = consumer.poll(0.05)
            if msg is None or msg.error() is not None:
                continue
            arrivals.append(time.time())
            seq = int(msg.value())
            seen[seq] = seen.get(seq, 0) + 1

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    seq, ready, period = 0, False, 1.0 / rate
    next_at = time.time()
    while not stop.is_set():
        now = time.time()
        if now >= next_at:
            producer.produce(topic, str(seq).encode(), on_delivery=on_delivery)
            seq += 1
            next_at += period
        producer.poll(0)
        if not ready and acks and arrivals:
            print("ready", flush=True)
            ready = True
        time.sleep(min(0.001, max(0.0, next_at - time.time())))
    left = producer.flush(60)
    deadline = time.time() + 60
    while time.time() < deadline and not acked_seqs.issubset(seen.keys()):
        time.sleep(0.1)
    stop_reading.set()
    reader.join(5)
    consumer.close()
    print(json.dumps({
        "sent": seq, "acked": len(acked_seqs), "failed": failed[0], "unflushed": left,
        "missing": len(acked_seqs - seen.keys()),
        "duplicates": sum(n - 1 for n in seen.values() if n > 1),
        "acks": acks, "arrivals": arrivals,
    }), flush=True)


# ---- orchestrator -------------------------------------------------------------------------------

def harness(*args):
    out = subprocess.run([HARNESS, *args], check=True, stdout=subprocess.PIPE, text=True)
    return out.stdout.strip()


def recovery_gap(times, t_kill, window=60.0):
    """Seconds from t_kill to the end of the longest pause between events around it."""
    around = [t for t in times if t_kill - 1.0 <= t <= t_kill + window]
    if len(around) < 2:
        return None
    best = max(range(1, len(around)), key=lambda i: around[i] - around[i - 1])
    return around[best] - t_kill


def prepare_java(workdir):
    """Compiles the Java worker against the Kafka client jars; returns its command prefix."""
    return kafka_java.compile_main(workdir, "FailoverWorker", ["-Xmx256m", "-XX:+UseSerialGC"])


def worker_command(client, java, bootstrap, topic, rate):
    if client == "java":
        return java + [bootstrap, topic, str(rate)]
    return [sys.executable, __file__, "worker", client, bootstrap, topic, str(rate)]


def run_round(cluster, bootstrap, rnd, victim, others, rate, after, java):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = {c: "failover-%d-%s-%d" % (rnd, c, os.getpid()) for c in CLIENTS}
    futs = admin.create_topics([
        NewTopic(t, num_partitions=1, replication_factor=-1,
                 replica_assignment=[[victim] + others],
                 config={"min.insync.replicas": "2"}) for t in topics.values()])
    for f in futs.values():
        f.result(60)
    workers = {}
    for c, t in topics.items():
        workers[c] = subprocess.Popen(worker_command(c, java, bootstrap, t, rate),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    for c, w in workers.items():
        line = w.stdout.readline().strip()
        if line != "ready":
            raise SystemExit("worker %s did not start: %r" % (c, line))
    time.sleep(3)
    t_kill = time.time()
    harness("kill", cluster, str(victim))
    log("round %d: killed node %d" % (rnd, victim))
    time.sleep(after)
    results = {}
    for c, w in workers.items():
        w.stdin.write("stop\n")
        w.stdin.flush()
    for c, w in workers.items():
        out, _ = w.communicate(timeout=180)
        r = json.loads(out.strip().splitlines()[-1])
        problems = [k for k in ("failed", "unflushed", "missing") if r[k]]
        if problems:
            raise SystemExit("round %d, %s: %s" % (rnd, c, {k: r[k] for k in problems}))
        results[c] = {
            "produce_gap_s": recovery_gap(r["acks"], t_kill),
            "consume_gap_s": recovery_gap(r["arrivals"], t_kill),
            "acked": r["acked"], "duplicates_read": r["duplicates"],
        }
        log("round %d, %s: produce gap %.2f s, consume gap %.2f s, %d acknowledged, all read"
            % (rnd, c, results[c]["produce_gap_s"], results[c]["consume_gap_s"], r["acked"]))
    harness("restart", cluster, str(victim))
    return results


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rate", type=float, default=500, help="records/s per client")
    ap.add_argument("--after", type=float, default=20, help="seconds to run after each kill")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--json")
    ap.add_argument("--cluster-cmd", help="cluster harness (default: ODRADEK_CLUSTER_CMD, else "
                    "tests/cluster/kafka-cluster.sh); scripts/cluster.sh for odradek-broker's")
    a = ap.parse_args()
    global HARNESS
    if a.cluster_cmd:
        HARNESS = os.path.abspath(a.cluster_cmd)
    log("cluster harness: %s" % HARNESS)
    cluster = os.path.join(a.workdir, "cluster")
    bootstrap = harness("start", cluster, "3")
    java = prepare_java(a.workdir)
    try:
        rounds = []
        for rnd in range(a.rounds):
            victim = 1 + rnd % 3
            others = [n for n in (1, 2, 3) if n != victim]
            rounds.append(run_round(cluster, bootstrap, rnd, victim, others, a.rate, a.after, java))
    finally:
        harness("stop", cluster)
    report = {"rounds": a.rounds, "rate_per_client": a.rate,
              "cluster": os.path.relpath(HARNESS, ROOT), "clients": {}}
    for c in CLIENTS:
        p = [r[c]["produce_gap_s"] for r in rounds]
        q = [r[c]["consume_gap_s"] for r in rounds]
        report["clients"][c] = {"produce_gap_s": p, "consume_gap_s": q,
                                "produce_gap_median_s": statistics.median(p),
                                "consume_gap_median_s": statistics.median(q)}
    o = report["clients"]["odradek"]
    for peer in PEERS:
        q = report["clients"][peer]
        report["ratio_odradek_over_" + peer] = {
            "produce_gap": o["produce_gap_median_s"] / q["produce_gap_median_s"],
            "consume_gap": o["consume_gap_median_s"] / q["consume_gap_median_s"],
        }
    text = json.dumps(report, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
