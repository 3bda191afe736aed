"""Consumer groups (classic protocol): confluent-kafka and kafka-python against the broker's group
coordinator.

Members run on their own threads and report every assignment change through the clients'
rebalance callbacks; the tests compare that view with what the broker says (DescribeGroups) and
check that every produced record is consumed. A partition is never owned by two live members at
once (eager protocols revoke everything before rejoining, cooperative-sticky revokes before the
partition moves): every callback checks that.

Run with tests/compat/run_broker_peers.sh (see README.md); against Apache Kafka with
ODRADEK_BROKER_BIN=tests/compat/kafka_as_broker_bin.sh (the restart half of
test_offsets_survive_restart is skipped there).
"""
import struct
import threading
import time
from collections import defaultdict

import pytest
from confluent_kafka import (Consumer, ConsumerGroupState, ConsumerGroupTopicPartitions, ConsumerGroupType,
                             KafkaError, KafkaException, Producer)
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import NewTopic
from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka import TopicPartition as KpTP
from kafka.admin import KafkaAdminClient, MemberToRemove
from kafka.errors import KafkaError as KafkaPyError
from kafka.protocol.consumer import (HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest,
                                     SyncGroupRequest)
from kafka.structs import OffsetAndMetadata

from conftest import Broker, broker_binary, stop_and_check
from test_broker_peers import DEADLINE, ck_admin, ck_logger, new_topic

ON_KAFKA = broker_binary().name == "kafka_as_broker_bin.sh"
GROUP_OVERRIDES = {"group.initial.rebalance.delay.ms": "0"}
HEARTBEAT_MS = 500
SESSION_MS = 10_000         # >= group.min.session.timeout.ms (6000)
MAX_POLL_MS = 20_000        # the rebalance timeout: bounds how long a broken rebalance can hang

# Kafka error codes the tests expect from the raw protocol calls.
NONE, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID = 0, 22, 23, 25
REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED, FENCED_INSTANCE_ID = 27, 79, 82


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory):
    """The module's shared broker: the `broker` fixture's settings plus no initial rebalance delay."""
    b = Broker(tmp_path_factory.mktemp("odradek-broker-groups"), dict({"num.partitions": "3"}, **GROUP_OVERRIDES),
               name="odradek-broker (groups)")
    b.start()
    try:
        yield b
    except BaseException:
        b.kill()
        raise
    stop_and_check(b)


