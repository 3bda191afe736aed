"""Third-party Kafka clients against odradek-broker.

confluent-kafka (librdkafka) and kafka-python produce to, consume from and administer the
reference broker started by conftest.py; every test checks the bytes and offsets that come back,
not just that the calls returned. Consumers use assign() with explicit offsets and never commit
(the broker has no group coordinator); producers are not idempotent (no InitProducerId).

Run with tests/compat/run_broker_peers.sh (see README.md).
"""
import hashlib
import logging
import random
import time
import uuid
from collections import defaultdict, namedtuple

import pytest
from confluent_kafka import (OFFSET_END, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Consumer,
                             KafkaError, KafkaException, Producer, TopicCollection)
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, NewPartitions, NewTopic, OffsetSpec, ResourceType)
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTP
from kafka.admin import KafkaAdminClient
from kafka.errors import MessageSizeTooLargeError
from kafka.partitioner.default import murmur2

from conftest import broker_binary

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CLIENTS = ["confluent", "kafka-python"]
DEADLINE = 30.0          # seconds allowed for any one produce / consume / admin round
PARTITIONS = 3           # the fixture's num.partitions, used by auto-created topics
BROKER_MAX_MESSAGE = 1048588  # Kafka's default message.max.bytes

# A record to produce: partition None lets the producer's partitioner choose.
Rec = namedtuple("Rec", "key value headers ts partition")
# What a producer reported for one record; error is None on success.
Delivery = namedtuple("Delivery", "partition offset timestamp error")
# One consumed record, normalised across clients; ts_type is "create" or "append".
Got = namedtuple("Got", "partition offset key value headers ts ts_type")


def new_topic(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


def now_ms():
    return int(time.time() * 1000)


def java_partition(key, partitions):
    """The partition murmur2-based partitioners (Java's, kafka-python's, librdkafka's
    murmur2_random) pick for a non-null key."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def short(b, limit=40):
    if b is None:
        return None
    return b if len(b) <= limit else b[:limit] + b"...(%d bytes, sha256 %s)" % (
        len(b), hashlib.sha256(b).hexdigest()[:16].encode())


# ---------------------------------------------------------------------------------------------
# Clients

def ck_logger(name):
    return logging.getLogger("rdkafka." + name)


def ck_producer(bootstrap, codec="none", **extra):
    conf = {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": False,
        "acks": "all",
        "compression.type": codec,
        "linger.ms": 20,
        "partitioner": "murmur2_random",
        "message.timeout.ms": int(DEADLINE * 1000),
        "logger": ck_logger("producer"),
    }
    conf.update(extra)
    return Producer(conf)


def ck_consumer(bootstrap, reset="earliest", **extra):
    conf = {
        "bootstrap.servers": bootstrap,
        # librdkafka insists on a group.id even for assign(); nothing is committed.
        "group.id": "odradek-compat-" + uuid.uuid4().hex[:8],
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": reset,
        "check.crcs": True,
        "fetch.wait.max.ms": 100,
        "logger": ck_logger("consumer"),
    }
    conf.update(extra)
    return Consumer(conf)


def ck_admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap, "logger": ck_logger("admin")})


def kp_producer(bootstrap, codec="none", **extra):
    conf = dict(
        bootstrap_servers=bootstrap,
        enable_idempotence=False,
        acks="all",
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
        request_timeout_ms=int(DEADLINE * 1000),
        delivery_timeout_ms=int(DEADLINE * 1000) + 1000,
        max_block_ms=int(DEADLINE * 1000),
    )
    conf.update(extra)
    return KafkaProducer(**conf)


def kp_consumer(bootstrap, reset="earliest", **extra):
    conf = dict(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset=reset,
        check_crcs=True,
        fetch_max_wait_ms=100,
    )
    conf.update(extra)
    return KafkaConsumer(**conf)


# ---------------------------------------------------------------------------------------------
# Produce

def produce(client, bootstrap, topic, records, codec="none", batches=1, **extra):
    """Produce `records` in `batches` groups (a flush between groups, so they travel in separate
    requests); returns one Delivery per record, in order. Errors are reported, not raised."""
    groups = [records[len(records) * g // batches: len(records) * (g + 1) // batches] for g in range(batches)]
    if client == "confluent":
        return _produce_ck(bootstrap, topic, groups, codec, extra)
    return _produce_kp(bootstrap, topic, groups, codec, extra)


def _produce_ck(bootstrap, topic, groups, codec, extra):
    p = ck_producer(bootstrap, codec, **extra)
    out = []
    for group in groups:
        results = [None] * len(group)

        def report(i):
            def cb(err, msg):
                results[i] = Delivery(msg.partition(), msg.offset(), msg.timestamp(), err)
            return cb

        for i, r in enumerate(group):
            kwargs = dict(value=r.value, key=r.key, headers=r.headers, timestamp=r.ts, on_delivery=report(i))
            if r.partition is not None:
                kwargs["partition"] = r.partition
            p.produce(topic, **kwargs)
        left = p.flush(DEADLINE)
        assert left == 0, "confluent producer: %d records undelivered after %ss" % (left, DEADLINE)
        assert all(x is not None for x in results), "confluent producer: missing delivery reports"
        out.extend(results)
    return out


def _produce_kp(bootstrap, topic, groups, codec, extra):
    p = kp_producer(bootstrap, codec, **extra)
    out = []
    try:
        for group in groups:
            futures = []
            for r in group:
                futures.append(p.send(topic, value=r.value, key=r.key, headers=list(r.headers or []),
                                      partition=r.partition, timestamp_ms=r.ts))
            p.flush(timeout=DEADLINE)
            for f in futures:
                try:
                    md = f.get(timeout=DEADLINE)
                    out.append(Delivery(md.partition, md.offset, md.timestamp, None))
                except Exception as exc:  # the error is part of what tests check
                    out.append(Delivery(None, None, None, exc))
    finally:
        p.close(timeout=10)
    return out


def assert_delivered(deliveries, who):
    bad = [(i, d.error) for i, d in enumerate(deliveries) if d.error is not None]
    assert not bad, "%s: %d of %d records failed, first: %r" % (who, len(bad), len(deliveries), bad[:3])


# ---------------------------------------------------------------------------------------------
# Consume

def consume(client, bootstrap, topic, ends, start=0, reset="earliest", **extra):
    """Read every partition in `ends` ({partition: end offset, exclusive}) from `start` until the
    end offset is reached; returns {partition: [Got]}. Fails on timeout or consumer errors."""
    if client == "confluent":
        return _consume_ck(bootstrap, topic, ends, start, reset, extra)
    if client == "odradek":
        assert start == 0 and not extra, "the odradek dump reads from the beginning only"
        return _consume_odradek(bootstrap, topic, ends)
    return _consume_kp(bootstrap, topic, ends, start, reset, extra)


def _odradek_dump_binary():
    import os
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "target")
    default = os.path.join(target, "debug", "examples", "consume_dump")
    return os.environ.get("ODRADEK_CONSUME_DUMP", default)


def _consume_odradek(bootstrap, topic, ends):
    """Odradek's own consumer (the consume_dump example) reading each partition from offset 0."""
    import json
    import subprocess
    got = defaultdict(list)
    for p, end in ends.items():
        out = subprocess.run([_odradek_dump_binary(), bootstrap, topic, str(p), str(end)],
                             capture_output=True, text=True, timeout=DEADLINE + 10)
        assert out.returncode == 0, "odradek consumer failed: %s" % out.stderr[-2000:]
        for line in out.stdout.splitlines():
            r = json.loads(line)
            unhex = lambda v: None if v is None else bytes.fromhex(v)
            headers = tuple((bytes.fromhex(k).decode(), unhex(v)) for k, v in r["headers"])
            got[p].append(Got(p, r["offset"], unhex(r["key"]), unhex(r["value"]), headers, r["timestamp"],
                              "append" if r["log_append_time"] else "create"))
    return got


def _done(got, ends):
    return all((got[p][-1].offset + 1 if got[p] else -1) >= end for p, end in ends.items())


def _progress(got, ends):
    return {p: (len(got[p]), got[p][-1].offset if got[p] else None, end) for p, end in ends.items()}


def _ck_got(m):
    ts_type, ts = m.timestamp()
    kind = {TIMESTAMP_CREATE_TIME: "create", TIMESTAMP_LOG_APPEND_TIME: "append"}.get(ts_type, ts_type)
    return Got(m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ()), ts, kind)


