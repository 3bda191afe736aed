"""Callbacks on the caller's thread, exceptions from callbacks, threads, the GIL, Ctrl-C and
fork()."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import odradek
from odradek import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from conftest import consume_all, produce_n


def test_callbacks_run_on_the_polling_thread(producer_conf, topic):
    p = Producer(producer_conf)
    threads = set()
    for _ in range(10):
        p.produce(topic, b"x", on_delivery=lambda e, m: threads.add(threading.get_ident()))
    p.flush(10)
    assert threads == {threading.get_ident()}


def test_exception_in_callback_surfaces_from_poll_and_flush(producer_conf, topic):
    p = Producer(producer_conf)
    calls = []

    def boom(err, msg):
        calls.append(msg.value())
        if msg.value() == b"2":
            raise ValueError("callback failed")

    for i in range(5):
        p.produce(topic, b"%d" % i, partition=0, on_delivery=boom)
    with pytest.raises(ValueError, match="callback failed"):
        p.flush(10)
    # The reports after the failing one are not lost: the next call serves them.
    assert p.flush(10) == 0
    assert sorted(calls) == [b"0", b"1", b"2", b"3", b"4"]

    def boom2(err, msg):
        raise RuntimeError("from poll")

    p.produce(topic, b"x", on_delivery=boom2)
    with pytest.raises(RuntimeError, match="from poll"):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            p.poll(0.5)
    assert len(p) == 0


def test_produce_from_many_threads(producer_conf, topic):
    p = Producer(producer_conf)
    counts = {}
    lock = threading.Lock()

    def on_delivery(err, msg):
        assert err is None
        with lock:
            counts[msg.value()] = counts.get(msg.value(), 0) + 1

    def worker(t):
        for i in range(500):
            p.produce(topic, b"%d-%d" % (t, i), on_delivery=on_delivery)
            if i % 100 == 0:
                p.poll(0)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert p.flush(30) == 0
    assert len(counts) == 2000 and set(counts.values()) == {1}


def test_poll_from_another_thread_while_producing(producer_conf, topic):
    p = Producer(producer_conf)
    got = []
    stop = threading.Event()

    def poller():
        while not stop.is_set():
            p.poll(0.05)

    t = threading.Thread(target=poller)
    t.start()
    for i in range(300):
        p.produce(topic, b"%d" % i, on_delivery=lambda e, m: got.append(m.offset()))
    deadline = time.monotonic() + 20
    while len(got) < 300 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    t.join()
    assert len(got) == 300


def test_blocking_calls_release_the_gil(consumer_conf, topic):
    c = Consumer(consumer_conf)
    c.assign([TopicPartition(topic, 0, odradek.OFFSET_END)])
    ticks = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    start = time.monotonic()
    assert c.poll(0.6) is None
    stop.set()
    t.join()
    assert time.monotonic() - start >= 0.5
    assert len(ticks) > 50, "another thread could not run while poll() waited"
    c.close()


def test_consumer_shared_between_threads(bootstrap, consumer_conf, topic):
    produce_n(bootstrap, topic, 400, partition=0)
    c = Consumer(consumer_conf)
    c.assign([TopicPartition(topic, 0, 0)])
    seen = []
    lock = threading.Lock()

    def reader():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with lock:
                if len(seen) >= 400:
                    return
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                with lock:
                    seen.append(m.offset())

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == list(range(400))
    c.close()


@pytest.fixture
def sigint_raises():
    """SIGINT raises KeyboardInterrupt for the test, whatever the disposition this process
    inherited: under `nohup` or a background `&` in a script SIGINT starts out ignored, Python
    then installs no handler, and a SIGINT the test sends itself would be dropped."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_interrupts_blocking_poll_and_flush(
    sigint_raises, consumer_conf, no_autocreate, topic
):
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    c = Consumer(consumer_conf)
    c.assign([TopicPartition(topic, 0, odradek.OFFSET_END)])
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        c.poll(30)
    assert time.monotonic() - start < 5
    c.close()

    # flush() waiting on a record stuck in the backlog (topic does not exist).
    bootstrap, conf = no_autocreate
    p = Producer(dict(conf, **{"bootstrap.servers": bootstrap, "max.block.ms": 3000}))
    p.produce(topic + "-missing", b"x", on_delivery=lambda e, m: None)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        p.flush(30)
    assert time.monotonic() - start < 5
    p.purge()
    assert p.flush(10) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork()")
def test_fork_guard(producer_conf, topic):
    p = Producer(producer_conf)
    p.produce(topic, b"parent")
    assert p.flush(10) == 0
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            try:
                p.produce(topic, b"child-old")
                result = b"no-error"
            except KafkaException as e:
                result = e.args[0].name().encode()
            q = Producer(producer_conf)
            q.produce(topic, b"child-new")
            left = q.flush(10)
            result += b" %d" % left
            os.write(w, result)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    out = os.read(r, 1000)
    os.close(r)
    assert os.WIFEXITED(status), f"child died: wait status {status}"
    assert os.WEXITSTATUS(status) == 0
    assert out == b"_STATE 0"
    # The parent's producer is unaffected.
    p.produce(topic, b"parent-again")
    assert p.flush(10) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork()")
def test_fork_while_the_parent_is_busy(producer_conf, topic):
    """Forks while the parent's runtime threads send, park and wake: state a parent thread left
    half-updated (a lock, a wait queue) must not reach the child's fresh runtime."""
    p = Producer(producer_conf)
    stop = threading.Event()
    sent = [0]

    def keep_producing():
        while not stop.is_set():
            try:
                p.produce(topic, b"busy")
                sent[0] += 1
            except BufferError:
                p.poll(0.01)
            p.poll(0)

    worker = threading.Thread(target=keep_producing)
    worker.start()
    try:
        for round_ in range(8):
            time.sleep(0.02)
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # child: only this thread exists here
                code = 1
                try:
                    q = Producer(producer_conf)
                    q.produce(topic, b"child")
                    os.write(w, b"%d" % q.flush(10))
                    code = 0
                finally:
                    os._exit(code)
            os.close(w)
            _, status = os.waitpid(pid, 0)
            out = os.read(r, 100)
            os.close(r)
            assert os.WIFEXITED(status), f"round {round_}: child died: wait status {status}"
            assert (os.WEXITSTATUS(status), out) == (0, b"0"), f"round {round_}"
    finally:
        stop.set()
        worker.join()
    assert p.flush(10) == 0
    assert sent[0] > 0


def test_free_threaded_cpython_is_refused_before_the_extension_loads():
    with pytest.raises(ImportError, match="does not support free-threaded CPython"):
        odradek._refuse_free_threaded(1)
    odradek._refuse_free_threaded(0)
    odradek._refuse_free_threaded(None)  # not a CPython 3.13+ build
    # A fresh interpreter whose sysconfig says Py_GIL_DISABLED: the import fails with the
    # message, and the extension module was never loaded.
    code = textwrap.dedent("""
        import sys, sysconfig
        real = sysconfig.get_config_var
        sysconfig.get_config_var = lambda name: 1 if name == "Py_GIL_DISABLED" else real(name)
        try:
            import odradek.admin
        except ImportError as e:
            print("refused:", e)
        print("extension loaded:", "odradek._odradek" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60).stdout
    assert "refused: odradek does not support free-threaded CPython" in out, out
    assert "regular CPython build" in out and "extension loaded: False" in out, out
