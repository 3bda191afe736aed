"""Transactions: confluent-kafka (librdkafka) and kafka-python transactional producers and
read_committed consumers against the broker's transaction coordinator.

Covers commit and abort (read_committed consumers see only committed records, read_uncommitted
ones see everything, an open transaction holds back read_committed consumers at the last stable
offset), consume-transform-produce with send_offsets_to_transaction (the group's committed
offsets move only when the transaction commits), zombie fencing between two producers with the
same transactional.id, the transaction timeout (the broker aborts and fences), a timeout above
transaction.max.timeout.ms, the aborted-transaction index surviving a restart, and the Java
client's transactional producer (JavaTransactions.java, with kafka.sh's jars).

Run with tests/compat/run_broker_peers.sh (see README.md).
"""
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTP
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTP

from conftest import stop_and_check
from test_broker_peers import DEADLINE, ck_logger, create_topic, new_topic

# Short timer so the timeout test does not wait long; everything else uses Kafka's defaults.
TXN_OVERRIDES = {
    "num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
    "transaction.max.timeout.ms": "120000",
}


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory):
    from conftest import Broker
    b = Broker(tmp_path_factory.mktemp("odradek-broker-txn"), TXN_OVERRIDES, name="odradek-broker (txn)")
    b.start()
    try:
        yield b
    except BaseException:
        b.kill()
        raise
    stop_and_check(b)


def txn_producer(bootstrap, txn_id, **extra):
    conf = {
        "bootstrap.servers": bootstrap,
        "transactional.id": txn_id,
        "linger.ms": 5,
        "message.timeout.ms": int(DEADLINE * 1000),
        "logger": ck_logger("txn-producer"),
    }
    conf.update(extra)
    return Producer(conf)


def ck_reader(bootstrap, isolation, **extra):
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": "reader-" + uuid.uuid4().hex[:8],
        "isolation.level": isolation,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
        "fetch.wait.max.ms": 100,
        "logger": ck_logger("txn-reader"),
    }
    conf.update(extra)
    return Consumer(conf)


def read_values(bootstrap, topic, partitions, isolation):
    """Every value a consumer with `isolation` reads from the start of `partitions` until it
    reaches the end of each (partition EOF), as {partition: [value, ...]}."""
    c = ck_reader(bootstrap, isolation)
    got = {p: [] for p in partitions}
    eof = set()
    try:
        c.assign([CkTP(topic, p, 0) for p in partitions])
        deadline = time.monotonic() + DEADLINE
        while len(eof) < len(partitions):
            assert time.monotonic() < deadline, "reader timed out: %s, eof %s" % (got, eof)
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                    continue
                raise AssertionError("consumer error: %s" % m.error())
            eof.discard(m.partition())
            got[m.partition()].append(m.value())
    finally:
        c.close()
    return got


def high_watermark(bootstrap, topic, partition, isolation):
    """The end offset a consumer with `isolation` sees (the LSO for read_committed)."""
    c = ck_reader(bootstrap, isolation)
    try:
        return c.get_watermark_offsets(CkTP(topic, partition), timeout=DEADLINE, cached=False)[1]
    finally:
        c.close()


def wait_until(cond, what, timeout=DEADLINE):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.05)


def test_commit_and_abort(txn_broker):
    bs = txn_broker.bootstrap
    topic = new_topic("txn")
    create_topic(bs, topic, 2)
    p = txn_producer(bs, "txn-" + topic)
    p.init_transactions(DEADLINE)

    p.begin_transaction()
    for i in range(6):
        p.produce(topic, value=b"c1-%d" % i, partition=i % 2)
    p.commit_transaction(DEADLINE)

    p.begin_transaction()
    for i in range(4):
        p.produce(topic, value=b"a-%d" % i, partition=i % 2)
    p.flush(DEADLINE)
    p.abort_transaction(DEADLINE)

    # An open transaction holds read_committed consumers back at its first offset.
    p.begin_transaction()
    p.produce(topic, value=b"c2-0", partition=0)
    p.flush(DEADLINE)
    hw = high_watermark(bs, topic, 0, "read_uncommitted")
    lso = high_watermark(bs, topic, 0, "read_committed")
    assert lso == hw - 1, "LSO %d should stop before the open transaction (high watermark %d)" % (lso, hw)
    assert read_values(bs, topic, [0], "read_committed")[0] == [b"c1-0", b"c1-2", b"c1-4"]
    p.commit_transaction(DEADLINE)
    wait_until(lambda: high_watermark(bs, topic, 0, "read_committed") == hw + 1, "the LSO to pass the commit marker")

    committed = read_values(bs, topic, [0, 1], "read_committed")
    assert committed == {0: [b"c1-0", b"c1-2", b"c1-4", b"c2-0"], 1: [b"c1-1", b"c1-3", b"c1-5"]}
    everything = read_values(bs, topic, [0, 1], "read_uncommitted")
    assert everything == {0: [b"c1-0", b"c1-2", b"c1-4", b"a-0", b"a-2", b"c2-0"],
                          1: [b"c1-1", b"c1-3", b"c1-5", b"a-1", b"a-3"]}


