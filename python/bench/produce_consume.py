#!/usr/bin/env python3
"""Produce and consume throughput, odradek vs confluent-kafka vs kafka-python, same broker.

Run by hand (results go into BENCHMARKS.md, "## Python"):

    cargo build --release -p odradek-broker
    python3 -m venv /tmp/bench && /tmp/bench/bin/pip install ./python -r tests/compat/python-peers.txt
    /tmp/bench/bin/python python/bench/produce_consume.py --rounds 3

Every measurement runs in a fresh child process (same interpreter), clients interleaved round by
round against one odradek-broker (release build, started here on a free port with a temporary
data directory unless --bootstrap is given). Values are 100 B, no keys, one partition; all
producers use acks=1, linger.ms=5 and a 128 KiB batch size. Reported: median msgs/s over the
rounds and CPU seconds (user+sys of the whole client process, all its threads, interpreter
start-up included) per million messages.

Scenarios:
  produce        produce() per message, poll(0) every 1000, then flush()  (kafka-python: send())
  produce_batch  odradek: produce_batch() with lists of 10,000 values; confluent-kafka: its own
                 produce_batch() with lists of dicts
  consume        consume(1000, timeout) loop reading N messages from offset 0, touching value()
                 (kafka-python: poll(max_records=1000)); the clock starts at the first message
  poll           poll() per message (confluent-kafka / odradek only)

confluent-kafka runs twice: with its defaults ("confluent") and in librdkafka's documented
throughput configuration ("confluent-tuned", TUNED below, written to the results JSON as
peer_settings), every scenario. Tuned producers add batch.num.messages=1000000,
queue.buffering.max.messages=1000000 and socket.nagle.disable=true to the shared acks, linger.ms
and batch.size (librdkafka's INTRODUCTION.md, "Performance": batch.num.messages and linger.ms for
throughput, socket.nagle.disable for latency; CONFIGURATION.md: the queue's default is 100000
messages, which a 1M-record run hits); tuned consumers set fetch.queue.backoff.ms=1 (see the
comment in child()). The tuned peer is the headline in BENCHMARKS.md, the defaults beside it.

Every run checks its work, outside the clock:
  produce*       after the child exits, the parent reads the partition's high watermark with a
                 separate confluent-kafka consumer: it must equal the records produced into the
                 fresh topic (N plus the priming record), so every record was delivered exactly
                 once (a failed delivery leaves it short, a duplicate retry makes it long), for
                 every client alike; flush() must also leave 0.
  consume, poll  exactly N records after the first (offset 0), no error messages, every byte of
                 every value; consume()'s batches must be contiguous (each batch's first offset
                 follows the last one's, its last = first + len - 1, checked once per batch), the
                 last record read must be offset N and the consumer's position N + 1 afterwards.
                 consume() asks for at most the records still missing, so no batch overshoots.
A failed check fails the whole run with the reason.
"""
import argparse
import json
import os
import re
import resource
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRODUCER_CONF = {"acks": "1", "linger.ms": 5, "batch.size": 131072}
# confluent-tuned's additions (librdkafka INTRODUCTION.md "Performance" and CONFIGURATION.md).
TUNED = {
    "producer": {
        # Batches bounded by batch.size only (default 10000 messages per batch).
        "batch.num.messages": 1000000,
        # The local queue's default, 100000 messages, is below a 1M-record run.
        "queue.buffering.max.messages": 1000000,
        "socket.nagle.disable": True,
    },
    "consumer": {
        # librdkafka (>= 2.4) stops fetching for fetch.queue.backoff.ms (1 s) once
        # queued.min.messages (100000) are prefetched; at 100 B messages that idles it.
        "fetch.queue.backoff.ms": 1,
    },
}
LISTENING = re.compile(rb"^odradek-broker listening on (\S+):(\d+)")


# ---- child: one measurement --------------------------------------------------------------

