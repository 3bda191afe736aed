"""Broker state changes reach error_cb as librdkafka reports them (issue 27): every broker
down is one KafkaError(_ALL_BROKERS_DOWN) per episode, served from poll(), for producers,
consumers and admin clients alike; the client keeps retrying meanwhile."""
import socket
import time

from odradek import Consumer, KafkaError, Producer
from odradek.admin import AdminClient


def dead_address():
    # Bound and released: nothing listens there afterwards.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    addr = "127.0.0.1:%d" % s.getsockname()[1]
    s.close()
    return addr


def test_consumer_error_cb_hears_all_brokers_down_once():
    seen = []
    c = Consumer({"bootstrap.servers": dead_address(), "group.id": "events-check",
                  "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50,
                  "error_cb": seen.append})
    try:
        c.subscribe(["events-topic"])
        deadline = time.time() + 15
        while time.time() < deadline and not seen:
            c.poll(0.1)
        # Further polls in the same episode tell nothing new.
        for _ in range(10):
            c.poll(0.1)
    finally:
        c.close()
    codes = [e.code() for e in seen]
    assert codes == [KafkaError._ALL_BROKERS_DOWN], seen
    assert "1/1 brokers are down" in seen[0].str()
    assert seen[0].retriable()


def test_producer_error_cb_hears_all_brokers_down():
    seen = []
    p = Producer({"bootstrap.servers": dead_address(),
                  "error_cb": seen.append})
    p.produce("events-topic", b"v")
    deadline = time.time() + 15
    while time.time() < deadline and not seen:
        p.poll(0.1)
    p.purge()
    p.flush(5)
    assert [e.code() for e in seen][:1] == [KafkaError._ALL_BROKERS_DOWN], seen


def test_a_consumer_of_a_live_broker_tells_nothing(bootstrap):
    seen = []
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "events-live",
                  "error_cb": seen.append})
    try:
        c.list_topics(timeout=10)
        for _ in range(10):
            c.poll(0.1)
    finally:
        c.close()
    assert seen == []


def test_admin_error_cb_hears_all_brokers_down_from_poll():
    seen = []
    admin = AdminClient({"bootstrap.servers": dead_address(), "error_cb": seen.append,
                         "reconnect.backoff.max.ms": 50})
    fut = admin.describe_cluster(request_timeout=3)
    deadline = time.time() + 15
    served = 0
    while time.time() < deadline and not seen:
        served += admin.poll(0.1)
    assert [e.code() for e in seen][:1] == [KafkaError._ALL_BROKERS_DOWN], seen
    assert served >= 1
    # The call itself still ends on its own timeout.
    assert fut.exception(timeout=10) is not None


def test_an_admin_error_cb_that_raises_propagates_from_poll():
    def boom(err):
        raise RuntimeError("from error_cb: %s" % err.name())

    admin = AdminClient({"bootstrap.servers": dead_address(), "error_cb": boom})
    admin.describe_cluster(request_timeout=3)
    deadline = time.time() + 15
    raised = None
    while time.time() < deadline and raised is None:
        try:
            admin.poll(0.1)
        except RuntimeError as e:
            raised = e
    assert raised is not None and "_ALL_BROKERS_DOWN" in str(raised)
