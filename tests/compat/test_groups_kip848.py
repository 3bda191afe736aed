"""Consumer groups on the KIP-848 protocol: confluent-kafka (librdkafka 2.12+) members with
group.protocol=consumer against the broker's ConsumerGroupHeartbeat coordinator.

The broker computes the assignment (uniform or range) and members reconcile incrementally:
every member reports each change through its rebalance callbacks, and the Tracker of
test_groups.py fails a test the moment two live members own one partition. Every test also
checks that every produced record was consumed.

Run with tests/compat/run_broker_peers.sh tests/compat/test_groups_kip848.py; against Apache
Kafka with ODRADEK_BROKER_BIN=tests/compat/kafka_as_broker_bin.sh (the restart test is skipped
there).
"""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType, KafkaException, Producer

from conftest import Broker, stop_and_check
from test_broker_peers import DEADLINE, ck_admin, new_topic
from test_groups import ON_KAFKA, Tracker, create_topic, describe, wait_for

# Fast heartbeats and short sessions: the bounds move with the values (Kafka checks them).
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
}
SESSION_S = 6


@pytest.fixture(scope="module")
def kip848_broker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("odradek-broker-kip848"), dict({"num.partitions": "3"}, **OVERRIDES),
               name="odradek-broker (KIP-848 groups)")
    b.start()
    try:
        yield b
    except BaseException:
        b.kill()
        raise
    stop_and_check(b)


def produce_values(bootstrap, topic, partitions, count, start=0):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    failed = []
    values = ["v%d" % i for i in range(start, start + count)]
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), partition=i % partitions,
                  on_delivery=lambda err, msg: err and failed.append(err))
    assert p.flush(DEADLINE) == 0
    assert not failed, failed
    return values