def _consume_ck(bootstrap, topic, ends, start, reset, extra):
    c = ck_consumer(bootstrap, reset, **extra)
    got = defaultdict(list)
    try:
        c.assign([CkTP(topic, p, start) for p in ends])
        deadline = time.monotonic() + DEADLINE
        while not _done(got, ends):
            assert time.monotonic() < deadline, "confluent consumer: timed out, progress %s" % _progress(got, ends)
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError("confluent consumer error: %s" % m.error())
            got[m.partition()].append(_ck_got(m))
    finally:
        c.close()
    return got


def _kp_got(r):
    kind = {0: "create", 1: "append"}.get(r.timestamp_type, r.timestamp_type)
    return Got(r.partition, r.offset, r.key, r.value, tuple(tuple(h) for h in (r.headers or ())), r.timestamp, kind)


def _consume_kp(bootstrap, topic, ends, start, reset, extra):
    c = kp_consumer(bootstrap, reset, **extra)
    got = defaultdict(list)
    try:
        tps = [KpTP(topic, p) for p in ends]
        c.assign(tps)
        for tp in tps:
            c.seek(tp, start)
        deadline = time.monotonic() + DEADLINE
        while not _done(got, ends):
            assert time.monotonic() < deadline, "kafka-python consumer: timed out, progress %s" % _progress(got, ends)
            for tp, recs in c.poll(timeout_ms=200).items():
                got[tp.partition].extend(_kp_got(r) for r in recs)
    finally:
        c.close()
    return got


def ends_of(deliveries):
    ends = {}
    for d in deliveries:
        ends[d.partition] = max(ends.get(d.partition, 0), d.offset + 1)
    return ends


def check_roundtrip(records, deliveries, got, who, start=0):
    """Every consumed record is the produced one at that (partition, offset), byte for byte;
    offsets are contiguous from `start`; nothing is missing or extra."""
    by_pos = {(d.partition, d.offset): r for r, d in zip(records, deliveries)}
    problems = []
    for p, recs in sorted(got.items()):
        offsets = [g.offset for g in recs]
        end = max((d.offset + 1 for d in deliveries if d.partition == p), default=start)
        if offsets != list(range(start, end)):
            problems.append("partition %d: offsets %s... are not %d..%d" % (p, offsets[:20], start, end - 1))
        for g in recs:
            want = by_pos.get((p, g.offset))
            if want is None:
                problems.append("p%d@%d: consumed a record nobody produced there" % (p, g.offset))
                continue
            want_headers = tuple(tuple(h) for h in (want.headers or ()))
            for field, have, exp in (("key", g.key, want.key), ("value", g.value, want.value),
                                     ("headers", g.headers, want_headers), ("timestamp", g.ts, want.ts),
                                     ("timestamp type", g.ts_type, "create")):
                if have != exp:
                    if isinstance(exp, bytes) or isinstance(have, bytes):
                        have, exp = short(have), short(exp)
                    problems.append("p%d@%d %s: got %r, produced %r" % (p, g.offset, field, have, exp))
    total = sum(len(v) for v in got.values())
    if total != len(records):
        problems.append("consumed %d records, produced %d" % (total, len(records)))
    assert not problems, "%s: %d problems:\n  %s" % (who, len(problems), "\n  ".join(problems[:25]))


# ---------------------------------------------------------------------------------------------
# Test data