def wait_for(cond, timeout, what):
    """Polls cond() every 50 ms until it returns something truthy (returned); fails with what()
    (a callable, so it describes the state at the deadline) after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ss waiting for %s" % (timeout, what() if callable(what) else what))
        time.sleep(0.05)


def create_topic(admin, topic, partitions):
    (_, fut), = admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=DEADLINE).items()
    assert fut.result(DEADLINE) is None
    wait_for(lambda: topic in admin.list_topics(timeout=DEADLINE).topics, DEADLINE, "metadata for " + topic)


def describe(admin, group):
    (_, fut), = admin.describe_consumer_groups([group], request_timeout=DEADLINE).items()
    return fut.result(DEADLINE)


def describe_brief(d):
    return "state=%s assignor=%r members=%s" % (d.state, d.partition_assignor, sorted(
        (m.client_id, m.group_instance_id, sorted(tp.partition for tp in m.assignment.topic_partitions))
        for m in d.members))


# ---------------------------------------------------------------------------------------------
# Members and what they saw

class Tracker:
    """Shared record of one group's members: owned partitions (from rebalance callbacks), the
    assignment events, consumed records, and any moment two live members owned one partition."""

    def __init__(self):
        self.lock = threading.Lock()
        self.owned = defaultdict(set)
        self.live = set()
        self.events = defaultdict(list)      # name -> [(monotonic, "assign"|"revoke"|"lost", partitions)]
        self.consumed = defaultdict(list)    # name -> [(partition, offset, value)]
        self.values = set()
        self.overlaps = []
        self.errors = []

    def change(self, name, kind, partitions):
        partitions = frozenset(partitions)
        with self.lock:
            self.events[name].append((time.monotonic(), kind, partitions))
            if kind == "assign":
                self.owned[name] |= partitions
            else:
                self.owned[name] -= partitions
            owners = defaultdict(list)
            for n in self.live:
                for p in self.owned[n]:
                    owners[p].append(n)
            shared = {p: sorted(ns) for p, ns in owners.items() if len(ns) > 1}
            if shared:
                self.overlaps.append("after %s %s %s: %s" % (name, kind, sorted(partitions), shared))

    def record(self, name, partition, offset, value):
        with self.lock:
            self.consumed[name].append((partition, offset, value))
            self.values.add(value)

    def error(self, name, err):
        with self.lock:
            self.errors.append("%s: %s" % (name, err))

    def snapshot(self, names):
        with self.lock:
            return {n: frozenset(self.owned[n]) for n in names}

    def event_count(self, name):
        with self.lock:
            return len(self.events[name])

    def missing(self, values):
        with self.lock:
            return [v for v in values if v not in self.values]


class Member:
    """A subscribed consumer polled on its own thread. kind: "confluent" or "kafka-python".
    stop() makes the thread close the consumer (LeaveGroup for dynamic members) and waits."""

    def __init__(self, kind, name, bootstrap, group, topic, tracker, **extra):
        self.kind, self.name, self.tracker = kind, name, tracker
        self.bootstrap, self.group, self.topic, self.extra = bootstrap, group, topic, extra
        self.member_id = None
        self._stop = threading.Event()
        self._started = threading.Event()
        self._failure = None
        with tracker.lock:
            tracker.live.add(name)
        self.thread = threading.Thread(target=self._main, name="member-" + name, daemon=True)
        self.thread.start()
        assert self._started.wait(DEADLINE), "%s: consumer not created" % name
        if self._failure:
            raise self._failure

    def _main(self):
        try:
            (self._run_ck if self.kind == "confluent" else self._run_kp)()
        except BaseException as exc:  # reported by stop() / the tracker
            self._failure = exc
            self.tracker.error(self.name, "thread died: %r" % exc)
            self._started.set()

    def _run_ck(self):
        conf = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "client.id": self.name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 1000,
            "heartbeat.interval.ms": HEARTBEAT_MS,
            "session.timeout.ms": SESSION_MS,
            "max.poll.interval.ms": MAX_POLL_MS,
            "fetch.wait.max.ms": 100,
            "logger": ck_logger("consumer"),
            "error_cb": lambda err: self.tracker.error(self.name, "error_cb %s" % err),
        }
        conf.update(self.extra)
        c = Consumer(conf)

        def on_assign(consumer, parts):
            self.member_id = consumer.memberid()
            self.tracker.change(self.name, "assign", (tp.partition for tp in parts))

        def on_revoke(consumer, parts):
            self.tracker.change(self.name, "revoke", (tp.partition for tp in parts))

        def on_lost(consumer, parts):
            self.tracker.change(self.name, "lost", (tp.partition for tp in parts))

        c.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        self._started.set()
        try:
            while not self._stop.is_set():
                m = c.poll(0.1)
                if m is None:
                    continue
                if m.error():
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        self.tracker.error(self.name, m.error())
                    continue
                self.tracker.record(self.name, m.partition(), m.offset(), m.value())
        finally:
            c.close()

    def _run_kp(self):
        tracker, name = self.tracker, self.name

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                tracker.change(name, "revoke", (tp.partition for tp in revoked))

            def on_partitions_assigned(self, assigned):
                tracker.change(name, "assign", (tp.partition for tp in assigned))

        conf = dict(bootstrap_servers=self.bootstrap, group_id=self.group, client_id=self.name,
                    auto_offset_reset="earliest", enable_auto_commit=True, auto_commit_interval_ms=1000,
                    heartbeat_interval_ms=HEARTBEAT_MS, session_timeout_ms=SESSION_MS,
                    max_poll_interval_ms=MAX_POLL_MS, fetch_max_wait_ms=100)
        conf.update(self.extra)
        c = KafkaConsumer(**conf)
        c.subscribe([self.topic], listener=Listener())
        self._started.set()
        try:
            while not self._stop.is_set():
                for tp, recs in c.poll(timeout_ms=100).items():
                    for r in recs:
                        tracker.record(name, tp.partition, r.offset, r.value)
        finally:
            c.close()

    def stop(self):
        with self.tracker.lock:
            self.tracker.live.discard(self.name)  # closing: no longer counted as an owner
        self._stop.set()
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive(), "%s: close() did not return within %ss" % (self.name, DEADLINE)
        with self.tracker.lock:
            self.tracker.owned[self.name].clear()
        if self._failure:
            raise AssertionError("%s failed: %r" % (self.name, self._failure))


def stop_all(members):
    for m in members:
        if m.thread.is_alive():
            m.stop()


class PacedProducer:
    """Produces `total` records (value b"<tag>-<n>", partition n % partitions) in chunks of `chunk`
    every `pause` seconds on a thread, or until stopped; `values` lists what was acknowledged."""

    def __init__(self, bootstrap, topic, partitions, tag, total=None, chunk=100, pause=0.1):
        self.p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                           "enable.idempotence": False, "logger": ck_logger("producer")})
        self.topic, self.partitions, self.tag = topic, partitions, tag
        self.total, self.chunk, self.pause = total, chunk, pause
        self.values, self.failed, self.n = [], [], 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._main, name="producer-" + tag, daemon=True)
        self.thread.start()

    def _report(self, err, msg):
        (self.failed if err else self.values).append(err or msg.value())

    def produce(self, count):
        for _ in range(count):
            self.p.produce(self.topic, value=b"%s-%06d" % (self.tag.encode(), self.n),
                           partition=self.n % self.partitions, on_delivery=self._report)
            self.n += 1
        left = self.p.flush(DEADLINE)
        assert left == 0, "%d records undelivered" % left

    def _main(self):
        while not self._stop.is_set() and (self.total is None or self.n < self.total):
            self.produce(self.chunk if self.total is None else min(self.chunk, self.total - self.n))
            self._stop.wait(self.pause)

    def finish(self):
        """Stops (or lets a bounded run complete) and returns the acknowledged values."""
        if self.total is None:
            self._stop.set()
        self.thread.join(DEADLINE * 2)
        assert not self.thread.is_alive(), "producer did not finish"
        assert not self.failed, "producer: %d records failed, first %r" % (len(self.failed), self.failed[:3])
        return list(self.values)


def wait_stable(tracker, admin, group, names, partitions, timeout=DEADLINE, client_ids=None):
    """Waits until the members `names` (client ids) own every one of `partitions` partitions
    exactly once, as their callbacks say, and the broker describes the group as Stable with exactly
    these members holding exactly these assignments. client_ids maps a broker-reported client id
    to a member name where they differ. Returns (ownership, description)."""
    client_ids = client_ids or {}
    state = {}

    def ready():
        owned = tracker.snapshot(names)
        state["owned"] = owned
        counts = defaultdict(int)
        for parts in owned.values():
            for p in parts:
                counts[p] += 1
        if sorted(counts) != list(range(partitions)) or any(c != 1 for c in counts.values()):
            return False
        if any(not parts for parts in owned.values()):
            return False
        d = describe(admin, group)
        state["described"] = describe_brief(d)
        if d.state != ConsumerGroupState.STABLE:
            return False
        broker_view = {client_ids.get(m.client_id, m.client_id): frozenset(tp.partition for tp in m.assignment.topic_partitions)
                       for m in d.members}
        if broker_view != owned:
            return False
        return owned, d

    return wait_for(ready, timeout, lambda: "group %s to stabilise with %s: callbacks %s, broker %s"
                    % (group, sorted(names), {n: sorted(p) for n, p in state.get("owned", {}).items()},
                       state.get("described")))


def wait_consumed(tracker, values, timeout=DEADLINE):
    wait_for(lambda: not tracker.missing(values), timeout,
             lambda: "%d of %d records to be consumed (first missing %r); errors %s"
             % (len(tracker.missing(values)), len(values), tracker.missing(values)[:5], tracker.errors[:5]))


# ---------------------------------------------------------------------------------------------
# 1. One group, both libraries

def test_mixed_clients_one_group(group_broker):
    """Two confluent-kafka members and one kafka-python member share a 6-partition topic while
    3000 records are produced: they agree on the range protocol, the broker's assignment matches
    what each member's callbacks saw, each partition has exactly one owner, everything is consumed."""
    bootstrap = group_broker.bootstrap
    admin = ck_admin(bootstrap)
    topic, group = new_topic("grp-mixed"), new_topic("g-mixed")
    create_topic(admin, topic, 6)
    tracker = Tracker()
    producer = PacedProducer(bootstrap, topic, 6, "mixed", total=2400)
    members = []
    try:
        members.append(Member("confluent", "ck-1", bootstrap, group, topic, tracker))
        wait_for(lambda: tracker.snapshot(["ck-1"])["ck-1"], DEADLINE, "ck-1 to get partitions")
        members.append(Member("confluent", "ck-2", bootstrap, group, topic, tracker))
        wait_for(lambda: tracker.snapshot(["ck-2"])["ck-2"], DEADLINE, "ck-2 to get partitions")
        members.append(Member("kafka-python", "kp-1", bootstrap, group, topic, tracker))
        names = ["ck-1", "ck-2", "kp-1"]
        owned, d = wait_stable(tracker, admin, group, names, 6)
        assert d.partition_assignor == "range", describe_brief(d)
        assert not d.is_simple_consumer_group
        assert sorted(m.client_id for m in d.members) == names
        assert all(len(parts) == 2 for parts in owned.values()), owned
        produced = producer.finish()

        # A last 600 records once the group is stable: each is read by the member owning its partition.
        before = {n: tracker.event_count(n) for n in names}
        tail = PacedProducer(bootstrap, topic, 6, "tail", total=600, chunk=600)
        tail_values = set(tail.finish())
        wait_consumed(tracker, produced + sorted(tail_values))
        assert {n: tracker.event_count(n) for n in names} == before, "a rebalance happened after the group was stable"
        owner = {p: n for n, parts in owned.items() for p in parts}
        with tracker.lock:
            misrouted = [(n, p, v) for n, recs in tracker.consumed.items() for p, _, v in recs
                         if v in tail_values and owner[p] != n]
        assert not misrouted, "records read by a member not owning the partition: %s" % misrouted[:5]
        assert not tracker.overlaps, tracker.overlaps[:5]
    finally:
        producer._stop.set()
        stop_all(members)
    # Every member consumed something and kafka-python's listener saw its assignment too.
    assert all(tracker.consumed[n] for n in names), {n: len(tracker.consumed[n]) for n in names}


