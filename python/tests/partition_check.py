#!/usr/bin/env python3
"""Partitioner parity: where each partitioner puts keyed records.

    python partition_check.py confluent|odradek BOOTSTRAP TOPIC

TOPIC must exist with several partitions. For the default partitioner and each librdkafka
partitioner name, produces keys k0..k199 and the empty and null keys where the partitioner
hashes them, and prints one JSON object: {partitioner: [partition per record]}. Run on both
clients, the outputs must be equal.
"""
import json
import sys

CLIENT, BOOTSTRAP, TOPIC = sys.argv[1], sys.argv[2], sys.argv[3]
if CLIENT == "confluent":
    from confluent_kafka import Producer
elif CLIENT == "odradek":
    from odradek import Producer
else:
    sys.exit("usage: partition_check.py confluent|odradek BOOTSTRAP TOPIC")

# Null keys are spread (sticky or at random) by the *_random partitioners, empty keys too by
# consistent_random: not comparable there.
HASHES_NULL = {"consistent", "murmur2", "fnv1a"}
SPREADS_EMPTY = {"default", "consistent_random"}
KEYS = [b"k%d" % i for i in range(200)]

out = {}
for name in ["default", "consistent_random", "consistent", "murmur2_random", "murmur2",
             "fnv1a_random", "fnv1a"]:
    conf = {"bootstrap.servers": BOOTSTRAP, "linger.ms": 0}
    if name != "default":
        conf["partitioner"] = name
    p = Producer(conf)
    placed = {}

    def report(err, msg, i):
        if err is not None:
            raise SystemExit("%s: delivery failed: %s" % (name, err))
        placed[i] = msg.partition()

    keys = KEYS + ([] if name in SPREADS_EMPTY else [b""]) + ([None] if name in HASHES_NULL else [])
    for i, key in enumerate(keys):
        p.produce(TOPIC, value=b"v", key=key, on_delivery=lambda err, msg, i=i: report(err, msg, i))
    if p.flush(30) != 0:
        raise SystemExit("%s: flush left records" % name)
    out[name] = [placed[i] for i in range(len(keys))]
print(json.dumps(out))