def varied_records(n, null_header_values, ts_base):
    """Keys (some null, some binary, repeated so partitioning is observable), values covering all
    256 byte values (some null: tombstones), headers with duplicate keys in significant order,
    empty and (where the client allows) null header values, empty keys and values, and explicit create timestamps that
    are not monotonic within a batch."""
    rng = random.Random(n)
    records = []
    for i in range(n):
        tombstone = i % 11 == 4  # null value; always keyed (kafka-python refuses null key and value)
        key = None if i % 10 == 3 and not tombstone else bytes([i % 7, 0, 255, 0x80]) + b"key-%d" % (i % 23)
        if i % 17 == 8:  # empty (not null) key and value
            key = b""
        if tombstone:
            value = None
        elif i % 17 == 8:
            value = b""
        else:
            length = 1 + (i * 37) % 700
            value = bytes((i * 13 + j) % 256 for j in range(length))
        kind = i % 5
        if kind == 0:
            headers = []
        elif kind == 1:
            headers = [("h", b"first"), ("h", b"second"), ("other", bytes([0, 255, i % 256])), ("h", b"third")]
        elif kind == 2:
            headers = [("\u00fcnic\u00f8de-\u043a\u043b\u044e\u0447", bytes(range(256))), ("e", b"")]
        elif kind == 3:
            headers = [("dup", b"2"), ("dup", b"1"), ("dup", b"2")]
        else:
            headers = [("n", None if null_header_values else b"not-null"), ("n", b"x"), ("z", rng.randbytes(9))]
        partition = (i // 7) % PARTITIONS if i % 7 == 5 else None
        ts = ts_base + ((i * 73) % n) * 5
        records.append(Rec(key, value, headers, ts, partition))
    seen = set()
    for r in records:
        seen.update(r.value or b"")
    assert len(seen) == 256
    return records


# ---------------------------------------------------------------------------------------------
# 1. Round trip: every codec, both producers, both consumers

@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("producer", CLIENTS)
def test_roundtrip_every_codec(broker, producer, codec):
    topic = new_topic("rt-%s-%s" % (producer, codec))
    records = varied_records(200, null_header_values=(producer == "confluent"), ts_base=now_ms() - 120_000)
    deliveries = produce(producer, broker.bootstrap, topic, records, codec, batches=2)
    assert_delivered(deliveries, producer)

    # The producer's own view: explicit partitions honoured, keys hashed (murmur2) over the
    # PARTITIONS partitions the broker auto-created, and create timestamps echoed back.
    for r, d in zip(records, deliveries):
        if r.partition is not None:
            assert d.partition == r.partition, (r, d)
        elif r.key is not None:
            assert d.partition == java_partition(r.key, PARTITIONS), (r.key, d)
        ts = d.timestamp[1] if producer == "confluent" else d.timestamp
        assert ts == r.ts, "delivery timestamp %r, produced %r" % (d.timestamp, r.ts)
    per_partition = defaultdict(list)
    for d in deliveries:
        per_partition[d.partition].append(d.offset)
    for p, offsets in per_partition.items():
        assert sorted(offsets) == list(range(len(offsets))), "p%d delivery offsets %s" % (p, sorted(offsets))

    md = ck_admin(broker.bootstrap).list_topics(timeout=DEADLINE)
    assert topic in md.topics and md.topics[topic].error is None, md.topics.get(topic)
    assert sorted(md.topics[topic].partitions) == list(range(PARTITIONS))

    ends = ends_of(deliveries)
    for consumer in CLIENTS + ["odradek"]:
        got = consume(consumer, broker.bootstrap, topic, ends)
        check_roundtrip(records, deliveries, got, "%s -> %s (%s)" % (producer, consumer, codec))


# ---------------------------------------------------------------------------------------------
# 2. Large messages around message.max.bytes

@pytest.mark.parametrize("producer", CLIENTS)
def test_message_max_bytes(broker, producer):
    topic = new_topic("large-" + producer)
    rng = random.Random(7)
    fits = rng.randbytes(1_000_000)
    too_big = rng.randbytes(1_100_000)
    ts = now_ms() - 1000
    plan = [Rec(b"before", b"small-1", [], ts, 0), Rec(b"fits", fits, [("h", b"v")], ts + 1, 0),
            Rec(b"too-big", too_big, [], ts + 2, 0), Rec(b"after", b"small-2", [], ts + 3, 0)]
    # Lift the clients' own limits so the oversized record reaches the broker.
    if producer == "confluent":
        extra = {"message.max.bytes": 4_000_000}
    else:
        extra = {"max_request_size": 4_000_000}
    deliveries = []
    for rec in plan:  # one request each
        deliveries += produce(producer, broker.bootstrap, topic, [rec], "none", **extra)

    before, fit, big, after = deliveries
    for name, d in (("before", before), ("fits (1,000,000 bytes)", fit), ("after", after)):
        assert d.error is None, "%s: record %s failed: %r" % (producer, name, d.error)
    assert big.error is not None, "%s: a 1,100,000-byte record was accepted (offset %s) with " \
        "message.max.bytes=%d" % (producer, big.offset, BROKER_MAX_MESSAGE)
    if producer == "confluent":
        assert isinstance(big.error, KafkaError), big.error
        assert big.error.code() == KafkaError.MSG_SIZE_TOO_LARGE, \
            "want MSG_SIZE_TOO_LARGE (10, broker MESSAGE_TOO_LARGE), got %r" % big.error
    else:
        assert isinstance(big.error, MessageSizeTooLargeError), \
            "want MessageSizeTooLargeError from the future, got %r" % big.error
    assert [before.offset, fit.offset, after.offset] == [0, 1, 2], \
        "offsets %s (a rejected record must not take an offset)" % [before.offset, fit.offset, after.offset]

    accepted = [plan[0], plan[1], plan[3]]
    for consumer in CLIENTS:
        got = consume(consumer, broker.bootstrap, topic, {0: 3})
        check_roundtrip(accepted, [before, fit, after], got, "%s -> %s (large)" % (producer, consumer))


# ---------------------------------------------------------------------------------------------
# 3. Watermarks and offsets by timestamp

def test_watermarks_and_offsets_for_times(broker):
    topic = new_topic("watermarks")
    base = now_ms() - 600_000
    # Partition 0: 60 records, timestamps rising 1 s apart, in 3 batches.
    p0 = [Rec(b"k", b"v%d" % i, [], base + i * 1000, 0) for i in range(60)]
    # Partition 1: 40 records with shuffled timestamps (the answer is the first *offset* whose
    # timestamp is >= the target, not the smallest timestamp >= target).
    perm = list(range(40))
    random.Random(3).shuffle(perm)
    p1 = [Rec(None, b"w%d" % i, [], base + perm[i] * 1000, 1) for i in range(40)]
    assert_delivered(produce("confluent", broker.bootstrap, topic, p0, batches=3), "p0")
    assert_delivered(produce("kafka-python", broker.bootstrap, topic, p1, batches=2), "p1")
    # Partition 2 stays empty.
    ends = {0: 60, 1: 40, 2: 0}

    c = ck_consumer(broker.bootstrap)
    k = kp_consumer(broker.bootstrap)
    try:
        for p, end in ends.items():
            assert c.get_watermark_offsets(CkTP(topic, p), timeout=DEADLINE, cached=False) == (0, end), p
        tps = [KpTP(topic, p) for p in ends]
        assert k.beginning_offsets(tps) == {KpTP(topic, p): 0 for p in ends}
        assert k.end_offsets(tps) == {KpTP(topic, p): e for p, e in ends.items()}

        def expect(records, target):
            hits = [i for i, r in enumerate(records) if r.ts >= target]
            return (hits[0], records[hits[0]].ts) if hits else (None, None)

        queries = [
            (0, base + 25_000), (0, base + 25_001), (0, base - 5), (0, base + 59_000), (0, base + 59_001),
            (1, base + 20_500), (1, base + 1), (1, base + 39_000), (1, base + 39_001),
            (2, base),
        ]
        data = {0: p0, 1: p1, 2: []}
        for p, target in queries:
            want_off, want_ts = expect(data[p], target)
            res = c.offsets_for_times([CkTP(topic, p, target)], timeout=DEADLINE)
            assert len(res) == 1 and res[0].error is None, res
            assert res[0].offset == (-1 if want_off is None else want_off), \
                "confluent offsets_for_times(p%d, base%+d) = %d, want %s" % (p, target - base, res[0].offset, want_off)
            kres = k.offsets_for_times({KpTP(topic, p): target})[KpTP(topic, p)]
            if want_off is None:
                assert kres is None, "kafka-python offsets_for_times(p%d, base%+d) = %r, want None" % (p, target - base, kres)
            else:
                assert kres is not None and (kres.offset, kres.timestamp) == (want_off, want_ts), \
                    "kafka-python offsets_for_times(p%d, base%+d) = %r, want offset %d ts %d" % (
                        p, target - base, kres, want_off, want_ts)
    finally:
        c.close()
        k.close()

    # The AdminClient's ListOffsets: earliest / latest / max timestamp.
    admin = ck_admin(broker.bootstrap)
    specs = {CkTP(topic, 0): OffsetSpec.earliest(), CkTP(topic, 1): OffsetSpec.max_timestamp()}
    res = {tp.partition: f.result(DEADLINE) for tp, f in admin.list_offsets(specs, request_timeout=DEADLINE).items()}
    assert res[0].offset == 0, res[0]
    top = max(range(40), key=lambda i: p1[i].ts)
    assert (res[1].offset, res[1].timestamp) == (top, p1[top].ts), (res[1], top)
    res = admin.list_offsets({CkTP(topic, 0): OffsetSpec.latest()}, request_timeout=DEADLINE)
    assert list(res.values())[0].result(DEADLINE).offset == 60


# ---------------------------------------------------------------------------------------------
# 4. DeleteRecords

def test_delete_records(broker):
    topic = new_topic("delrec")
    records = [Rec(b"k%d" % i, b"value-%d" % i, [("i", b"%d" % i)], now_ms() - 5000 + i, 0) for i in range(30)]
    deliveries = produce("confluent", broker.bootstrap, topic, records, batches=3)
    assert_delivered(deliveries, "confluent")
    admin = ck_admin(broker.bootstrap)

    futs = admin.delete_records([CkTP(topic, 0, 12)], request_timeout=DEADLINE)
    (tp, fut), = futs.items()
    assert fut.result(DEADLINE).low_watermark == 12

    c = ck_consumer(broker.bootstrap)
    k = kp_consumer(broker.bootstrap)
    try:
        assert c.get_watermark_offsets(CkTP(topic, 0), timeout=DEADLINE, cached=False) == (12, 30)
        assert k.beginning_offsets([KpTP(topic, 0)]) == {KpTP(topic, 0): 12}
        assert k.end_offsets([KpTP(topic, 0)]) == {KpTP(topic, 0): 30}
    finally:
        c.close()
        k.close()

    # Offset 0 is now out of range: earliest reset lands on the new low watermark.
    for consumer in CLIENTS:
        got = consume(consumer, broker.bootstrap, topic, {0: 30}, start=0, reset="earliest")
        assert got[0] and got[0][0].offset == 12, "%s: first record after reset %r" % (consumer, got[0][:1])
        check_roundtrip(records[12:], deliveries[12:], got, "%s after DeleteRecords" % consumer, start=12)

    # With auto.offset.reset=error librdkafka surfaces the broker's OFFSET_OUT_OF_RANGE.
    c = ck_consumer(broker.bootstrap, reset="error")
    try:
        c.assign([CkTP(topic, 0, 3)])
        deadline = time.monotonic() + DEADLINE
        err = None
        while err is None:
            assert time.monotonic() < deadline, "no auto.offset.reset error for an out-of-range fetch"
            m = c.poll(0.2)
            if m is None:
                continue
            assert m.error(), "fetched a record at offset %d below the low watermark" % m.offset()
            err = m.error()
        assert err.code() == KafkaError._AUTO_OFFSET_RESET, err
    finally:
        c.close()

    # Deleting past the high watermark is OFFSET_OUT_OF_RANGE; OFFSET_END deletes everything.
    (tp, fut), = admin.delete_records([CkTP(topic, 0, 31)], request_timeout=DEADLINE).items()
    with pytest.raises(KafkaException) as exc:
        fut.result(DEADLINE)
    assert exc.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE, exc.value
    (tp, fut), = admin.delete_records([CkTP(topic, 0, OFFSET_END)], request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE).low_watermark == 30
    c = ck_consumer(broker.bootstrap)
    try:
        assert c.get_watermark_offsets(CkTP(topic, 0), timeout=DEADLINE, cached=False) == (30, 30)
    finally:
        c.close()


# ---------------------------------------------------------------------------------------------
# 5. Admin basics

def wait_for(predicate, what):
    deadline = time.monotonic() + DEADLINE
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.1)