# ---------------------------------------------------------------------------------------------
# 2. Members leaving and joining

def test_members_leave_and_join(group_broker):
    """Three members; one closes (LeaveGroup), a new one joins: after each change every partition
    has one live owner, DescribeGroups lists exactly the live members, and every record produced
    throughout is consumed. Sessions are 30 s, so only a LeaveGroup can rebalance within 15 s."""
    bootstrap = group_broker.bootstrap
    admin = ck_admin(bootstrap)
    topic, group = new_topic("grp-churn"), new_topic("g-churn")
    create_topic(admin, topic, 6)
    tracker = Tracker()
    extra = {"session.timeout.ms": 30_000, "max.poll.interval.ms": 40_000}
    producer = PacedProducer(bootstrap, topic, 6, "churn", chunk=30)
    members = {}
    try:
        for name in ("c1", "c2", "c3"):
            members[name] = Member("confluent", name, bootstrap, group, topic, tracker, **extra)
        owned, d = wait_stable(tracker, admin, group, ["c1", "c2", "c3"], 6)
        assert {m.member_id for m in d.members} == {members[n].member_id for n in ("c1", "c2", "c3")}

        members["c2"].stop()
        left_at = time.monotonic()
        owned, d = wait_stable(tracker, admin, group, ["c1", "c3"], 6, timeout=15)
        assert time.monotonic() - left_at < 15
        assert sorted(len(p) for p in owned.values()) == [3, 3], owned
        assert {m.member_id for m in d.members} == {members["c1"].member_id, members["c3"].member_id}, \
            describe_brief(d)

        members["c4"] = Member("confluent", "c4", bootstrap, group, topic, tracker, **extra)
        owned, d = wait_stable(tracker, admin, group, ["c1", "c3", "c4"], 6)
        assert sorted(m.client_id for m in d.members) == ["c1", "c3", "c4"]
        assert {m.member_id for m in d.members} == {members[n].member_id for n in ("c1", "c3", "c4")}
        assert members["c2"].member_id not in {m.member_id for m in d.members}
        produced = producer.finish()
        assert len(produced) > 0
        wait_consumed(tracker, produced)
        assert not tracker.overlaps, tracker.overlaps[:5]
    finally:
        producer._stop.set()
        stop_all(members.values())
    d = describe(admin, group)
    assert d.state == ConsumerGroupState.EMPTY and not d.members, describe_brief(d)


# ---------------------------------------------------------------------------------------------
# 3. Committed offsets and their metadata survive a restart

def test_offsets_survive_restart(start_broker):
    """Offsets committed with metadata strings (confluent subscribe + commit(offsets=...),
    kafka-python manual assign + commit with OffsetAndMetadata) read back with Consumer.committed()
    and a multi-group OffsetFetch (v8); after a restart on the same data they are unchanged and a
    new member resumes exactly at them."""
    b1 = start_broker(dict({"num.partitions": "3"}, **GROUP_OVERRIDES))
    admin = ck_admin(b1.bootstrap)
    topic, group, group2 = new_topic("grp-restart"), new_topic("g-restart"), new_topic("g-restart-kp")
    create_topic(admin, topic, 3)
    PacedProducer(b1.bootstrap, topic, 3, "before", total=150, chunk=150).finish()
    want = {0: (20, "meta-0"), 1: (35, "\u00fcn\u00efc\u00f6d\u00e9 \u2713 meta"), 2: (50, "")}

    tracker = Tracker()
    m = Member("confluent", "committer", b1.bootstrap, group, topic, tracker, **{"enable.auto.commit": False})
    try:
        wait_for(lambda: len(tracker.values) == 150, DEADLINE, lambda: "150 records, got %d" % len(tracker.values))
    finally:
        m.stop()
    c = Consumer({"bootstrap.servers": b1.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "logger": ck_logger("consumer")})
    try:
        done = c.commit(offsets=[CkTP(topic, p, off, meta) for p, (off, meta) in want.items()], asynchronous=False)
        assert all(tp.error is None for tp in done), done
        check_committed(c, topic, want, "before restart")
    finally:
        c.close()

    kp = KafkaConsumer(bootstrap_servers=b1.bootstrap, group_id=group2, enable_auto_commit=False)
    try:
        kp.assign([KpTP(topic, 1)])
        kp.commit({KpTP(topic, 1): OffsetAndMetadata(12, "kafka-python meta", -1)})
        assert kp.committed(KpTP(topic, 1), metadata=True)[:2] == (12, "kafka-python meta")
    finally:
        kp.close()
    check_offset_fetch_v8(b1.bootstrap, topic, group, group2, want)
    check_groups_listed(admin, group, group2, "before restart")
    del admin

    if ON_KAFKA:
        b2 = b1  # kafka.sh wipes the data dir on start: no restart on the same data
    else:
        code = b1.stop()
        assert code == 0, "exit code %r after SIGTERM\n%s" % (code, b1.stderr_tail())
        b2 = start_broker(workdir=b1.workdir)
    c = Consumer({"bootstrap.servers": b2.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "logger": ck_logger("consumer")})
    try:
        check_committed(c, topic, want, "after restart")
    finally:
        c.close()
    check_offset_fetch_v8(b2.bootstrap, topic, group, group2, want)
    check_groups_listed(ck_admin(b2.bootstrap), group, group2, "after restart")

    # A new member resumes at the committed offsets; records produced now land after the old end.
    PacedProducer(b2.bootstrap, topic, 3, "after", total=15, chunk=15).finish()
    tracker = Tracker()
    m = Member("confluent", "resumer", b2.bootstrap, group, topic, tracker, **{"enable.auto.commit": False})
    try:
        expected = sum(55 - off for off, _ in want.values())
        wait_for(lambda: len(tracker.consumed["resumer"]) >= expected, DEADLINE,
                 lambda: "%d records after the committed offsets, got %d" % (expected, len(tracker.consumed["resumer"])))
    finally:
        m.stop()
    by_partition = defaultdict(list)
    for p, off, _ in tracker.consumed["resumer"]:
        by_partition[p].append(off)
    for p, (off, _) in want.items():
        assert by_partition[p] == list(range(off, 55)), "p%d: consumed offsets %s, want %d..54" % (
            p, by_partition[p][:10], off)


