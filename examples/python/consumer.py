#!/usr/bin/env python3
"""Reads every partition of a topic from the beginning to the end and exits.

    python examples/python/consumer.py [BOOTSTRAP] [TOPIC]

Uses assign() (see consumer_group.py for subscribe) and enable.partition.eof to know
when each partition has been read to its end.
"""
import sys
from typing import Set

from odradek import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition


def main() -> None:
    bootstrap = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
    topic = sys.argv[2] if len(sys.argv) > 2 else "odradek-example"

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "odradek-example",
        "enable.partition.eof": True,
    })
    metadata = consumer.list_topics(topic, timeout=10)
    partitions = sorted(metadata.topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])

    at_end: Set[int] = set()
    count = 0
    try:
        while len(at_end) < len(partitions):
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition() or 0)
                    continue
                raise KafkaException(err)
            count += 1
            at_end.discard(msg.partition() or 0)
            print("%s [%s] @ %s: key=%r value=%r headers=%r"
                  % (msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                     msg.headers()))
    finally:
        consumer.close()
    print("read %d messages from %d partitions" % (count, len(partitions)))


if __name__ == "__main__":
    main()