def source_of(entry):
    """ConfigEntry.source as a ConfigSource (the C layer may hand back a plain int)."""
    return ConfigSource(getattr(entry.source, "value", entry.source))


def create_topic(bootstrap, topic, partitions, config=None):
    """CreateTopics, then wait until metadata shows every partition with a leader."""
    admin = ck_admin(bootstrap)
    (t, fut), = admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})],
                                    request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE) is None

    def ready():
        md = admin.list_topics(timeout=DEADLINE).topics.get(topic)
        return md is not None and md.error is None and len(md.partitions) == partitions and all(
            p.leader >= 0 for p in md.partitions.values())
    wait_for(ready, "partition leaders of " + topic)


def topic_config(admin, topic):
    res = ConfigResource(ResourceType.TOPIC, topic)
    (r, fut), = admin.describe_configs([res], request_timeout=DEADLINE).items()
    return fut.result(DEADLINE)


def test_admin_basics(broker):
    admin = ck_admin(broker.bootstrap)
    topic = new_topic("admin")
    conf = {"retention.ms": "3600000", "cleanup.policy": "delete"}

    # validate_only: accepted, nothing created.
    (t, fut), = admin.create_topics([NewTopic(topic, 2, 1, config=conf)], validate_only=True,
                                    request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE) is None
    assert topic not in admin.list_topics(timeout=DEADLINE).topics, "validate_only created the topic"

    (t, fut), = admin.create_topics([NewTopic(topic, 2, 1, config=conf)], request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE) is None
    md = wait_for(lambda: (lambda m: m if topic in m.topics else None)(admin.list_topics(timeout=DEADLINE)),
                  "the new topic in metadata")
    assert list(md.brokers.values())[0].port == broker.port, md.brokers
    (node,) = md.brokers
    assert md.controller_id == node and md.cluster_id, (md.controller_id, md.cluster_id)
    cluster = admin.describe_cluster(request_timeout=DEADLINE).result(DEADLINE)
    assert [n.id for n in cluster.nodes] == [node] and cluster.nodes[0].port == broker.port, cluster.nodes
    assert cluster.controller.id == node and cluster.cluster_id == md.cluster_id, (cluster.controller, cluster.cluster_id)
    tmd = md.topics[topic]
    assert tmd.error is None and sorted(tmd.partitions) == [0, 1], tmd
    for p in tmd.partitions.values():
        assert (p.leader, p.replicas, p.isrs, p.error) == (node, [node], [node], None), p

    # describe_topics (Metadata by name, with topic ids).
    (desc_fut,) = admin.describe_topics(TopicCollection([topic]), request_timeout=DEADLINE).values()
    desc = desc_fut.result(DEADLINE)
    assert desc.name == topic and str(desc.topic_id) != "AAAAAAAAAAAAAAAAAAAAAA", desc.topic_id
    assert [(p.id, p.leader.id, [r.id for r in p.replicas], [r.id for r in p.isr]) for p in desc.partitions] == \
        [(0, node, [node], [node]), (1, node, [node], [node])], desc.partitions

    # Creating it again fails.
    (t, fut), = admin.create_topics([NewTopic(topic, 1, 1)], request_timeout=DEADLINE).items()
    with pytest.raises(KafkaException) as exc:
        fut.result(DEADLINE)
    assert exc.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS, exc.value

    # describe_configs: the overrides as dynamic topic configs, the rest as defaults.
    entries = topic_config(admin, topic)
    ret = entries["retention.ms"]
    assert (ret.value, source_of(ret), ret.is_default) == ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG, False), ret
    assert entries["cleanup.policy"].value == "delete"
    mmb = entries["max.message.bytes"]
    assert mmb.value == str(BROKER_MAX_MESSAGE) and source_of(mmb) != ConfigSource.DYNAMIC_TOPIC_CONFIG, mmb

    # incremental_alter_configs changes one key and leaves the other override alone.
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
    (r, fut), = admin.incremental_alter_configs([res], request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE) is None
    entries = topic_config(admin, topic)
    assert entries["retention.ms"].value == "7200000", entries["retention.ms"]
    assert entries["cleanup.policy"].value == "delete"

    # alter_configs (the legacy, non-incremental AlterConfigs) replaces the whole override set:
    # cleanup.policy, not named, goes back to its default.
    res = ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.ms": "1800000"})
    with pytest.warns(DeprecationWarning):  # deprecated in the client, still served by brokers
        (r, fut), = admin.alter_configs([res], request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE) is None
    entries = topic_config(admin, topic)
    assert (entries["retention.ms"].value, source_of(entries["retention.ms"])) == (
        "1800000", ConfigSource.DYNAMIC_TOPIC_CONFIG), entries["retention.ms"]
    assert source_of(entries["cleanup.policy"]) != ConfigSource.DYNAMIC_TOPIC_CONFIG, entries["cleanup.policy"]

    # The broker's own config: set on the command line = static, untouched = default.
    bres = ConfigResource(ResourceType.BROKER, str(node))
    (r, fut), = admin.describe_configs([bres], request_timeout=DEADLINE).items()
    bconf = fut.result(DEADLINE)
    mmb = bconf["message.max.bytes"]
    assert (mmb.value, source_of(mmb), mmb.is_default) == (
        str(BROKER_MAX_MESSAGE), ConfigSource.DEFAULT_CONFIG, True), mmb
    nparts = bconf["num.partitions"]
    assert (nparts.value, source_of(nparts), nparts.is_default) == (
        str(PARTITIONS), ConfigSource.STATIC_BROKER_CONFIG, False), nparts

    # create_partitions: 2 -> 4, and the new partitions take records.
    (t, fut), = admin.create_partitions([NewPartitions(topic, 4)], request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE) is None
    md = wait_for(lambda: (lambda m: m if len(m.topics[topic].partitions) == 4 else None)(
        admin.list_topics(timeout=DEADLINE)), "4 partitions in metadata")
    for p in md.topics[topic].partitions.values():
        assert (p.leader, p.replicas, p.isrs, p.error) == (node, [node], [node], None), p
    (t, fut), = admin.create_partitions([NewPartitions(topic, 3)], request_timeout=DEADLINE).items()
    with pytest.raises(KafkaException) as exc:
        fut.result(DEADLINE)
    assert exc.value.args[0].code() == KafkaError.INVALID_PARTITIONS, exc.value
    rec = [Rec(b"k", b"in-new-partition", [], now_ms(), 3)]
    d = produce("confluent", broker.bootstrap, topic, rec)
    assert_delivered(d, "produce to partition 3")
    check_roundtrip(rec, d, consume("kafka-python", broker.bootstrap, topic, {3: 1}), "new partition")

    # delete_topics: gone from metadata; deleting again is UNKNOWN_TOPIC_OR_PART.
    (t, fut), = admin.delete_topics([topic], request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE) is None
    wait_for(lambda: topic not in admin.list_topics(timeout=DEADLINE).topics, "the topic to leave metadata")
    (t, fut), = admin.delete_topics([topic], request_timeout=DEADLINE).items()
    with pytest.raises(KafkaException) as exc:
        fut.result(DEADLINE)
    assert exc.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART, exc.value
    with pytest.raises(KafkaException) as exc:
        topic_config(admin, topic)
    assert exc.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART, exc.value

    # Re-created under the same name it starts empty, with its old overrides gone.
    create_topic(broker.bootstrap, topic, 1)
    assert source_of(topic_config(admin, topic)["retention.ms"]) != ConfigSource.DYNAMIC_TOPIC_CONFIG
    rec = [Rec(b"again", b"recreated", [], now_ms(), 0)]
    d = produce("kafka-python", broker.bootstrap, topic, rec)
    assert_delivered(d, "produce to the re-created topic")
    assert d[0].offset == 0, "first offset of a re-created topic is %d" % d[0].offset
    check_roundtrip(rec, d, consume("confluent", broker.bootstrap, topic, {0: 1}), "re-created topic")