def check_groups_listed(admin, group, group2, label):
    """Both groups exist, Empty: `group` a consumer group (it had members), group2 a simple one."""
    r = admin.list_consumer_groups(request_timeout=DEADLINE).result(DEADLINE)
    listed = {g.group_id: (g.state, g.is_simple_consumer_group) for g in r.valid if g.group_id in (group, group2)}
    assert listed == {group: (ConsumerGroupState.EMPTY, False), group2: (ConsumerGroupState.EMPTY, True)}, \
        "%s: %s" % (label, listed)
    d = describe(admin, group)
    assert d.state == ConsumerGroupState.EMPTY and not d.members and not d.is_simple_consumer_group, \
        "%s: %s" % (label, describe_brief(d))


def check_committed(consumer, topic, want, label):
    got = consumer.committed([CkTP(topic, p) for p in want], timeout=DEADLINE)
    have = {tp.partition: (tp.offset, tp.metadata if tp.metadata is not None else "") for tp in got}
    assert have == want, "%s: committed() %s, want %s" % (label, have, want)
    assert all(tp.error is None for tp in got), got


def check_offset_fetch_v8(bootstrap, topic, group, group2, want):
    """kafka-python's list_group_offsets asks for both groups in one OffsetFetch (v8+)."""
    kadmin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        res = kadmin.list_group_offsets({group: None, group2: None})
    finally:
        kadmin.close()
    have = {tp.partition: (om.offset, om.metadata) for tp, om in res[group].items() if tp.topic == topic}
    # confluent-kafka 2.16 sends TopicPartition.metadata with its C string terminator (the NUL is
    # part of metadata_size), so the stored string ends in "\x00"; Consumer.committed() hides it.
    want_stored = {p: (off, meta + "\x00") for p, (off, meta) in want.items()}
    assert have == want_stored, "OffsetFetch v8 %s: %s, want %s" % (group, have, want_stored)
    have2 = {tp.partition: (om.offset, om.metadata) for tp, om in res[group2].items()}
    assert have2 == {1: (12, "kafka-python meta")}, have2


# ---------------------------------------------------------------------------------------------
# 4. Static membership

@pytest.mark.parametrize("leader,assignor", [("dynamic", "range"), ("static", "range"),
                                             ("dynamic", "cooperative-sticky")])
def test_static_member_restart(group_broker, leader, assignor):
    """A static member (group.instance.id) closes and comes back within its session timeout: the
    other member sees no rebalance, even once the old session would have expired, and the static
    member gets its partitions back. Removing it by instance id (batched LeaveGroup, KIP-345)
    rebalances the group at once. `leader`: which member joined first (and leads the group).
    With cooperative-sticky the restarted member's subscription differs (it no longer lists owned
    partitions), but the group's protocol does not change, so there is still no rebalance."""
    bootstrap = group_broker.bootstrap
    admin = ck_admin(bootstrap)
    topic, group = new_topic("grp-static"), new_topic("g-static")
    create_topic(admin, topic, 4)
    tracker = Tracker()
    static = {"group.instance.id": "static-1"}
    strategy = {"partition.assignment.strategy": assignor}
    members = []
    try:
        first, second = ("dynamic", "static-a") if leader == "dynamic" else ("static-a", "dynamic")
        for name in (first, second):
            members.append(Member("confluent", name, bootstrap, group, topic, tracker,
                                  **dict(strategy, **(static if name == "static-a" else {}))))
            if name == first:
                wait_for(lambda: len(tracker.snapshot([first])[first]) == 4, DEADLINE, first + " to own all 4")
        s1 = [m for m in members if m.name == "static-a"][0]
        owned, d = wait_stable(tracker, admin, group, ["dynamic", "static-a"], 4)
        assert {m.client_id: m.group_instance_id for m in d.members} == {"dynamic": None, "static-a": "static-1"}
        static_parts = owned["static-a"]
        dyn_events = tracker.event_count("dynamic")

        s1.stop()
        closed_at = time.monotonic()
        # librdkafka does not send LeaveGroup for a static member on close (KIP-345): still listed.
        d = describe(admin, group)
        assert "static-1" in {m.group_instance_id for m in d.members}, \
            "static member gone right after close (LeaveGroup sent?): %s" % describe_brief(d)
        s2 = Member("confluent", "static-b", bootstrap, group, topic, tracker, **dict(strategy, **static))
        members.append(s2)
        wait_for(lambda: tracker.snapshot(["static-b"])["static-b"], DEADLINE, "the restarted static member's assignment")
        assert tracker.snapshot(["static-b"])["static-b"] == static_parts
        assert time.monotonic() - closed_at < SESSION_MS / 1000, "restart took longer than the session timeout"

        # Records keep flowing to both, and nothing changes until well past the old session's expiry.
        values = PacedProducer(bootstrap, topic, 4, "static", total=200, chunk=200).finish()
        wait_consumed(tracker, values)
        window_end = max(closed_at + SESSION_MS / 1000 + 3, time.monotonic() + 3 * HEARTBEAT_MS / 1000)
        while time.monotonic() < window_end:   # bounded wait: a late rebalance would show up here
            assert tracker.event_count("dynamic") == dyn_events, "dynamic member rebalanced: %s" % (
                tracker.events["dynamic"][dyn_events:],)
            time.sleep(0.1)
        assert [e[1] for e in tracker.events["static-b"]] == ["assign"], tracker.events["static-b"]
        # Kafka replaces the member id without a rebalance; the member keeps its old client id
        # until the next rebalance, so the broker still reports "static-a".
        owned, d = wait_stable(tracker, admin, group, ["dynamic", "static-b"], 4, timeout=5,
                               client_ids={"static-a": "static-b"})
        assert owned["static-b"] == static_parts
        (member,) = [m for m in d.members if m.group_instance_id == "static-1"]
        assert member.member_id == s2.member_id, describe_brief(d)
        assert s2.member_id != s1.member_id

        # Remove the static member by instance id (with an unknown one in the same batch).
        s2.stop()
        kadmin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            removed_at = time.monotonic()
            res = kadmin.remove_group_members(group, [MemberToRemove(group_instance_id="static-1"),
                                                      MemberToRemove(group_instance_id="nobody")])
        finally:
            kadmin.close()
        # kafka-python keys the answer by the response's member_id, or its group_instance_id when
        # that is empty (Kafka echoes the request's empty member_id for removals by instance id).
        errors = {k: v.__name__ for k, v in res.items()}
        assert errors == {"static-1": "NoError", "nobody": "UnknownMemberIdError"}, errors
        owned, d = wait_stable(tracker, admin, group, ["dynamic"], 4, timeout=SESSION_MS / 1000 - 2)
        assert time.monotonic() - removed_at < SESSION_MS / 1000 - 2
        assert [m.group_instance_id for m in d.members] == [None]
        assert not tracker.overlaps, tracker.overlaps[:5]
    finally:
        stop_all(members)


