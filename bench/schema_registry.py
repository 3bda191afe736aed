#!/usr/bin/env python3
"""Avro through the Schema Registry in Python: odradek vs confluent-kafka, interleaved in one run.

For each round and each library (order alternating per round), against one release
`odradek-broker --schema-registry` started here:
  serialize+produce   AvroSerializer(obj) -> Producer.produce, until flush() has every
                      delivery report (all must succeed);
  consume+deserialize Consumer from the beginning of that topic -> AvroDeserializer, until
                      every record is read back (ids checked, and each value compared with
                      what was written);
  serialize only / deserialize only, in memory (no Kafka), for the codec alone.
Each library uses its own Producer/Consumer (odradek's Rust core / librdkafka) and its own
AvroSerializer/AvroDeserializer (Rust / fastavro). Prints a table (median of rounds, min-max)
and writes --json.

  bench/schema_registry.sh [--messages N] [--rounds R]
"""
import argparse
import datetime
import decimal
import json
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SCHEMA = json.dumps({"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": "string"},
    {"name": "email", "type": ["null", "string"], "default": None},
    {"name": "amount", "type": "double"},
    {"name": "quantity", "type": "int"},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
    {"name": "note", "type": "string"}]})


def make_orders(n):
    base = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    return [{"id": i, "customer": "customer-%d" % (i % 1000), "email": None if i % 3 else "c%d@example.com" % i,
             "amount": i * 1.25, "quantity": i % 17, "status": ("NEW", "PAID", "SHIPPED")[i % 3],
             "tags": ["t%d" % (i % 5), "bench"], "created": base + datetime.timedelta(milliseconds=i),
             "price": decimal.Decimal("%d.%02d" % (i % 10000, i % 100)), "note": "x" * 40} for i in range(n)]


def start_stack(binary):
    workdir = tempfile.mkdtemp(prefix="sr-bench-")
    proc = subprocess.Popen([binary, "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                             "--override", "log.dirs=%s/data" % workdir, "--schema-registry", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=open(os.path.join(workdir, "stderr.log"), "wb"))
    buf = b""
    deadline = time.monotonic() + 60
    while buf.count(b"\n") < 2:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("broker did not start: %r" % buf)
        if select.select([proc.stdout], [], [], 0.5)[0]:
            buf += os.read(proc.stdout.fileno(), 4096)
    addrs = re.findall(rb"listening on (\S+)", buf)
    return proc, addrs[0].decode(), addrs[1].decode()


def libs():
    import confluent_kafka
    import confluent_kafka.schema_registry as csr
    import confluent_kafka.schema_registry.avro as cavro
    import confluent_kafka.serialization as cser

    import odradek
    import odradek.schema_registry as osr
    import odradek.schema_registry.avro as oavro
    import odradek.serialization as oser
    return {
        "odradek": (odradek, osr, oavro, oser),
        "confluent-kafka": (confluent_kafka, csr, cavro, cser),
    }


def run_produce(lib, bootstrap, url, topic, orders):
    kafka, sr, avro, ser = lib
    client = sr.SchemaRegistryClient({"url": url})
    serializer = avro.AvroSerializer(client, SCHEMA)
    ctx = ser.SerializationContext(topic, ser.MessageField.VALUE)
    serializer(orders[0], ctx)  # registers (outside the timing)
    p = kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 262144})
    delivered = [0]
    failed = []

    def report(err, msg):
        if err is None:
            delivered[0] += 1
        else:
            failed.append(err)

    t0 = time.perf_counter()
    for o in orders:
        value = serializer(o, ctx)
        while True:
            try:
                p.produce(topic, value=value, on_delivery=report)
                break
            except BufferError:
                p.poll(0.01)
        p.poll(0)
    left = p.flush(120)
    dt = time.perf_counter() - t0
    if left or failed or delivered[0] != len(orders):
        raise SystemExit("produce: %d delivered, %d failed, %d left" % (delivered[0], len(failed), left))
    return dt


