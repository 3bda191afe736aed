#!/usr/bin/env python3
"""Joins a consumer group, reads what is there, commits, and leaves.

    python examples/python/consumer_group.py [BOOTSTRAP] [TOPIC] [GROUP] [COUNT]

subscribe() with rebalance callbacks (they run inside poll(), on this thread), manual commits
after processing (enable.auto.commit off), and close() to leave the group. Run it twice with
the same GROUP: the second run starts where the first one committed.
"""
import sys
from typing import List

from odradek import Consumer, KafkaError, KafkaException, TopicPartition


def on_assign(consumer: Consumer, partitions: List[TopicPartition]) -> None:
    print("assigned: %s" % sorted(p.partition for p in partitions))


def on_revoke(consumer: Consumer, partitions: List[TopicPartition]) -> None:
    print("revoked: %s" % sorted(p.partition for p in partitions))


def main() -> None:
    bootstrap = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
    topic = sys.argv[2] if len(sys.argv) > 2 else "odradek-example"
    group = sys.argv[3] if len(sys.argv) > 3 else "odradek-example-group"
    want = int(sys.argv[4]) if len(sys.argv) > 4 else 10

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    count = 0
    idle = 0
    try:
        while count < want and idle < 30:
            msg = consumer.poll(1.0)
            if msg is None:
                idle += 1
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(err)
            idle = 0
            count += 1
            print("%s [%s] @ %s: %r" % (msg.topic(), msg.partition(), msg.offset(), msg.value()))
        if count:
            committed = consumer.commit(asynchronous=False) or []
            print("committed: %s" % sorted((tp.partition, tp.offset) for tp in committed
                                          if tp.offset >= 0))
    finally:
        consumer.close()
    print("group %s read %d messages" % (group, count))


if __name__ == "__main__":
    main()