# ---------------------------------------------------------------------------------------------
# 5. Admin operations on groups

def test_group_admin(group_broker):
    """list_consumer_groups (with state filters), describe_consumer_groups,
    list/alter_consumer_group_offsets, OffsetDelete (kafka-python) and delete_consumer_groups
    (NON_EMPTY_GROUP while members exist)."""
    bootstrap = group_broker.bootstrap
    admin = ck_admin(bootstrap)
    topic = new_topic("grp-admin")
    create_topic(admin, topic, 2)
    active, emptied, simple, ghost = (new_topic("g-active"), new_topic("g-emptied"), new_topic("g-simple"),
                                      new_topic("g-ghost"))
    values = PacedProducer(bootstrap, topic, 2, "admin", total=40, chunk=40).finish()
    assert len(values) == 40

    # emptied: a consumer group whose only member committed and left.
    t_emptied = Tracker()
    m = Member("confluent", "leaver", bootstrap, emptied, topic, t_emptied, **{"enable.auto.commit": False})
    try:
        wait_for(lambda: len(t_emptied.values) == 40, DEADLINE, "leaver to read 40 records")
    finally:
        m.stop()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": emptied, "logger": ck_logger("consumer")})
    try:
        done = c.commit(offsets=[CkTP(topic, 0, 7, "m7"), CkTP(topic, 1, 9)], asynchronous=False)
        assert all(tp.error is None for tp in done), done
    finally:
        c.close()
    # simple: offsets only, written by the admin API (OffsetCommit with generation -1).
    (_, fut), = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(simple, [CkTP(topic, 0, 3), CkTP(topic, 1, 4)])],
        request_timeout=DEADLINE).items()
    res = fut.result(DEADLINE)
    assert sorted((tp.partition, tp.offset, tp.error) for tp in res.topic_partitions) == [(0, 3, None), (1, 4, None)]

    tracker = Tracker()
    members = [Member("confluent", "a1", bootstrap, active, topic, tracker),
               Member("confluent", "a2", bootstrap, active, topic, tracker)]
    try:
        wait_stable(tracker, admin, active, ["a1", "a2"], 2)

        def listed(**kw):
            r = admin.list_consumer_groups(request_timeout=DEADLINE, **kw).result(DEADLINE)
            assert not r.errors, r.errors
            return {g.group_id: g for g in r.valid if g.group_id in (active, emptied, simple, ghost)}

        every = listed()
        assert sorted(every) == sorted([active, emptied, simple])
        assert every[active].state == ConsumerGroupState.STABLE and not every[active].is_simple_consumer_group
        assert every[emptied].state == ConsumerGroupState.EMPTY and not every[emptied].is_simple_consumer_group
        assert every[simple].state == ConsumerGroupState.EMPTY and every[simple].is_simple_consumer_group
        assert sorted(listed(states={ConsumerGroupState.STABLE})) == [active]
        assert sorted(listed(states={ConsumerGroupState.EMPTY})) == sorted([emptied, simple])
        assert sorted(listed(states={ConsumerGroupState.EMPTY, ConsumerGroupState.STABLE})) == sorted(every)
        assert all(g.type == ConsumerGroupType.CLASSIC for g in every.values()), every
        assert sorted(listed(types={ConsumerGroupType.CLASSIC})) == sorted(every)
        assert listed(types={ConsumerGroupType.CONSUMER}) == {}

        futs = admin.describe_consumer_groups([active, emptied, simple, ghost], request_timeout=DEADLINE)
        d_active, d_emptied, d_simple, d_ghost = (futs[g].result(DEADLINE) for g in (active, emptied, simple, ghost))
        assert d_ghost.state == ConsumerGroupState.DEAD and not d_ghost.members, describe_brief(d_ghost)
        node = admin.describe_cluster(request_timeout=DEADLINE).result(DEADLINE).nodes[0]
        assert d_active.coordinator.id == node.id and d_active.coordinator.port == group_broker.port
        assert d_active.state == ConsumerGroupState.STABLE and d_active.partition_assignor == "range"
        assert sorted(m.client_id for m in d_active.members) == ["a1", "a2"]
        assert all(m.host for m in d_active.members), describe_brief(d_active)
        assert d_emptied.state == ConsumerGroupState.EMPTY and not d_emptied.members
        assert d_simple.state == ConsumerGroupState.EMPTY and d_simple.is_simple_consumer_group

        # Offsets: list, alter an empty group, refuse altering a group with live members.
        assert group_offsets(admin, emptied, topic) == {0: (7, "m7"), 1: (9, "")}
        assert group_offsets(admin, simple, topic) == {0: (3, ""), 1: (4, "")}
        (_, fut), = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(emptied, [CkTP(topic, 0), CkTP(topic, 5)])], request_timeout=DEADLINE).items()
        assert [(tp.partition, tp.offset, tp.error) for tp in fut.result(DEADLINE).topic_partitions] == \
            [(0, 7, None), (5, -1001, None)]  # partition 5 does not exist: no offset (-1 on the wire)
        (_, fut), = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(ghost)],
                                                      request_timeout=DEADLINE).items()
        assert fut.result(DEADLINE).topic_partitions == []
        (_, fut), = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(emptied, [CkTP(topic, 1, 30, "altered")])], request_timeout=DEADLINE).items()
        assert [(tp.partition, tp.offset, tp.error) for tp in fut.result(DEADLINE).topic_partitions] == [(1, 30, None)]
        assert group_offsets(admin, emptied, topic) == {0: (7, "m7"), 1: (30, "altered")}
        (_, fut), = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(active, [CkTP(topic, 0, 1)])], request_timeout=DEADLINE).items()
        try:  # librdkafka reports the refusal per partition
            errs = [tp.error for tp in fut.result(DEADLINE).topic_partitions]
        except KafkaException as e:
            errs = [e.args[0]]
        assert [e and e.code() for e in errs] == [KafkaError.UNKNOWN_MEMBER_ID], errs

        # OffsetDelete: fine on an empty group, refused for a topic the active group subscribes to.
        kadmin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            res = kadmin.delete_group_offsets(emptied, [KpTP(topic, 0)])
            assert {tp.partition: e.__name__ for tp, e in res.items()} == {0: "NoError"}
            assert group_offsets(admin, emptied, topic) == {1: (30, "altered")}
            res = kadmin.delete_group_offsets(active, [KpTP(topic, 0)])
            assert {tp.partition: e.__name__ for tp, e in res.items()} == {0: "GroupSubscribedToTopicError"}
            with pytest.raises(Exception) as exc:
                kadmin.delete_group_offsets(ghost, [KpTP(topic, 0)])
            assert type(exc.value).__name__ == "GroupIdNotFoundError", repr(exc.value)
        finally:
            kadmin.close()

        # DeleteGroups: NON_EMPTY_GROUP while members exist.
        futs = admin.delete_consumer_groups([active], request_timeout=DEADLINE)
        with pytest.raises(KafkaException) as exc:
            futs[active].result(DEADLINE)
        assert exc.value.args[0].code() == KafkaError.NON_EMPTY_GROUP, exc.value
    finally:
        stop_all(members)

    d = describe(admin, active)
    assert d.state == ConsumerGroupState.EMPTY and not d.members, describe_brief(d)
    futs = admin.delete_consumer_groups([active, emptied, ghost], request_timeout=DEADLINE)
    assert futs[active].result(DEADLINE) is None
    assert futs[emptied].result(DEADLINE) is None
    with pytest.raises(KafkaException) as exc:
        futs[ghost].result(DEADLINE)
    assert exc.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND, exc.value
    r = admin.list_consumer_groups(request_timeout=DEADLINE).result(DEADLINE)
    still = {g.group_id for g in r.valid} & {active, emptied, simple}
    assert still == {simple}, still
    assert group_offsets(admin, emptied, topic) == {}
    assert group_offsets(admin, simple, topic) == {0: (3, ""), 1: (4, "")}


