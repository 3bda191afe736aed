"""Client quotas: throttle_cb (ThrottleEvent) when a broker throttles a producer or a consumer
(KIP-219), the per-broker throttle window in the statistics, and the quota admin calls with
Kafka's errors for bad input.

Every test uses client ids and users of its own and removes the quotas it set, so the shared
broker (ours, or Apache Kafka in the compatibility tier) is left as it was.
"""
import itertools
import json
import os
import sys
import threading
import time

import pytest

import odradek
from odradek import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, ThrottleEvent
from odradek import TopicPartition
from odradek.admin import (AdminClient, ClientQuotaAlteration, ClientQuotaEntity,
                           ClientQuotaFilter, ClientQuotaFilterComponent, ClientQuotaMatchType)

from conftest import produce_n

RATE = 64 * 1024
VALUE = b"q" * 8192
_ids = itertools.count()


def unique(prefix):
    return "%s-%d-%d-%d" % (prefix, os.getpid(), int(time.time() * 1000) % 10**8, next(_ids))


def client_entity(client_id):
    return ClientQuotaEntity({ClientQuotaEntity.CLIENT_ID: client_id})


def alter_ok(admin, entity, ops, validate_only=False):
    futs = admin.alter_client_quotas([ClientQuotaAlteration(entity, ops)],
                                     validate_only=validate_only, request_timeout=30)
    assert list(futs) == [entity]
    assert futs[entity].result(timeout=30) is None


def exact_filter(entity):
    return ClientQuotaFilter.contains_only([
        ClientQuotaFilterComponent.of_entity(t, n) if n is not None
        else ClientQuotaFilterComponent.of_default_entity(t)
        for t, n in entity.entries.items()])


def described(admin, entity):
    got = admin.describe_client_quotas(exact_filter(entity), request_timeout=30).result(timeout=30)
    assert all(isinstance(e, ClientQuotaEntity) for e in got)
    return got.get(entity)


def wait_described(admin, entity, want, timeout=15.0):
    """Apache Kafka applies an alteration through its metadata log, a moment after answering."""
    deadline = time.monotonic() + timeout
    got = described(admin, entity)
    while got != want and time.monotonic() < deadline:
        time.sleep(0.1)
        got = described(admin, entity)
    assert got == want
    return got


@pytest.fixture
def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap})


@pytest.fixture
def quotas(admin):
    """Sets quotas for the test and removes them afterwards: quotas(entity, {key: value})."""
    set_ = []

    def apply(entity, ops):
        alter_ok(admin, entity, ops)
        set_.append((entity, list(ops)))

    yield apply
    for entity, keys in set_:
        admin.alter_client_quotas([ClientQuotaAlteration(entity, {k: None for k in keys})]
                                  )[entity].result(timeout=30)


def test_throttle_event_is_confluent_kafkas():
    e = ThrottleEvent("127.0.0.1:9092/1", 1, 0.25)
    assert (e.broker_name, e.broker_id, e.throttle_time) == ("127.0.0.1:9092/1", 1, 0.25)
    assert str(e) == "127.0.0.1:9092/1/1 throttled for 250 ms"
    assert odradek.ThrottleEvent is ThrottleEvent and "ThrottleEvent" in odradek.__all__


def test_producer_throttle_cb_and_stats_under_producer_byte_rate(bootstrap, topic, quotas):
    client_id = unique("py-throttled-producer")
    quotas(client_entity(client_id), {"producer_byte_rate": RATE})
    events, threads, stats = [], [], []

    def on_throttle(event):
        events.append(event)
        threads.append(threading.get_ident())

    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 0,
                  "throttle_cb": on_throttle, "stats_cb": stats.append,
                  "statistics.interval.ms": 100})
    # One record per request (flush after each): the first request past the quota's window
    # is throttled for about a record's worth of time (8 KiB at 64 KiB/s: 125 ms).
    sent = 0
    deadline = time.monotonic() + 60
    while not any(e.throttle_time > 0 for e in events):
        assert time.monotonic() < deadline and sent < 4 * 1024 * 1024, (sent, events)
        p.produce(topic, VALUE, partition=0)
        assert p.flush(30) == 0
        sent += len(VALUE)
    throttled = [e for e in events if e.throttle_time > 0]
    e = throttled[0]
    assert isinstance(e, ThrottleEvent)
    assert 0 < e.throttle_time < 30
    assert e.broker_id >= 0
    # librdkafka's broker_name: the broker's host:port (confluent-kafka's str() adds the id).
    assert e.broker_name.rsplit(":", 1)[1] == bootstrap.rsplit(":", 1)[1], (e, bootstrap)
    assert str(e).startswith("%s/%d throttled for " % (e.broker_name, e.broker_id))
    assert set(threads) == {threading.get_ident()}

    # The statistics' per-broker throttle window holds it (librdkafka's "throttle" object: the
    # throttle time of every response in the window, zero included).
    def throttle_windows():
        return [b["throttle"] for s in stats for b in json.loads(s)["brokers"].values()]

    deadline = time.monotonic() + 20
    while not any(w["max"] > 0 for w in throttle_windows()):
        assert time.monotonic() < deadline, stats[-1:]
        p.poll(0.2)
    w = next(w for w in throttle_windows() if w["max"] > 0)
    assert w["cnt"] >= 1 and w["max"] >= w["p50"] >= w["min"] and w["sum"] >= w["max"]
    assert w["max"] >= w["avg"] and w["sum"] > 0
    p.close(30)


