"""Consumer groups: subscribe, rebalance callbacks, commits, the offset store, group metadata.

A broker of this module's own with `group.initial.rebalance.delay.ms=0`, so a new group forms at
once. Every wait is a deadline with polling.
"""
import threading
import time

import pytest

from odradek import Consumer, KafkaError, KafkaException, OFFSET_INVALID, TopicPartition

from conftest import module_broker, produce_n

GROUP_CONF = {"auto.offset.reset": "earliest", "heartbeat.interval.ms": 100,
              "session.timeout.ms": 6000}


@pytest.fixture(scope="module")
def gbroker(tmp_path_factory):
    b = module_broker(tmp_path_factory.mktemp("group-broker"),
                      {"group.initial.rebalance.delay.ms": "0"})
    yield b
    b.stop()


@pytest.fixture
def conf(gbroker, topic):
    """Consumer configuration for a fresh group per test (auto-commit off unless a test says)."""
    return dict(GROUP_CONF, **{"bootstrap.servers": gbroker.bootstrap, "group.id": "g-" + topic,
                               "enable.auto.commit": False})


def fill(gbroker, topic, per_partition, partitions=3):
    for p in range(partitions):
        produce_n(gbroker.bootstrap, topic, per_partition, partition=p,
                  value=lambda i, p=p: b"p%d-%d" % (p, i))


class Recorder:
    """Rebalance callbacks that record what they saw and on which thread."""

    def __init__(self):
        self.events = []
        self.threads = set()

    def on_assign(self, consumer, partitions):
        self.threads.add(threading.get_ident())
        self.events.append(("assign", sorted((p.topic, p.partition) for p in partitions)))

    def on_revoke(self, consumer, partitions):
        self.threads.add(threading.get_ident())
        self.events.append(("revoke", sorted((p.topic, p.partition) for p in partitions)))

    def on_lost(self, consumer, partitions):
        self.threads.add(threading.get_ident())
        self.events.append(("lost", sorted((p.topic, p.partition) for p in partitions)))

    def kinds(self):
        return [k for k, _ in self.events]