def group_offsets(admin, group, topic):
    """Committed offsets of `group` in `topic` as {partition: (offset, metadata)}: all of the group's
    partitions (no partition list given), those without an offset left out. confluent-kafka reads
    metadata as a C string: only metadata committed by confluent-kafka (NUL-terminated) reads back
    reliably; kp_group_offsets reads any."""
    (_, fut), = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                  request_timeout=DEADLINE).items()
    res = fut.result(DEADLINE)
    out = {}
    for tp in res.topic_partitions:
        assert tp.error is None, tp
        if tp.topic == topic and tp.offset >= 0:
            out[tp.partition] = (tp.offset, tp.metadata or "")
    return out


def kp_group_offsets(bootstrap, group, topic):
    kadmin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        res = kadmin.list_group_offsets({group: None})
    finally:
        kadmin.close()
    return {tp.partition: (om.offset, om.metadata) for tp, om in res[group].items() if tp.topic == topic}


# ---------------------------------------------------------------------------------------------
# 6. Stale generations (raw requests through kafka-python's protocol classes)

class RawGroupClient:
    """Sends hand-built group requests to the coordinator through a KafkaAdminClient's connection
    (kafka-python's protocol classes; versions negotiated by kafka-python)."""

    def __init__(self, bootstrap, group):
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        self.group = group
        # Retried: a fresh Kafka answers COORDINATOR_NOT_AVAILABLE until __consumer_offsets exists.
        self.coordinator = wait_for(self._find_coordinator, DEADLINE, "the coordinator of " + group)[0]

    def _find_coordinator(self):
        try:
            return [self.admin._manager.run(self.admin._find_coordinator_id, self.group)]
        except KafkaPyError as exc:
            if not exc.retriable:
                raise
            return None

    async def _send(self, request):
        return await self.admin._manager.send(request, node_id=self.coordinator)

    def send(self, request):
        return self.admin._manager.run(self._send, request)

    def join(self, member_id, metadata, protocols=("range",), session_ms=SESSION_MS, instance=None, version=7):
        P = JoinGroupRequest.JoinGroupRequestProtocol
        return self.send(JoinGroupRequest(group_id=self.group, session_timeout_ms=session_ms,
                                          rebalance_timeout_ms=SESSION_MS, member_id=member_id,
                                          group_instance_id=instance, protocol_type="consumer",
                                          protocols=[P(name=n, metadata=metadata) for n in protocols],
                                          max_version=version))

    def new_member(self, metadata, protocols=("range",)):
        """First JoinGroup without a member id: KIP-394 answers MEMBER_ID_REQUIRED with the id."""
        r = self.join("", metadata, protocols)
        assert r.error_code == MEMBER_ID_REQUIRED and r.member_id, r
        return r.member_id

    def sync(self, generation, member_id, assignments, protocol="range", instance=None):
        A = SyncGroupRequest.SyncGroupRequestAssignment
        return self.send(SyncGroupRequest(group_id=self.group, generation_id=generation, member_id=member_id,
                                          group_instance_id=instance, protocol_type="consumer", protocol_name=protocol,
                                          assignments=[A(member_id=m, assignment=a) for m, a in assignments],
                                          max_version=5))

    def heartbeat(self, generation, member_id, instance=None):
        return self.send(HeartbeatRequest(group_id=self.group, generation_id=generation, member_id=member_id,
                                          group_instance_id=instance, max_version=4)).error_code

    def commit(self, generation, member_id, topic, partition, offset, instance=None):
        T = OffsetCommitRequest.OffsetCommitRequestTopic
        P = T.OffsetCommitRequestPartition
        r = self.send(OffsetCommitRequest(
            max_version=8, group_id=self.group, generation_id_or_member_epoch=generation, member_id=member_id,
            group_instance_id=instance, topics=[T(name=topic, partitions=[P(
                partition_index=partition, committed_offset=offset, committed_leader_epoch=-1,
                committed_metadata="gen %d" % generation)])]))
        (t,) = r.topics
        (p,) = t.partitions
        return p.error_code

    def leave(self, member_id):
        M = LeaveGroupRequest.MemberIdentity
        r = self.send(LeaveGroupRequest(group_id=self.group, member_id=member_id,
                                        members=[M(member_id=member_id, group_instance_id=None)], max_version=5))
        return r.error_code, [m.error_code for m in getattr(r, "members", None) or []]

    def close(self):
        self.admin.close()


