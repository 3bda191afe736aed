#!/usr/bin/env python3
"""Produces messages with delivery reports, confluent-kafka style.

    python examples/python/producer.py [BOOTSTRAP] [TOPIC] [COUNT]

Defaults: 127.0.0.1:9092, topic "odradek-example", 10 messages. Start a broker first, e.g.
``cargo run -p odradek-broker``.
"""
import sys
from typing import List, Optional

from odradek import KafkaError, Message, Producer


def main() -> None:
    bootstrap = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
    topic = sys.argv[2] if len(sys.argv) > 2 else "odradek-example"
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 10

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    failures: List[KafkaError] = []

    def on_delivery(err: Optional[KafkaError], msg: Message) -> None:
        if err is not None:
            failures.append(err)
            print("delivery failed: %s" % err, file=sys.stderr)
        else:
            key = msg.key() or b""
            print("delivered %s to %s [%s] @ %s"
                  % (key.decode(), msg.topic(), msg.partition(), msg.offset()))

    for i in range(count):
        producer.produce(topic, value="message %d" % i, key="key-%d" % i,
                         headers=[("source", b"example")], on_delivery=on_delivery)
        producer.poll(0)  # serve delivery reports of earlier messages
    left = producer.flush(30)
    if left or failures:
        sys.exit("%d messages not delivered" % (left + len(failures)))


if __name__ == "__main__":
    main()