class Member:
    """A confluent-kafka consumer on the consumer group protocol, polled on its own thread; the
    tracker sees (topic, partition) pairs."""

    def __init__(self, name, bootstrap, group, topics, tracker, **extra):
        self.name, self.tracker = name, tracker
        self.stop_flag = threading.Event()
        self.failure = None
        conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 500,
            "fetch.wait.max.ms": 100,
            "error_cb": lambda err: tracker.error(name, "error_cb %s" % err),
        }
        conf.update(extra)
        self.consumer = Consumer(conf)
        with tracker.lock:
            tracker.live.add(name)
        self.consumer.subscribe(
            topics,
            on_assign=lambda c, ps: tracker.change(name, "assign", ((tp.topic, tp.partition) for tp in ps)),
            on_revoke=lambda c, ps: tracker.change(name, "revoke", ((tp.topic, tp.partition) for tp in ps)),
            on_lost=lambda c, ps: tracker.change(name, "lost", ((tp.topic, tp.partition) for tp in ps)))
        self.thread = threading.Thread(target=self._run, name="kip848-" + name, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            while not self.stop_flag.is_set():
                m = self.consumer.poll(0.1)
                if m is None:
                    continue
                if m.error():
                    self.tracker.error(self.name, "poll %s" % m.error())
                    continue
                self.tracker.record(self.name, m.partition(), m.offset(), m.value().decode())
            self.consumer.close()
            with self.tracker.lock:
                self.tracker.live.discard(self.name)
        except BaseException as exc:
            self.failure = exc

    def stop(self):
        self.stop_flag.set()
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive(), "%s did not close" % self.name
        if self.failure:
            raise self.failure


def owned(tracker, names):
    return tracker.snapshot(names)


def balanced(tracker, names, partitions):
    """The members' owned sets when they cover every partition once and evenly, else None."""
    snap = owned(tracker, names)
    together = [p for n in names for (_, p) in snap[n]]
    sizes = [len(snap[n]) for n in names]
    if sorted(together) == list(range(partitions)) and max(sizes) - min(sizes) <= 1:
        return snap
    return None


def check_clean(tracker):
    assert not tracker.overlaps, tracker.overlaps
    assert not [e for e in tracker.errors if "thread died" in e], tracker.errors


def test_members_join_and_leave_without_sharing_a_partition(kip848_broker):
    bootstrap = kip848_broker.bootstrap
    admin = ck_admin(bootstrap)
    topic, group = new_topic("kip848"), new_topic("g848")
    create_topic(admin, topic, 6)
    values = produce_values(bootstrap, topic, 6, 300)
    tracker = Tracker()
    a = Member("a", bootstrap, group, [topic], tracker)
    wait_for(lambda: balanced(tracker, ["a"], 6), DEADLINE, lambda: owned(tracker, ["a"]))
    b = Member("b", bootstrap, group, [topic], tracker)
    c = Member("c", bootstrap, group, [topic], tracker)
    snap = wait_for(lambda: balanced(tracker, ["a", "b", "c"], 6), DEADLINE,
                    lambda: owned(tracker, ["a", "b", "c"]))
    assert sorted(len(s) for s in snap.values()) == [2, 2, 2], snap
    # The broker agrees with the members.
    d = wait_for(lambda: (lambda d: d if d.state == ConsumerGroupState.STABLE else None)(describe(admin, group)),
                 DEADLINE, lambda: describe(admin, group).state)
    assert d.type == ConsumerGroupType.CONSUMER
    assert d.partition_assignor == "uniform"
    assert sorted(sorted(tp.partition for tp in m.assignment.topic_partitions) for m in d.members) == \
        sorted(sorted(p for (_, p) in s) for s in snap.values())
    listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(DEADLINE)
    assert group in [g.group_id for g in listed.valid]
    more = produce_values(bootstrap, topic, 6, 300, start=300)
    b.stop()
    wait_for(lambda: balanced(tracker, ["a", "c"], 6), DEADLINE, lambda: owned(tracker, ["a", "c"]))
    wait_for(lambda: not tracker.missing(values + more), DEADLINE,
             lambda: "%d missing" % len(tracker.missing(values + more)))
    a.stop()
    c.stop()
    check_clean(tracker)


CRASHING_MEMBER = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([sys.argv[3]], on_assign=lambda c, ps: print("assigned", len(ps), flush=True))
    while True:
        c.poll(0.1)
""")


def test_a_crashed_member_is_fenced_after_its_session(kip848_broker):
    bootstrap = kip848_broker.bootstrap
    admin = ck_admin(bootstrap)
    topic, group = new_topic("kip848crash"), new_topic("g848crash")
    create_topic(admin, topic, 4)
    tracker = Tracker()
    survivor = Member("survivor", bootstrap, group, [topic], tracker)
    wait_for(lambda: balanced(tracker, ["survivor"], 4), DEADLINE, lambda: owned(tracker, ["survivor"]))
    crasher = subprocess.Popen([sys.executable, "-c", CRASHING_MEMBER, bootstrap, group, topic],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(owned(tracker, ["survivor"])["survivor"]) == 2, DEADLINE,
                 lambda: owned(tracker, ["survivor"]))
        assert len(describe(admin, group).members) == 2
    finally:
        crasher.send_signal(signal.SIGKILL)
        crasher.wait(DEADLINE)
    killed = time.monotonic()
    wait_for(lambda: balanced(tracker, ["survivor"], 4), SESSION_S + DEADLINE, lambda: owned(tracker, ["survivor"]))
    took = time.monotonic() - killed
    # Not before the session ends (the broker cannot know earlier), and not long after it.
    assert took >= SESSION_S - 1.5, took
    values = produce_values(bootstrap, topic, 4, 100)
    wait_for(lambda: not tracker.missing(values), DEADLINE, lambda: tracker.missing(values)[:5])
    survivor.stop()
    check_clean(tracker)


def test_range_assignor_and_regex_subscription(kip848_broker):
    bootstrap = kip848_broker.bootstrap
    admin = ck_admin(bootstrap)
    prefix = new_topic("rx")
    first, group = prefix + "-a", new_topic("g848rx")
    create_topic(admin, first, 2)
    tracker = Tracker()
    # librdkafka sends a '^'-prefixed subscription to the broker as SubscribedTopicRegex.
    m = Member("m", bootstrap, group, ["^" + prefix + "-.*"], tracker, **{"group.remote.assignor": "range"})
    wait_for(lambda: len(owned(tracker, ["m"])["m"]) == 2, DEADLINE, lambda: owned(tracker, ["m"]))
    d = describe(admin, group)
    assert d.partition_assignor == "range"
    # A topic created later joins the subscription.
    second = prefix + "-b"
    create_topic(admin, second, 3)
    if ON_KAFKA:
        pytest.skip("Apache Kafka re-evaluates regexes on its own schedule (group.consumer.regex.refresh.interval.ms)")
    wait_for(lambda: len(owned(tracker, ["m"])["m"]) == 5, DEADLINE, lambda: owned(tracker, ["m"]))
    values = produce_values(bootstrap, second, 3, 60)
    wait_for(lambda: not tracker.missing(values), DEADLINE, lambda: tracker.missing(values)[:5])
    m.stop()
    check_clean(tracker)


def test_an_unknown_remote_assignor_is_refused(kip848_broker):
    bootstrap = kip848_broker.bootstrap
    topic, group = new_topic("kip848bad"), new_topic("g848bad")
    errors = []
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "group.remote.assignor": "sticky", "error_cb": lambda e: errors.append(e)})
    c.subscribe([topic])
    deadline = time.monotonic() + DEADLINE
    fatal = None
    while time.monotonic() < deadline and fatal is None:
        try:
            msg = c.poll(0.2)
            if msg is not None and msg.error():
                fatal = msg.error()
        except KafkaException as e:
            fatal = e.args[0]
        if any("assignor" in str(e).lower() for e in errors):
            fatal = errors[-1]
    c.close()
    assert fatal is not None and "assignor" in str(fatal).lower(), (fatal, errors)


@pytest.mark.skipif(ON_KAFKA, reason="restarts the odradek broker on its data directory")
def test_the_group_and_its_offsets_survive_a_broker_restart(start_broker):
    b = start_broker(dict({"num.partitions": "3"}, **OVERRIDES))
    workdir = b.workdir
    admin = ck_admin(b.bootstrap)
    topic, group = new_topic("kip848restart"), new_topic("g848restart")
    create_topic(admin, topic, 4)
    values = produce_values(b.bootstrap, topic, 4, 200)
    tracker = Tracker()
    m = Member("m", b.bootstrap, group, [topic], tracker)
    wait_for(lambda: not tracker.missing(values), DEADLINE, lambda: len(tracker.missing(values)))
    m.stop()   # commits on close
    before = describe(admin, group)
    assert before.state == ConsumerGroupState.EMPTY
    b.stop()
    b2 = start_broker(dict({"num.partitions": "3"}, **OVERRIDES), workdir=workdir)
    admin = ck_admin(b2.bootstrap)
    after = describe(admin, group)
    assert after.type == ConsumerGroupType.CONSUMER, after.type
    assert after.state == ConsumerGroupState.EMPTY
    more = produce_values(b2.bootstrap, topic, 4, 40, start=200)
    tracker2 = Tracker()
    m2 = Member("m2", b2.bootstrap, group, [topic], tracker2)
    wait_for(lambda: not tracker2.missing(more), DEADLINE, lambda: len(tracker2.missing(more)))
    time.sleep(0.5)
    m2.stop()
    # Only the new records: the committed offsets came back with the group.
    assert sorted(tracker2.values) == sorted(more), sorted(tracker2.values - set(more))[:5]
    check_clean(tracker2)