def _str16(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def subscription(topic):
    """ConsumerProtocol subscription v0: version, [topic], null user data."""
    return struct.pack(">hi", 0, 1) + _str16(topic) + struct.pack(">i", -1)


def assignment(topic, partitions):
    """ConsumerProtocol assignment v0: version, [(topic, [partition])], null user data."""
    body = struct.pack(">hi", 0, 1) + _str16(topic) + struct.pack(">i", len(partitions))
    body += b"".join(struct.pack(">i", p) for p in partitions)
    return body + struct.pack(">i", -1)


def test_stale_generation_commit(group_broker):
    """A member commits with its generation; after the group moves to the next generation the old
    generation's commit is ILLEGAL_GENERATION (and heartbeat too), an unknown member id is
    UNKNOWN_MEMBER_ID, and only the accepted commits are visible."""
    bootstrap = group_broker.bootstrap
    admin = ck_admin(bootstrap)
    topic, group = new_topic("grp-gen"), new_topic("g-gen")
    create_topic(admin, topic, 2)
    raw = RawGroupClient(bootstrap, group)
    try:
        first = raw.join("", subscription(topic))
        assert first.error_code == MEMBER_ID_REQUIRED and first.member_id, first   # KIP-394
        member = first.member_id
        j1 = raw.join(member, subscription(topic))
        assert j1.error_code == NONE and j1.leader == member and j1.member_id == member, j1
        assert j1.protocol_name == "range" and [m.member_id for m in j1.members] == [member], j1
        s1 = raw.sync(j1.generation_id, member, [(member, assignment(topic, [0, 1]))])
        assert s1.error_code == NONE and bytes(s1.assignment) == assignment(topic, [0, 1]), s1
        gen1 = j1.generation_id
        assert raw.commit(gen1, member, topic, 0, 5) == NONE
        assert raw.heartbeat(gen1, member) == NONE

        # The leader rejoining a stable group starts the next generation.
        j2 = raw.join(member, subscription(topic))
        assert j2.error_code == NONE and j2.generation_id == gen1 + 1 and j2.member_id == member, j2
        # Generation 2 joined but not synced yet (CompletingRebalance): the old generation is
        # ILLEGAL_GENERATION, the current one REBALANCE_IN_PROGRESS.
        assert raw.commit(gen1, member, topic, 0, 6) == ILLEGAL_GENERATION
        assert raw.commit(j2.generation_id, member, topic, 0, 6) == REBALANCE_IN_PROGRESS
        s2 = raw.sync(j2.generation_id, member, [(member, assignment(topic, [0, 1]))])
        assert s2.error_code == NONE, s2
        assert raw.commit(gen1, member, topic, 0, 7) == ILLEGAL_GENERATION
        assert raw.heartbeat(gen1, member) == ILLEGAL_GENERATION
        assert raw.commit(j2.generation_id, "no-such-member", topic, 0, 8) == UNKNOWN_MEMBER_ID
        assert raw.heartbeat(j2.generation_id, "no-such-member") == UNKNOWN_MEMBER_ID
        assert raw.commit(j2.generation_id, member, topic, 1, 9) == NONE
        assert kp_group_offsets(bootstrap, group, topic) == {0: (5, "gen %d" % gen1),
                                                             1: (9, "gen %d" % j2.generation_id)}

        # After leaving, the member's id is unknown; the empty group accepts admin-style commits.
        top, per_member = raw.leave(member)
        assert top == NONE and all(e == NONE for e in per_member), (top, per_member)
        assert raw.commit(j2.generation_id, member, topic, 0, 10) == UNKNOWN_MEMBER_ID
        assert raw.commit(-1, "", topic, 0, 11) == NONE
        assert kp_group_offsets(bootstrap, group, topic)[0] == (11, "gen -1")
    finally:
        raw.close()


class Call(threading.Thread):
    """Runs fn(*args) on a thread (for requests the broker holds open); result() joins."""

    def __init__(self, fn, *args):
        super().__init__(daemon=True)
        self.fn, self.args, self.value, self.exc = fn, args, None, None
        self.start()

    def run(self):
        try:
            self.value = self.fn(*self.args)
        except BaseException as exc:
            self.exc = exc

    def result(self, timeout=DEADLINE):
        self.join(timeout)
        assert not self.is_alive(), "request still pending after %ss" % timeout
        if self.exc:
            raise self.exc
        return self.value


def test_rebalance_raw(group_broker):
    """Two hand-driven members: a member joining moves the group to PreparingRebalance (heartbeats
    answer REBALANCE_IN_PROGRESS, commits with the current generation are still accepted), the
    protocol is the one every member supports, a member supporting none of the group's protocols is
    INCONSISTENT_GROUP_PROTOCOL, a follower's SyncGroup waits for the leader's, an old generation's
    SyncGroup is ILLEGAL_GENERATION, and a member that stops heartbeating is expelled after its
    session timeout (6 s), not before."""
    bootstrap = group_broker.bootstrap
    admin = ck_admin(bootstrap)
    topic, group = new_topic("grp-raw"), new_topic("g-raw")
    create_topic(admin, topic, 2)
    sub = subscription(topic)
    a, b = RawGroupClient(bootstrap, group), RawGroupClient(bootstrap, group)
    try:
        ma = a.new_member(sub, ("range", "roundrobin"))
        ja = a.join(ma, sub, ("range", "roundrobin"))
        assert ja.error_code == NONE and ja.protocol_name == "range" and ja.leader == ma, ja
        gen1 = ja.generation_id
        assert a.sync(gen1, ma, [(ma, assignment(topic, [0, 1]))]).error_code == NONE

        mb = b.new_member(sub, ("roundrobin",))
        assert mb != ma
        # A pending member (MEMBER_ID_REQUIRED only) does not disturb the group.
        assert a.heartbeat(gen1, ma) == NONE
        jb = Call(b.join, mb, sub, ("roundrobin",), 6000)
        wait_for(lambda: a.heartbeat(gen1, ma) == REBALANCE_IN_PROGRESS, DEADLINE,
                 "the leader's heartbeat to report the rebalance")
        assert describe(admin, group).state == ConsumerGroupState.PREPARING_REBALANCING
        assert a.commit(gen1, ma, topic, 0, 3) == NONE   # e.g. a commit in onPartitionsRevoked
        bad = a.join("", sub, ("range",))
        assert bad.error_code == INCONSISTENT_GROUP_PROTOCOL, bad

        ja = a.join(ma, sub, ("range", "roundrobin"))
        jb = jb.result()
        gen2 = ja.generation_id
        assert ja.error_code == NONE and jb.error_code == NONE, (ja, jb)
        assert gen2 == gen1 + 1 and jb.generation_id == gen2, (ja, jb)
        assert ja.protocol_name == jb.protocol_name == "roundrobin", (ja, jb)
        assert ja.leader == jb.leader == ma and jb.member_id == mb
        assert sorted(m.member_id for m in ja.members) == sorted([ma, mb]) and not jb.members, (ja, jb)
        assert describe(admin, group).state == ConsumerGroupState.COMPLETING_REBALANCING

        assert b.sync(gen1, mb, [], "roundrobin").error_code == ILLEGAL_GENERATION
        sb = Call(b.sync, gen2, mb, [], "roundrobin")
        sa = a.sync(gen2, ma, [(ma, assignment(topic, [0])), (mb, assignment(topic, [1]))], "roundrobin")
        sb = sb.result()
        synced_at = time.monotonic()
        assert sa.error_code == NONE and bytes(sa.assignment) == assignment(topic, [0]), sa
        assert sb.error_code == NONE and bytes(sb.assignment) == assignment(topic, [1]), sb
        d = describe(admin, group)
        assert d.state == ConsumerGroupState.STABLE and d.partition_assignor == "roundrobin", describe_brief(d)
        assert {m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions) for m in d.members} == \
            {ma: [0], mb: [1]}, describe_brief(d)

        # b goes silent; a keeps heartbeating until the coordinator expels b (session 6 s).
        def expelled():
            err = a.heartbeat(gen2, ma)
            assert err in (NONE, REBALANCE_IN_PROGRESS), err
            return err == REBALANCE_IN_PROGRESS or time.sleep(HEARTBEAT_MS / 1000)
        wait_for(expelled, DEADLINE, "b's session to expire")
        elapsed = time.monotonic() - synced_at
        assert 5.5 <= elapsed <= 6 + 8, "b expelled %.1f s after its last request (session 6 s)" % elapsed
        ja = a.join(ma, sub, ("range", "roundrobin"))
        assert ja.error_code == NONE and ja.generation_id == gen2 + 1 and ja.protocol_name == "range", ja
        assert [m.member_id for m in ja.members] == [ma], ja
        assert b.heartbeat(gen2, mb) == UNKNOWN_MEMBER_ID
        assert a.sync(ja.generation_id, ma, [(ma, assignment(topic, [0, 1]))]).error_code == NONE
        top, per_member = a.leave(ma)
        assert top == NONE and per_member == [NONE], (top, per_member)
        assert describe(admin, group).state == ConsumerGroupState.EMPTY
        assert kp_group_offsets(bootstrap, group, topic) == {0: (3, "gen %d" % gen1)}
    finally:
        a.close()
        b.close()