def child(client, scenario, bootstrap, topic, n, size):
    value = b"x" * size
    if client in ("odradek", "confluent", "confluent-tuned"):
        mod = __import__("odradek" if client == "odradek" else "confluent_kafka")
        Producer, Consumer, TopicPartition = mod.Producer, mod.Consumer, mod.TopicPartition
        conf = dict(PRODUCER_CONF, **{"bootstrap.servers": bootstrap})
        if client == "confluent-tuned":
            conf.update(TUNED["producer"])
        if scenario in ("produce", "produce_batch"):
            p = Producer(conf)
            p.produce(topic, value)  # metadata and connections before the clock starts
            p.flush(30)
            start = time.perf_counter()
            if scenario == "produce":
                produce = p.produce
                poll = p.poll
                i = 0
                while i < n:
                    try:
                        produce(topic, value)
                    except BufferError:
                        poll(0.01)
                        continue
                    i += 1
                    if i % 1000 == 0:
                        poll(0)
            else:
                chunk = 10_000
                if client == "odradek":
                    values = [value] * chunk
                else:
                    values = [{"value": value} for _ in range(chunk)]
                sent = 0
                while sent < n:
                    k = min(chunk, n - sent)
                    batch = values if k == chunk else values[:k]
                    if client != "odradek":
                        batch = [dict(m) for m in batch]
                    try:
                        done = p.produce_batch(topic, batch)
                    except BufferError:
                        done = 0
                    sent += done
                    p.poll(0 if done == k else 0.01)
            left = p.flush(120)
            elapsed = time.perf_counter() - start
            check(left == 0, "flush() left %d records", left)
            return elapsed
        # consume / poll
        cconf = {"bootstrap.servers": bootstrap, "group.id": "bench-" + client,
                 "enable.auto.commit": False, "auto.offset.reset": "earliest"}
        if client == "confluent-tuned":
            cconf.update(TUNED["consumer"])
        c = Consumer(cconf)
        c.assign([TopicPartition(topic, 0, 0)])
        got = 0
        total = 0
        errors = 0
        # Steady state: the clock starts at the first message (connection setup, offset lookup
        # and the first fetch are left out, for every client alike).
        first = None
        while first is None:
            first = c.poll(10.0)
        check(first.error() is None and first.offset() == 0,
              "first record: offset %s, error %s", first.offset(), first.error())
        last = first
        start = time.perf_counter()
        deadline = time.monotonic() + 300
        if scenario == "consume":
            consume = c.consume
            nxt = 1
            while got < n and time.monotonic() < deadline:
                msgs = consume(min(1000, n - got), 1.0)
                if not msgs:
                    continue
                for m in msgs:
                    if m.error() is None:
                        total += len(m.value())
                    else:
                        errors += 1
                got += len(msgs)
                # Once per batch: contiguous, following the previous batch.
                o, last = msgs[0].offset(), msgs[-1]
                if o != nxt or last.offset() != o + len(msgs) - 1:
                    check(False, "batch of %d at offsets %s..%s, expected it to start at %d",
                          len(msgs), o, last.offset(), nxt)
                nxt += len(msgs)
        else:
            poll = c.poll
            while got < n and time.monotonic() < deadline:
                m = poll(1.0)
                if m is None:
                    continue
                if m.error() is None:
                    total += len(m.value())
                    got += 1
                    last = m
                else:
                    errors += 1
        elapsed = time.perf_counter() - start
        check(errors == 0, "%d error messages", errors)
        check(got == n and total == n * size, "read %d records, %d B; expected %d, %d B",
              got, total, n, n * size)
        check(last.offset() == n, "last record at offset %s, expected %d", last.offset(), n)
        pos = c.position([TopicPartition(topic, 0)])[0].offset
        check(pos == n + 1, "position %s after the run, expected %d", pos, n + 1)
        c.close()
        return elapsed
    # kafka-python
    import kafka
    if scenario == "produce":
        p = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5,
                                batch_size=131072, max_in_flight_requests_per_connection=5)
        p.send(topic, value).get(30)
        start = time.perf_counter()
        send = p.send
        for _ in range(n):
            send(topic, value)
        p.flush(120)
        elapsed = time.perf_counter() - start
        p.close()
        return elapsed
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                            auto_offset_reset="earliest", max_poll_records=1000)
    tp = kafka.TopicPartition(topic, 0)
    c.assign([tp])
    c.seek(tp, 0)
    got = 0
    total = 0
    first = {}
    while not first:
        first = c.poll(timeout_ms=10000, max_records=1)
    first = [r for records in first.values() for r in records]
    check(len(first) == 1 and first[0].offset == 0, "first poll: offsets %s",
          [r.offset for r in first])
    nxt = 1
    start = time.perf_counter()
    deadline = time.monotonic() + 300
    while got < n and time.monotonic() < deadline:
        for records in c.poll(timeout_ms=1000, max_records=min(1000, n - got)).values():
            for r in records:
                total += len(r.value)
            got += len(records)
            # Once per batch: contiguous, following the previous batch.
            if records and (records[0].offset != nxt or records[-1].offset != nxt + len(records) - 1):
                check(False, "batch of %d at offsets %s..%s, expected it to start at %d",
                      len(records), records[0].offset, records[-1].offset, nxt)
            nxt += len(records)
    elapsed = time.perf_counter() - start
    check(got == n and total == n * size, "read %d records, %d B; expected %d, %d B",
          got, total, n, n * size)
    check(nxt == n + 1, "last record at offset %d, expected %d", nxt - 1, n)
    pos = c.position(tp)
    check(pos == n + 1, "position %s after the run, expected %d", pos, n + 1)
    c.close()
    return elapsed


