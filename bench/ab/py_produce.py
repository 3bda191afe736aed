#!/usr/bin/env python3
"""One producer measurement for bench/ab/producer_ab.sh, in the interpreter of the venv whose
odradek wheel is measured.

    py_produce.py BOOTSTRAP TOPIC COUNT SIZE produce|produce_batch

produce: produce() per record with a delivery callback, poll(0) every 1000, then flush();
produce_batch: produce_batch() with lists of 10,000 values. Checks that every record was
reported delivered and prints one JSON line: msgs_per_s, cpu_s (user+sys of this process).
"""
import json
import resource
import sys
import time

import odradek

bootstrap, topic, count, size, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
p = odradek.Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5,
                      "batch.size": 131072, "enable.idempotence": False})
value = b"x" * size
delivered = failed = 0


def on_delivery(err, msg):
    global delivered, failed
    if err is None:
        delivered += 1
    else:
        failed += 1


# Warm the topic's metadata so the measurement starts with the producer ready.
p.produce(topic, b"warm-up", on_delivery=on_delivery)
p.flush(30)
delivered = failed = 0
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
if mode == "produce":
    for i in range(count):
        p.produce(topic, value, on_delivery=on_delivery)
        if i % 1000 == 0:
            p.poll(0)
else:
    chunk = [value] * 10_000
    left = count
    while left:
        n = min(left, len(chunk))
        p.produce_batch(topic, chunk[:n], on_delivery=on_delivery)
        left -= n
        p.poll(0)
remaining = p.flush(120)
elapsed = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
if remaining or failed or delivered != count:
    sys.exit(f"py_produce: {delivered} delivered, {failed} failed, {remaining} outstanding of {count}")
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"msgs_per_s": count / elapsed, "cpu_s": cpu}))