def test_static_leader_replaced_raw(group_broker):
    """KIP-345/KIP-814 at the protocol level: a static leader's new incarnation (JoinGroup with no
    member id, same group.instance.id and protocols) in a Stable group gets an immediate answer in
    the current generation, with no rebalance for the other member. JoinGroup v9: it is named
    leader with the member list and skip_assignment; v7: the answer names the previous leader id
    and lists no members, so it acts as a follower. Its SyncGroup returns the current assignment;
    the replaced incarnation is FENCED_INSTANCE_ID."""
    bootstrap = group_broker.bootstrap
    admin = ck_admin(bootstrap)
    topic, group = new_topic("grp-slead"), new_topic("g-slead")
    create_topic(admin, topic, 2)
    sub = subscription(topic)
    s, d = RawGroupClient(bootstrap, group), RawGroupClient(bootstrap, group)
    clients = [s, d]
    try:
        js = s.join("", sub, instance="inst-s")   # static members get their id at once
        assert js.error_code == NONE and js.leader == js.member_id, js
        sid, gen = js.member_id, js.generation_id
        assert s.sync(gen, sid, [(sid, assignment(topic, [0, 1]))], instance="inst-s").error_code == NONE
        did = d.new_member(sub)
        jd = Call(d.join, did, sub)
        wait_for(lambda: s.heartbeat(gen, sid, "inst-s") == REBALANCE_IN_PROGRESS, DEADLINE, "rebalance")
        js = s.join(sid, sub, instance="inst-s")
        jd = jd.result()
        gen = js.generation_id
        assert js.leader == sid and jd.generation_id == gen, (js, jd)
        sd = Call(d.sync, gen, did, [])
        assert s.sync(gen, sid, [(sid, assignment(topic, [0])), (did, assignment(topic, [1]))],
                      instance="inst-s").error_code == NONE
        assert sd.result().error_code == NONE

        for version in (9, 7):
            incarnation = RawGroupClient(bootstrap, group)
            clients.append(incarnation)
            j = Call(incarnation.join, "", sub, ("range",), SESSION_MS, "inst-s", version)
            j = j.result(5)   # answered at once: no rebalance to wait for
            assert j.error_code == NONE and j.generation_id == gen and j.member_id not in (sid, did), j
            assert j.protocol_name == "range", j
            if version >= 9:
                assert j.leader == j.member_id and j.skip_assignment, j
                assert sorted(m.member_id for m in j.members) == sorted([j.member_id, did]), j
            else:
                assert j.leader == sid and not j.members, j
            r = incarnation.sync(gen, j.member_id, [], instance="inst-s")
            assert r.error_code == NONE and bytes(r.assignment) == assignment(topic, [0]), r
            assert d.heartbeat(gen, did) == NONE, "the dynamic member was asked to rebalance"
            assert s.heartbeat(gen, sid, "inst-s") == FENCED_INSTANCE_ID
            assert s.commit(gen, sid, topic, 0, 1, instance="inst-s") == FENCED_INSTANCE_ID
            assert incarnation.heartbeat(gen, j.member_id, "inst-s") == NONE
            s, sid = incarnation, j.member_id
        d_now = describe(admin, group)
        assert d_now.state == ConsumerGroupState.STABLE, describe_brief(d_now)
        assert sorted(m.member_id for m in d_now.members) == sorted([sid, did]), describe_brief(d_now)
    finally:
        for c in clients:
            c.close()
