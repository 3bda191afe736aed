"""Test your consumer's retry logic against a broker that fails the first two commits.

Run with pytest in a project that has odradek installed (its pytest plugin provides the
``kafka_cluster`` fixture); the application code uses confluent-kafka's API, so it runs the same
with ``from confluent_kafka import ...``::

    pytest examples/python/test_commit_retry.py
"""
import time

import pytest

from odradek import Consumer, KafkaException, Producer, TopicPartition


# ---- the application code under test ------------------------------------------------------
def commit_with_retry(consumer, attempts=5, backoff_s=0.1):
    """Commits synchronously, retrying errors Kafka calls retriable; returns the attempts used."""
    for attempt in range(1, attempts + 1):
        try:
            consumer.commit(asynchronous=False)
            return attempt
        except KafkaException as e:
            if not e.args[0].retriable() or attempt == attempts:
                raise
            time.sleep(backoff_s * attempt)
    raise AssertionError("unreachable")


def process_batch(consumer, count, timeout_s=30.0):
    """Reads `count` records, then commits them; returns (values, commit attempts)."""
    values = []
    deadline = time.time() + timeout_s
    while len(values) < count and time.time() < deadline:
        msg = consumer.poll(0.1)
        if msg is not None and msg.error() is None:
            values.append(msg.value())
    return values, commit_with_retry(consumer)


# ---- the test -------------------------------------------------------------------------------
@pytest.mark.kafka_cluster(topics={"orders": 1}, record_requests=True)
def test_the_consumer_retries_two_failed_commits(kafka_cluster, kafka_bootstrap):
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(3):
        producer.produce("orders", value=b"order-%d" % i)
    producer.flush(10)

    # The broker refuses the next two OffsetCommit requests, as a coordinator that is moving.
    kafka_cluster.push_request_errors("OffsetCommit", ["COORDINATOR_NOT_AVAILABLE"] * 2)

    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "billing",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["orders"])
    values, attempts = process_batch(consumer, 3)
    committed = consumer.committed([TopicPartition("orders", 0)], timeout=10)[0].offset
    consumer.close()

    assert values == [b"order-0", b"order-1", b"order-2"]
    assert committed == 3
    commits = [r for r in kafka_cluster.requests() if r.api_name == "OffsetCommit"]
    # Two refused, then accepted: by the client library's own retry of coordinator errors or by
    # commit_with_retry (attempts > 1), whichever the library leaves to the application.
    assert [r.error for r in commits] == ["COORDINATOR_NOT_AVAILABLE"] * 2 + [None]
    assert 1 <= attempts <= 3
