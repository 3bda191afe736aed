"""Transactions with confluent-kafka's API: commit, abort, read_committed visibility, offsets sent
to a transaction, and zombie fencing, against odradek-broker (a broker of this module's own) or
the external broker of ODRADEK_TEST_BOOTSTRAP."""
import time

import pytest

from odradek import Consumer, KafkaException, Producer, TopicPartition

from conftest import module_broker


@pytest.fixture(scope="module")
def tbroker(tmp_path_factory):
    b = module_broker(tmp_path_factory.mktemp("txn-broker"),
                      {"group.initial.rebalance.delay.ms": "0"})
    yield b
    b.stop()


def txn_producer(tbroker, txn_id):
    p = Producer({"bootstrap.servers": tbroker.bootstrap, "transactional.id": txn_id,
                  "linger.ms": 2})
    p.init_transactions(30)
    return p


def read_values(tbroker, topic, isolation, expect, partitions=(0,), timeout=20.0):
    """Reads `topic` from the beginning until `expect` values arrived or the timeout passed, then
    a little longer so that extra (wrong) records would show up too."""
    c = Consumer({"bootstrap.servers": tbroker.bootstrap, "group.id": "reader-" + topic,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": isolation})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    out = []
    deadline = time.monotonic() + timeout
    settle = None
    while time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            out.append(m.value())
        if len(out) >= expect and settle is None:
            settle = time.monotonic() + 1.0
        if settle is not None and time.monotonic() > settle:
            break
    c.close()
    return out


def test_commit_makes_records_visible_to_read_committed(tbroker, topic):
    p = txn_producer(tbroker, "tx-" + topic)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, b"c%d" % i, partition=0)
    p.commit_transaction(30)
    got = read_values(tbroker, topic, "read_committed", 10)
    assert got == [b"c%d" % i for i in range(10)]


def test_aborted_records_are_hidden_from_read_committed_only(tbroker, topic):
    p = txn_producer(tbroker, "tx-" + topic)
    reports = []
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, b"aborted-%d" % i, partition=0,
                  on_delivery=lambda err, msg: reports.append(err))
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, b"kept-%d" % i, partition=0)
    p.commit_transaction(30)
    assert len(reports) == 5
    committed = read_values(tbroker, topic, "read_committed", 3)
    assert committed == [b"kept-0", b"kept-1", b"kept-2"]
    everything = read_values(tbroker, topic, "read_uncommitted", 8)
    assert everything == [b"aborted-%d" % i for i in range(5)] + committed


def test_produce_outside_a_transaction_is_refused(tbroker, topic):
    p = txn_producer(tbroker, "tx-" + topic)
    with pytest.raises(KafkaException) as info:
        p.produce(topic, b"x", partition=0)
    assert info.value.args[0].name() == "_STATE", info.value.args[0]


def test_offsets_sent_to_a_transaction_commit_with_it(tbroker, topic):
    src = topic + "-in"
    seed = Producer({"bootstrap.servers": tbroker.bootstrap, "linger.ms": 2})
    for i in range(6):
        seed.produce(src, b"in-%d" % i, partition=0)
    assert seed.flush(30) == 0
    group = "g-" + topic
    c = Consumer({"bootstrap.servers": tbroker.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "heartbeat.interval.ms": 100})
    c.subscribe([src])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 6 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m)
    assert len(got) == 6
    p = txn_producer(tbroker, "tx-" + topic)
    p.begin_transaction()
    for m in got:
        p.produce(topic, m.value().replace(b"in", b"out"), partition=0)
    p.send_offsets_to_transaction([TopicPartition(src, 0, got[-1].offset() + 1)],
                                  c.consumer_group_metadata(), 30)
    p.commit_transaction(30)
    # Apache Kafka writes the commit markers after EndTxn returns: until they are written, an
    # OffsetFetch (without require_stable) still answers the previous commit (none).
    deadline = time.monotonic() + 20
    committed = c.committed([TopicPartition(src, 0)], timeout=10)
    while committed[0].offset != 6 and time.monotonic() < deadline:
        time.sleep(0.1)
        committed = c.committed([TopicPartition(src, 0)], timeout=10)
    assert committed[0].offset == 6
    c.close()
    assert read_values(tbroker, topic, "read_committed", 6) == [b"out-%d" % i for i in range(6)]


def test_a_new_instance_fences_the_old_one(tbroker, topic):
    txn_id = "tx-" + topic
    old = txn_producer(tbroker, txn_id)
    old.begin_transaction()
    old.produce(topic, b"zombie", partition=0)
    old.flush(30)
    new = txn_producer(tbroker, txn_id)
    new.begin_transaction()
    new.produce(topic, b"fresh", partition=0)
    new.commit_transaction(30)
    with pytest.raises(KafkaException) as info:
        old.commit_transaction(30)
    assert info.value.args[0].fatal(), info.value.args[0]
    assert read_values(tbroker, topic, "read_committed", 1) == [b"fresh"]


def test_admin_list_offsets_read_committed_stops_at_an_open_transaction(tbroker, topic):
    from odradek.admin import AdminClient, IsolationLevel, OffsetSpec
    p = txn_producer(tbroker, "tx-" + topic)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, b"open-%d" % i, partition=0)
    assert p.flush(30) == 0
    admin = AdminClient({"bootstrap.servers": tbroker.bootstrap})
    tp = TopicPartition(topic, 0)

    def latest(level):
        return admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level)[tp] \
            .result(timeout=30).offset

    assert latest(IsolationLevel.READ_UNCOMMITTED) == 3
    assert latest(IsolationLevel.READ_COMMITTED) == 0, "the last stable offset"
    p.commit_transaction(30)
    # The commit marker takes an offset: both levels now end after it.
    deadline = time.monotonic() + 10
    while latest(IsolationLevel.READ_COMMITTED) != 4:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert latest(IsolationLevel.READ_UNCOMMITTED) == 4
