"""Fixtures for the odradek Python test suite: a real odradek-broker on an ephemeral port.

The broker binary is ODRADEK_BROKER_BIN, else the workspace's target/debug/odradek-broker
(`cargo build -p odradek-broker`). Every broker gets a fresh data directory; its stderr is
attached to the report of a failing test.

With ODRADEK_TEST_BOOTSTRAP=host:port the suite runs against that broker instead (the
compatibility tier points it at Apache Kafka 4.x, started by tests/compat/kafka.sh, which has
`group.initial.rebalance.delay.ms=0` and auto-creation on). No broker is started then:
`module_broker()` and `broker` return the external one, the `topic` fixture creates its topic
with 3 partitions (an external broker's `num.partitions` is its own), and `start_broker`
skips the tests whose broker setting cannot be had from an external broker.
"""
import itertools
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(rb"^odradek-broker listening on (\S+):(\d+)\s*$")
_RUNNING = []
_names = itertools.count()
EXTERNAL_BOOTSTRAP = os.environ.get("ODRADEK_TEST_BOOTSTRAP") or None
# Partitions of a test topic: our broker auto-creates topics with this many (num.partitions);
# on an external broker the `topic` fixture creates the topic with this many.
TOPIC_PARTITIONS = 3


def broker_binary():
    return Path(os.environ.get("ODRADEK_BROKER_BIN") or REPO_ROOT / "target" / "debug" / "odradek-broker")


class Broker:
    """One odradek-broker process."""

    def __init__(self, workdir, overrides=None):
        self.workdir = Path(workdir)
        self.data = self.workdir / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.stderr_path = self.workdir / "broker.stderr.log"
        # Tests write records with 2023 timestamps: no time retention, or a retention pass
        # could delete them mid-test (topics that test retention set their own).
        self.overrides = {"num.partitions": str(TOPIC_PARTITIONS), "log.retention.ms": "-1"}
        self.overrides.update(overrides or {})
        self.proc = None
        self.bootstrap = None

    def start(self, timeout=30.0):
        binary = broker_binary()
        if not binary.is_file():
            raise RuntimeError("broker binary %s not found: cargo build -p odradek-broker "
                               "or set ODRADEK_BROKER_BIN" % binary)
        cmd = [str(binary), "--override", "listeners=PLAINTEXT://127.0.0.1:0",
               "--override", "log.dirs=%s" % self.data]
        for k, v in self.overrides.items():
            cmd += ["--override", "%s=%s" % (k, v)]
        with open(self.stderr_path, "ab") as err:
            env = dict(os.environ, NO_COLOR="1")
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=err, env=env)
        _RUNNING.append(self)
        deadline = time.monotonic() + timeout
        buf = b""
        fd = self.proc.stdout.fileno()
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                self.kill()
                raise RuntimeError("broker did not start (stdout %r):\n%s" % (buf, self.stderr_tail()))
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    continue
                buf += chunk
        m = LISTENING.match(buf.split(b"\n", 1)[0])
        assert m, buf
        self.bootstrap = "%s:%s" % (m.group(1).decode(), m.group(2).decode())
        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def _drain(self):
        for _ in iter(lambda: os.read(self.proc.stdout.fileno(), 4096), b""):
            pass

    def stderr_tail(self, lines=80):
        try:
            text = self.stderr_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self in _RUNNING:
            _RUNNING.remove(self)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self in _RUNNING:
            _RUNNING.remove(self)


class ExternalBroker:
    """The broker named by ODRADEK_TEST_BOOTSTRAP: started and stopped by someone else."""

    stderr_path = "external broker"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def stop(self):
        pass

    def stderr_tail(self, lines=80):
        return ""