@pytest.mark.parametrize("name,spec,code", [
    ("zero partitions", dict(num_partitions=0, replication_factor=1), KafkaError.INVALID_PARTITIONS),
    ("replication 3 on one node", dict(num_partitions=1, replication_factor=3),
     KafkaError.INVALID_REPLICATION_FACTOR),
    ("unknown config key", dict(num_partitions=1, replication_factor=1, config={"no.such.config": "1"}),
     KafkaError.INVALID_CONFIG),
    ("bad config value", dict(num_partitions=1, replication_factor=1, config={"retention.ms": "soon"}),
     KafkaError.INVALID_CONFIG),
    ("bad topic name", dict(num_partitions=1, replication_factor=1), KafkaError.TOPIC_EXCEPTION),
])
def test_create_topics_errors(broker, name, spec, code):
    admin = ck_admin(broker.bootstrap)
    topic = new_topic("bad") + ("/bad name" if name == "bad topic name" else "")
    for validate_only in (True, False):
        (t, fut), = admin.create_topics([NewTopic(topic, **spec)], validate_only=validate_only,
                                        request_timeout=DEADLINE).items()
        with pytest.raises(KafkaException) as exc:
            fut.result(DEADLINE)
        assert exc.value.args[0].code() == code, "%s (validate_only=%s): %s" % (name, validate_only, exc.value)
    assert topic not in admin.list_topics(timeout=DEADLINE).topics