def test_send_offsets_to_transaction(txn_broker):
    """Consume-transform-produce: output and input offsets commit (or abort) together."""
    bs = txn_broker.bootstrap
    src, dst = new_topic("txn-in"), new_topic("txn-out")
    create_topic(bs, src, 1)
    create_topic(bs, dst, 1)
    plain = Producer({"bootstrap.servers": bs, "logger": ck_logger("plain")})
    for i in range(10):
        plain.produce(src, value=b"in-%d" % i, partition=0)
    plain.flush(DEADLINE)

    group = "txn-group-" + uuid.uuid4().hex[:8]
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                  "logger": ck_logger("txn-consumer")})
    p = txn_producer(bs, "txn-ctp-" + group)
    p.init_transactions(DEADLINE)
    try:
        c.subscribe([src])
        batch = []
        deadline = time.monotonic() + DEADLINE
        while len(batch) < 5:
            assert time.monotonic() < deadline, "consumed only %d records" % len(batch)
            m = c.poll(0.2)
            if m is not None and not m.error():
                batch.append(m)
        batch = batch[:5]
        c.seek(CkTP(src, 0, batch[-1].offset() + 1))

        def transform(msgs, commit):
            p.begin_transaction()
            for m in msgs:
                p.produce(dst, value=m.value().replace(b"in", b"out"), partition=0)
            p.send_offsets_to_transaction([CkTP(src, 0, msgs[-1].offset() + 1)],
                                          c.consumer_group_metadata(), DEADLINE)
            if commit:
                p.commit_transaction(DEADLINE)
            else:
                p.abort_transaction(DEADLINE)

        transform(batch, commit=True)
        committed = c.committed([CkTP(src, 0)], timeout=DEADLINE)[0].offset
        assert committed == 5

        transform(batch, commit=False)  # the same input again, aborted: nothing moves
        assert c.committed([CkTP(src, 0)], timeout=DEADLINE)[0].offset == 5
    finally:
        c.close()
    out = read_values(bs, dst, [0], "read_committed")[0]
    assert out == [b"out-%d" % i for i in range(5)]


def test_zombie_fencing(txn_broker):
    bs = txn_broker.bootstrap
    topic = new_topic("txn-fence")
    create_topic(bs, topic, 1)
    txn_id = "txn-fence-" + topic
    zombie = txn_producer(bs, txn_id)
    zombie.init_transactions(DEADLINE)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie", partition=0)
    zombie.flush(DEADLINE)

    fresh = txn_producer(bs, txn_id)
    fresh.init_transactions(DEADLINE)  # fences the zombie and aborts its open transaction
    fresh.begin_transaction()
    fresh.produce(topic, value=b"fresh", partition=0)
    fresh.commit_transaction(DEADLINE)

    with pytest.raises(KafkaException) as exc:
        zombie.produce(topic, value=b"zombie-2", partition=0)
        zombie.commit_transaction(DEADLINE)
    err = exc.value.args[0]
    assert err.fatal(), "the fenced producer must fail fatally, got %s" % err
    assert err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH), err

    assert read_values(bs, topic, [0], "read_committed")[0] == [b"fresh"]
    assert read_values(bs, topic, [0], "read_uncommitted")[0] == [b"zombie", b"fresh"]


def test_transaction_timeout_aborts_and_fences(txn_broker):
    bs = txn_broker.bootstrap
    topic = new_topic("txn-timeout")
    create_topic(bs, topic, 1)
    p = txn_producer(bs, "txn-timeout-" + topic, **{"transaction.timeout.ms": 1500, "message.timeout.ms": 1500})
    p.init_transactions(DEADLINE)
    p.begin_transaction()
    p.produce(topic, value=b"expires", partition=0)
    p.flush(DEADLINE)
    assert high_watermark(bs, topic, 0, "read_committed") == 0
    # The coordinator aborts the transaction after 1.5 s: the abort marker moves the LSO past it.
    wait_until(lambda: high_watermark(bs, topic, 0, "read_committed") == 2, "the timed-out transaction to be aborted")
    assert read_values(bs, topic, [0], "read_committed")[0] == []
    with pytest.raises(KafkaException):
        p.commit_transaction(DEADLINE)


