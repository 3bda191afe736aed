"""Secured brokers for the security tiers and the compatibility matrix: odradek-broker and
Apache Kafka 4.4 with the same listeners, users and authorizer, so one scenario runs on both.
Plain Python (no pytest): conftest.py's fixtures, with_odradek.py and tests/compat/run use it.

Listeners (names as tests/compat/kafka.sh ODRADEK_KAFKA_SECURE=PKIDIR opens them): PLAINTEXT,
SSL, MTLS (SSL, client certificate required), SASL_SSL and SASL_PLAINTEXT with PLAIN,
SCRAM-SHA-256/512 (users alice and admin, passwords <user>-secret) and unsecured OAUTHBEARER;
StandardAuthorizer, super users User:ANONYMOUS and User:admin, allow.everyone.if.no.acl.found.

Environment: ODRADEK_BROKER_BIN (default target/debug/odradek-broker), ODRADEK_SECURITY_BROKERS
(comma list, default "odradek,kafka").
"""
import os
import queue
import re
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
KAFKA_SH = os.path.join(ROOT, "tests", "compat", "kafka.sh")
# connections.max.idle.ms on both brokers (the security tier's default): the handshake deadline
# test waits for it.
IDLE_MS = 4000
# SASL_PLAINTEXT sessions last this long on both brokers (KIP-368): clients re-authenticate.
REAUTH_MS = 3000
# SCRAM users of both brokers (kafka.sh makes the same ones and writes them to DIR/users.env).
USERS = {"alice": "alice-secret", "admin": "admin-secret"}
# The password of odradek's encrypted broker key (broker-encrypted.key, made by make_pki).
BROKER_KEY_PASSWORD = "broker-key-pw"
LISTENERS = ["PLAINTEXT", "SSL", "MTLS", "SASL_SSL", "SASL_PLAINTEXT"]

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
OAUTH_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
              'unsecuredLoginStringClaim_sub="admin";')
SECRETS = ["alice-secret", "admin-secret", "wrong-secret-", "BEGIN PRIVATE KEY", "BEGIN EC PRIVATE KEY",
           "BEGIN ENCRYPTED PRIVATE KEY"]


def brokers_wanted():
    return [b for b in os.environ.get("ODRADEK_SECURITY_BROKERS", "odradek,kafka").split(",") if b]


