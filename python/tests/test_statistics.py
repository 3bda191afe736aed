"""Statistics (`statistics.interval.ms` + `stats_cb`) in librdkafka's schema: ours and
confluent-kafka's, from a running producer and consumer on the same broker, validate against
one JSON schema written from librdkafka's STATISTICS.md (docs/statistics.schema.json); the
numbers ours reports (lag, delivered counts, windows) are the ones the work implies."""
import json
import time
from pathlib import Path

import confluent_kafka
import jsonschema
import pytest

import odradek

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "statistics.schema.json").read_text())
CLIENTS = {"odradek": odradek, "confluent_kafka": confluent_kafka}


def wait_for(stats, poll, pred, timeout=20):
    """Polls until a snapshot satisfies `pred`; returns it parsed."""
    deadline = time.monotonic() + timeout
    while True:
        for s in reversed(stats):
            doc = json.loads(s)
            if pred(doc):
                return doc
        assert time.monotonic() < deadline, stats[-1:] or "no statistics"
        poll(0.1)


def run_producer(kafka, bootstrap, topic, n):
    stats = []
    p = kafka.Producer({"bootstrap.servers": bootstrap, "statistics.interval.ms": 100,
                        "stats_cb": stats.append, "enable.idempotence": True,
                        "linger.ms": 5})
    for i in range(n):
        p.produce(topic, b"value-%d" % i, partition=0)
    assert p.flush(30) == 0
    doc = wait_for(stats, p.poll, lambda d: d["txmsgs"] >= n)
    p.flush(10)
    return doc, stats


def run_consumer(kafka, bootstrap, topic, group, consume, commit_at):
    stats = []
    c = kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                        "auto.offset.reset": "earliest", "enable.auto.commit": False,
                        "statistics.interval.ms": 100, "stats_cb": stats.append})
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 30
    while got < consume:
        assert time.monotonic() < deadline, got
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got += 1
    c.commit(offsets=[kafka.TopicPartition(topic, 0, commit_at)], asynchronous=False)

    def settled(d):
        part = d.get("topics", {}).get(topic, {}).get("partitions", {}).get("0")
        return part is not None and part["committed_offset"] == commit_at \
            and part["hi_offset"] >= 0 and "cgrp" in d

    doc = wait_for(stats, c.poll, settled)
    c.close()
    return doc


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_producer_and_consumer_statistics_validate_against_the_schema(
        bootstrap, client, topic):
    kafka = CLIENTS[client]
    producer_doc, _ = run_producer(kafka, bootstrap, topic, 100)
    jsonschema.validate(producer_doc, SCHEMA)
    assert producer_doc["type"] == "producer" and "eos" in producer_doc
    consumer_doc = run_consumer(kafka, bootstrap, topic, "stats-" + client, 100, 60)
    jsonschema.validate(consumer_doc, SCHEMA)
    assert consumer_doc["type"] == "consumer" and "cgrp" in consumer_doc


def test_our_consumer_lag_and_offsets(bootstrap, topic):
    run_producer(odradek, bootstrap, topic, 100)
    doc = run_consumer(odradek, bootstrap, topic, "stats-lag", 100, 60)
    part = doc["topics"][topic]["partitions"]["0"]
    assert part["hi_offset"] == 100 and part["lo_offset"] == 0
    assert part["committed_offset"] == 60 and part["commited_offset"] == 60
    # librdkafka's lag: high watermark minus the committed offset; the stored one is at the end
    # (enable.auto.offset.store stored every record handed out).
    assert part["consumer_lag"] == 40
    assert part["stored_offset"] == 100 and part["consumer_lag_stored"] == 0
    assert part["app_offset"] == 100 and part["rxmsgs"] == 100
    assert doc["rxmsgs"] == 100
    assert part["fetch_state"] == "active" and part["leader"] >= 0
    cgrp = doc["cgrp"]
    assert cgrp["state"] == "up" and cgrp["join_state"] == "steady"
    assert cgrp["assignment_size"] == 3 and cgrp["rebalance_cnt"] >= 1
    assert "GroupCoordinator" in doc["brokers"]


def test_our_producer_counts_deliveries_batches_and_round_trips(bootstrap, topic):
    doc, stats = run_producer(odradek, bootstrap, topic, 100)
    assert doc["txmsgs"] == 100 and doc["msg_cnt"] == 0
    part = doc["topics"][topic]["partitions"]["0"]
    assert part["txmsgs"] == 100 and part["msgq_cnt"] == 0 and part["msgs_inflight"] == 0
    eos = doc["eos"]
    assert eos["idemp_state"] == "Assigned" and eos["producer_id"] >= 0
    assert eos["epoch_cnt"] == 1
    docs = [json.loads(s) for s in stats]
    # Windows restart at every emission: summed over all of them, every batch and every
    # response is sampled exactly once.
    batches = sum(d["topics"].get(topic, {}).get("batchcnt", {}).get("sum", 0) for d in docs)
    assert batches == 100
    leaders = [b for d in docs for b in d["brokers"].values() if b["source"] == "learned"]
    assert sum(b["rtt"]["cnt"] for b in leaders) >= 1
    up = [b for b in doc["brokers"].values() if b["state"] == "UP" and b["source"] == "learned"]
    assert up and up[0]["req"].get("Produce", 0) >= 1
    assert up[0]["toppars"] == {"%s-0" % topic: {"topic": topic, "partition": 0}}
