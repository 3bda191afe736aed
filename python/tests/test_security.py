"""TLS and SASL through the Python package, with confluent-kafka's property names and
callbacks, against a broker with secured listeners (tests/security/client.sh starts Apache
Kafka with them and sets ODRADEK_SECURITY_LISTENERS / ODRADEK_SECURITY_PKI; without those the
tests are skipped).

Round trips over SSL, mTLS, SASL_SSL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER through `oauth_cb`
and the unsecured JWT) and SASL_PLAINTEXT; a consumer group and a transaction over SASL_SSL;
wrong credentials and untrusted certificates reported through the delivery report and
`error_cb` with librdkafka's codes, quickly and without the secret.
"""
import os
import time
import uuid

import pytest

from odradek import Consumer, KafkaError, Producer, TopicPartition
from odradek.admin import AdminClient

LISTENERS = os.environ.get("ODRADEK_SECURITY_LISTENERS")
PKI = os.environ.get("ODRADEK_SECURITY_PKI")
pytestmark = pytest.mark.skipif(not (LISTENERS and PKI),
                                reason="no secured broker (tests/security/client.sh sets one up)")


def listeners():
    out = {}
    with open(LISTENERS) as f:
        for line in f:
            if "=" in line:
                k, v = line.strip().split("=", 1)
                out[k] = v
    return out


def pki(name):
    return os.path.join(PKI, name)


def conf(listener, **extra):
    c = {"bootstrap.servers": listeners()[listener], "socket.connection.setup.timeout.ms": 5000,
         "request.timeout.ms": 10000, "message.timeout.ms": 20000}
    c.update({k.replace("_", "."): v for k, v in extra.items()})
    return c


def sasl_ssl(mechanism, user="alice", password="alice-secret"):
    return conf("SASL_SSL", security_protocol="SASL_SSL", ssl_ca_location=pki("ca.pem"),
                sasl_mechanism=mechanism, sasl_username=user, sasl_password=password)


def round_trip(config, tag):
    topic = "py-sec-%s-%s" % (tag, uuid.uuid4().hex[:8])
    p = Producer(config)
    errors = []
    for i in range(10):
        p.produce(topic, b"%d" % i, partition=0, on_delivery=lambda e, m: e and errors.append(e))
    assert p.flush(30) == 0, tag
    assert not errors, (tag, errors)
    c = Consumer(dict(config, **{"group.id": topic, "auto.offset.reset": "earliest"}))
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    assert got == [b"%d" % i for i in range(10)], tag


def test_round_trips_on_every_listener_and_mechanism():
    key_password = open(pki("client-key-password.txt")).read().strip()
    cases = {
        "ssl": conf("SSL", security_protocol="SSL", ssl_ca_location=pki("ca.pem")),
        "mtls": conf("MTLS", security_protocol="SSL", ssl_ca_location=pki("ca.pem"),
                     ssl_certificate_location=pki("client.pem"), ssl_key_location=pki("client-encrypted.key"),
                     ssl_key_password=key_password),
        "plain": sasl_ssl("PLAIN"),
        "scram256": sasl_ssl("SCRAM-SHA-256"),
        "scram512": sasl_ssl("SCRAM-SHA-512"),
        "unsecured-jwt": conf("SASL_SSL", security_protocol="SASL_SSL", ssl_ca_location=pki("ca.pem"),
                              sasl_mechanism="OAUTHBEARER",
                              **{"enable.sasl.oauthbearer.unsecure.jwt": True,
                                 "sasl.oauthbearer.config": "principal=alice"}),
        "sasl-plaintext": conf("SASL_PLAINTEXT", security_protocol="SASL_PLAINTEXT",
                               sasl_mechanism="SCRAM-SHA-512", sasl_username="alice",
                               sasl_password="alice-secret"),
    }
    for tag, config in cases.items():
        round_trip(config, tag)


