"""odradek.testing through its public API only (the pytest plugin's fixtures and Cluster), with
odradek and confluent-kafka as the client under test: the same code runs on both, since
odradek's API is confluent-kafka's.

Each scenario: an injected NOT_LEADER_OR_FOLLOWER on Produce is retried and delivered once;
COORDINATOR_NOT_AVAILABLE on OffsetCommit is retried; a broker taken down is reported and
recovered from; a moved leader is followed; a delayed response triggers request.timeout.ms;
the request log shows what the client sent.
"""
import importlib
import time

import pytest

from odradek.testing import Cluster

CLIENTS = ["odradek", "confluent_kafka"]
# The client-side request timeout: Java's and odradek's request.timeout.ms is librdkafka's
# socket.timeout.ms (librdkafka's request.timeout.ms is the ack timeout sent to the broker).
REQUEST_TIMEOUT = {"odradek": "request.timeout.ms", "confluent_kafka": "socket.timeout.ms"}


@pytest.fixture(params=CLIENTS)
def kafka(request):
    """The client library under test (skipped if it is not installed)."""
    return pytest.importorskip(request.param)


def producer(kafka, cluster, **extra):
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0,
            "retry.backoff.ms": 20, "enable.idempotence": True}
    conf.update(extra)
    return kafka.Producer(conf)


def produce(p, topic, value, partition=0, timeout=30.0):
    """Produces one record and returns its delivery report (err, offset)."""
    reports = []
    p.produce(topic, value=value, partition=partition,
              on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    deadline = time.time() + timeout
    while not reports and time.time() < deadline:
        p.poll(0.05)
    assert reports, "no delivery report"
    return reports[0]


def read_all(kafka, cluster, topic, partition=0, expect=1, timeout=30.0):
    """Every value of a partition, from the beginning (waits for `expect`, then a bit more)."""
    c = kafka.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "reader",
                        "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([kafka.TopicPartition(topic, partition, 0)])
    values = []
    deadline = time.time() + timeout
    quiet_until = None
    while time.time() < deadline:
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            values.append(m.value())
        if len(values) >= expect:
            quiet_until = quiet_until or time.time() + 0.5
            if time.time() > quiet_until:
                break
    c.close()
    return values


def of_api(log, name):
    return [r for r in log if r.api_name == name]


@pytest.mark.kafka_cluster(topics={"t": 1}, record_requests=True)
def test_not_leader_on_produce_is_retried_and_delivered_once(kafka, kafka_cluster):
    kafka_cluster.push_request_errors("Produce", ["NOT_LEADER_OR_FOLLOWER"] * 2)
    p = producer(kafka, kafka_cluster)
    err, offset = produce(p, "t", b"once")
    assert err is None and offset == 0
    p.flush(10)
    assert kafka_cluster.pending_rules == 0
    produces = of_api(kafka_cluster.requests(), "Produce")
    assert [r.error for r in produces[:2]] == ["NOT_LEADER_OR_FOLLOWER"] * 2
    assert produces[-1].action is None
    assert read_all(kafka, kafka_cluster, "t") == [b"once"]


@pytest.mark.kafka_cluster(topics={"t": 1})
def test_coordinator_not_available_on_offset_commit_is_retried(kafka, kafka_cluster):
    p = producer(kafka, kafka_cluster)
    for i in range(3):
        assert produce(p, "t", b"v%d" % i)[0] is None
    p.flush(10)
    kafka_cluster.record_requests()
    kafka_cluster.push_request_errors("OffsetCommit", ["COORDINATOR_NOT_AVAILABLE"] * 2)
    # (An interval well above the coordinator lookup's round trips: librdkafka's commit timer
    # at 100 ms keeps cutting its own coordinator connection after the first error.)
    c = kafka.Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": "g",
                        "auto.offset.reset": "earliest", "enable.auto.commit": True,
                        "auto.commit.interval.ms": 500})
    c.subscribe(["t"])
    seen = 0
    deadline = time.time() + 30
    while time.time() < deadline:
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            seen += 1
        accepted = [r for r in of_api(kafka_cluster.requests(), "OffsetCommit") if r.action is None]
        if seen == 3 and accepted:
            break
    c.close()
    # What the group committed, read by another member.
    check = kafka.Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": "g",
                            "enable.auto.commit": False})
    committed = check.committed([kafka.TopicPartition("t", 0)], timeout=10)[0].offset
    check.close()
    assert (seen, committed) == (3, 3)
    commits = of_api(kafka_cluster.requests(), "OffsetCommit")
    assert [r.error for r in commits[:2]] == ["COORDINATOR_NOT_AVAILABLE"] * 2, commits
    assert any(r.action is None for r in commits[2:])


