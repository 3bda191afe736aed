"""A librdkafka (confluent-kafka) consumer-group member for mixed-group tests.

Usage: rdkafka_group_member.py BOOTSTRAP GROUP TOPIC STRATEGY

Subscribes to TOPIC in GROUP and prints one JSON line per event on stdout:
  {"event": "assigned" | "revoked" | "lost", "partitions": [...]}
  {"event": "record", "partition": P, "offset": O, "value": "..."}
  {"event": "closed"}
Runs until its stdin is closed, then closes the consumer (committing and leaving the group).
"""

import json
import sys
import threading

from confluent_kafka import Consumer, KafkaError

lock = threading.Lock()


def emit(obj):
    with lock:
        print(json.dumps(obj), flush=True)


def main():
    bootstrap, group, topic, strategy = sys.argv[1:5]
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "partition.assignment.strategy": strategy,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 300,
        "auto.commit.interval.ms": 200,
    })
    stop = threading.Event()

    def wait_for_eof():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()

    def on_assign(c, partitions):
        emit({"event": "assigned", "partitions": [p.partition for p in partitions]})

    def on_revoke(c, partitions):
        emit({"event": "revoked", "partitions": [p.partition for p in partitions]})

    def on_lost(c, partitions):
        emit({"event": "lost", "partitions": [p.partition for p in partitions]})

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    while not stop.is_set():
        msg = consumer.poll(0.1)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() != KafkaError._PARTITION_EOF:
                emit({"event": "error", "error": str(msg.error())})
            continue
        emit({"event": "record", "partition": msg.partition(), "offset": msg.offset(),
              "value": (msg.value() or b"").decode()})
    consumer.close()
    emit({"event": "closed"})


if __name__ == "__main__":
    main()
