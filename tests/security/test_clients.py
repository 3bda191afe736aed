"""Third-party clients against a secured broker: the same table on odradek-broker and Apache
Kafka 4.4 (conftest.py's `broker` fixture runs every test on each).

Negative cases first: wrong password, unknown user, expired / untrusted client certificates,
plaintext on a TLS port, TLS on a plaintext port, GSSAPI, a SASL frame over the limit, a client
that never finishes its TLS handshake. Each gives a clear error, the broker keeps serving, and
its log holds no secret. Then round trips per listener and mechanism with confluent-kafka
(librdkafka) and kafka-python: produce, consume in a group with commits, and a transaction.
"""
import socket
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer

from clients import MECHANISMS, ck_conf, kp_conf
from conftest import IDLE_MS, REAUTH_MS, SECRETS

DEADLINE = 30


def topic(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:8])


def ck_failure(conf, timeout=8):
    """What librdkafka reports when it cannot use the broker: error callback texts."""
    errors = []
    conf = dict(conf, error_cb=lambda e: errors.append("%s: %s" % (e.name(), e.str())))
    admin = AdminClient(conf)
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=timeout)
    # Give librdkafka a moment to deliver the error callbacks.
    end = time.time() + 3
    while time.time() < end and not errors:
        admin.poll(0.2)
    return " | ".join(errors)


def ck_roundtrip(conf, n=20, group=True):
    t = topic("rt")
    p = Producer(dict(conf, **{"acks": "all", "message.timeout.ms": DEADLINE * 1000}))
    reports = []
    for i in range(n):
        p.produce(t, key=b"k%d" % i, value=b"v%d" % i, callback=lambda e, m: reports.append(e))
    assert p.flush(DEADLINE) == 0
    assert reports == [None] * n, reports
    c = Consumer(dict(conf, **{"group.id": "g-" + t, "auto.offset.reset": "earliest",
                               "enable.auto.commit": False}))
    c.subscribe([t])
    got = []
    end = time.time() + DEADLINE
    while len(got) < n and time.time() < end:
        m = c.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got.append(m.value())
    if got:
        c.commit(asynchronous=False)
    c.close()
    assert sorted(got) == sorted(b"v%d" % i for i in range(n))


def assert_alive(broker):
    ck_roundtrip(ck_conf(broker, "PLAINTEXT"), n=2)


def assert_no_secrets(broker):
    log = broker.log()
    for s in SECRETS:
        assert s not in log, "%s log contains %r" % (broker.kind, s)


# ---------------------------------------------------------------------------------------------
# Raw protocol (the cases no client library sends)

def frame(api_key, version, body, corr=1):
    client = b"sec-raw"
    header = struct.pack(">hhih", api_key, version, corr, len(client)) + client
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def read_frame(s):
    size = b""
    while len(size) < 4:
        chunk = s.recv(4 - len(size))
        if not chunk:
            return None
        size += chunk
    n = struct.unpack(">i", size)[0]
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def closed(s, timeout):
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def connect(addr):
    host, port = addr.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def test_gssapi_is_refused_with_the_enabled_mechanisms(broker):
    s = connect(broker.addr("SASL_PLAINTEXT"))
    mech = b"GSSAPI"
    s.sendall(frame(17, 1, struct.pack(">h", len(mech)) + mech))
    resp = read_frame(s)
    assert resp is not None
    corr, code, count = struct.unpack(">ihi", resp[:10])
    mechs, off = [], 10
    for _ in range(count):
        (n,) = struct.unpack(">h", resp[off:off + 2])
        mechs.append(resp[off + 2:off + 2 + n].decode())
        off += 2 + n
    assert code == 33, "UNSUPPORTED_SASL_MECHANISM"
    assert sorted(mechs) == sorted(MECHANISMS)  # Kafka answers them in its own order
    assert closed(s, 10)
    assert_alive(broker)


def test_a_sasl_frame_over_the_limit_closes_the_connection(broker):
    s = connect(broker.addr("SASL_PLAINTEXT"))
    s.sendall(struct.pack(">i", 600_000))  # sasl.server.max.receive.size is 524288
    assert closed(s, 10)
    assert_alive(broker)


def test_requests_before_authentication_close_the_connection(broker):
    s = connect(broker.addr("SASL_PLAINTEXT"))
    s.sendall(frame(3, 12, struct.pack(">i", -1) + b"\x01\x00\x00"))  # Metadata v12, null topics
    assert closed(s, 10)
    assert_alive(broker)


def test_a_client_that_never_finishes_its_tls_handshake_is_closed(broker):
    started = time.time()
    s = connect(broker.addr("SSL"))
    assert closed(s, IDLE_MS / 1000 + 20)
    assert time.time() - started < IDLE_MS / 1000 + 15
    assert_alive(broker)


# ---------------------------------------------------------------------------------------------
# Negative cases with librdkafka