def test_consumer_throttle_cb_under_consumer_byte_rate(bootstrap, topic, quotas):
    produce_n(bootstrap, topic, 128, value=lambda i: VALUE)  # 1 MiB, unthrottled
    client_id = unique("py-throttled-consumer")
    quotas(client_entity(client_id), {"consumer_byte_rate": RATE})
    events, threads = [], []

    def on_throttle(event):
        events.append(event)
        threads.append(threading.get_ident())

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("py-throttle-group"),
                  "client.id": client_id, "enable.auto.commit": False,
                  "fetch.max.bytes": RATE, "max.partition.fetch.bytes": RATE,
                  "throttle_cb": on_throttle})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = 0
    deadline = time.monotonic() + 60
    while not any(e.throttle_time > 0 for e in events):
        assert time.monotonic() < deadline, (got, events)
        for m in c.consume(100, 0.5):
            got += m.error() is None
    e = next(e for e in events if e.throttle_time > 0)
    assert isinstance(e, ThrottleEvent) and e.broker_id >= 0
    assert ":" in e.broker_name and "/" not in e.broker_name, e.broker_name
    assert set(threads) == {threading.get_ident()}
    c.close()


def test_a_producer_settles_at_its_producer_byte_rate(start_broker):
    """The acknowledged rate of a producer that sends as fast as it is let follows its
    producer_byte_rate (KIP-219): within 20% of 256 KiB/s over 8 s after a 2 s warm-up, on a
    broker with two one-second quota windows (with Kafka's eleven a fresh client first gets a
    ten-second burst). The ±10%-over-20-s measurement of every client against both brokers is
    the compatibility matrix's quotas scenario (tests/compat/run --scenarios quotas)."""
    rate, warmup, until = 256 * 1024, 2.0, 10.0
    b = start_broker({"quota.window.num": "2"})
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    client_id = unique("py-quota-rate")
    alter_ok(admin, client_entity(client_id), {"producer_byte_rate": rate})
    wait_described(admin, client_entity(client_id), {"producer_byte_rate": float(rate)})
    topic = unique("py-quota-rate")
    acked, errors = [], []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked.append((time.monotonic(), len(msg.value())))

    p = Producer({"bootstrap.servers": b.bootstrap, "client.id": client_id, "linger.ms": 0,
                  "batch.size": 32768, "queue.buffering.max.kbytes": 1024})
    started = time.monotonic()
    while time.monotonic() - started < until:
        try:
            p.produce(topic, VALUE, partition=0, on_delivery=on_delivery)
            p.poll(0)
        except BufferError:
            p.poll(0.05)
    assert not errors, errors[:3]
    measured = sum(n for t, n in acked if started + warmup <= t < started + until) / (until - warmup)
    assert 0.8 <= measured / rate <= 1.2, "%.0f B/s, %.3f of the %d B/s quota" % (
        measured, measured / rate, rate)


def test_throttle_event_matches_confluent_kafkas(bootstrap, topic, quotas):
    """The same program on confluent-kafka (librdkafka) and odradek sees the same event."""
    from test_dropin_and_examples import HERE, confluent_python, run
    got = {}
    for lib, py in (("odradek", sys.executable), ("confluent", confluent_python())):
        client_id = unique("py-throttle-%s" % lib)
        quotas(client_entity(client_id), {"producer_byte_rate": RATE})
        out = run(py, HERE / "throttle_check.py", lib, bootstrap, topic, client_id)
        got[lib] = json.loads(out.strip().splitlines()[-1])
    assert got["odradek"] == got["confluent"]
    assert got["odradek"]["class"] == "ThrottleEvent" and got["odradek"]["str_ms"]


