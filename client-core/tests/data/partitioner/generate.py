"""Record which partition librdkafka's `murmur2_random` partitioner (confluent-kafka) picks for
a set of keys and partition counts, as a test vector for Odradek's partitioner.

Usage (from the repository root, with a broker running, e.g. odradek-broker or Apache Kafka):
    $(tests/compat/python-peers.sh install) client-core/tests/data/partitioner/generate.py HOST:PORT

The partition is taken from librdkafka's delivery reports, i.e. the peer's own choice, not from
a re-implementation of the hash. Writes librdkafka_murmur2_random.json beside this script.
"""
import json
import sys
import time
import uuid
from pathlib import Path

import confluent_kafka
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def keys():
    out = [b"", b"a", b"ab", b"abc", b"abcd", b"abcde", b"21", b"foobar", "ключ".encode(), bytes(range(256))]
    out += [("key-%d" % i).encode() for i in range(200)]
    out += [uuid.UUID(int=i * 7919).bytes for i in range(50)]
    return out


def main():
    bootstrap = sys.argv[1]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    result = {"peer": "librdkafka %s (confluent-kafka %s), partitioner=murmur2_random"
              % (confluent_kafka.libversion()[0], confluent_kafka.version()[0]), "cases": []}
    for partitions in (1, 3, 7, 16, 100):
        topic = "partitioner-vector-%d-%d" % (partitions, int(time.time()))
        fs = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
        fs[topic].result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5})
        chosen = {}

        def report(err, msg, key_hex=None):
            assert err is None, err
            chosen[key_hex] = msg.partition()

        for k in keys():
            producer.produce(topic, key=k, value=b"v", on_delivery=lambda e, m, kh=k.hex(): report(e, m, kh))
        producer.flush(30)
        assert len(chosen) == len(set(k.hex() for k in keys())), "every delivery reported"
        for k in keys():
            result["cases"].append({"key_hex": k.hex(), "partitions": partitions, "partition": chosen[k.hex()]})
    out = Path(__file__).with_name("librdkafka_murmur2_random.json")
    out.write_text(json.dumps(result, indent=0) + "\n")
    print("wrote %d cases to %s" % (len(result["cases"]), out))


if __name__ == "__main__":
    main()