@pytest.mark.kafka_cluster(topics={"t": 1})
def test_a_broker_taken_down_is_reported_and_recovered_from(kafka, kafka_cluster):
    errors = []
    # message.timeout.ms leaves room for the reconnect after the broker is back: under a loaded
    # CI machine librdkafka took 1.5 s to reconnect (and bump its idempotent epoch) after the
    # timed-out record, so 1.5 s timed the "after" record out too.
    p = producer(kafka, kafka_cluster, **{"request.timeout.ms": 500, "message.timeout.ms": 5000,
                                          "reconnect.backoff.max.ms": 200,
                                          "error_cb": errors.append})
    assert produce(p, "t", b"before")[0] is None
    kafka_cluster.set_broker_down(1)
    assert not kafka_cluster.is_broker_up(1)
    # The client reports it: the record produced while the broker is down times out.
    err, _ = produce(p, "t", b"lost")
    assert err is not None
    kafka_cluster.set_broker_up(1)
    err, _ = produce(p, "t", b"after")
    assert err is None
    p.flush(10)
    if kafka.__name__ == "confluent_kafka":
        # librdkafka also raises error_cb (_TRANSPORT / _ALL_BROKERS_DOWN).
        assert errors, "no error_cb while the broker was down"
    assert read_all(kafka, kafka_cluster, "t", expect=2) == [b"before", b"after"]


@pytest.mark.kafka_cluster(brokers=3, topics={"t": 1}, record_requests=True)
def test_a_moved_leader_is_followed(kafka, kafka_cluster):
    assert len(kafka_cluster.bootstrap_servers.split(",")) == 3
    assert kafka_cluster.partition_leader("t", 0)[0] == 1
    p = producer(kafka, kafka_cluster)
    c = kafka.Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": "m",
                        "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([kafka.TopicPartition("t", 0, 0)])
    got = []

    def consume_until(n):
        deadline = time.time() + 30
        while len(got) < n and time.time() < deadline:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                got.append(m.value())

    assert produce(p, "t", b"on-1")[0] is None
    consume_until(1)
    assert kafka_cluster.set_partition_leader("t", 0, 2) == 1
    assert produce(p, "t", b"on-2")[0] is None
    consume_until(2)
    assert kafka_cluster.set_partition_leader("t", 0, 3) == 2
    assert produce(p, "t", b"on-3")[0] is None
    consume_until(3)
    c.close()
    p.flush(10)
    assert got == [b"on-1", b"on-2", b"on-3"]
    log = kafka_cluster.requests()
    ok_produce_on = {r.broker for r in of_api(log, "Produce") if r.action is None}
    assert {1, 2, 3} <= ok_produce_on
    assert {2, 3} <= {r.broker for r in of_api(log, "Fetch")}


@pytest.mark.kafka_cluster(topics={"t": 1}, record_requests=True)
def test_a_delayed_response_triggers_request_timeout(kafka, kafka_cluster):
    kafka_cluster.delay_responses("Produce", 10_000, times=1)
    p = producer(kafka, kafka_cluster, **{REQUEST_TIMEOUT[kafka.__name__]: 500})
    started = time.time()
    err, offset = produce(p, "t", b"late")
    elapsed = time.time() - started
    p.flush(10)
    assert err is None and offset == 0
    assert 0.5 <= elapsed < 8, elapsed
    produces = of_api(kafka_cluster.requests(), "Produce")
    assert produces[0].action == "delay"
    assert len(produces) >= 2
    assert produces[1].peer != produces[0].peer, "the timed-out connection was replaced"
    assert read_all(kafka, kafka_cluster, "t") == [b"late"], "delivered once"


@pytest.mark.kafka_cluster(topics={"t": 1}, record_requests=True)
def test_the_request_log_shows_what_the_client_sent(kafka, kafka_cluster):
    p = producer(kafka, kafka_cluster, **{"client.id": "logged-client"})
    assert produce(p, "t", b"x")[0] is None
    p.flush(10)
    log = kafka_cluster.requests(clear=True)
    assert log and all(r.client_id == "logged-client" for r in log)
    assert all(r.broker == 1 for r in log)
    names = {r.api_name for r in log}
    assert {"ApiVersions", "Metadata", "Produce"} <= names
    produce_req = of_api(log, "Produce")[0]
    assert produce_req.partitions == [("t", 0)]
    assert produce_req.api_version >= 3
    assert kafka_cluster.requests() == []