@pytest.mark.parametrize("mechanism,user,password,expected", [
    ("PLAIN", "alice", "wrong-secret-1", "Authentication failed: Invalid username or password"),
    ("PLAIN", "mallory", "wrong-secret-2", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "alice", "wrong-secret-3",
     "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"),
    ("SCRAM-SHA-512", "mallory", "wrong-secret-4",
     "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"),
])
def test_wrong_credentials_are_refused(broker, mechanism, user, password, expected):
    text = ck_failure(ck_conf(broker, "SASL_SSL", mechanism, user=user, password=password))
    assert "_AUTHENTICATION" in text and expected in text, text
    assert_alive(broker)
    assert_no_secrets(broker)


@pytest.mark.parametrize("cert", ["expired", "untrusted", None])
def test_bad_client_certificates_are_refused_on_mtls(broker, cert):
    text = ck_failure(ck_conf(broker, "MTLS", cert=cert))
    assert text, "librdkafka reported nothing"
    assert_alive(broker)


def test_plaintext_client_on_a_tls_port_and_tls_client_on_a_plaintext_port(broker):
    conf = ck_conf(broker, "PLAINTEXT")
    conf["bootstrap.servers"] = broker.addr("SSL")
    ck_failure(conf)
    conf = ck_conf(broker, "SSL")
    conf["bootstrap.servers"] = broker.addr("PLAINTEXT")
    text = ck_failure(conf)
    assert "SSL" in text or "_TRANSPORT" in text, text
    assert_alive(broker)


# ---------------------------------------------------------------------------------------------
# Round trips

@pytest.mark.parametrize("listener,mechanism", [
    ("SSL", None), ("MTLS", None),
    ("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "OAUTHBEARER"),
    ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_PLAINTEXT", "OAUTHBEARER"),
])
def test_confluent_kafka_round_trip(broker, listener, mechanism):
    ck_roundtrip(ck_conf(broker, listener, mechanism))


@pytest.mark.parametrize("listener,mechanism", [
    ("SSL", None), ("MTLS", None),
    ("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "OAUTHBEARER"),
])
def test_kafka_python_round_trip(broker, listener, mechanism):
    conf = kp_conf(broker, listener, mechanism)
    t = topic("kp")
    p = KafkaProducer(acks="all", **conf)
    futures = [p.send(t, key=b"k%d" % i, value=b"v%d" % i) for i in range(10)]
    offsets = [f.get(timeout=DEADLINE).offset for f in futures]
    p.close()
    assert len(offsets) == 10
    c = KafkaConsumer(t, group_id="g-" + t, auto_offset_reset="earliest", enable_auto_commit=False,
                      consumer_timeout_ms=DEADLINE * 1000, **conf)
    got = []
    for m in c:
        got.append(m.value)
        if len(got) == 10:
            break
    c.commit()
    c.close()
    assert sorted(got) == sorted(b"v%d" % i for i in range(10))


def test_confluent_kafka_transaction_over_sasl_ssl(broker):
    conf = ck_conf(broker, "SASL_SSL", "SCRAM-SHA-512")
    t = topic("txn")
    p = Producer(dict(conf, **{"transactional.id": "tx-" + t}))
    p.init_transactions(DEADLINE)
    p.begin_transaction()
    for i in range(5):
        p.produce(t, value=b"c%d" % i, partition=0)
    p.commit_transaction(DEADLINE)
    p.begin_transaction()
    p.produce(t, value=b"aborted", partition=0)
    p.abort_transaction(DEADLINE)
    c = Consumer(dict(conf, **{"group.id": "g-" + t, "auto.offset.reset": "earliest",
                               "isolation.level": "read_committed"}))
    c.subscribe([t])
    got = []
    end = time.time() + DEADLINE
    while len(got) < 5 and time.time() < end:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    assert got == [b"c%d" % i for i in range(5)]


def test_the_log_holds_no_secret(broker):
    assert_no_secrets(broker)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"])
def test_librdkafka_reauthenticates_on_a_live_connection(broker, mechanism):
    """SASL_PLAINTEXT sessions last REAUTH_MS: a producer and a consumer that run for three
    sessions keep working (librdkafka re-authenticates, KIP-368)."""
    conf = ck_conf(broker, "SASL_PLAINTEXT", mechanism)
    t = topic("reauth")
    p = Producer(dict(conf, acks="all"))
    reports = []
    end = time.time() + 3 * REAUTH_MS / 1000
    n = 0
    while time.time() < end:
        p.produce(t, value=b"r%d" % n, partition=0, callback=lambda e, m: reports.append(e))
        n += 1
        p.poll(0.2)
    assert p.flush(DEADLINE) == 0
    assert reports == [None] * n, [r for r in reports if r is not None][:3]
    c = Consumer(dict(conf, **{"group.id": "g-" + t, "auto.offset.reset": "earliest"}))
    c.subscribe([t])
    got = 0
    deadline = time.time() + DEADLINE
    while got < n and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
            time.sleep(3 * REAUTH_MS / 1000 / n)  # spread the reads over sessions too
    c.close()
    assert got == n
    if broker.kind == "odradek":
        # Re-authentications ran on the live connections: none was cut off by a deadline.
        assert "SASL authentication not finished in time" not in broker.log()
