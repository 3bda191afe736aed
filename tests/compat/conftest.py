"""pytest fixtures for the broker-peer compatibility suite (test_broker_peers.py).

Nothing here builds anything: the broker under test is the binary named by the environment
variable ODRADEK_BROKER_BIN (default: the workspace's target/debug/odradek-broker). Each broker
gets an ephemeral port (listeners=PLAINTEXT://127.0.0.1:0) and a fresh data dir; its stdout and
stderr go to files beside the data dir, and the tail of the stderr log is attached to the report
of every test that fails while that broker runs. Teardown sends SIGTERM and asserts exit code 0.

Knobs (environment):
  ODRADEK_BROKER_BIN            broker binary
  ODRADEK_BROKER_START_TIMEOUT  seconds to wait for the listening line (default 30)
  ODRADEK_BROKER_STOP_TIMEOUT   seconds to wait for exit after SIGTERM (default 30)
  ODRADEK_LOG                   broker log filter (passed through; the broker defaults to info)
"""
import os
import re
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO_ROOT / "target" / "debug" / "odradek-broker"
LISTENING = re.compile(rb"^odradek-broker listening on (\S+):(\d+)\s*$")
LOG_TAIL_LINES = 150

# Brokers currently running, so a failing test's report can carry their logs.
_RUNNING = []


def _env_seconds(name, default):
    raw = os.environ.get(name)
    return float(raw) if raw else default


def broker_binary():
    return Path(os.environ.get("ODRADEK_BROKER_BIN") or DEFAULT_BIN)


def _tail(path, lines=LOG_TAIL_LINES):
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return "<cannot read %s: %s>" % (path, exc)
    text = data.decode("utf-8", "replace").splitlines()
    cut = text[-lines:]
    prefix = "... (%d earlier lines in %s)\n" % (len(text) - len(cut), path) if len(text) > len(cut) else ""
    return prefix + "\n".join(cut)


class Broker:
    """One odradek-broker process on an ephemeral loopback port."""

    def __init__(self, workdir, overrides=None, name="broker"):
        self.name = name
        self.workdir = Path(workdir)
        self.data_dir = self.workdir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = self.workdir / "broker.stderr.log"
        self.stdout_path = self.workdir / "broker.stdout.log"
        self.overrides = dict(overrides or {})
        self.proc = None
        self.host = None
        self.port = None
        self._drain = None

    @property
    def bootstrap(self):
        return "%s:%d" % (self.host, self.port)

    def command(self):
        props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(self.data_dir)}
        props.update(self.overrides)
        cmd = [str(broker_binary())]
        for key, value in props.items():
            cmd += ["--override", "%s=%s" % (key, value)]
        return cmd

    def start(self):
        binary = broker_binary()
        if not binary.is_file():
            raise RuntimeError(
                "broker binary %s not found: build it (cargo build -p odradek-broker) or set "
                "ODRADEK_BROKER_BIN" % binary)
        deadline = time.monotonic() + _env_seconds("ODRADEK_BROKER_START_TIMEOUT", 30.0)
        stderr = open(self.stderr_path, "ab")
        try:
            env = dict(os.environ)
            env.setdefault("NO_COLOR", "1")  # plain text in broker.stderr.log
            self.proc = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                cwd=str(self.workdir), env=env)
        finally:
            stderr.close()
        _RUNNING.append(self)
        first = self._read_first_line(deadline)
        match = LISTENING.match(first)
        if not match:
            self.kill()
            raise RuntimeError("%s: unexpected first stdout line %r\n--- stderr ---\n%s"
                               % (self.name, first, _tail(self.stderr_path)))
        self.host = match.group(1).decode()
        self.port = int(match.group(2))
        assert self.port != 0, "broker reported port 0"
        # Keep draining stdout so the broker never blocks on a full pipe.
        self._drain = threading.Thread(target=self._drain_stdout, daemon=True)
        self._drain.start()
        return self

    def _read_first_line(self, deadline):
        fd = self.proc.stdout.fileno()
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise RuntimeError("%s: no listening line within the deadline (got %r)\n"
                                   "--- stderr ---\n%s" % (self.name, buf, _tail(self.stderr_path)))
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if not ready:
                if self.proc.poll() is not None:
                    raise RuntimeError("%s exited with %s before listening (stdout %r)\n"
                                       "--- stderr ---\n%s" % (self.name, self.proc.returncode, buf,
                                                               _tail(self.stderr_path)))
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                code = self.proc.wait(timeout=10)
                raise RuntimeError("%s closed stdout (exit %s) before listening (stdout %r)\n"
                                   "--- stderr ---\n%s" % (self.name, code, buf, _tail(self.stderr_path)))
            buf += chunk
        line, rest = buf.split(b"\n", 1)
        with open(self.stdout_path, "ab") as out:
            out.write(line + b"\n" + rest)
        return line

    def _drain_stdout(self):
        with open(self.stdout_path, "ab") as out:
            for chunk in iter(lambda: os.read(self.proc.stdout.fileno(), 4096), b""):
                out.write(chunk)
                out.flush()

    def stop(self):
        """SIGTERM, wait; returns the exit code (or raises if it does not exit in time)."""
        if self.proc is None:
            return None
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=_env_seconds("ODRADEK_BROKER_STOP_TIMEOUT", 30.0))
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError("%s did not exit within the deadline after SIGTERM\n"
                                     "--- stderr ---\n%s" % (self.name, _tail(self.stderr_path)))
            if self._drain is not None:
                self._drain.join(timeout=5)
            return code
        finally:
            if self in _RUNNING:
                _RUNNING.remove(self)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self in _RUNNING:
            _RUNNING.remove(self)

    def stderr_tail(self, lines=LOG_TAIL_LINES):
        return _tail(self.stderr_path, lines)


def stop_and_check(broker):
    code = broker.stop()
    assert code == 0, "%s exited with %r after SIGTERM (want 0)\n--- stderr ---\n%s" % (
        broker.name, code, broker.stderr_tail())


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """The shared broker of a test module: Kafka defaults plus num.partitions=3 for auto-create."""
    b = Broker(tmp_path_factory.mktemp("odradek-broker"), {"num.partitions": "3"}, name="odradek-broker")
    b.start()
    try:
        yield b
    except BaseException:
        b.kill()
        raise
    stop_and_check(b)


@pytest.fixture
def start_broker(tmp_path_factory):
    """Factory for extra, per-test brokers: start_broker({'key': 'value'}) -> Broker. Pass
    workdir=<an earlier broker's workdir> (after stopping it) to restart on the same data."""
    started = []

    def start(overrides=None, workdir=None):
        workdir = workdir or tmp_path_factory.mktemp("odradek-broker-fn")
        b = Broker(workdir, overrides, name="odradek-broker (per-test #%d)" % (len(started) + 1))
        started.append(b)
        return b.start()

    yield start
    for b in started:
        stop_and_check(b)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for b in list(_RUNNING):
            report.sections.append(("%s stderr (%s)" % (b.name, b.stderr_path), b.stderr_tail()))


def pytest_configure(config):
    # kafka-python 3.0 loads its protocol schemas with deprecated importlib.resources calls.
    config.addinivalue_line("filterwarnings", "ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")