# ---------------------------------------------------------------------------------------------
# 6. Mixed: one client compresses, the other decompresses

def text_records(n, ts_base, seed):
    rng = random.Random(seed)
    words = [b"odradek", b"spool", b"thread", b"star", b"stairs", b"laughter", b"leaves", b"\x00\xff"]
    out = []
    for i in range(n):
        value = b" ".join(rng.choice(words) for _ in range(150))
        out.append(Rec(b"user-%d" % (i % 31), value, [("seq", b"%d" % i), ("seq", b"again")], ts_base + i, None))
    return out


@pytest.mark.parametrize("producer,codec,consumer", [("kafka-python", "lz4", "confluent"),
                                                     ("confluent", "zstd", "kafka-python")])
def test_mixed_clients(broker, producer, codec, consumer):
    topic = new_topic("mixed-%s-%s" % (producer, codec))
    records = text_records(400, now_ms() - 60_000, seed=len(codec))
    deliveries = produce(producer, broker.bootstrap, topic, records, codec, batches=2)
    assert_delivered(deliveries, producer)
    for r, d in zip(records, deliveries):
        assert d.partition == java_partition(r.key, PARTITIONS), (r.key, d)
    got = consume(consumer, broker.bootstrap, topic, ends_of(deliveries))
    check_roundtrip(records, deliveries, got, "%s(%s) -> %s" % (producer, codec, consumer))


# ---------------------------------------------------------------------------------------------
# Extras: compressed batches kept as sent; LogAppendTime topics

@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_log_dirs_report_compressed_size(broker, codec):
    """DescribeLogDirs (kafka-python admin) reports partition sizes; a compressible payload
    produced compressed (compression.type=producer) takes far less than its raw size."""
    topic = new_topic("logdirs-" + codec)
    records = [Rec(None, b"A" * 1000, [], now_ms(), 0) for _ in range(300)]
    assert_delivered(produce("confluent", broker.bootstrap, topic, records, codec), codec)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=int(DEADLINE * 1000))
    try:
        answer = admin.describe_log_dirs(topic_partitions={topic: [0, 1, 2]})
    finally:
        admin.close()
    sizes = {}
    for per_broker in answer:
        for d in per_broker["log_dirs"]:
            assert d.get("error_code", 0) == 0, d
            for t in d.get("topics", []):
                if t["name"] == topic:
                    for p in t["partitions"]:
                        sizes[p["partition_index"]] = p["partition_size"]
    assert set(sizes) == {0, 1, 2}, answer
    assert sizes[1] == 0 and sizes[2] == 0, sizes
    assert 0 < sizes[0] < 300 * 1000 // 4, "partition 0 holds %d bytes for 300 kB of %s-compressible data" % (
        sizes[0], codec)


def test_describe_topic_partitions_pages_with_kafka_python(broker):
    """DescribeTopicPartitions (kafka-python's describe_topic_partitions, KIP-966): two topics
    of 3 partitions walked in pages of 2 with the cursor the broker hands back; every
    partition once, in order, each led by its only replica."""
    topics = sorted([new_topic("dtp-a"), new_topic("dtp-b")])
    admin = ck_admin(broker.bootstrap)
    for t, fut in admin.create_topics([NewTopic(t, 3, 1) for t in topics],
                                      request_timeout=DEADLINE).items():
        assert fut.result(DEADLINE) is None, t
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=int(DEADLINE * 1000))
    seen, pages, cursor = [], 0, None
    try:
        while True:
            page = kp.describe_topic_partitions(topics, response_partition_limit=2, cursor=cursor)
            pages += 1
            for t in page["topics"]:
                assert t["error_code"] == 0, t
                for p in t["partitions"]:
                    assert p["error_code"] == 0 and p["replica_nodes"] == [p["leader_id"]], p
                    seen.append((t["name"], p["partition_index"]))
            cursor = page["next_cursor"]
            if cursor is None:
                break
            assert pages < 10, "the cursor never ends"
    finally:
        kp.close()
    assert seen == [(t, i) for t in topics for i in range(3)]
    assert pages == 3


@pytest.mark.parametrize("producer", CLIENTS)
def test_log_append_time_topic(broker, producer):
    """message.timestamp.type=LogAppendTime: the broker stamps each record with its append time,
    and both consumers see that time and the append timestamp type."""
    topic = new_topic("lat-" + producer)
    admin = ck_admin(broker.bootstrap)
    (t, fut), = admin.create_topics([NewTopic(topic, 1, 1, config={"message.timestamp.type": "LogAppendTime"})],
                                    request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE) is None
    old = now_ms() - 3_000_000
    records = [Rec(b"k%d" % i, b"v%d" % i, [], old + i, 0) for i in range(20)]
    t0 = now_ms()
    deliveries = produce(producer, broker.bootstrap, topic, records, "lz4")
    t1 = now_ms()
    assert_delivered(deliveries, producer)
    if producer == "kafka-python":  # RecordMetadata carries the broker's log_append_time
        for d in deliveries:
            assert t0 - 1000 <= d.timestamp <= t1 + 1000, "RecordMetadata.timestamp %r not the append time" % d.timestamp
    for consumer in CLIENTS:
        got = consume(consumer, broker.bootstrap, topic, {0: 20})[0]
        assert [g.offset for g in got] == list(range(20))
        for g, r in zip(got, records):
            assert (g.key, g.value, g.ts_type) == (r.key, r.value, "append"), (consumer, g)
            assert t0 - 1000 <= g.ts <= t1 + 1000, "%s: timestamp %d not within the produce window [%d, %d]" % (
                consumer, g.ts, t0, t1)


# ---------------------------------------------------------------------------------------------
# Extras: acks, fetch limits, long poll, size limits from config, restart

@pytest.mark.parametrize("acks", [0, 1])
@pytest.mark.parametrize("producer", CLIENTS)
def test_acks_zero_and_one(broker, producer, acks):
    """acks=0 (no Produce response at all) and acks=1 land the same records."""
    topic = new_topic("acks%d-%s" % (acks, producer))
    # Created up front: with acks=0 nothing reports records sent before the partition is ready.
    create_topic(broker.bootstrap, topic, 1)
    records = [Rec(b"k", b"acks-%d-%d" % (acks, i), [("i", b"%d" % i)], now_ms() - 1000 + i, 0) for i in range(50)]
    extra = {"acks": acks} if producer == "kafka-python" else {"acks": str(acks)}
    deliveries = produce(producer, broker.bootstrap, topic, records, "snappy", batches=5, **extra)
    assert_delivered(deliveries, producer)
    if acks == 1:
        assert [d.offset for d in deliveries] == list(range(50))
    got = consume("confluent", broker.bootstrap, topic, {0: 50})
    check_roundtrip(records, [Delivery(0, i, None, None) for i in range(50)], got, "acks=%d" % acks)


