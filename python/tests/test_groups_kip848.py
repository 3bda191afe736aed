"""Consumer groups on KIP-848's consumer protocol (group.protocol=consumer): odradek members
alone, and a mixed group of odradek and confluent-kafka (librdkafka) members sharing partitions.

Every member tracks what it owns from its rebalance callbacks (incremental on this protocol);
a shared tracker fails the test the moment two members own one partition, and every produced
record must be consumed.
"""
import threading
import time

import pytest

import confluent_kafka
import odradek

from conftest import KIP848_FAST, module_broker, produce_n

DEADLINE = 30


@pytest.fixture(scope="module")
def kbroker(tmp_path_factory):
    b = module_broker(tmp_path_factory.mktemp("kip848-broker"), KIP848_FAST)
    yield b
    b.stop()


class Tracker:
    def __init__(self):
        self.lock = threading.Lock()
        self.owned = {}
        self.overlaps = []
        self.values = set()
        self.received = []
        self.kinds = []

    def change(self, who, kind, parts):
        with self.lock:
            mine = self.owned.setdefault(who, set())
            keys = {(p.topic, p.partition) for p in parts}
            if kind == "assign":
                mine |= keys
            else:
                mine -= keys
            self.kinds.append((who, kind, len(keys)))
            seen = {}
            for w, ps in self.owned.items():
                for p in ps:
                    if p in seen:
                        self.overlaps.append("%s owned by %s and %s" % (p, seen[p], w))
                    seen[p] = w

    def sizes(self):
        with self.lock:
            return {w: len(ps) for w, ps in self.owned.items()}


class Member:
    """A consumer of either library on the consumer protocol (or the classic one, cooperative),
    polled on its own thread."""

    def __init__(self, lib, name, bootstrap, group, topic, tracker, protocol="consumer",
                 strategy="cooperative-sticky"):
        self.name, self.tracker = name, tracker
        self.stop_flag = threading.Event()
        self.failure = None
        conf = {
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
            "client.id": name, "auto.offset.reset": "earliest", "auto.commit.interval.ms": 200,
        }
        if protocol == "classic":
            conf.update({"partition.assignment.strategy": strategy,
                         "heartbeat.interval.ms": 500, "session.timeout.ms": 10000})
        self.consumer = lib.Consumer(conf)
        self.consumer.subscribe(
            [topic],
            on_assign=lambda c, ps: tracker.change(name, "assign", ps),
            on_revoke=lambda c, ps: tracker.change(name, "revoke", ps),
            on_lost=lambda c, ps: tracker.change(name, "lost", ps))
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            while not self.stop_flag.is_set():
                m = self.consumer.poll(0.1)
                if m is not None and not m.error():
                    with self.tracker.lock:
                        self.tracker.values.add(m.value())
                        self.tracker.received.append(m.value())
            self.consumer.close()
        except BaseException as e:  # reported by stop()
            self.failure = e

    def stop(self):
        self.stop_flag.set()
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive()
        if self.failure:
            raise self.failure


def wait_for(cond, what):
    deadline = time.monotonic() + DEADLINE
    while not cond():
        assert time.monotonic() < deadline, "timed out waiting for %s" % (what(),)
        time.sleep(0.05)


def even(tracker, names, partitions):
    sizes = tracker.sizes()
    got = [sizes.get(n, 0) for n in names]
    return sum(got) == partitions and max(got) - min(got) <= 1


@pytest.mark.parametrize("libs", [("odradek", "odradek"), ("odradek", "confluent"), ("confluent", "odradek")],
                         ids=["odradek-only", "odradek-first", "confluent-first"])
def test_members_share_partitions_and_consume_everything(kbroker, topic, libs):
    group = "g848-" + topic
    fill = [b"v%d" % i for i in range(300)]
    for p in range(3):
        produce_n(kbroker.bootstrap, topic, 100, partition=p, value=lambda i, p=p: b"v%d" % (p * 100 + i))
    tracker = Tracker()
    lib = {"odradek": odradek, "confluent": confluent_kafka}
    first = Member(lib[libs[0]], "first", kbroker.bootstrap, group, topic, tracker)
    wait_for(lambda: even(tracker, ["first"], 3), tracker.sizes)
    second = Member(lib[libs[1]], "second", kbroker.bootstrap, group, topic, tracker)
    wait_for(lambda: even(tracker, ["first", "second"], 3) and tracker.sizes().get("second"), tracker.sizes)
    wait_for(lambda: tracker.values >= set(fill), lambda: len(set(fill) - tracker.values))
    # The second leaves: the first takes everything back.
    second.stop()
    wait_for(lambda: even(tracker, ["first"], 3), tracker.sizes)
    first.stop()
    assert not tracker.overlaps, tracker.overlaps
    assert all(kind != "lost" for _, kind, _ in tracker.kinds), tracker.kinds


