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


def test_an_unclean_election_is_reported_as_log_truncation(cluster):
    """KIP-320 through the Python package: after an unclean election of a replica that missed
    100 records, a consumer with auto.offset.reset=earliest moves back to the divergence point
    and reads what the new leader wrote there; one with `error` gets librdkafka's
    _LOG_TRUNCATION and no record past the truncation."""
    topic = f"py-unclean-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 2, config={
        "min.insync.replicas": "1", "unclean.leader.election.enable": "true"})])[topic].result(60)

    def partition():
        return admin.list_topics(topic, timeout=30).topics[topic].partitions[0]

    def wait_for(what, ok):
        deadline = time.monotonic() + 60
        while True:
            p = partition()
            if ok(p):
                return p
            assert time.monotonic() < deadline, f"{what}: leader {p.leader}, isr {p.isrs}"
            time.sleep(0.3)

    def produce(acks, values):
        errors = []
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": False,
                             "acks": acks})
        for v in values:
            producer.produce(topic, value=v.encode(), partition=0,
                             on_delivery=lambda err, _m: err is not None and errors.append(err))
        assert producer.flush(60) == 0
        assert not errors, errors[:3]

    p = wait_for("two replicas in sync", lambda p: len(p.isrs) == 2)
    old_leader = p.leader
    stale = next(r for r in p.replicas if r != old_leader)
    produce("all", [f"{i}" for i in range(100)])
    cluster.run("kill", str(stale))
    wait_for("the dead follower out of the ISR", lambda p: p.isrs == [old_leader])
    produce("all", [f"{i}" for i in range(100, 200)])

    def consumer(reset):
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"{topic}-{reset}",
                      "enable.auto.commit": False, "auto.offset.reset": reset})
        c.assign([TopicPartition(topic, 0, 0)])
        return c

    resetting, strict = consumer("earliest"), consumer("error")
    for c in (resetting, strict):
        n, deadline = 0, time.monotonic() + 60
        while n < 200:
            assert time.monotonic() < deadline, f"read {n} of 200 before the election"
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                n += 1

    cluster.run("kill", str(old_leader))
    cluster.run("restart", str(stale))
    cluster.run("elect-unclean", topic, "0")
    wait_for("the stale replica leading", lambda p: p.leader == stale)
    # The new leader's log ends at 100: these take offsets 100.. again.
    produce("1", [f"{i}-after" for i in range(100, 150)])

    after, deadline = [], time.monotonic() + 60
    while len(after) < 50:
        assert time.monotonic() < deadline, f"earliest: {len(after)} records after the election: {after}"
        m = resetting.poll(0.2)
        if m is not None and m.error() is None:
            after.append((m.offset(), m.value().decode()))
    assert after == [(i, f"{i}-after") for i in range(100, 150)], "moved back to the divergence point"

    deadline = time.monotonic() + 60
    while True:
        assert time.monotonic() < deadline, "no truncation reported with auto.offset.reset=error"
        m = strict.poll(0.2)
        if m is None:
            continue
        assert m.error() is not None, f"read on past the truncation: offset {m.offset()}"
        reported = m.error()
        break
    assert reported.code() == KafkaError._LOG_TRUNCATION, f"{reported.name()}: {reported.str()}"
    assert "diverges from offset 100" in reported.str(), reported.str()
    resetting.close()
    strict.close()
    cluster.run("restart", str(old_leader))