def poll_until(consumers, cond, timeout=30.0, sink=None):
    """Polls every consumer in turn until `cond()` holds; collects messages into `sink` (a
    list, or a dict of lists keyed by consumer)."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in %.0fs" % timeout
        for c in consumers:
            m = c.poll(0.05)
            if m is None or m.error() is not None or sink is None:
                continue
            (sink.setdefault(c, []) if isinstance(sink, dict) else sink).append(m)


def committed_offsets(consumer, topic, partitions=3):
    got = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    return [tp.offset for tp in got]


def test_two_members_split_partitions_and_rebalance_when_one_leaves(gbroker, conf, topic):
    fill(gbroker, topic, 10)
    ra, rb = Recorder(), Recorder()
    a, b = Consumer(conf), Consumer(conf)
    a.subscribe([topic], on_assign=ra.on_assign, on_revoke=ra.on_revoke)
    poll_until([a], lambda: len(a.assignment()) == 3)
    b.subscribe([topic], on_assign=rb.on_assign, on_revoke=rb.on_revoke)
    seen = []
    poll_until([a, b], lambda: len(a.assignment()) + len(b.assignment()) == 3
               and a.assignment() and b.assignment(), sink=seen)
    assert not set(a.assignment()) & set(b.assignment())
    # Eager protocol: a gave everything back, then got its share.
    assert ra.kinds()[:3] == ["assign", "revoke", "assign"], ra.events
    # Callbacks ran on this (the polling) thread only.
    assert ra.threads == {threading.get_ident()} and rb.threads == {threading.get_ident()}
    poll_until([a, b], lambda: len({(m.partition(), m.offset()) for m in seen}) == 30, sink=seen)
    b.close()
    assert rb.kinds()[-1] == "revoke"
    poll_until([a], lambda: len(a.assignment()) == 3)
    assert ra.events[-1] == ("assign", [(topic, p) for p in range(3)])
    a.close()


def test_commits_survive_a_restart(gbroker, conf, topic):
    fill(gbroker, topic, 5)
    first = Consumer(conf)
    first.subscribe([topic])
    got = []
    poll_until([first], lambda: len(got) >= 9, sink=got)
    committed = first.commit(asynchronous=False)
    assert committed is not None
    stored = {tp.partition: tp.offset for tp in committed if tp.offset != OFFSET_INVALID}
    positions = {tp.partition: tp.offset for tp in
                 first.position([TopicPartition(topic, p) for p in range(3)])}
    assert stored == {p: o for p, o in positions.items() if o > 0}
    # Commit an explicit, earlier offset of partition 0.
    first.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
    first.close()
    second = Consumer(conf)
    assert committed_offsets(second, topic)[0] == 2
    second.subscribe([topic])
    again = []
    poll_until([second], lambda: any(m.partition() == 0 for m in again), sink=again)
    assert min(m.offset() for m in again if m.partition() == 0) == 2
    second.close()


def test_auto_commit_commits_what_was_handed_out(gbroker, conf, topic):
    fill(gbroker, topic, 4)
    c = Consumer(dict(conf, **{"enable.auto.commit": True, "auto.commit.interval.ms": 100}))
    c.subscribe([topic])
    got = []
    poll_until([c], lambda: len(got) == 12, sink=got)
    poll_until([c], lambda: committed_offsets(c, topic) == [4, 4, 4])
    c.close()


def test_close_commits_stored_offsets_with_auto_commit(gbroker, conf, topic):
    fill(gbroker, topic, 3)
    # A long interval: only the commit on revoke/close can store the offsets in time.
    c = Consumer(dict(conf, **{"enable.auto.commit": True, "auto.commit.interval.ms": 600000}))
    c.subscribe([topic])
    got = []
    poll_until([c], lambda: len(got) == 9, sink=got)
    c.close()
    check = Consumer(conf)
    assert committed_offsets(check, topic) == [3, 3, 3]
    check.close()


def test_store_offsets_decides_what_commit_sends(gbroker, conf, topic):
    fill(gbroker, topic, 5, partitions=1)
    c = Consumer(dict(conf, **{"enable.auto.offset.store": False}))
    c.subscribe([topic])
    got = []
    poll_until([c], lambda: len(got) == 5, sink=got)
    with pytest.raises(KafkaException) as ei:
        c.commit(asynchronous=False)
    assert ei.value.args[0].code() == KafkaError._NO_OFFSET
    c.store_offsets(message=got[1])
    # The whole assignment is listed; partitions with nothing stored have OFFSET_INVALID.
    assert sorted((tp.partition, tp.offset) for tp in c.commit(asynchronous=False)) == [
        (0, 2), (1, OFFSET_INVALID), (2, OFFSET_INVALID)]
    c.store_offsets(offsets=[TopicPartition(topic, 0, 4)])
    c.commit(asynchronous=False)
    assert committed_offsets(c, topic, 1) == [4]
    with pytest.raises(ValueError):
        c.store_offsets()
    c.close()
    auto = Consumer(conf)
    with pytest.raises(KafkaException) as ei:
        auto.store_offsets(offsets=[TopicPartition(topic, 0, 1)])
    assert ei.value.args[0].code() == KafkaError._INVALID_ARG
    auto.close()


def test_async_commit_reports_to_on_commit_on_the_polling_thread(gbroker, conf, topic):
    fill(gbroker, topic, 3, partitions=1)
    reports = []

    def on_commit(err, partitions):
        reports.append((err, [(p.partition, p.offset) for p in partitions], threading.get_ident()))

    c = Consumer(dict(conf, on_commit=on_commit))
    c.subscribe([topic])
    got = []
    poll_until([c], lambda: len(got) == 3, sink=got)
    assert c.commit(message=got[0]) is None
    poll_until([c], lambda: len(reports) == 1)
    assert reports[0] == (None, [(0, 1)], threading.get_ident())
    c.commit()
    poll_until([c], lambda: len(reports) == 2)
    assert reports[1][0] is None
    assert sorted(reports[1][1]) == [(0, 3), (1, OFFSET_INVALID), (2, OFFSET_INVALID)]
    # Nothing new stored: the callback hears _NO_OFFSET.
    c.commit()
    poll_until([c], lambda: len(reports) == 3)
    assert reports[2][0].code() == KafkaError._NO_OFFSET and reports[2][1] == []
    # Synchronous commits do not call on_commit.
    c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    assert c.poll(0.2) is None and len(reports) == 3
    c.close()


def test_cooperative_sticky_moves_only_what_it_must(gbroker, conf, topic):
    fill(gbroker, topic, 2, partitions=3)
    coop = dict(conf, **{"partition.assignment.strategy": "cooperative-sticky"})
    ra, rb = Recorder(), Recorder()
    a, b = Consumer(coop), Consumer(coop)
    a.subscribe([topic], on_assign=ra.on_assign, on_revoke=ra.on_revoke)
    poll_until([a], lambda: len(a.assignment()) == 3)
    before = set(a.assignment())

    def b_assign(consumer, partitions):
        rb.on_assign(consumer, partitions)
        # Apply it ourselves, starting from offset 1.
        consumer.incremental_assign([TopicPartition(p.topic, p.partition, 1) for p in partitions])

    b.subscribe([topic], on_assign=b_assign)
    got = {}
    poll_until([a, b], lambda: len(a.assignment()) + len(b.assignment()) == 3
               and a.assignment() and b.assignment(), sink=got)
    assert set(a.assignment()) <= before
    revoked = [p for kind, parts in ra.events if kind == "revoke" for p in parts]
    assert sorted(revoked) == sorted((t.topic, t.partition) for t in b.assignment()), ra.events
    assert "revoke" not in rb.kinds()
    mine = {t.partition for t in b.assignment()}
    poll_until([a, b], lambda: {m.partition() for m in got.get(b, [])} == mine, sink=got)
    assert [m.offset() for m in got[b]] == [1] * len(mine)
    b.close()
    poll_until([a], lambda: len(a.assignment()) == 3)
    a.close()


def test_assign_from_on_assign_sets_start_offsets(gbroker, conf, topic):
    fill(gbroker, topic, 6, partitions=1)

    def on_assign(consumer, partitions):
        for p in partitions:
            p.offset = 4
        consumer.assign(partitions)

    c = Consumer(conf)
    c.subscribe([topic], on_assign=on_assign)
    got = []
    poll_until([c], lambda: len(got) == 2, sink=got)
    assert [m.offset() for m in got] == [4, 5]
    c.close()


def test_callback_exception_propagates_and_the_assignment_still_applies(gbroker, conf, topic):
    fill(gbroker, topic, 1, partitions=1)

    def on_assign(consumer, partitions):
        raise ZeroDivisionError("from on_assign")

    c = Consumer(conf)
    c.subscribe([topic], on_assign=on_assign)
    deadline = time.monotonic() + 30
    raised = False
    while not raised and time.monotonic() < deadline:
        try:
            c.poll(0.1)
        except ZeroDivisionError:
            raised = True
    assert raised
    assert sorted(c.assignment()) == [TopicPartition(topic, p) for p in range(3)]
    got = []
    poll_until([c], lambda: len(got) == 1, sink=got)
    c.close()


def test_regex_subscription_and_group_metadata(gbroker, conf, topic):
    fill(gbroker, topic + "-x", 1, partitions=1)
    fill(gbroker, topic + "-y", 1, partitions=1)
    c = Consumer(conf)
    assert c.memberid() is None
    md = c.consumer_group_metadata()
    assert (md.group_id, md.member_id, md.generation_id) == (conf["group.id"], "", -1)
    c.subscribe(["^" + topic.replace(".", r"\.") + "-[xy]$"])
    got = []
    poll_until([c], lambda: len(got) == 2, sink=got)
    assert {m.topic() for m in got} == {topic + "-x", topic + "-y"}
    md = c.consumer_group_metadata()
    assert md.member_id == c.memberid() and md.member_id and md.generation_id >= 1
    c.unsubscribe()
    c.poll(0.1)
    assert c.assignment() == []
    c.close()


def test_unsubscribe_revokes_at_the_next_poll_like_confluent_kafka(gbroker, conf, topic):
    # confluent-kafka: unsubscribe() returns at once; the assignment stays until the next poll
    # serves on_revoke (checked against confluent-kafka 2.16 on this broker).
    fill(gbroker, topic, 1, partitions=1)
    rec = Recorder()
    c = Consumer(conf)
    c.subscribe([topic], on_assign=rec.on_assign, on_revoke=rec.on_revoke)
    poll_until([c], lambda: "assign" in rec.kinds())
    c.unsubscribe()
    assert rec.kinds()[-1] == "assign", "no revoke inside unsubscribe()"
    assert sorted(tp.partition for tp in c.assignment()) == [0, 1, 2]
    c.poll(0.2)
    assert rec.kinds()[-1] == "revoke"
    assert c.assignment() == []
    # Subscribing again after an unsubscribe without a poll revokes first, with the old
    # callbacks, then joins with the new ones.
    rec2 = Recorder()
    c.subscribe([topic], on_assign=rec2.on_assign, on_revoke=rec2.on_revoke)
    poll_until([c], lambda: "assign" in rec2.kinds())
    c.unsubscribe()
    c.subscribe([topic], on_assign=rec2.on_assign, on_revoke=rec2.on_revoke)
    assert rec2.kinds()[:2] == ["assign", "revoke"]
    c.close()


def test_committed_without_commits_is_offset_invalid(gbroker, conf, topic):
    fill(gbroker, topic, 1, partitions=1)
    c = Consumer(conf)
    assert committed_offsets(c, topic, 1) == [OFFSET_INVALID]
    with pytest.raises(TypeError):
        c.subscribe(topic)
    with pytest.raises(ValueError, match="mutually exclusive"):
        c.commit(message=object(), offsets=[TopicPartition(topic, 0, 1)])
    c.close()
    with pytest.raises(RuntimeError):
        c.commit()


def test_subscribe_without_group_id_fails(gbroker, topic):
    c = Consumer({"bootstrap.servers": gbroker.bootstrap})
    with pytest.raises(KafkaException) as ei:
        c.subscribe([topic])
    assert ei.value.args[0].code() == KafkaError._INVALID_ARG
    c.close()


def test_aio_consumer_joins_a_group_and_commits(gbroker, conf, topic):
    import asyncio

    from odradek.aio import AIOConsumer

    fill(gbroker, topic, 2)
    rec = Recorder()

    async def main():
        c = AIOConsumer(conf)
        c.subscribe([topic], on_assign=rec.on_assign, on_revoke=rec.on_revoke)
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 6 and time.monotonic() < deadline:
            m = await c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m)
        assert len(got) == 6
        assert rec.threads == {threading.get_ident()}  # served on the loop's thread
        committed = await c.commit(asynchronous=False)
        assert committed is not None and sorted(tp.offset for tp in committed) == [2, 2, 2]
        assert [tp.offset for tp in await c.committed([TopicPartition(topic, 0)])] == [2]
        assert c.memberid() == c.consumer_group_metadata().member_id
        await c.unsubscribe()
        assert rec.kinds()[-1] == "revoke"
        await c.close()

    asyncio.run(main())


def test_admin_lists_describes_reads_offsets_of_and_deletes_groups(gbroker, conf, topic):
    from odradek.admin import AdminClient, ConsumerGroupState, ConsumerGroupTopicPartitions, Node

    fill(gbroker, topic, 2)
    c = Consumer(conf)
    c.subscribe([topic])
    poll_until([c], lambda: len(c.assignment()) == 3)
    c.commit(offsets=[TopicPartition(topic, 1, 2)], asynchronous=False)
    admin = AdminClient({"bootstrap.servers": gbroker.bootstrap})
    group = conf["group.id"]

    listed = admin.list_consumer_groups().result(timeout=20)
    mine = [g for g in listed.valid if g.group_id == group]
    assert len(mine) == 1 and mine[0].state == ConsumerGroupState.STABLE
    assert not mine[0].is_simple_consumer_group and listed.errors == []
    stable = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(timeout=20)
    assert group not in [g.group_id for g in stable.valid]

    d = admin.describe_consumer_groups([group])[group].result(timeout=20)
    assert d.state == ConsumerGroupState.STABLE and d.partition_assignor == "range"
    assert [m.member_id for m in d.members] == [c.memberid()]
    assert sorted(d.members[0].assignment.topic_partitions) == [TopicPartition(topic, p)
                                                                 for p in range(3)]
    # The coordinator, as confluent-kafka reports it: a Node with the broker's address.
    brokers = admin.list_topics(timeout=10).brokers
    assert isinstance(d.coordinator, Node) and d.coordinator.id in brokers
    assert (d.coordinator.host, d.coordinator.port) == (brokers[d.coordinator.id].host,
                                                        brokers[d.coordinator.id].port)

    req = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 1), TopicPartition(topic, 0)])]
    got = admin.list_consumer_group_offsets(req)[group].result(timeout=20)
    assert sorted((tp.partition, tp.offset) for tp in got.topic_partitions) == [
        (0, OFFSET_INVALID), (1, 2)]
    everything = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    assert [(tp.partition, tp.offset) for tp in everything[group].result(timeout=20).topic_partitions] \
        == [(1, 2)]

    with pytest.raises(KafkaException) as ei:
        admin.delete_consumer_groups([group])[group].result(timeout=20)
    assert ei.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    c.close()
    assert admin.delete_consumer_groups([group])[group].result(timeout=20) is None
    with pytest.raises(KafkaException) as ei:
        admin.delete_consumer_groups([group])[group].result(timeout=20)
    assert ei.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND
    # A deleted group: odradek-broker describes it as Dead (as Kafka before 4.0 did); Kafka 4.x
    # (DescribeGroups v6) answers GROUP_ID_NOT_FOUND.
    try:
        gone = admin.describe_consumer_groups([group])[group].result(timeout=20)
    except KafkaException as e:
        assert e.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND, e
    else:
        assert gone.state == ConsumerGroupState.DEAD and gone.members == []
        assert gone.coordinator.id == d.coordinator.id
