"""The Python package on a 3-node Apache Kafka while nodes fail (issue 27).

An idempotent acks=all Producer and a two-member consumer group run while the fault harness
(tests/cluster/kafka-cluster.sh) kills the leader of partition 0 and restarts it, pauses a node
past the broker session timeout, kills the active controller and cuts a node off from clients.
Afterwards: no delivery failed, every acknowledged record was consumed, each partition's log
holds each acknowledged record once at its acknowledged offset in send order, and no commit
failed with UNKNOWN_MEMBER_ID: the members' session (20 s) outlasts the cut (10 s) and the
moves of the group coordinator, so no fault may cost a member its membership.

Needs Java and the Kafka jars: it runs when ODRADEK_FAULT_CLUSTER=1 (the cluster tier of
scripts/test.sh sets it) and is skipped otherwise.
"""
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

from odradek import Consumer, KafkaError, Producer, TopicPartition
from odradek.admin import AdminClient, NewTopic

pytestmark = pytest.mark.skipif(os.environ.get("ODRADEK_FAULT_CLUSTER") != "1",
                                reason="needs the 3-node fault cluster (ODRADEK_FAULT_CLUSTER=1)")

HARNESS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "cluster" / "kafka-cluster.sh"
PARTITIONS = 6


class Cluster:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="odradek-py-cluster-")
        self.bootstrap = self.run("start", "3")

    def run(self, *args):
        out = subprocess.run([str(HARNESS), args[0], self.dir, *args[1:]], check=True,
                             stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=300)
        return out.stdout.decode().strip()

    def stop(self):
        subprocess.run([str(HARNESS), "stop", self.dir], stdin=subprocess.DEVNULL, timeout=120)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def cluster():
    c = Cluster()
    yield c
    c.stop()


def leaders(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(topic, timeout=30)
    return [md.topics[topic].partitions[p].leader for p in range(PARTITIONS)]


def test_producer_and_group_survive_node_faults(cluster):
    topic = f"py-faults-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(60)

    acked = {p: [] for p in range(PARTITIONS)}
    failures = []
    lock = threading.Lock()

    def on_delivery(err, msg):
        with lock:
            if err is not None:
                failures.append(f"{msg.partition()}: {err}")
            else:
                p, seq = msg.value().decode().split(":")
                acked[int(p)].append((int(seq), msg.offset(), time.monotonic()))

    writing = threading.Event()
    writing.set()
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 5})

    def write():
        seq = 0
        while writing.is_set():
            for p in range(PARTITIONS):
                producer.produce(topic, value=f"{p}:{seq}".encode(), partition=p, on_delivery=on_delivery)
            seq += 1
            producer.poll(0.01)
        assert producer.flush(120) == 0

    consumed = set()
    commit_errors = []
    consuming = threading.Event()
    consuming.set()
    group = f"py-faults-group-{uuid.uuid4().hex[:8]}"

    def on_commit(err, partitions):
        if err is not None:
            with lock:
                commit_errors.append((time.monotonic(), err))

    def member():
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                      "auto.offset.reset": "earliest", "session.timeout.ms": 20000,
                      "heartbeat.interval.ms": 2000, "on_commit": on_commit})
        c.subscribe([topic])
        while consuming.is_set():
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            p, seq = m.value().decode().split(":")
            with lock:
                consumed.add((int(p), int(seq)))
        c.close()

    threads = [threading.Thread(target=write)] + [threading.Thread(target=member) for _ in range(2)]
    for t in threads:
        t.start()

    def counts():
        with lock:
            return {p: len(v) for p, v in acked.items()}

    def await_progress(what):
        before = counts()
        deadline = time.monotonic() + 90
        while True:
            now = counts()
            stuck = [p for p in range(PARTITIONS) if now[p] <= before[p]]
            if not stuck:
                return
            assert time.monotonic() < deadline, f"after {what}: partitions {stuck} acknowledged nothing"
            time.sleep(0.1)

    started = time.monotonic()
    faults = []

    def fault(*args):
        faults.append((args[0], round(time.monotonic() - started, 1)))
        return cluster.run(*args)

    try:
        await_progress("start")
        victim = leaders(cluster.bootstrap, topic)[0]
        fault("kill", str(victim))
        await_progress("killing a leader")
        fault("restart", str(victim))

        frozen = leaders(cluster.bootstrap, topic)[1]
        fault("pause", str(frozen))
        time.sleep(9)
        await_progress("pausing a node")
        fault("resume", str(frozen))

        controller = cluster.run("controller")
        fault("kill", controller)
        await_progress("killing the controller")
        fault("restart", controller)

        led = leaders(cluster.bootstrap, topic)
        cut = led[2]
        fault("cut", str(cut))
        cut_at = time.monotonic()
        time.sleep(10)
        healed_at = time.monotonic()
        fault("heal", str(cut))
        with lock:
            for p in range(PARTITIONS):
                if led[p] == cut:
                    continue
                during = [t for _, _, t in acked[p] if cut_at + 5 <= t < healed_at]
                assert during, f"partition {p} acknowledged nothing while node {cut} was cut off"
        await_progress("healing the cut")
    finally:
        writing.clear()
        threads[0].join(180)

    assert not failures, f"{len(failures)} deliveries failed, e.g. {failures[:5]}"
    want = {(p, s) for p, v in acked.items() for s, _, _ in v}
    deadline = time.monotonic() + 90
    while True:
        with lock:
            missing = len(want - consumed)
        if missing == 0:
            break
        assert time.monotonic() < deadline, f"{missing} of {len(want)} acknowledged records never consumed"
        time.sleep(0.2)
    consuming.clear()
    for t in threads[1:]:
        t.join(60)
    unknown_member = [round(t - started, 1) for t, e in commit_errors
                      if e.code() == KafkaError.UNKNOWN_MEMBER_ID]
    assert not unknown_member, (f"{len(unknown_member)} commits failed with UNKNOWN_MEMBER_ID, at {unknown_member} s; "
                                f"faults at {faults}")

    # The log: every acknowledged record once, at its offset, in send order.
    reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group + "-check",
                       "enable.auto.commit": False, "enable.partition.eof": True})
    reader.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    logs = {p: [] for p in range(PARTITIONS)}
    ended = set()
    deadline = time.monotonic() + 90
    while len(ended) < PARTITIONS:
        assert time.monotonic() < deadline, f"reading the log: partitions {sorted(ended)} ended"
        m = reader.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                ended.add(m.partition())
            continue
        logs[m.partition()].append((m.offset(), int(m.value().decode().split(":")[1])))
    reader.close()
    for p in range(PARTITIONS):
        seqs = [s for _, s in logs[p]]
        assert seqs == sorted(set(seqs)), f"partition {p}: duplicates or reordering"
        at = dict(logs[p])
        for s, offset, _ in acked[p]:
            assert at.get(offset) == s, f"partition {p}: acknowledged {s} at {offset}, lost"