def check(ok, fmt, *args):
    """Fails the measurement (and so the whole run) unless `ok`."""
    if not ok:
        raise SystemExit("check failed: " + fmt % args)


def check_produced(bootstrap, topic, expected):
    """The partition's watermarks, read by a separate confluent-kafka consumer in the parent
    (outside the measured process): the fresh topic must hold exactly `expected` records."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check"})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    finally:
        c.close()
    if (low, high) != (0, expected):
        raise SystemExit("check failed: %s holds offsets %d..%d, expected 0..%d (records produced "
                         "and acknowledged)" % (topic, low, high, expected))


# ---- parent --------------------------------------------------------------------------------

def start_broker(binary, workdir):
    cmd = [str(binary), "--override", "listeners=PLAINTEXT://127.0.0.1:0",
           "--override", "log.dirs=%s" % (workdir / "data"), "--override", "num.partitions=1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(workdir / "broker.log", "wb"),
                            stdin=subprocess.DEVNULL)
    buf = b""
    deadline = time.monotonic() + 30
    while b"\n" not in buf:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("broker did not start: %s" % (workdir / "broker.log"))
        if select.select([proc.stdout], [], [], 0.5)[0]:
            buf += os.read(proc.stdout.fileno(), 4096)
    m = LISTENING.match(buf)
    return proc, "%s:%s" % (m.group(1).decode(), m.group(2).decode())


def run_child(client, scenario, bootstrap, topic, n, size):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, __file__, "--child", client, scenario, bootstrap, topic,
                          str(n), str(size)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit("%s %s failed:\n%s" % (client, scenario, out.stderr))
    elapsed = float(out.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if scenario in ("produce", "produce_batch"):
        # Outside the clock and the child's CPU: every record (and the priming one) is in the
        # fresh topic, exactly once.
        check_produced(bootstrap, topic, n + 1)
    return elapsed, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap")
    ap.add_argument("--broker-bin", default=str(REPO / "target" / "release" / "odradek-broker"))
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kafka-python-messages", type=int, default=200_000,
                    help="kafka-python is ~50x slower: it gets fewer messages (rates stay comparable)")
    ap.add_argument("--clients", default="odradek,confluent,confluent-tuned,kafka-python")
    ap.add_argument("--json", help="write raw results here")
    args = ap.parse_args()
    if args.child:
        client, scenario, bootstrap, topic, n, size = args.child
        print(child(client, scenario, bootstrap, topic, int(n), int(size)))
        return

    clients = args.clients.split(",")
    workdir = Path(tempfile.mkdtemp(prefix="odradek-pybench-"))
    broker = None
    try:
        bootstrap = args.bootstrap
        if not bootstrap:
            broker, bootstrap = start_broker(args.broker_bin, workdir)
        n = args.messages
        # The topic every consumer reads: written once, by odradek.
        source = "pybench-source-%d" % os.getpid()
        # One extra message: consumers read n after the first.
        run_child("odradek", "produce", bootstrap, source, n + 1, args.value_size)
        results = {}
        plan = []
        for c in clients:
            plan.append((c, "produce"))
            if c != "kafka-python":
                plan.append((c, "produce_batch"))
            if c != "kafka-python":
                plan.append((c, "poll"))
            plan.append((c, "consume"))
        # Warm-up: every (client, scenario) once with a tenth of the records, not recorded
        # (page cache, broker allocations, the interpreter's imports).
        for client, scenario in plan:
            topic = source if scenario in ("consume", "poll") else \
                "pybench-%s-%s-%d-warmup" % (client, scenario, os.getpid())
            m = max(1, min(n, args.kafka_python_messages) // 10) if client == "kafka-python" \
                else max(1, n // 10)
            run_child(client, scenario, bootstrap, topic, m, args.value_size)
        for r in range(args.rounds):
            for client, scenario in plan:
                topic = source if scenario in ("consume", "poll") else \
                    "pybench-%s-%s-%d-%d" % (client, scenario, os.getpid(), r)
                m = min(n, args.kafka_python_messages) if client == "kafka-python" else n
                elapsed, cpu = run_child(client, scenario, bootstrap, topic, m, args.value_size)
                rate = m / elapsed
                results.setdefault((client, scenario), []).append((rate, cpu / m * 1e6))
                print("round %d %-13s %-14s %10.0f msgs/s  %6.2f CPU s/M msgs"
                      % (r + 1, client, scenario, rate, cpu / m * 1e6), file=sys.stderr, flush=True)
        summary = {}
        for (client, scenario), vals in results.items():
            summary.setdefault(scenario, {})[client] = {
                "msgs_per_s": statistics.median(v[0] for v in vals),
                "cpu_s_per_M": statistics.median(v[1] for v in vals),
                "msgs_per_s_min": min(v[0] for v in vals),
                "msgs_per_s_max": max(v[0] for v in vals),
                "rounds": len(vals),
            }
        print(json.dumps(summary, indent=1))
        if args.json:
            import confluent_kafka
            settings = {"shared_producer": PRODUCER_CONF,
                        "confluent-tuned": dict(TUNED, version=confluent_kafka.__version__,
                                                librdkafka=confluent_kafka.libversion()[0])}
            Path(args.json).write_text(json.dumps({"messages": n, "value_size": args.value_size,
                                                   "rounds": args.rounds, "summary": summary,
                                                   "peer_settings": settings}, indent=1))
        print_table(summary)
    finally:
        if broker is not None:
            broker.send_signal(signal.SIGTERM)
            broker.wait(timeout=60)
        shutil.rmtree(workdir, ignore_errors=True)


def print_table(summary):
    rows = [("produce", "produce() per message"), ("produce_batch", "produce_batch()"),
            ("poll", "poll() per message"), ("consume", "consume(1000)")]
    print("\n| scenario | odradek msgs/s | confluent-kafka msgs/s | confluent-kafka tuned msgs/s | "
          "kafka-python msgs/s | odradek / confluent | odradek / confluent tuned | "
          "odradek CPU s/M | confluent CPU s/M |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    fmt = lambda v: format(int(v), ",") if v else "-"
    ratio = lambda a, b: "%.2fx" % (a / b) if a and b else "-"
    cpu = lambda v: "%.2f" % v if v else "-"
    for key, label in rows:
        s = summary.get(key, {})
        o, c, t, k = (s.get(x, {}).get("msgs_per_s")
                      for x in ("odradek", "confluent", "confluent-tuned", "kafka-python"))
        oc, cc = (s.get(x, {}).get("cpu_s_per_M") for x in ("odradek", "confluent"))
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, fmt(o), fmt(c), fmt(t), fmt(k), ratio(o, c), ratio(o, t), cpu(oc), cpu(cc)))


if __name__ == "__main__":
    main()
