"""Consumer: assign / seek / poll / consume, watermarks, offsets_for_times, partition EOF,
pause / resume, positions, and the group APIs that are not supported yet."""
import json
import time

import pytest

import odradek
from odradek import Consumer, KafkaError, KafkaException, TopicPartition

from conftest import consume_all, produce_n


def test_assign_poll_from_beginning(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 50, partition=0)
    c = Consumer(consumer_conf)
    c.assign([TopicPartition(topic, 0, odradek.OFFSET_BEGINNING)])
    assert c.assignment() == [TopicPartition(topic, 0)]
    msgs = consume_all(c, 50)
    assert [m.offset() for m in msgs] == list(range(50))
    assert msgs[7].value() == b"value-7" and msgs[7].key() == b"key-7"
    assert msgs[0].topic() == topic and msgs[0].partition() == 0
    assert msgs[0].timestamp()[0] == odradek.TIMESTAMP_CREATE_TIME
    assert c.poll(0.2) is None
    c.close()


def test_assign_at_offset_and_seek(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 20, partition=1)
    c = Consumer(consumer_conf)
    c.assign([TopicPartition(topic, 1, 15)])
    assert [m.offset() for m in consume_all(c, 5)] == [15, 16, 17, 18, 19]
    c.seek(TopicPartition(topic, 1, 3))
    assert [m.offset() for m in consume_all(c, 2)] == [3, 4]
    c.seek(TopicPartition(topic, 1, odradek.OFFSET_BEGINNING))
    assert consume_all(c, 1)[0].offset() == 0
    c.seek(TopicPartition(topic, 1, odradek.OFFSET_END))
    assert c.position([TopicPartition(topic, 1)])[0].offset == 20
    assert c.poll(0.3) is None
    produce_n(bootstrap, topic, 1, partition=1, value=lambda i: b"late")
    late = consume_all(c, 1)
    assert late[0].value() == b"late" and late[0].offset() == 20
    with pytest.raises(KafkaException) as ei:
        c.seek(TopicPartition(topic, 2, 0))
    assert ei.value.args[0].code() == KafkaError._STATE
    c.close()


def test_consume_batches(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 300, partition=2)
    c = Consumer(consumer_conf)
    c.assign([TopicPartition(topic, 2, 0)])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 300 and time.monotonic() < deadline:
        batch = c.consume(num_messages=100, timeout=1.0)
        assert len(batch) <= 100
        got.extend(batch)
    assert [m.offset() for m in got] == list(range(300))
    assert c.consume(10, timeout=0.2) == []
    with pytest.raises(ValueError):
        c.consume(2_000_000, 0)
    c.close()


def test_latest_offset_reset_starts_at_the_end(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 5, partition=0)
    c = Consumer(dict(consumer_conf, **{"auto.offset.reset": "latest"}))
    c.assign([TopicPartition(topic, 0)])
    assert c.position([TopicPartition(topic, 0)])[0].offset == 5
    produce_n(bootstrap, topic, 1, partition=0, value=lambda i: b"new")
    (m,) = consume_all(c, 1)
    assert m.value() == b"new" and m.offset() == 5
    c.close()


def test_watermarks_and_positions(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 12, partition=0)
    c = Consumer(consumer_conf)
    tp = TopicPartition(topic, 0, 4)
    c.assign([tp])
    assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 12)
    assert c.get_watermark_offsets(TopicPartition(topic, 0), cached=True) == (0, 12)
    consume_all(c, 3)
    (pos,) = c.position([TopicPartition(topic, 0)])
    assert pos.offset == 7 and pos.error is None
    c.close()


def test_offsets_for_times(bootstrap, consumer_conf, topic):
    base = 1_650_000_000_000
    p = odradek.Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        p.produce(topic, b"v%d" % i, partition=0, timestamp=base + i * 1000)
    assert p.flush(10) == 0
    c = Consumer(consumer_conf)
    for i in range(3):
        p.produce(topic, b"w%d" % i, partition=1, timestamp=base + i * 1000)
    assert p.flush(10) == 0
    res = c.offsets_for_times([TopicPartition(topic, 0, base + 3500),
                               TopicPartition(topic, 1, base - 1)], timeout=10)
    assert [(r.partition, r.offset) for r in res] == [(0, 4), (1, 0)]
    (after,) = c.offsets_for_times([TopicPartition(topic, 0, base + 60_000)], timeout=10)
    assert after.offset == -1
    c.close()