def test_throttle_cb_exception_propagates_from_poll(bootstrap, topic, quotas):
    client_id = unique("py-throttle-raises")
    quotas(client_entity(client_id), {"producer_byte_rate": RATE})
    calls = []

    def boom(event):
        calls.append(event)
        if len(calls) == 1:
            raise RuntimeError("from throttle_cb")

    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 0,
                  "throttle_cb": boom})
    deadline = time.monotonic() + 60
    raised = False
    while not raised:
        assert time.monotonic() < deadline, calls
        p.produce(topic, VALUE, partition=0)
        try:
            p.flush(30)
        except RuntimeError as e:
            assert "from throttle_cb" in str(e)
            raised = True
    assert calls and isinstance(calls[0], ThrottleEvent)
    p.close(30)


def test_quota_round_trip(admin, quotas):
    client_id = unique("py-quota-client")
    entity = client_entity(client_id)
    quotas(entity, {"producer_byte_rate": 1048576, "consumer_byte_rate": 2097152.0})
    assert wait_described(admin, entity, {"producer_byte_rate": 1048576.0,
                                          "consumer_byte_rate": 2097152.0})
    # validate_only changes nothing.
    alter_ok(admin, entity, {"producer_byte_rate": 4096}, validate_only=True)
    time.sleep(0.2)
    assert described(admin, entity)["producer_byte_rate"] == 1048576.0
    # None removes a key; Op objects work as well as a dict.
    alter_ok(admin, entity, [ClientQuotaAlteration.Op("consumer_byte_rate", None),
                             ClientQuotaAlteration.Op("request_percentage", 12.5)])
    wait_described(admin, entity, {"producer_byte_rate": 1048576.0, "request_percentage": 12.5})

    # A user's default client (a None name) and the filter kinds.
    user = unique("py-quota-user")
    default_client = ClientQuotaEntity({"user": user, "client-id": None})
    quotas(default_client, {"producer_byte_rate": 65536})
    wait_described(admin, default_client, {"producer_byte_rate": 65536.0})
    by_user = admin.describe_client_quotas(ClientQuotaFilter.contains(
        [ClientQuotaFilterComponent.of_entity("user", user)])).result(timeout=30)
    assert by_user == {default_client: {"producer_byte_rate": 65536.0}}
    only_user = admin.describe_client_quotas(ClientQuotaFilter.contains_only(
        [ClientQuotaFilterComponent.of_entity("user", user)])).result(timeout=30)
    assert only_user == {}
    any_client = admin.describe_client_quotas(ClientQuotaFilter.contains(
        [ClientQuotaFilterComponent.of_entity("user", user),
         ClientQuotaFilterComponent.of_default_entity("client-id")])).result(timeout=30)
    assert any_client == {default_client: {"producer_byte_rate": 65536.0}}
    everything = admin.describe_client_quotas(ClientQuotaFilter.all()).result(timeout=30)
    assert everything[entity] == {"producer_byte_rate": 1048576.0, "request_percentage": 12.5}
    assert everything[default_client] == {"producer_byte_rate": 65536.0}
    of_type = admin.describe_client_quotas(ClientQuotaFilter.contains(
        [ClientQuotaFilterComponent.of_entity_type("client-id")])).result(timeout=30)
    assert entity in of_type and default_client in of_type


def code_of(fut):
    with pytest.raises(KafkaException) as ei:
        fut.result(timeout=30)
    return ei.value.args[0].code(), ei.value.args[0].str()