@pytest.mark.kafka_cluster(topics={"t": 2}, record_requests=True)
def test_a_partition_error_fails_only_that_partition(kafka, kafka_cluster):
    kafka_cluster.push_request_errors("Produce", ["NOT_LEADER_OR_FOLLOWER"], topic="t",
                                      partition=1)
    p = producer(kafka, kafka_cluster, **{"linger.ms": 50})
    reports = []
    for part in (0, 1):
        p.produce("t", value=b"p%d" % part, partition=part,
                  on_delivery=lambda err, msg: reports.append((err, msg.partition())))
    p.flush(10)
    assert sorted(reports, key=lambda r: r[1]) == [(None, 0), (None, 1)]
    first = [r for r in of_api(kafka_cluster.requests(), "Produce") if r.item_errors][0]
    assert first.item_errors == [("t", 1, "NOT_LEADER_OR_FOLLOWER")]
    assert read_all(kafka, kafka_cluster, "t", 0) == [b"p0"]
    assert read_all(kafka, kafka_cluster, "t", 1) == [b"p1"]


def test_fixtures_shape_and_lifecycle(kafka_bootstrap, kafka_cluster, kafka_cluster_factory):
    assert kafka_bootstrap == kafka_cluster.bootstrap_servers
    assert kafka_cluster.broker_ids == [1]
    other = kafka_cluster_factory(brokers=2, topics={"x": 4})
    assert other.broker_ids == [1, 2]
    assert [other.partition_leader("x", p)[0] for p in range(4)] == [1, 2, 1, 2]
    other.set_coordinator("group", "g", 2)
    assert other.coordinator("group", "g") == 2
    with pytest.raises(ValueError):
        other.set_broker_down(9)
    with pytest.raises(ValueError):
        other.push_request_errors("NoSuchApi", ["NONE"])
    with pytest.raises(ValueError):
        other.add_rule("Produce")
    other.set_api_version("Produce", 3, 7)
    other.stop()
    assert not other.running
    other.stop()


def test_start_and_stop_are_fast():
    for brokers in (1, 3):
        Cluster(brokers=brokers).stop()
        started = time.perf_counter()
        for _ in range(5):
            with Cluster(brokers=brokers):
                pass
        each = (time.perf_counter() - started) / 5
        assert each < 0.5, (brokers, each)


def test_kafka_python_works_against_the_fixture(kafka_cluster):
    kafka_python = pytest.importorskip("kafka")
    kafka_cluster.create_topic("kp", 1)
    p = kafka_python.KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers)
    p.send("kp", b"from-kafka-python").get(timeout=30)
    p.close()
    c = kafka_python.KafkaConsumer("kp", bootstrap_servers=kafka_cluster.bootstrap_servers,
                                   auto_offset_reset="earliest", consumer_timeout_ms=3_000)
    values = [m.value for m in c]
    c.close()
    assert values == [b"from-kafka-python"]


# librdkafka 2.16 can livelock on the example's two refused commits: the commit queued on its
# GroupCoordinator handle fails with a local transport error each time the handle's nodename is
# reset by the coordinator rediscovery the previous failure started, which marks the coordinator
# dead again (debug=cgrp,broker: "Closing connection due to nodename change" every ~0.5 s, no
# request reaches the broker) until the session times out. Client-side, not the cluster's: the
# broker never sees another OffsetCommit. Seen in about half of the runs on an idle machine.
LIBRDKAFKA_COMMIT_LIVELOCK = pytest.mark.xfail(
    reason="librdkafka coordinator-rediscovery livelock on repeated COORDINATOR_NOT_AVAILABLE",
    strict=False)


@pytest.mark.parametrize("client", ["odradek", pytest.param("confluent_kafka",
                                                             marks=LIBRDKAFKA_COMMIT_LIVELOCK)])
def test_the_documented_example_passes_with_either_client(client, tmp_path):
    """examples/python/test_commit_retry.py (docs/testing.md) as written, and with its import
    switched to confluent_kafka."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip(client)
    example = Path(__file__).resolve().parents[2] / "examples" / "python" / "test_commit_retry.py"
    source = example.read_text().replace("from odradek import", "from %s import" % client)
    copy = tmp_path / "test_example.py"
    copy.write_text(source)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(copy)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:]
