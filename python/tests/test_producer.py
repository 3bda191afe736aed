"""Producer: produce / poll / flush, delivery reports (exactly once), keys, headers, timestamps,
errors, metadata, and the parts of confluent-kafka's API that are not supported yet."""
import collections
import time

import pytest

import odradek
from odradek import KafkaError, KafkaException, Producer, TopicPartition

from conftest import consume_all, create_topic, produce_n


def test_produce_flush_reports_each_message_exactly_once(producer_conf, topic):
    p = Producer(producer_conf)
    seen = collections.Counter()
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        seen[msg.value()] += 1

    n = 2000
    for i in range(n):
        p.produce(topic, value=b"m-%d" % i, on_delivery=on_delivery)
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(30) == 0
    assert len(p) == 0
    assert not errors
    assert len(seen) == n and set(seen.values()) == {1}
    # Nothing more is reported later.
    assert p.poll(0.2) == 0
    assert sum(seen.values()) == n


def test_delivery_report_message_fields(producer_conf, topic):
    p = Producer(producer_conf)
    got = []
    p.produce(topic, value="héllo", key="k1", partition=1, timestamp=1_600_000_000_123,
              headers=[("a", b"1"), ("b", None)], callback=lambda e, m: got.append((e, m)))
    assert p.flush(10) == 0
    (err, msg), = got
    assert err is None and msg.error() is None
    assert msg.topic() == topic and msg.partition() == 1 and msg.offset() == 0
    assert msg.value() == "héllo".encode() and msg.key() == b"k1"
    assert msg.timestamp() == (odradek.TIMESTAMP_CREATE_TIME, 1_600_000_000_123)
    assert len(msg) == len("héllo".encode())
    assert msg.latency() is not None and msg.latency() >= 0


def test_global_on_delivery_and_poll_counts(bootstrap, topic):
    got = []
    p = Producer({"bootstrap.servers": bootstrap, "on_delivery": lambda e, m: got.append(m.offset())})
    for i in range(5):
        p.produce(topic, b"x", partition=0)
    deadline = time.monotonic() + 10
    served = 0
    while served < 5 and time.monotonic() < deadline:
        served += p.poll(0.5)
    assert served == 5
    assert sorted(got) == [0, 1, 2, 3, 4]


def test_produce_without_callbacks_and_len(producer_conf, topic):
    p = Producer(producer_conf)
    for _ in range(100):
        p.produce(topic, b"v")
    assert len(p) > 0
    assert p.flush(10) == 0
    assert len(p) == 0


def test_keys_headers_timestamps_round_trip(producer_conf, consumer_conf, topic):
    p = Producer(producer_conf)
    p.produce(topic, value=b"v0", key=b"k0", partition=2, timestamp=1_700_000_000_000,
              headers={"trace": b"abc", "empty": None})
    p.produce(topic, value=None, key=b"tombstone", partition=2, headers=[("dup", b"1"), ("dup", "2")])
    p.produce(topic, value=b"no-key", partition=2)
    assert p.flush(10) == 0
    c = odradek.Consumer(consumer_conf)
    c.assign([TopicPartition(topic, 2, odradek.OFFSET_BEGINNING)])
    m0, m1, m2 = consume_all(c, 3)
    assert (m0.key(), m0.value(), m0.offset()) == (b"k0", b"v0", 0)
    assert m0.timestamp() == (odradek.TIMESTAMP_CREATE_TIME, 1_700_000_000_000)
    assert m0.headers() == [("trace", b"abc"), ("empty", None)]
    assert m1.value() is None and m1.key() == b"tombstone" and len(m1) == 0
    assert m1.headers() == [("dup", b"1"), ("dup", b"2")]
    assert m2.key() is None and m2.headers() is None
    now_ms = time.time() * 1000
    assert abs(m2.timestamp()[1] - now_ms) < 60_000
    c.close()


def test_keyed_records_land_on_the_same_partition(producer_conf, topic):
    p = Producer(producer_conf)
    parts = collections.defaultdict(set)
    for i in range(60):
        key = b"key-%d" % (i % 6)
        p.produce(topic, b"v", key=key, on_delivery=lambda e, m: parts[m.key()].add(m.partition()))
    p.flush(10)
    assert len(parts) == 6 and all(len(s) == 1 for s in parts.values())


def test_message_too_large_raises_from_produce(producer_conf, topic):
    p = Producer(dict(producer_conf, **{"max.request.size": 1000}))
    with pytest.raises(KafkaException) as ei:
        p.produce(topic, b"x" * 5000)
    err = ei.value.args[0]
    assert isinstance(err, KafkaError)
    assert err.code() == KafkaError.MSG_SIZE_TOO_LARGE and err.name() == "MSG_SIZE_TOO_LARGE"
    assert not err.retriable()
    assert "max.request.size" in err.str()