def run_consume(lib, bootstrap, url, topic, orders):
    kafka, sr, avro, ser = lib
    client = sr.SchemaRegistryClient({"url": url})
    deserializer = avro.AvroDeserializer(client)
    ctx = ser.SerializationContext(topic, ser.MessageField.VALUE)
    c = kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-" + topic,
                        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    n = len(orders)
    out = []
    t0 = None
    deadline = time.monotonic() + 180
    while len(out) < n and time.monotonic() < deadline:
        msgs = c.consume(10000, 1.0)
        if msgs and t0 is None:
            t0 = time.perf_counter()
        for m in msgs:
            if m.error() is None:
                out.append(deserializer(m.value(), ctx))
    dt = time.perf_counter() - (t0 or time.perf_counter())
    c.close()
    if len(out) != n:
        raise SystemExit("consume: read %d of %d" % (len(out), n))
    out.sort(key=lambda v: v["id"])
    if out != orders:
        bad = next(i for i, (a, b) in enumerate(zip(out, orders)) if a != b)
        raise SystemExit("consume: record %d differs: %r != %r" % (bad, out[bad], orders[bad]))
    return dt


def run_codec(lib, url, topic, orders):
    kafka, sr, avro, ser = lib
    client = sr.SchemaRegistryClient({"url": url})
    s, d = avro.AvroSerializer(client, SCHEMA), avro.AvroDeserializer(client)
    ctx = ser.SerializationContext(topic, ser.MessageField.VALUE)
    s(orders[0], ctx)
    t0 = time.perf_counter()
    data = [s(o, ctx) for o in orders]
    t1 = time.perf_counter()
    back = [d(b, ctx) for b in data]
    t2 = time.perf_counter()
    if back != orders:
        raise SystemExit("codec round trip differs")
    return t1 - t0, t2 - t1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--broker-bin", required=True)
    ap.add_argument("--json")
    args = ap.parse_args()
    orders = make_orders(args.messages)
    proc, bootstrap, url = start_stack(args.broker_bin)
    results = {}
    try:
        impls = libs()
        names = list(impls)
        for r in range(args.rounds):
            order = names if r % 2 == 0 else list(reversed(names))
            for name in order:
                topic = "bench-%s-%d-%d" % (name.replace("-", ""), r, os.getpid())
                res = results.setdefault(name, {"serialize+produce": [], "consume+deserialize": [],
                                                "serialize only": [], "deserialize only": []})
                res["serialize+produce"].append(args.messages / run_produce(impls[name], bootstrap, url, topic, orders))
                res["consume+deserialize"].append(args.messages / run_consume(impls[name], bootstrap, url, topic, orders))
                s, d = run_codec(impls[name], url, topic, orders)
                res["serialize only"].append(args.messages / s)
                res["deserialize only"].append(args.messages / d)
                print("round %d %-16s %s" % (r + 1, name, "  ".join("%s %.0f/s" % (k, v[-1]) for k, v in res.items())),
                      file=sys.stderr)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    import confluent_kafka
    import fastavro
    print("\n%d records of a 10-field Avro record (%d rounds, median and min-max, msgs/s)" % (args.messages, args.rounds))
    print("| scenario | odradek | confluent-kafka %s (fastavro %s) | ratio |" % (confluent_kafka.__version__, fastavro.__version__))
    print("|---|---|---|---|")
    summary = {}
    for scen in results["odradek"]:
        o, c = results["odradek"][scen], results["confluent-kafka"][scen]
        mo, mc = statistics.median(o), statistics.median(c)
        summary[scen] = {"odradek": o, "confluent-kafka": c, "ratio": mo / mc}
        print("| %s | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) | %.2fx |" % (scen, mo, min(o), max(o), mc, min(c), max(c), mo / mc))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"messages": args.messages, "rounds": args.rounds, "results": summary}, f, indent=1)


if __name__ == "__main__":
    main()
