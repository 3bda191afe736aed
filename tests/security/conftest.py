"""Secured brokers for the security tier: odradek-broker and Apache Kafka 4.4 with the same
listeners, users and authorizer, so one scenario table runs on both.

Listeners (names as tests/compat/kafka.sh ODRADEK_KAFKA_SECURE=PKIDIR opens them): PLAINTEXT,
SSL, MTLS (SSL, client certificate required), SASL_SSL and SASL_PLAINTEXT with PLAIN,
SCRAM-SHA-256/512 (users alice and admin, passwords <user>-secret) and unsecured OAUTHBEARER;
StandardAuthorizer, super users User:ANONYMOUS and User:admin, allow.everyone.if.no.acl.found.

Environment: ODRADEK_BROKER_BIN (default target/debug/odradek-broker), ODRADEK_SECURITY_BROKERS
(comma list, default "odradek,kafka"), ODRADEK_SECURITY_PKI (a certs.sh directory; default: made
under pytest's tmp dir).
"""
import os
import re
import subprocess
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
KAFKA_SH = os.path.join(ROOT, "tests", "compat", "kafka.sh")
# connections.max.idle.ms on both brokers: the handshake deadline test waits for it.
IDLE_MS = 4000
# SASL_PLAINTEXT sessions last this long on both brokers (KIP-368): clients re-authenticate.
REAUTH_MS = 3000

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
OAUTH_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
              'unsecuredLoginStringClaim_sub="admin";')
SECRETS = ["alice-secret", "admin-secret", "wrong-secret-", "BEGIN PRIVATE KEY", "BEGIN EC PRIVATE KEY",
           "BEGIN ENCRYPTED PRIVATE KEY"]


def brokers_wanted():
    return [b for b in os.environ.get("ODRADEK_SECURITY_BROKERS", "odradek,kafka").split(",") if b]


@pytest.fixture(scope="session")
def pki(tmp_path_factory):
    d = os.environ.get("ODRADEK_SECURITY_PKI") or str(tmp_path_factory.mktemp("pki"))
    subprocess.run([os.path.join(HERE, "certs.sh"), d], check=True)
    # An encrypted copy of the broker key: odradek's SASL_SSL listener loads it inline with
    # ssl.key.password (per-listener overrides, inline PEM, encrypted PKCS#8 in one go).
    enc = os.path.join(d, "broker-encrypted.key")
    if not os.path.exists(enc):
        subprocess.run(["openssl", "pkcs8", "-topk8", "-in", os.path.join(d, "broker.key"), "-v2", "aes-256-cbc",
                        "-passout", "pass:broker-key-pw", "-out", enc], check=True, stderr=subprocess.DEVNULL)
    return d


class SecureBroker:
    """A started broker: `kind`, listener addresses, the log to check for secrets."""

    def __init__(self, kind, listeners, log_path, stop, pki):
        self.kind = kind
        self.listeners = listeners
        self.log_path = log_path
        self._stop = stop
        self.pki = pki

    def addr(self, name):
        return self.listeners[name]

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        self._stop()


def start_odradek(workdir, pki):
    binary = os.environ.get("ODRADEK_BROKER_BIN") or os.path.join(ROOT, "target", "debug", "odradek-broker")
    data = os.path.join(workdir, "data")
    log_path = os.path.join(workdir, "broker.log")
    ov = {
        "listeners": ",".join("%s://127.0.0.1:0" % n for n in ["PLAINTEXT", "SSL", "MTLS", "SASL_SSL", "SASL_PLAINTEXT"]),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "log.dirs": data,
        "num.partitions": "4",
        "group.initial.rebalance.delay.ms": "0",
        "connections.max.idle.ms": str(IDLE_MS),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": os.path.join(pki, "broker-keystore.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": os.path.join(pki, "ca.pem"),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.sasl_ssl.ssl.keystore.location": "",
        "listener.name.sasl_ssl.ssl.keystore.certificate.chain": open(os.path.join(pki, "broker.pem")).read(),
        "listener.name.sasl_ssl.ssl.keystore.key": open(os.path.join(pki, "broker-encrypted.key")).read(),
        "listener.name.sasl_ssl.ssl.key.password": "broker-key-pw",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin",
        "allow.everyone.if.no.acl.found": "true",
        "listener.name.sasl_plaintext.connections.max.reauth.ms": str(REAUTH_MS),
    }
    for l in ["sasl_ssl", "sasl_plaintext"]:
        ov["listener.name.%s.plain.sasl.jaas.config" % l] = PLAIN_JAAS
        ov["listener.name.%s.scram-sha-256.sasl.jaas.config" % l] = SCRAM_JAAS
        ov["listener.name.%s.scram-sha-512.sasl.jaas.config" % l] = SCRAM_JAAS
        ov["listener.name.%s.oauthbearer.sasl.jaas.config" % l] = OAUTH_JAAS
    args = [binary]
    for k, v in ov.items():
        args += ["--override", "%s=%s" % (k, v)]
    for mech in ["SCRAM-SHA-256", "SCRAM-SHA-512"]:
        for user in ["alice", "admin"]:
            args += ["--add-scram", "%s=[name=%s,password=%s-secret]" % (mech, user, user)]
    env = dict(os.environ, ODRADEK_LOG="debug")
    log = open(log_path, "w")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    listeners = {}
    deadline = time.time() + 30
    first = proc.stdout.readline()
    if not first.startswith("odradek-broker listening on"):
        raise RuntimeError("odradek-broker did not start: %r\n%s" % (first, open(log_path).read()[-3000:]))
    while len(listeners) < 5 and time.time() < deadline:
        m = re.match(r"odradek-broker listener (\S+) (\S+) (\S+)", proc.stdout.readline())
        if m:
            listeners[m.group(1)] = m.group(3)

    def stop():
        proc.terminate()
        rc = proc.wait(30)
        log.close()
        assert rc == 0, "odradek-broker exited with %s" % rc
    return SecureBroker("odradek", listeners, log_path, stop, pki)


def start_kafka(workdir, pki):
    env = dict(os.environ, ODRADEK_KAFKA_SECURE=pki,
               ODRADEK_KAFKA_EXTRA_PROPS="connections.max.idle.ms=%d\nlistener.name.sasl_plaintext.connections.max.reauth.ms=%d"
               % (IDLE_MS, REAUTH_MS),
               ODRADEK_KAFKA_START_TIMEOUT="180")
    out = subprocess.run([KAFKA_SH, "start", workdir], env=env, check=True, stdout=subprocess.PIPE, text=True)
    listeners = {"PLAINTEXT": out.stdout.strip()}
    with open(os.path.join(workdir, "listeners.env")) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            listeners[k] = v

    def stop():
        subprocess.run([KAFKA_SH, "stop", workdir], check=False)
    return SecureBroker("kafka", listeners, os.path.join(workdir, "kafka.log"), stop, pki)


def start(kind, workdir, pki):
    os.makedirs(workdir, exist_ok=True)
    return start_odradek(workdir, pki) if kind == "odradek" else start_kafka(workdir, pki)


@pytest.fixture(scope="module", params=brokers_wanted())
def broker(request, pki, tmp_path_factory):
    b = start(request.param, str(tmp_path_factory.mktemp(request.param)), pki)
    yield b
    b.stop()