# What the external broker of the compatibility tier has (kafka.sh's server.properties plus the
# group.consumer.* values scripts/test.sh passes in ODRADEK_KAFKA_EXTRA_PROPS).
KIP848_FAST = {"group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
               "group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "6000"}
EXTERNAL_HAS = {("group.initial.rebalance.delay.ms", "0")} | set(KIP848_FAST.items())


def module_broker(workdir, overrides=None):
    """A started broker for a test module: ours with `overrides`, or the external one.

    Only overrides the external broker (tests/compat/kafka.sh) already has may be passed."""
    if EXTERNAL_BOOTSTRAP:
        unlike = {k: v for k, v in (overrides or {}).items()
                  if (k, v) not in EXTERNAL_HAS}
        assert not unlike, "external broker cannot provide %r" % unlike
        return ExternalBroker(EXTERNAL_BOOTSTRAP)
    return Broker(workdir, overrides).start()


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """The session's shared broker (auto-create on, 3 partitions per new topic)."""
    b = module_broker(tmp_path_factory.mktemp("broker"))
    yield b
    b.stop()


@pytest.fixture
def start_broker(tmp_path_factory):
    """Starts an extra broker with overrides: start_broker({'message.max.bytes': '2000'}).

    Against an external broker the test is skipped: it needs a broker setting of its own."""
    started = []

    def start(overrides=None):
        if EXTERNAL_BOOTSTRAP:
            pytest.skip("needs an odradek-broker of its own with %r; ODRADEK_TEST_BOOTSTRAP is "
                        "set" % (overrides,))
        b = Broker(tmp_path_factory.mktemp("broker-fn"), overrides).start()
        started.append(b)
        return b

    yield start
    for b in started:
        b.stop()


@pytest.fixture
def no_autocreate(start_broker):
    """(bootstrap, client conf) under which a missing topic stays missing: our broker with
    `auto.create.topics.enable=false`, or the external broker with the clients'
    `allow.auto.create.topics=false` (the Metadata request then does not create it)."""
    if EXTERNAL_BOOTSTRAP:
        return EXTERNAL_BOOTSTRAP, {"allow.auto.create.topics": False}
    return start_broker({"auto.create.topics.enable": "false"}).bootstrap, {}


@pytest.fixture
def bootstrap(broker):
    return broker.bootstrap


def create_topic(bootstrap, name, partitions=TOPIC_PARTITIONS, config=None):
    """Creates `name` with AdminClient and waits until it is created."""
    from odradek.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(name, num_partitions=partitions,
                                        config=dict(config or {}))])[name]
    assert fut.result(timeout=30) is None


@pytest.fixture
def topic_name(request):
    """A fresh topic name per test; nothing creates the topic."""
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:150]
    return "t-%s-%d-%d" % (base, os.getpid(), next(_names))


@pytest.fixture
def topic(topic_name):
    """A fresh topic per test: auto-created with 3 partitions on first use by our broker;
    created with 3 partitions up front on an external broker."""
    if EXTERNAL_BOOTSTRAP:
        create_topic(EXTERNAL_BOOTSTRAP, topic_name)
    return topic_name


@pytest.fixture
def producer_conf(bootstrap):
    return {"bootstrap.servers": bootstrap, "linger.ms": 2}


@pytest.fixture
def consumer_conf(bootstrap):
    return {"bootstrap.servers": bootstrap, "group.id": "tests",
            "auto.offset.reset": "earliest", "enable.auto.commit": False}


def produce_n(bootstrap, topic, n, partition=0, value=lambda i: b"value-%d" % i, **kw):
    """Produces n records to one partition and returns their delivery reports."""
    import odradek
    p = odradek.Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    reports = []
    for i in range(n):
        p.produce(topic, value=value(i), key=b"key-%d" % i, partition=partition,
                  on_delivery=lambda err, msg: reports.append((err, msg)), **kw)
    assert p.flush(30) == 0
    assert len(reports) == n and all(err is None for err, _ in reports), reports[:3]
    return reports


def consume_all(consumer, n, timeout=20.0):
    """Polls until n proper messages arrived (events are skipped) or the timeout."""
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is None or m.error() is not None:
            continue
        out.append(m)
    return out


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for b in list(_RUNNING):
            report.sections.append(("broker stderr (%s)" % b.stderr_path, b.stderr_tail()))


sys.path.insert(0, str(Path(__file__).resolve().parent))