def test_one_member_gets_every_partition_and_names_itself(kbroker, topic):
    group = "g848c-" + topic
    produce_n(kbroker.bootstrap, topic, 3)   # creates the topic (3 partitions)
    events = []
    c = odradek.Consumer({"bootstrap.servers": kbroker.bootstrap, "group.id": group,
                          "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    c.subscribe([topic], on_assign=lambda cons, ps: events.append(("assign", len(ps))),
                on_revoke=lambda cons, ps: events.append(("revoke", len(ps))))
    deadline = time.monotonic() + DEADLINE
    while ("assign", 3) not in events:
        assert time.monotonic() < deadline, events
        c.poll(0.1)
    assert len(c.assignment()) == 3
    member = c.memberid()
    assert member and len(member) == 22, member   # the client names itself (KIP-1082)
    c.close()


def test_admin_describes_and_lists_either_kind_of_group(kbroker, topic):
    from odradek import ConsumerGroupState, ConsumerGroupType
    from odradek.admin import AdminClient
    produce_n(kbroker.bootstrap, topic, 3)
    tracker = Tracker()
    modern = Member(odradek, "modern", kbroker.bootstrap, "g848a-" + topic, topic, tracker)
    classic = odradek.Consumer({"bootstrap.servers": kbroker.bootstrap, "group.id": "gcl-" + topic,
                                "auto.offset.reset": "earliest"})
    classic.subscribe([topic])
    admin = AdminClient({"bootstrap.servers": kbroker.bootstrap})
    try:
        wait_for(lambda: len(classic.assignment()) == 3 or classic.poll(0.1) and False, lambda: classic.assignment())
        wait_for(lambda: even(tracker, ["modern"], 3), tracker.sizes)

        def described(group):
            return admin.describe_consumer_groups([group])[group].result(DEADLINE)

        d = described("g848a-" + topic)
        assert d.type == ConsumerGroupType.CONSUMER
        assert d.state == ConsumerGroupState.STABLE
        assert d.partition_assignor == "uniform"
        (m,) = d.members
        assert len(m.assignment.topic_partitions) == 3
        assert sorted(tp.partition for tp in m.target_assignment.topic_partitions) == [0, 1, 2]
        c = described("gcl-" + topic)
        assert c.type == ConsumerGroupType.CLASSIC
        assert c.members[0].target_assignment is None
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(DEADLINE)
        ids = {g.group_id: g.type for g in listed.valid}
        assert ids.get("g848a-" + topic) == ConsumerGroupType.CONSUMER
        assert "gcl-" + topic not in ids
    finally:
        modern.stop()
        classic.close()


# librdkafka's classic cooperative-sticky assignor may hand out assignments carrying user data,
# which Kafka 4.x (and odradek-broker) refuse to convert ("an unsupported custom assignor is in
# use"): its classic members use range, odradek's cooperative-sticky (no user data).
@pytest.mark.parametrize("classic_lib,strategy", [("confluent", "range"), ("odradek", "cooperative-sticky")],
                         ids=["confluent-range", "odradek-cooperative"])
def test_a_classic_group_upgrades_online_without_loss_or_duplicates(kbroker, topic, classic_lib, strategy):
    """A rolling restart of a classic group's members with group.protocol=consumer: the first
    consumer-protocol member converts the group, the classic members keep consuming until they
    are replaced, and every record is read exactly once."""
    from odradek import ConsumerGroupState, ConsumerGroupType
    from odradek.admin import AdminClient
    group = "gmig-" + topic
    lib = {"odradek": odradek, "confluent": confluent_kafka}
    admin = AdminClient({"bootstrap.servers": kbroker.bootstrap})
    tracker = Tracker()
    produced = []

    def produce(n):
        start = len(produced)
        for p in range(3):
            produce_n(kbroker.bootstrap, topic, n // 3, partition=p,
                      value=lambda i, p=p: b"m%d-%d" % (start, p * n + i))
            produced.extend(b"m%d-%d" % (start, p * n + i) for i in range(n // 3))

    def settled(names):
        """Every record read, the partitions spread evenly, and the broker sees the group stable
        with exactly these members (as an operator checks before restarting the next one)."""
        if not (even(tracker, names, 3) and tracker.values >= set(produced)):
            return False
        try:
            d = admin.describe_consumer_groups([group])[group].result(DEADLINE)
        except odradek.KafkaException:
            return False
        return d.state == ConsumerGroupState.STABLE and len(d.members) == len(names)

    def progress():
        try:
            d = admin.describe_consumer_groups([group])[group].result(DEADLINE)
            seen = (d.type, d.state, [(m.client_id, len(m.assignment.topic_partitions)) for m in d.members])
        except odradek.KafkaException as e:
            seen = e
        health = [(n, m.failure, m.thread.is_alive()) for n, m in members.items()]
        return tracker.sizes(), tracker.kinds, len(tracker.received), len(produced), seen, health

    members = {n: Member(lib[classic_lib], n, kbroker.bootstrap, group, topic, tracker, "classic", strategy)
               for n in ("a", "b")}
    produce(150)
    wait_for(lambda: settled(["a", "b"]), progress)
    for old, new, new_lib in (("a", "c", confluent_kafka), ("b", "d", odradek)):
        members.pop(old).stop()
        members[new] = Member(new_lib, new, kbroker.bootstrap, group, topic, tracker)
        produce(150)
        wait_for(lambda: settled(sorted(members)), progress)
        described = admin.describe_consumer_groups([group])[group].result(DEADLINE)
        assert described.type == ConsumerGroupType.CONSUMER
    for m in members.values():
        m.stop()
    assert not tracker.overlaps, tracker.overlaps
    assert set(tracker.received) == set(produced), "every record was read"
    assert len(tracker.received) == len(produced), "no record was read twice"