@pytest.mark.parametrize("consumer", CLIENTS)
def test_small_fetch_limits(broker, consumer):
    """Per-partition and per-request fetch limits far below one batch: the broker still returns
    the first batch whole (KIP-74) and the consumer makes progress."""
    topic = new_topic("fetchlim-" + consumer)
    records = text_records(120, now_ms() - 5000, seed=11)
    deliveries = produce("confluent", broker.bootstrap, topic, records, "lz4", batches=4)
    assert_delivered(deliveries, "confluent")
    if consumer == "confluent":
        # (librdkafka wants fetch.max.bytes >= message.max.bytes >= 1000, so only the per-partition one.)
        extra = {"max.partition.fetch.bytes": 1024}
    else:
        extra = {"max_partition_fetch_bytes": 1024, "fetch_max_bytes": 1024}
    got = consume(consumer, broker.bootstrap, topic, ends_of(deliveries), **extra)
    check_roundtrip(records, deliveries, got, "%s with 1 KiB fetch limits" % consumer)


@pytest.mark.parametrize("consumer", CLIENTS)
def test_long_poll_wakes_on_produce(broker, consumer):
    """A consumer parked at the log end with a 10 s fetch wait gets a new record long before the
    wait runs out: Produce wakes the pending Fetch."""
    topic = new_topic("longpoll-" + consumer)
    first = [Rec(b"k", b"first", [], now_ms(), 0)]
    assert_delivered(produce("confluent", broker.bootstrap, topic, first), "first")
    if consumer == "confluent":
        c = ck_consumer(broker.bootstrap, **{"fetch.wait.max.ms": 10_000})
        c.assign([CkTP(topic, 0, 1)])
        poll = lambda: [(m.offset(), m.value()) for m in c.consume(10, 0.1) if not m.error()]
    else:
        c = kp_consumer(broker.bootstrap, fetch_max_wait_ms=10_000)
        c.assign([KpTP(topic, 0)])
        c.seek(KpTP(topic, 0), 1)
        poll = lambda: [(r.offset, r.value) for recs in c.poll(timeout_ms=100).values() for r in recs]
    try:
        settle = time.monotonic() + 1.5  # let the consumer reach the broker and park its fetch
        while time.monotonic() < settle:
            assert poll() == [], "nothing was produced yet"
        sent = time.monotonic()
        assert_delivered(produce("kafka-python", broker.bootstrap, topic, [Rec(b"k", b"second", [], now_ms(), 0)]),
                         "second")
        got = []
        while not got:
            assert time.monotonic() - sent < 8.0, "the record produced to a long-polled partition did not " \
                "arrive within 8 s (fetch.wait.max.ms=10000): the parked Fetch was not woken"
            got = poll()
        assert got == [(1, b"second")], got
    finally:
        c.close()


def test_max_message_bytes_from_config(start_broker):
    """A broker started with message.max.bytes=20000 (a per-test broker) enforces it, reports it
    as the topics' max.message.bytes, and a topic-level max.message.bytes overrides it."""
    b = start_broker({"message.max.bytes": "20000", "num.partitions": "1"})
    admin = ck_admin(b.bootstrap)
    small_topic = new_topic("mmb-small")
    (t, fut), = admin.create_topics([NewTopic(small_topic, 1, 1, config={"max.message.bytes": "5000"})],
                                    request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE) is None
    default_topic = new_topic("mmb-default")
    rng = random.Random(5)

    def one(topic, size, producer):
        rec = Rec(None, rng.randbytes(size), [], now_ms(), 0)
        extra = {"message.max.bytes": 100_000} if producer == "confluent" else {"max_request_size": 100_000}
        (d,) = produce(producer, b.bootstrap, topic, [rec], "none", **extra)
        return d

    for producer in CLIENTS:
        assert one(default_topic, 19_000, producer).error is None, producer
        err = one(default_topic, 21_000, producer).error
        assert err is not None, "%s: 21000-byte record accepted with message.max.bytes=20000" % producer
        assert (err.code() == KafkaError.MSG_SIZE_TOO_LARGE if producer == "confluent"
                else isinstance(err, MessageSizeTooLargeError)), err
        assert one(small_topic, 4_000, producer).error is None, producer
        err = one(small_topic, 6_000, producer).error
        assert err is not None, "%s: 6000-byte record accepted with topic max.message.bytes=5000" % producer
        assert (err.code() == KafkaError.MSG_SIZE_TOO_LARGE if producer == "confluent"
                else isinstance(err, MessageSizeTooLargeError)), err
    inherited = topic_config(admin, default_topic)["max.message.bytes"]
    assert (inherited.value, source_of(inherited)) == ("20000", ConfigSource.STATIC_BROKER_CONFIG), inherited
    own = topic_config(admin, small_topic)["max.message.bytes"]
    assert (own.value, source_of(own)) == ("5000", ConfigSource.DYNAMIC_TOPIC_CONFIG), own
    c = ck_consumer(b.bootstrap)
    try:
        assert c.get_watermark_offsets(CkTP(default_topic, 0), timeout=DEADLINE, cached=False) == (0, 2)
        assert c.get_watermark_offsets(CkTP(small_topic, 0), timeout=DEADLINE, cached=False) == (0, 2)
    finally:
        c.close()


