"""librdkafka's properties through the Python shell (docs/configuration.md): every property
at its default builds a Producer and a Consumer that still round-trip, realistic service
configurations are accepted, and what Odradek cannot honour is refused naming the property."""
from pathlib import Path

import pytest

from odradek import Consumer, KafkaException, Producer

from conftest import consume_all

TABLE = Path(__file__).resolve().parents[2] / "client-core" / "src" / "librdkafka_properties.tsv"

# Set through confluent-kafka's API (callables in the dict) or librdkafka's dedicated
# functions, never as strings; `builtin.features`' "default" is librdkafka's own feature list
# (asking for sasl_gssapi or plugins is refused here, as librdkafka refuses a missing feature).
NOT_STRINGS = {"builtin.features"}


def librdkafka_defaults(scope):
    """Every property of `scope` ("P" or "C") and "*" with a default, as strings."""
    conf = {}
    for line in TABLE.read_text().splitlines():
        if line.startswith("#"):
            continue
        table, name, cp, _range, default, kind, _alias = line.split("\t")
        if kind == "see dedicated API" or name in NOT_STRINGS or cp not in (scope, "*"):
            continue
        if default == "" or "\\" in default:  # unset, or a shell command librdkafka abbreviates
            continue
        conf[name] = default
    return conf


def test_every_property_at_its_default_still_round_trips(bootstrap, topic):
    producer_defaults = librdkafka_defaults("P")
    consumer_defaults = librdkafka_defaults("C")
    assert len(producer_defaults) > 80 and len(consumer_defaults) > 80
    # The table's allow.auto.create.topics default is the consumer's (false); a librdkafka
    # producer's is true, and false stops it from creating the topic, here as there.
    p = Producer({**producer_defaults, "bootstrap.servers": bootstrap, "linger.ms": 1,
                  "allow.auto.create.topics": True})
    errors = []
    for i in range(5):
        p.produce(topic, value=b"v%d" % i, partition=0,
                  on_delivery=lambda err, msg: err and errors.append(err))
    assert p.flush(30) == 0, errors
    c = Consumer({**consumer_defaults, "bootstrap.servers": bootstrap,
                  "group.id": "defaults-" + topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = consume_all(c, 5)
    c.close()
    assert sorted(m.value() for m in got) == [b"v%d" % i for i in range(5)]


@pytest.mark.parametrize("conf", [
    # A tuned producer (librdkafka's performance guidance).
    {"linger.ms": 50, "batch.num.messages": 10000, "batch.size": 1000000,
     "queue.buffering.max.kbytes": 1048576, "compression.codec": "lz4",
     "socket.nagle.disable": True, "sticky.partitioning.linger.ms": 10,
     "enable.idempotence": True, "acks": "all"},
    # A tuned consumer, rack-aware.
    {"group.id": "g", "fetch.wait.max.ms": 100, "queued.min.messages": 10000,
     "fetch.queue.backoff.ms": 0, "queued.max.messages.kbytes": 65536,
     "client.rack": "use1-az1", "enable.auto.offset.store": False},
    # Cloud-style settings, with debugging on.
    {"socket.keepalive.enable": True, "metadata.max.age.ms": 60000,
     "topic.metadata.refresh.interval.ms": 30000, "broker.address.family": "v4",
     "debug": "broker,protocol", "api.version.request": True,
     "enable.metrics.push": False, "client.dns.lookup": "use_all_dns_ips"},
    # A KIP-848 consumer: the broker assigns.
    {"group.id": "g", "group.protocol": "consumer", "group.remote.assignor": "uniform",
     "group.instance.id": "worker-1", "max.poll.interval.ms": 60000},
], ids=["tuned-producer", "tuned-consumer", "cloud-debug", "kip848-consumer"])
def test_realistic_configurations_are_accepted(bootstrap, conf):
    if "group.id" in conf:
        Consumer({**conf, "bootstrap.servers": bootstrap}).close()
    else:
        Producer({**conf, "bootstrap.servers": bootstrap}).flush(1)


@pytest.mark.parametrize("key,value,why", [
    ("ssl.crl.location", "/etc/crl.pem", "revocation"),
    ("queuing.strategy", "lifo", "order"),
    ("offset.store.method", "file", "coordinator"),
    ("socket_cb", "x", "API"),
    ("batch.num.messages", 0, "outside allowed range 1..1000000"),
    ("debug", "nonsense", "nonsense"),
])
def test_what_cannot_be_honoured_is_refused_naming_the_property(bootstrap, key, value, why):
    with pytest.raises(KafkaException) as e:
        Producer({"bootstrap.servers": bootstrap, key: value})
    text = str(e.value)
    assert key in text and why in text, text


@pytest.mark.parametrize("key,value", [
    ("session.timeout.ms", 10000),
    ("heartbeat.interval.ms", 1000),
    ("partition.assignment.strategy", "range"),
])
def test_classic_settings_are_refused_with_the_consumer_protocol(bootstrap, key, value):
    # As confluent-kafka refuses them: the broker decides these on the consumer protocol.
    with pytest.raises(KafkaException) as e:
        Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "group.protocol": "consumer", key: value})
    text = str(e.value)
    assert key in text and "group.protocol=consumer" in text, text


class Lines:
    """A logging.Logger stand-in that keeps what it is given (confluent-kafka calls
    logger.log(level, fmt, *args))."""

    def __init__(self):
        self.records = []

    def log(self, level, fmt, *args):
        self.records.append((level, fmt % args))


def test_logger_gets_the_debug_contexts_and_stderr_does_not(bootstrap, topic):
    import logging
    with_debug, without = Lines(), Lines()
    for lines, extra in ((with_debug, {"debug": "metadata"}), (without, {})):
        # The first bootstrap server refuses connections: the client says so at debug level.
        p = Producer({"bootstrap.servers": "127.0.0.1:1," + bootstrap, "logger": lines,
                      "linger.ms": 1, **extra})
        p.produce(topic, b"v")
        assert p.flush(30) == 0
        p.poll(0)
    unreachable = [m for level, m in with_debug.records
                   if level == logging.DEBUG and "bootstrap server unreachable" in m]
    assert unreachable and unreachable[0].startswith("odradek::cluster"), with_debug.records
    assert not [r for r in without.records if r[0] < logging.WARNING], without.records


def test_a_bad_debug_context_is_refused_with_a_logger_too(bootstrap):
    with pytest.raises(KafkaException) as e:
        Producer({"bootstrap.servers": bootstrap, "debug": "nonsense", "logger": Lines()})
    assert "nonsense" in str(e.value)