def test_partition_eof_events(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 3, partition=0)
    produce_n(bootstrap, topic, 2, partition=1)
    c = Consumer(dict(consumer_conf, **{"enable.partition.eof": True}))
    c.assign([TopicPartition(topic, p, odradek.OFFSET_BEGINNING) for p in range(3)])
    records, eofs = [], {}
    deadline = time.monotonic() + 20
    while len(eofs) < 3 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error() is not None:
            assert m.error().code() == KafkaError._PARTITION_EOF
            assert m.error() == KafkaError._PARTITION_EOF
            eofs[m.partition()] = m.offset()
            assert m.topic() == topic
        else:
            records.append(m)
    assert eofs == {0: 3, 1: 2, 2: 0}
    assert len(records) == 5
    # Once per arrival at the end: nothing more until new data is consumed.
    assert c.poll(0.3) is None
    produce_n(bootstrap, topic, 1, partition=2)
    m = consume_all(c, 1)[0]
    assert m.partition() == 2
    deadline = time.monotonic() + 10
    ev = None
    while ev is None and time.monotonic() < deadline:
        ev = c.poll(0.5)
    assert ev is not None and ev.error().code() == KafkaError._PARTITION_EOF and ev.offset() == 1
    c.close()


def test_pause_resume(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 5, partition=0)
    produce_n(bootstrap, topic, 5, partition=1)
    c = Consumer(consumer_conf)
    tps = [TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)]
    c.assign(tps)
    c.pause([TopicPartition(topic, 0)])
    got = consume_all(c, 5)
    assert {m.partition() for m in got} == {1}
    assert c.poll(0.3) is None
    # Records already fetched for a partition paused afterwards are held back too.
    c.resume([TopicPartition(topic, 0)])
    first = consume_all(c, 1)
    assert first[0].partition() == 0
    c.pause([TopicPartition(topic, 0)])
    assert c.poll(0.3) is None
    c.seek(TopicPartition(topic, 0, 0))
    c.resume([TopicPartition(topic, 0)])
    got = consume_all(c, 5)
    assert {m.partition() for m in got} == {0}
    c.close()


def test_incremental_assign_and_unassign(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 2, partition=0)
    produce_n(bootstrap, topic, 2, partition=1)
    c = Consumer(consumer_conf)
    c.incremental_assign([TopicPartition(topic, 0, 0)])
    c.incremental_assign([TopicPartition(topic, 1, 1)])
    assert sorted(c.assignment()) == [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    got = consume_all(c, 3)
    assert sorted((m.partition(), m.offset()) for m in got) == [(0, 0), (0, 1), (1, 1)]
    c.incremental_unassign([TopicPartition(topic, 0)])
    assert c.assignment() == [TopicPartition(topic, 1)]
    c.unassign()
    assert c.assignment() == []
    c.close()


def test_offset_reset_none_reports_no_offset(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 1, partition=0)
    c = Consumer(dict(consumer_conf, **{"auto.offset.reset": "none"}))
    c.assign([TopicPartition(topic, 0)])
    m = c.poll(5)
    assert m is not None and m.error() is not None
    assert m.error().code() == KafkaError._NO_OFFSET
    c.close()


def test_closed_consumer_raises_runtime_error(consumer_conf, topic):
    c = Consumer(consumer_conf)
    c.close()
    c.close()  # idempotent
    for call in (lambda: c.poll(0), lambda: c.consume(1, 0), lambda: c.assign([]),
                 lambda: c.assignment()):
        with pytest.raises(RuntimeError, match="Consumer closed"):
            call()


def test_consumer_list_topics_and_stats(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 1, partition=0)
    stats = []
    c = Consumer(dict(consumer_conf, **{"statistics.interval.ms": 50}), stats_cb=stats.append)
    c.assign([TopicPartition(topic, 0, 0)])
    md = c.list_topics(topic, timeout=10)
    assert sorted(md.topics[topic].partitions) == [0, 1, 2]
    deadline = time.monotonic() + 10
    while not stats and time.monotonic() < deadline:
        c.poll(0.1)
    s = json.loads(stats[0])
    assert s["type"] == "consumer"
    assert sorted(s["topics"][topic]["partitions"]) == ["0"]
    c.close()


def test_poll_zero_returns_fetched_messages(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 20, partition=0)
    c = Consumer(consumer_conf)
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 20 and time.monotonic() < deadline:
        m = c.poll(0)
        if m is not None and m.error() is None:
            got.append(m.offset())
        batch = c.consume(5, 0)
        got.extend(m.offset() for m in batch if m.error() is None)
    assert sorted(got) == list(range(20))
    c.close()


def test_resilience_settings_are_honoured_or_refused(bootstrap):
    """client.rack and metadata.recovery.* reach the core (issue 27); a bad strategy is named."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "rack-check", "client.rack": "rack-1",
                  "metadata.recovery.strategy": "none",
                  "metadata.recovery.rebootstrap.trigger.ms": 60000})
    c.close()
    with pytest.raises(KafkaException) as ei:
        Consumer({"bootstrap.servers": bootstrap, "group.id": "g",
                  "metadata.recovery.strategy": "sometimes"})
    assert ei.value.args[0].code() == KafkaError._INVALID_ARG
    assert "metadata.recovery.strategy" in str(ei.value)