def test_message_too_large_for_the_broker_is_reported(bootstrap, topic):
    topic += "-limited"
    create_topic(bootstrap, topic, 2, {"max.message.bytes": "2000"})
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    got = []
    # A rejected batch fails all its records (as with librdkafka): use two partitions.
    p.produce(topic, b"x" * 10_000, partition=0, on_delivery=lambda e, m: got.append((e, m)))
    p.produce(topic, b"small", partition=1, on_delivery=lambda e, m: got.append((e, m)))
    assert p.flush(20) == 0
    by_value = {m.value(): e for e, m in got}
    assert by_value[b"small"] is None
    err = by_value[b"x" * 10_000]
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_unknown_topic_with_auto_create_off_is_reported(no_autocreate, topic):
    bootstrap, conf = no_autocreate
    missing = topic + "-missing"
    p = Producer(dict(conf, **{"bootstrap.servers": bootstrap, "max.block.ms": 1500}))
    got = []
    p.produce(missing, b"x", on_delivery=lambda e, m: got.append((e, m)))
    # produce() did not block; the report arrives once max.block.ms passed.
    assert p.flush(20) == 0
    (err, msg), = got
    assert err.code() == KafkaError._UNKNOWN_TOPIC, err
    assert msg.topic() == missing and msg.error() == err
    md = p.list_topics(missing, timeout=10)
    assert md.topics[missing].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_records_for_a_missing_topic_fail_together_at_the_delivery_timeout(no_autocreate, topic):
    # The core holds records whose topic has no metadata (librdkafka's unassigned-partition
    # queue): produce() never blocks, and they all fail at their own delivery timeout
    # (message.timeout.ms), not one max.block.ms after another.
    bootstrap, conf = no_autocreate
    missing = topic + "-missing"
    p = Producer(dict(conf, **{"bootstrap.servers": bootstrap, "message.timeout.ms": 2000,
                               "request.timeout.ms": 1000}))
    n = 5000
    reported = []
    start = time.monotonic()
    for i in range(n):
        p.produce(missing, b"%d" % i,
                  on_delivery=lambda e, m: reported.append((time.monotonic(), e.code())))
    produced = time.monotonic() - start
    assert produced < 2.0, f"produce() blocked: {produced:.1f}s for {n} records"
    assert len(p) == n
    assert p.flush(30) == 0
    assert len(reported) == n
    assert {code for _, code in reported} == {KafkaError._UNKNOWN_TOPIC}
    times = [t - start for t, _ in reported]
    # Every record waited its whole timeout (>= 2 s after it was produced), and all of them
    # failed within a second of each other (the old backlog needed n x max.block.ms).
    assert min(times) >= 1.9, min(times)
    assert max(times) - min(times) < 1.0 + produced, (min(times), max(times))


def test_held_records_count_against_buffer_memory(no_autocreate, topic):
    bootstrap, conf = no_autocreate
    missing = topic + "-missing"
    # 4 KiB of buffer: held records of ~1 KiB each fill it, then produce() refuses at once.
    p = Producer(dict(conf, **{"bootstrap.servers": bootstrap, "queue.buffering.max.kbytes": 4,
                               "message.timeout.ms": 2000, "request.timeout.ms": 1000}))
    got = []
    accepted = 0
    with pytest.raises(BufferError) as ei:
        for _ in range(100):
            p.produce(missing, b"x" * 1000, on_delivery=lambda e, m: got.append(e.code()))
            accepted += 1
    assert 1 <= accepted <= 4, accepted
    assert "buffer.memory" in str(ei.value)
    assert len(p) == accepted
    # Once the held records have failed, the buffer takes records again.
    assert p.flush(30) == 0
    assert got == [KafkaError._UNKNOWN_TOPIC] * accepted
    p.produce(missing, b"y", on_delivery=lambda e, m: got.append(e.code()))
    assert p.flush(30) == 0
    assert len(got) == accepted + 1


def test_unknown_partition_raises(producer_conf, topic):
    p = Producer(producer_conf)
    p.produce(topic, b"create it")
    p.flush(10)
    with pytest.raises(KafkaException) as ei:
        p.produce(topic, b"x", partition=99)
    assert ei.value.args[0].code() == KafkaError._UNKNOWN_PARTITION