def test_restart_keeps_data(start_broker):
    """SIGTERM (exit 0), restart on the same log.dirs: records, offsets, the DeleteRecords low
    watermark and topic configs survive, and producing continues at the old end."""
    if broker_binary().name == "kafka_as_broker_bin.sh":
        pytest.skip("kafka.sh start wipes the data dir: no restart on the same data")
    b1 = start_broker()
    topic = new_topic("restart")
    admin = ck_admin(b1.bootstrap)
    (t, fut), = admin.create_topics([NewTopic(topic, 2, 1, config={"retention.ms": "86400000"})],
                                    request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE) is None
    records = varied_records(120, null_header_values=True, ts_base=now_ms() - 60_000)
    records = [r._replace(partition=i % 2) for i, r in enumerate(records)]
    deliveries = produce("confluent", b1.bootstrap, topic, records, "zstd", batches=3)
    assert_delivered(deliveries, "confluent")
    more = [Rec(b"kp", b"kp-%d" % i, [("x", b"y")], now_ms() - 1000 + i, 1) for i in range(10)]
    d_more = produce("kafka-python", b1.bootstrap, topic, more, "gzip")
    assert_delivered(d_more, "kafka-python")
    (tp, fut), = admin.delete_records([CkTP(topic, 0, 7)], request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE).low_watermark == 7
    del admin
    code = b1.stop()
    assert code == 0, "exit code %r after SIGTERM\n%s" % (code, b1.stderr_tail())

    b2 = start_broker(workdir=b1.workdir)
    all_records, all_deliveries = records + more, deliveries + d_more
    ends = ends_of(all_deliveries)
    c = ck_consumer(b2.bootstrap)
    try:
        assert c.get_watermark_offsets(CkTP(topic, 0), timeout=DEADLINE, cached=False) == (7, ends[0])
        assert c.get_watermark_offsets(CkTP(topic, 1), timeout=DEADLINE, cached=False) == (0, ends[1])
    finally:
        c.close()
    kept = [(r, d) for r, d in zip(all_records, all_deliveries) if d.partition == 1 or d.offset >= 7]
    for consumer in CLIENTS:
        got = consume(consumer, b2.bootstrap, topic, ends)
        # Partition 0 starts at 7 now, partition 1 at 0: check them separately.
        check_roundtrip([r for r, d in kept if d.partition == 0], [d for r, d in kept if d.partition == 0],
                        {0: got[0]}, "%s after restart, p0" % consumer, start=7)
        check_roundtrip([r for r, d in kept if d.partition == 1], [d for r, d in kept if d.partition == 1],
                        {1: got[1]}, "%s after restart, p1" % consumer)
    assert topic_config(ck_admin(b2.bootstrap), topic)["retention.ms"].value == "86400000"
    after = produce("kafka-python", b2.bootstrap, topic, [Rec(b"new", b"after-restart", [], now_ms(), 0)])
    assert_delivered(after, "after restart")
    assert after[0].offset == ends[0], "first offset after restart %d, want %d" % (after[0].offset, ends[0])


@pytest.mark.parametrize("producer", CLIENTS)
def test_timestamp_bounds(broker, producer):
    """log.message.timestamp.after.max.ms (default 1 h): a create timestamp 2 h ahead is
    INVALID_TIMESTAMP, 30 min ahead and years back are stored as given."""
    topic = new_topic("tsbound-" + producer)
    # Time retention would delete the 5-year-old record's segment (it rolls when the next
    # batch's timestamp is that far ahead), as Kafka's retention would, whenever the retention
    # pass runs between the produce and the read: keep everything.
    create_topic(broker.bootstrap, topic, 1, {"retention.ms": "-1"})
    now = now_ms()
    plan = [Rec(b"past", b"p", [], now - 5 * 365 * 86_400_000, 0), Rec(b"soon", b"s", [], now + 1_800_000, 0),
            Rec(b"far", b"f", [], now + 7_200_000, 0), Rec(b"now", b"n", [], now, 0)]
    deliveries = []
    for rec in plan:
        deliveries += produce(producer, broker.bootstrap, topic, [rec])
    past, soon, far, current = deliveries
    for label, d in (("past", past), ("soon", soon), ("now", current)):
        assert d.error is None, "%s: %r" % (label, d.error)
    assert far.error is not None, "a timestamp 2 h in the future was accepted at offset %s" % far.offset
    if producer == "confluent":
        assert far.error.code() == KafkaError.INVALID_TIMESTAMP, far.error
    else:
        assert type(far.error).__name__ == "InvalidTimestampError", repr(far.error)
    accepted = [plan[0], plan[1], plan[3]]
    assert [d.offset for d in (past, soon, current)] == [0, 1, 2]
    check_roundtrip(accepted, [past, soon, current], consume("kafka-python", broker.bootstrap, topic, {0: 3}),
                    "timestamps")


@pytest.mark.parametrize("segment_bytes", [16_384, 1_048_576])
def test_many_segments(start_broker, segment_bytes):
    """~3 MB in ~430 batches over many segments: everything reads back with both consumers,
    offsets_for_times finds records in any segment, DeleteRecords cuts mid-segment, and all of
    it survives a restart."""
    on_kafka = broker_binary().name == "kafka_as_broker_bin.sh"
    if on_kafka and segment_bytes < 1_048_576:
        pytest.skip("Kafka 4.x refuses log.segment.bytes below 1 MiB")
    b = start_broker({"log.segment.bytes": str(segment_bytes), "num.partitions": "1"})
    topic = new_topic("segments")
    base = now_ms() - 600_000
    rng = random.Random(segment_bytes)
    records = [Rec(b"%d" % i, rng.randbytes(1000), [("i", b"%d" % i)], base + i * 10, 0) for i in range(3000)]
    deliveries = produce("confluent", b.bootstrap, topic, records, "none",
                         **{"batch.num.messages": 7, "linger.ms": 5})
    assert_delivered(deliveries, "confluent")
    assert [d.offset for d in deliveries] == list(range(3000))

    def check_all(bk, low, label):
        c = ck_consumer(bk.bootstrap)
        k = kp_consumer(bk.bootstrap)
        try:
            assert c.get_watermark_offsets(CkTP(topic, 0), timeout=DEADLINE, cached=False) == (low, 3000), label
            for i in (low, 1500, 2222, 2999):
                if i < low:
                    continue
                for target in (base + i * 10, base + i * 10 - 3):
                    (res,) = c.offsets_for_times([CkTP(topic, 0, target)], timeout=DEADLINE)
                    kres = k.offsets_for_times({KpTP(topic, 0): target})[KpTP(topic, 0)]
                    assert res.offset == i and kres is not None and kres.offset == i, (label, i, target, res, kres)
            (res,) = c.offsets_for_times([CkTP(topic, 0, base + 30_000)], timeout=DEADLINE)
            assert res.offset == -1, (label, res)
        finally:
            c.close()
            k.close()
        for consumer in CLIENTS:
            got = consume(consumer, bk.bootstrap, topic, {0: 3000}, start=0, reset="earliest")
            check_roundtrip(records[low:], deliveries[low:], got, "%s, %s" % (label, consumer), start=low)

    check_all(b, 0, "before DeleteRecords")
    admin = ck_admin(b.bootstrap)  # keep a reference: a collected AdminClient never completes its futures
    (tp, fut), = admin.delete_records([CkTP(topic, 0, 1234)], request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE).low_watermark == 1234
    check_all(b, 1234, "after DeleteRecords")
    if on_kafka:
        return
    code = b.stop()
    assert code == 0, "exit code %r after SIGTERM\n%s" % (code, b.stderr_tail())
    b2 = start_broker(workdir=b.workdir)
    check_all(b2, 1234, "after restart")
    more = produce("kafka-python", b2.bootstrap, topic, [Rec(b"x", b"after", [], now_ms(), 0)])
    assert_delivered(more, "after restart")
    assert more[0].offset == 3000, more