def test_timeout_above_the_maximum_is_refused(txn_broker):
    p = txn_producer(txn_broker.bootstrap, "txn-too-long", **{"transaction.timeout.ms": 600000})
    with pytest.raises(KafkaException) as exc:
        p.init_transactions(DEADLINE)
    assert exc.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT, exc.value.args[0]


def test_kafka_python_transactions(txn_broker):
    bs = txn_broker.bootstrap
    topic = new_topic("txn-kp")
    create_topic(bs, topic, 1)
    p = KafkaProducer(bootstrap_servers=bs, transactional_id="txn-kp-" + topic, request_timeout_ms=int(DEADLINE * 1000))
    p.init_transactions()
    p.begin_transaction()
    for i in range(3):
        p.send(topic, value=b"kp-commit-%d" % i, partition=0)
    p.commit_transaction()
    p.begin_transaction()
    p.send(topic, value=b"kp-abort", partition=0)
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    p.send(topic, value=b"kp-last", partition=0)
    p.commit_transaction()
    p.close()

    def read(isolation):
        c = KafkaConsumer(bootstrap_servers=bs, isolation_level=isolation, enable_auto_commit=False,
                          auto_offset_reset="earliest", consumer_timeout_ms=1500)
        tp = KpTP(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        values = []
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            batch = c.poll(timeout_ms=200)
            for recs in batch.values():
                values.extend(r.value for r in recs)
            if c.position(tp) >= c.end_offsets([tp])[tp] and not batch:
                break
        c.close()
        return values

    assert read("read_committed") == [b"kp-commit-0", b"kp-commit-1", b"kp-commit-2", b"kp-last"]
    assert read("read_uncommitted") == [b"kp-commit-0", b"kp-commit-1", b"kp-commit-2", b"kp-abort", b"kp-last"]


def test_aborted_index_survives_restart(start_broker):
    b = start_broker(TXN_OVERRIDES)
    topic = new_topic("txn-restart")
    create_topic(b.bootstrap, topic, 1)
    p = txn_producer(b.bootstrap, "txn-restart-" + topic)
    p.init_transactions(DEADLINE)
    for commit in (True, False, True):
        p.begin_transaction()
        p.produce(topic, value=b"commit" if commit else b"abort", partition=0)
        p.flush(DEADLINE)
        (p.commit_transaction if commit else p.abort_transaction)(DEADLINE)
    del p
    stop_and_check(b)
    b = start_broker(TXN_OVERRIDES, workdir=b.workdir)
    assert read_values(b.bootstrap, topic, [0], "read_committed")[0] == [b"commit", b"commit"]
    # The transactional id is still known: a new session bumps its epoch and works.
    p = txn_producer(b.bootstrap, "txn-restart-" + topic)
    p.init_transactions(DEADLINE)
    p.begin_transaction()
    p.produce(topic, value=b"after", partition=0)
    p.commit_transaction(DEADLINE)
    assert read_values(b.bootstrap, topic, [0], "read_committed")[0] == [b"commit", b"commit", b"after"]


def test_java_transactional_producer(txn_broker):
    """The Java client (kafka-clients 4.4 from kafka.sh's jars): commit, abort, read_committed,
    sendOffsetsToTransaction and fencing, checked by JavaTransactions.java."""
    here = Path(__file__).resolve().parent
    java = shutil.which("java")
    if java is None:
        pytest.skip("java not found (the Java client check needs Java 17+)")
    classpath = subprocess.run([str(here / "kafka.sh"), "classpath"], capture_output=True, text=True,
                               timeout=1800, stdin=subprocess.DEVNULL)
    assert classpath.returncode == 0, "kafka.sh classpath failed: %s" % classpath.stderr[-2000:]
    topic = new_topic("txn-java")
    create_topic(txn_broker.bootstrap, topic, 1)
    run = subprocess.run([java, "-cp", classpath.stdout.strip(), str(here / "JavaTransactions.java"),
                          txn_broker.bootstrap, topic], capture_output=True, text=True, timeout=300,
                         stdin=subprocess.DEVNULL)
    assert run.returncode == 0 and run.stdout.strip().endswith("OK"), (
        "JavaTransactions failed (exit %d):\n%s\n%s" % (run.returncode, run.stdout[-4000:], run.stderr[-4000:]))