def test_a_cloud_style_sasl_ssl_configuration_round_trips():
    # What a managed-Kafka quick start hands out (Confluent Cloud, MSK with SASL/SCRAM, ...):
    # librdkafka's property names, hostname verification on, and the usual tuning.
    config = dict(sasl_ssl("PLAIN"), **{
        "sasl.mechanisms": "PLAIN", "ssl.endpoint.identification.algorithm": "https",
        "acks": "all", "enable.idempotence": True, "linger.ms": 5, "compression.type": "zstd",
        "socket.keepalive.enable": True, "client.id": "ccloud-python-client",
        "session.timeout.ms": 45000, "statistics.interval.ms": 0})
    del config["sasl.mechanism"]
    round_trip(config, "cloud")


def test_oauth_cb_supplies_the_token():
    calls = []

    def oauth_cb(oauth_config):
        calls.append(oauth_config)
        # An unsecured JWT (alg none) that the broker's unsecured validator accepts.
        import base64
        import json
        now = int(time.time())
        b64 = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
        token = "%s.%s." % (b64({"alg": "none"}), b64({"sub": "cb-user", "iat": now, "exp": now + 600}))
        return token, now + 600, "cb-user", {"traceId": "42"}

    config = conf("SASL_SSL", security_protocol="SASL_SSL", ssl_ca_location=pki("ca.pem"),
                  sasl_mechanism="OAUTHBEARER", **{"sasl.oauthbearer.config": "scope=kafka"})
    config["oauth_cb"] = oauth_cb
    round_trip(config, "oauth-cb")
    assert calls and calls[0] == "scope=kafka"


def test_wrong_credentials_reach_the_delivery_report_and_error_cb():
    for tag, config, secret in [
        ("scram", sasl_ssl("SCRAM-SHA-512", password="Qw3-not-hers"), "Qw3-not-hers"),
        ("unknown-user", sasl_ssl("PLAIN", user="mallory", password="Zx8-whatever"), "Zx8-whatever"),
    ]:
        errors = []
        config["error_cb"] = errors.append
        p = Producer(config)
        reports = []
        started = time.monotonic()
        p.produce("py-sec-denied", b"x", on_delivery=lambda e, m: reports.append(e))
        deadline = time.monotonic() + 15
        while not (reports and errors) and time.monotonic() < deadline:
            p.poll(0.2)
        assert time.monotonic() - started < 10, tag
        assert reports and reports[0].code() == KafkaError._AUTHENTICATION, (tag, reports)
        assert errors and errors[0].code() == KafkaError._AUTHENTICATION, (tag, errors)
        assert not reports[0].retriable()
        assert secret not in str(reports[0]) and secret not in str(errors[0]), tag
        p.flush(5)


def test_untrusted_certificate_is_an_ssl_error():
    config = conf("SSL", security_protocol="SSL", ssl_ca_location=pki("other-ca.pem"))
    errors = []
    config["error_cb"] = errors.append
    p = Producer(config)
    reports = []
    p.produce("py-sec-untrusted", b"x", on_delivery=lambda e, m: reports.append(e))
    deadline = time.monotonic() + 15
    while not reports and time.monotonic() < deadline:
        p.poll(0.2)
    assert reports and reports[0].code() == KafkaError._SSL, reports
    assert errors and errors[0].code() == KafkaError._SSL, errors


def test_group_and_transaction_over_sasl_ssl():
    topic = "py-sec-txn-%s" % uuid.uuid4().hex[:8]
    p = Producer(dict(sasl_ssl("SCRAM-SHA-256"), **{"transactional.id": topic}))
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, b"c%d" % i, partition=0)
    p.commit_transaction(30)
    c = Consumer(dict(sasl_ssl("SCRAM-SHA-256"), **{"group.id": topic, "auto.offset.reset": "earliest",
                                                    "isolation.level": "read_committed"}))
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < 5 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.commit(asynchronous=False)
    c.close()
    assert got == [b"c%d" % i for i in range(5)]
    admin = AdminClient(sasl_ssl("SCRAM-SHA-512"))
    assert topic in admin.list_topics(timeout=10).topics