def test_queue_full_raises_buffer_error(bootstrap, topic):
    p = Producer({"bootstrap.servers": bootstrap, "queue.buffering.max.messages": 10})
    p.produce(topic, b"warm-up", on_delivery=lambda e, m: None)
    p.flush(10)
    with pytest.raises(BufferError):
        for _ in range(1000):
            p.produce(topic, b"x", on_delivery=lambda e, m: None)
    # Serving the reports frees the queue, as with confluent-kafka.
    assert p.flush(10) == 0
    p.produce(topic, b"again")
    assert p.flush(10) == 0


def test_purge_and_backlog(no_autocreate, topic):
    bootstrap, conf = no_autocreate
    p = Producer(dict(conf, **{"bootstrap.servers": bootstrap, "max.block.ms": 3000}))
    got = []
    for i in range(5):
        p.produce(topic + "-missing", b"%d" % i, on_delivery=lambda e, m: got.append(e))
    assert len(p) == 5
    p.purge()
    assert p.flush(20) == 0
    assert len(got) == 5
    # The first record may already be waiting for metadata inside the core (it then fails with
    # _UNKNOWN_TOPIC after max.block.ms); the rest are purged.
    codes = sorted(e.code() for e in got)
    assert codes.count(KafkaError._PURGE_QUEUE) >= 4, codes
    assert set(codes) <= {KafkaError._PURGE_QUEUE, KafkaError._UNKNOWN_TOPIC}


def test_list_topics(producer_conf, topic):
    p = Producer(producer_conf)
    p.produce(topic, b"x")
    p.flush(10)
    md = p.list_topics(timeout=10)
    assert md.brokers and all(b.port > 0 for b in md.brokers.values())
    t = md.topics[topic]
    assert t.error is None and sorted(t.partitions) == [0, 1, 2]
    assert t.partitions[0].leader in md.brokers
    assert t.partitions[1].replicas and t.partitions[1].isrs
    one = p.list_topics(topic, timeout=10)
    assert list(one.topics) == [topic]
    assert p.cluster_id() == md.cluster_id


@pytest.mark.parametrize("method,args", [
    ("init_transactions", (5,)),
    ("begin_transaction", ()),
    ("commit_transaction", (5,)),
    ("abort_transaction", (5,)),
])
def test_transaction_calls_need_a_transactional_id(producer_conf, method, args):
    p = Producer(producer_conf)
    with pytest.raises(KafkaException) as ei:
        getattr(p, method)(*args)
    err = ei.value.args[0]
    assert "transactional.id" in err.str(), err
    assert not err.retriable()


def test_configuration_errors(bootstrap):
    with pytest.raises(KafkaException) as ei:
        Producer({"bootstrap.servers": bootstrap, "no.such.property": 1})
    assert ei.value.args[0].code() == KafkaError._INVALID_ARG
    assert "no.such.property" in str(ei.value)
    with pytest.raises(TypeError):
        Producer({"bootstrap.servers": bootstrap, "error_cb": 5})
    with pytest.raises(TypeError):
        Producer({"bootstrap.servers": bootstrap, "linger.ms": [1]})
    # Python values of every simple type are accepted.
    Producer({"bootstrap.servers": bootstrap, "linger.ms": 5.0, "acks": -1,
              "allow.auto.create.topics": True}, **{"client.id": "kw"})


def test_bad_arguments(producer_conf, topic):
    p = Producer(producer_conf)
    with pytest.raises(TypeError):
        p.produce(topic, value=12)
    with pytest.raises(TypeError):
        p.produce(topic, b"x", headers=[("k",)])
    with pytest.raises(TypeError):
        p.produce(topic, b"x", on_delivery="not callable")
    with pytest.raises(ValueError):
        p.produce(topic, b"x", partition=-5)
    p.produce(topic, bytearray(b"ba"), key=memoryview(b"mv"))
    assert p.flush(10) == 0


def test_stats_and_close(bootstrap, topic):
    stats = []
    p = Producer({"bootstrap.servers": bootstrap, "statistics.interval.ms": 50,
                  "stats_cb": stats.append})
    p.produce(topic, b"x")
    deadline = time.monotonic() + 10
    while not stats and time.monotonic() < deadline:
        p.poll(0.1)
    import json
    s = json.loads(stats[0])
    assert s["type"] == "producer" and "ts" in s
    assert p.close() is True
    with pytest.raises(KafkaException) as ei:
        p.produce(topic, b"after close")
    assert ei.value.args[0].code() == KafkaError._DESTROY


def test_context_manager_flushes(producer_conf, topic):
    got = []
    with Producer(producer_conf) as p:
        p.produce(topic, b"x", on_delivery=lambda e, m: got.append(e))
    assert got == [None]