def test_bad_quotas_are_refused(admin):
    entity = client_entity(unique("py-quota-bad"))
    for ops in ({"producer_byte_rate": -1}, {"producer_byte_rate": 0},
                {"producer_byte_rate": 1.5}, {"no_such_quota": 10}):
        fut = admin.alter_client_quotas([ClientQuotaAlteration(entity, ops)])[entity]
        code, reason = code_of(fut)
        assert code == KafkaError.INVALID_REQUEST, (ops, code, reason)
    unknown_type = ClientQuotaEntity({"no-such-entity-type": "x"})
    fut = admin.alter_client_quotas(
        [ClientQuotaAlteration(unknown_type, {"producer_byte_rate": 1024})])[unknown_type]
    assert code_of(fut)[0] == KafkaError.INVALID_REQUEST
    # One bad alteration fails only its own future.
    good = client_entity(unique("py-quota-good"))
    futs = admin.alter_client_quotas(
        [ClientQuotaAlteration(good, {"producer_byte_rate": 1024}),
         ClientQuotaAlteration(entity, {"producer_byte_rate": -5})], validate_only=True)
    assert futs[good].result(timeout=30) is None
    assert code_of(futs[entity])[0] == KafkaError.INVALID_REQUEST
    assert described(admin, entity) is None
    # An unknown entity type in a describe filter: Kafka's UNSUPPORTED_VERSION.
    fut = admin.describe_client_quotas(ClientQuotaFilter.contains(
        [ClientQuotaFilterComponent.of_entity("no-such-entity-type", "x")]))
    assert code_of(fut)[0] == KafkaError.UNSUPPORTED_VERSION


def test_non_numeric_values_raise_naming_the_key(admin):
    entity = client_entity(unique("py-quota-types"))
    for value in ("1024", b"1024", True, [1], object()):
        with pytest.raises(TypeError, match="producer_byte_rate"):
            ClientQuotaAlteration(entity, {"producer_byte_rate": value})
        with pytest.raises(TypeError, match="consumer_byte_rate"):
            ClientQuotaAlteration.Op("consumer_byte_rate", value)
    for value in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="producer_byte_rate"):
            ClientQuotaAlteration(entity, {"producer_byte_rate": value})
    # A value changed after construction is checked when sent.
    alteration = ClientQuotaAlteration(entity, {"producer_byte_rate": 1024})
    alteration.ops[0].value = "fast"
    with pytest.raises(TypeError, match="producer_byte_rate"):
        admin.alter_client_quotas([alteration])
    with pytest.raises(TypeError):
        ClientQuotaAlteration(entity, {1: 1024})
    with pytest.raises(TypeError):
        ClientQuotaEntity({"client-id": 7})
    with pytest.raises(TypeError):
        ClientQuotaAlteration({"client-id": "x"}, {"producer_byte_rate": 1})
    with pytest.raises(TypeError):
        admin.alter_client_quotas(alteration)
    with pytest.raises(ValueError):
        admin.alter_client_quotas([])
    a = ClientQuotaAlteration(entity, {"producer_byte_rate": 1})
    with pytest.raises(ValueError, match="duplicate"):
        admin.alter_client_quotas([a, a])
    with pytest.raises(TypeError):
        admin.describe_client_quotas([ClientQuotaFilterComponent.of_entity_type("user")])
    with pytest.raises(TypeError):
        ClientQuotaFilterComponent("user", ClientQuotaMatchType.EXACT)


def test_quota_calls_honour_request_timeout():
    admin = AdminClient({"bootstrap.servers": "127.0.0.1:1"})
    start = time.monotonic()
    entity = client_entity("x")
    fut = admin.describe_client_quotas(ClientQuotaFilter.all(), request_timeout=0.5)
    futs = admin.alter_client_quotas([ClientQuotaAlteration(entity, {"producer_byte_rate": 1})],
                                     request_timeout=0.5)
    assert code_of(fut)[0] == KafkaError._TIMED_OUT
    assert code_of(futs[entity])[0] == KafkaError._TIMED_OUT
    assert time.monotonic() - start < 10


def test_admin_poll_serves_throttle_cb(bootstrap, quotas):
    assert AdminClient({"bootstrap.servers": bootstrap}).poll(0) == 0
    client_id = unique("py-throttled-admin")
    # A request quota of 0.01% of a thread: a few requests exhaust it (the throttle time of a
    # request quota is at most one window).
    quotas(client_entity(client_id), {"request_percentage": 0.01})
    events, threads = [], []

    def on_throttle(event):
        events.append(event)
        threads.append(threading.get_ident())

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": client_id,
                         "throttle_cb": on_throttle})
    start = time.monotonic()
    assert admin.poll(0.2) == 0
    assert 0.15 < time.monotonic() - start < 5
    deadline = time.monotonic() + 60
    served = 0
    while not any(e.throttle_time > 0 for e in events):
        assert time.monotonic() < deadline, events
        admin.describe_cluster(request_timeout=30).result(timeout=30)
        served += admin.poll(0)
    assert served == len(events) and set(threads) == {threading.get_ident()}
    e = next(e for e in events if e.throttle_time > 0)
    assert isinstance(e, ThrottleEvent) and 0 < e.throttle_time <= 11