def make_pki(d):
    """tests/security/certs.sh D, plus the encrypted copy of the broker key that odradek's SASL_SSL
    listener loads inline with ssl.key.password (per-listener overrides, inline PEM, encrypted
    PKCS#8 in one go). Idempotent. Returns D."""
    subprocess.run([os.path.join(HERE, "certs.sh"), d], check=True, stdin=subprocess.DEVNULL)
    enc = os.path.join(d, "broker-encrypted.key")
    if not os.path.exists(enc):
        subprocess.run(["openssl", "pkcs8", "-topk8", "-in", os.path.join(d, "broker.key"), "-v2", "aes-256-cbc",
                        "-passout", "pass:%s" % BROKER_KEY_PASSWORD, "-out", enc], check=True,
                       stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return d


class SecureBroker:
    """A started broker: `kind`, listener addresses, the log to check for secrets."""

    def __init__(self, kind, listeners, log_path, stop, pki, alive=None):
        self.kind = kind
        self.listeners = listeners
        self.log_path = log_path
        self._stop = stop
        self._alive = alive
        self.pki = pki

    def addr(self, name):
        return self.listeners[name]

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def alive(self):
        return self._alive() if self._alive else True

    def stop(self, check=True):
        """Stops the broker; with `check`, asserts a clean exit (odradek-broker: status 0)."""
        self._stop(check)


def odradek_overrides(pki, data, idle_ms=IDLE_MS):
    """The --override settings of a secured odradek-broker (listeners on free loopback ports)."""
    ov = {
        "listeners": ",".join("%s://127.0.0.1:0" % n for n in LISTENERS),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "log.dirs": data,
        "num.partitions": "4",
        "group.initial.rebalance.delay.ms": "0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": os.path.join(pki, "broker-keystore.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": os.path.join(pki, "ca.pem"),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.sasl_ssl.ssl.keystore.location": "",
        "listener.name.sasl_ssl.ssl.keystore.certificate.chain": open(os.path.join(pki, "broker.pem")).read(),
        "listener.name.sasl_ssl.ssl.keystore.key": open(os.path.join(pki, "broker-encrypted.key")).read(),
        "listener.name.sasl_ssl.ssl.key.password": BROKER_KEY_PASSWORD,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin",
        "allow.everyone.if.no.acl.found": "true",
        "listener.name.sasl_plaintext.connections.max.reauth.ms": str(REAUTH_MS),
    }
    if idle_ms is not None:
        ov["connections.max.idle.ms"] = str(idle_ms)
    for l in ["sasl_ssl", "sasl_plaintext"]:
        ov["listener.name.%s.plain.sasl.jaas.config" % l] = PLAIN_JAAS
        ov["listener.name.%s.scram-sha-256.sasl.jaas.config" % l] = SCRAM_JAAS
        ov["listener.name.%s.scram-sha-512.sasl.jaas.config" % l] = SCRAM_JAAS
        ov["listener.name.%s.oauthbearer.sasl.jaas.config" % l] = OAUTH_JAAS
    return ov


def odradek_args(binary, pki, data, idle_ms=IDLE_MS, extra=None):
    """The command line of a secured odradek-broker: the overrides, `extra` ones, the SCRAM users."""
    ov = odradek_overrides(pki, data, idle_ms)
    ov.update(extra or {})
    args = [binary]
    for k, v in ov.items():
        args += ["--override", "%s=%s" % (k, v)]
    for mech in ["SCRAM-SHA-256", "SCRAM-SHA-512"]:
        for user, password in USERS.items():
            args += ["--add-scram", "%s=[name=%s,password=%s]" % (mech, user, password)]
    return args


def start_odradek(workdir, pki, binary=None, idle_ms=IDLE_MS, log_level="debug", log_name="broker.log",
                  extra=None, env=None, timeout=30):
    """Starts a secured odradek-broker on `workdir`/data (its stderr appended to `workdir`/`log_name`,
    ODRADEK_LOG=`log_level` unless None) and waits for its listener lines (at most `timeout` s).
    Raises RuntimeError if it does not start."""
    binary = binary or os.environ.get("ODRADEK_BROKER_BIN") or os.path.join(ROOT, "target", "debug", "odradek-broker")
    data = os.path.join(workdir, "data")
    log_path = os.path.join(workdir, log_name)
    env = dict(os.environ, **(env or {}))
    if log_level:
        env["ODRADEK_LOG"] = log_level
    log = open(log_path, "a")
    proc = subprocess.Popen(odradek_args(str(binary), pki, data, idle_ms, extra), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    log.close()
    lines = queue.Queue()

    def reader():
        for line in proc.stdout:   # read to the end, so the broker never blocks on a full pipe
            lines.put(line)
        lines.put(None)
    threading.Thread(target=reader, daemon=True).start()

    def fail(why):
        proc.kill()
        proc.wait(10)
        with open(log_path, errors="replace") as f:
            tail = f.read()[-3000:]
        raise RuntimeError("odradek-broker did not start: %s\n%s" % (why, tail))

    deadline = time.time() + timeout
    first, listeners = None, {}
    while len(listeners) < len(LISTENERS):
        try:
            line = lines.get(timeout=max(0.1, deadline - time.time()))
        except queue.Empty:
            fail("no listener lines within %d s (first line %r, listeners %r)" % (timeout, first, listeners))
        if line is None:
            fail("exited with %s (first line %r)" % (proc.wait(), first))
        if first is None:
            first = line
            if not line.startswith("odradek-broker listening on"):
                fail("first stdout line %r" % line)
            continue
        m = re.match(r"odradek-broker listener (\S+) (\S+) (\S+)", line)
        if m:
            listeners[m.group(1)] = m.group(3)

    def stop(check):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        if check:
            assert proc.returncode == 0, "odradek-broker exited with %s" % proc.returncode
    b = SecureBroker("odradek", listeners, log_path, stop, pki, alive=lambda: proc.poll() is None)
    b.proc = proc
    return b


def read_listeners(workdir, plaintext):
    """kafka.sh's DIR/listeners.env (NAME=host:port) plus the PLAINTEXT address it printed."""
    listeners = {"PLAINTEXT": plaintext}
    with open(os.path.join(workdir, "listeners.env")) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k:
                listeners[k] = v
    return listeners


def start_kafka(workdir, pki):
    env = dict(os.environ, ODRADEK_KAFKA_SECURE=pki,
               ODRADEK_KAFKA_EXTRA_PROPS="connections.max.idle.ms=%d\nlistener.name.sasl_plaintext.connections.max.reauth.ms=%d"
               % (IDLE_MS, REAUTH_MS),
               ODRADEK_KAFKA_START_TIMEOUT="180")
    out = subprocess.run([KAFKA_SH, "start", workdir], env=env, check=True, stdout=subprocess.PIPE, text=True)
    listeners = read_listeners(workdir, out.stdout.strip())

    def stop(check):
        subprocess.run([KAFKA_SH, "stop", workdir], check=False)
    return SecureBroker("kafka", listeners, os.path.join(workdir, "kafka.log"), stop, pki)


def start(kind, workdir, pki):
    os.makedirs(workdir, exist_ok=True)
    return start_odradek(workdir, pki) if kind == "odradek" else start_kafka(workdir, pki)
