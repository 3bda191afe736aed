"""Secured brokers for the security tier: odradek-broker and Apache Kafka 4.4 with the same
listeners, users and authorizer, so one scenario table runs on both (the brokers, their
settings and the PKI step live in secure_brokers.py, shared with tests/compat/run).

Listeners (names as tests/compat/kafka.sh ODRADEK_KAFKA_SECURE=PKIDIR opens them): PLAINTEXT,
SSL, MTLS (SSL, client certificate required), SASL_SSL and SASL_PLAINTEXT with PLAIN,
SCRAM-SHA-256/512 (users alice and admin, passwords <user>-secret) and unsecured OAUTHBEARER;
StandardAuthorizer, super users User:ANONYMOUS and User:admin, allow.everyone.if.no.acl.found.

Environment: ODRADEK_BROKER_BIN (default target/debug/odradek-broker), ODRADEK_SECURITY_BROKERS
(comma list, default "odradek,kafka"), ODRADEK_SECURITY_PKI (a certs.sh directory; default: made
under pytest's tmp dir).
"""
import os

import pytest

from secure_brokers import (  # noqa: F401 - re-exported for the tests
    HERE, IDLE_MS, KAFKA_SH, OAUTH_JAAS, PLAIN_JAAS, REAUTH_MS, ROOT, SCRAM_JAAS, SECRETS, USERS, SecureBroker,
    brokers_wanted, make_pki, start, start_kafka, start_odradek)


@pytest.fixture(scope="session")
def pki(tmp_path_factory):
    return make_pki(os.environ.get("ODRADEK_SECURITY_PKI") or str(tmp_path_factory.mktemp("pki")))


@pytest.fixture(scope="module", params=brokers_wanted())
def broker(request, pki, tmp_path_factory):
    b = start(request.param, str(tmp_path_factory.mktemp(request.param)), pki)
    yield b
    b.stop()
