"""odradek.admin.AdminClient: topics, partitions, list_topics, group offsets, configs, the
cluster, offsets and records."""
import concurrent.futures
import re
import socket
import time

import pytest

import odradek
import odradek.admin
from odradek import (OFFSET_END, Consumer, KafkaError, KafkaException, Producer, TopicCollection,
                     TopicPartition, TopicPartitionInfo, Uuid)
from odradek.admin import (AclOperation, AdminClient, AlterConfigOpType, ConfigEntry,
                           ConfigResource, ConfigSource, ConsumerGroupTopicPartitions,
                           DeletedRecords, DescribeClusterResult, IsolationLevel,
                           ListOffsetsResultInfo, NewPartitions, NewTopic, Node, OffsetSpec,
                           ResourceType, TopicDescription)

from conftest import consume_all, create_topic, produce_n


def eventually(admin, cond, timeout=20.0):
    """list_topics() until `cond(metadata)` holds or the timeout passes; returns the last one.

    Apache Kafka answers CreateTopics/CreatePartitions/DeleteTopics before every broker's
    metadata shows the change; odradek-broker shows it at once."""
    deadline = time.monotonic() + timeout
    md = admin.list_topics(timeout=10)
    while not cond(md) and time.monotonic() < deadline:
        time.sleep(0.1)
        md = admin.list_topics(timeout=10)
    return md


@pytest.fixture
def topic(topic_name):
    """These tests create their topics themselves: a fresh name only."""
    return topic_name


def test_create_and_delete_topics(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futs = admin.create_topics([NewTopic(topic, num_partitions=4, config={"retention.ms": "60000"}),
                                NewTopic(topic + "-b", 2)])
    assert set(futs) == {topic, topic + "-b"}
    for f in futs.values():
        assert isinstance(f, concurrent.futures.Future)
        assert f.result(timeout=20) is None
    md = eventually(admin, lambda md: topic + "-b" in md.topics)
    assert sorted(md.topics[topic].partitions) == [0, 1, 2, 3]
    assert len(md.topics[topic + "-b"].partitions) == 2

    again = admin.create_topics([NewTopic(topic, 1)])[topic]
    with pytest.raises(KafkaException) as ei:
        again.result(timeout=20)
    assert ei.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS

    more = admin.create_partitions([NewPartitions(topic, 6)])[topic]
    assert more.result(timeout=20) is None
    md = eventually(admin, lambda md: len(md.topics[topic].partitions) != 4)
    assert len(md.topics[topic].partitions) == 6

    fewer = admin.create_partitions([NewPartitions(topic, 2)])[topic]
    with pytest.raises(KafkaException) as ei:
        fewer.result(timeout=20)
    assert ei.value.args[0].code() == KafkaError.INVALID_PARTITIONS

    deleted = admin.delete_topics([topic, topic + "-b", topic + "-missing"])
    deleted[topic].result(timeout=20)
    deleted[topic + "-b"].result(timeout=20)
    with pytest.raises(KafkaException) as ei:
        deleted[topic + "-missing"].result(timeout=20)
    assert ei.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert topic not in eventually(admin, lambda md: topic not in md.topics).topics


def test_validate_only_creates_nothing(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3)], validate_only=True)[topic].result(timeout=20)
    md = admin.list_topics(topic, timeout=10)
    assert md.topics[topic].error is not None
    assert md.topics[topic].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_admin_topic_is_usable_by_the_producer(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 5)])[topic].result(timeout=20)
    p = Producer({"bootstrap.servers": bootstrap})
    got = []
    p.produce(topic, b"x", partition=4, on_delivery=lambda e, m: got.append((e, m.partition())))
    assert p.flush(10) == 0 and got == [(None, 4)]


def test_admin_argument_errors(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    with pytest.raises(ValueError):
        admin.create_topics([NewTopic("dup"), NewTopic("dup")])
    with pytest.raises(ValueError):
        NewTopic("t", replica_assignment=[[1]])
    with pytest.raises(KafkaException) as ei:
        AdminClient({"bootstrap.servers": bootstrap, "no.such.key": "1"})
    assert ei.value.args[0].code() == KafkaError._INVALID_ARG


def test_describe_topics(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2)])[topic].result(timeout=20)
    futs = admin.describe_topics(TopicCollection([topic, topic + "-missing"]), request_timeout=30)
    assert list(futs) == [topic, topic + "-missing"]
    d = futs[topic].result(timeout=30)
    assert isinstance(d, TopicDescription)
    assert (d.name, d.is_internal, d.authorized_operations) == (topic, False, None)
    assert isinstance(d.topic_id, Uuid) and str(d.topic_id) != "AAAAAAAAAAAAAAAAAAAAAA"
    md = admin.list_topics(topic, timeout=10)
    assert [p.id for p in d.partitions] == [0, 1]
    for p in d.partitions:
        assert isinstance(p, TopicPartitionInfo)
        meta = md.topics[topic].partitions[p.id]
        assert p.leader.id == meta.leader
        assert [n.id for n in p.replicas] == meta.replicas and [n.id for n in p.isr] == meta.isrs
        for n in [p.leader, *p.replicas, *p.isr]:
            broker = md.brokers[n.id]
            assert isinstance(n, Node) and (n.host, n.port) == (broker.host, broker.port)
    # The same id on every call; another topic has another.
    again = admin.describe_topics(TopicCollection([topic]))[topic].result(timeout=30)
    assert again.topic_id == d.topic_id and hash(again.topic_id) == hash(d.topic_id)
    with pytest.raises(KafkaException) as ei:
        futs[topic + "-missing"].result(timeout=30)
    assert ei.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    # Describing never creates the topic.
    assert admin.list_topics(topic + "-missing", timeout=10).topics[topic + "-missing"].error


def test_describe_topics_arguments(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    with pytest.raises(TypeError, match="instance of TopicCollection"):
        admin.describe_topics([topic])
    with pytest.raises(TypeError, match="list of topic names"):
        admin.describe_topics(TopicCollection((topic,)))
    with pytest.raises(TypeError, match="not int"):
        admin.describe_topics(TopicCollection([topic, 1]))
    with pytest.raises(ValueError, match="index 1"):
        admin.describe_topics(TopicCollection([topic, ""]))
    with pytest.raises(NotImplementedError, match="include_authorized_operations"):
        admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)
    with pytest.raises(TypeError, match="'nope'"):
        admin.describe_topics(TopicCollection([topic]), nope=1)
    assert admin.describe_topics(TopicCollection([])) == {}
    dup = admin.describe_topics(TopicCollection([topic, topic]))
    assert list(dup) == [topic]
    with pytest.raises(KafkaException) as ei:
        dup[topic].result(timeout=10)
    assert ei.value.args[0].code() == KafkaError._INVALID_ARG


def test_topic_description_types_are_exported_as_confluent_kafka_does():
    assert odradek.TopicCollection is odradek.admin.TopicCollection
    assert {"TopicCollection", "TopicPartitionInfo", "Uuid"} <= set(odradek.__all__)
    assert "TopicDescription" in odradek.admin.__all__
    d = TopicDescription("t", Uuid(0, 1), True, [], authorized_operations=["read", 4])
    assert d.authorized_operations == [AclOperation.READ, AclOperation.WRITE]


def test_uuid():
    u = Uuid(1234567890123, -5)
    assert (u.get_most_significant_bits(), u.get_least_significant_bits()) == (1234567890123, -5)
    # confluent-kafka's (librdkafka's) base64 form.
    assert str(u) == repr(u) == "AAABH3H7BMv/////////+w"
    assert str(Uuid(0, 0)) == "AAAAAAAAAAAAAAAAAAAAAA" and str(Uuid(-1, -1)) == "/////////////////////w"
    assert u == Uuid(1234567890123, -5) and u != Uuid(1234567890123, -4) and u != "x"
    assert len({u, Uuid(1234567890123, -5)}) == 1
    with pytest.raises(OverflowError):
        Uuid(1 << 63, 0)
    with pytest.raises(TypeError):
        Uuid("a", 1)


# ---- alter_consumer_group_offsets, configs, describe_cluster, list_offsets, delete_records --

def test_alter_consumer_group_offsets_then_list_them(bootstrap, topic):
    create_topic(bootstrap, topic, partitions=3)
    produce_n(bootstrap, topic, 5, partition=0)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    group = "g-" + topic
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 3),
                                                   TopicPartition(topic, 2, 1)])
    futs = admin.alter_consumer_group_offsets([request], request_timeout=30)
    assert list(futs) == [group]
    res = futs[group].result(timeout=30)
    assert isinstance(res, ConsumerGroupTopicPartitions) and res.group_id == group
    assert [(tp.topic, tp.partition, tp.offset, tp.error) for tp in res.topic_partitions] == [
        (topic, 0, 3, None), (topic, 2, 1, None)]

    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    got = sorted((tp.partition, tp.offset) for tp in listed.result(timeout=30).topic_partitions)
    assert got == [(0, 3), (2, 1)]

    # A consumer of the group starts where the offsets were set.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committed = c.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed[0].offset == 3
        c.assign([TopicPartition(topic, 0)])
        assert [m.offset() for m in consume_all(c, 2)] == [3, 4]
    finally:
        c.close()


def test_alter_consumer_group_offsets_of_an_active_group_fails_per_partition(bootstrap, topic):
    create_topic(bootstrap, topic, partitions=1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    group = "g-" + topic
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False, "session.timeout.ms": 6000})
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 30
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        assert c.assignment(), "the consumer did not join"
        fut = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 1)])])[group]
        res = fut.result(timeout=30)
        assert len(res.topic_partitions) == 1
        err = res.topic_partitions[0].error
        assert err is not None and err.code() == KafkaError.UNKNOWN_MEMBER_ID
    finally:
        c.close()


def test_alter_consumer_group_offsets_argument_errors(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    one = ConsumerGroupTopicPartitions("g", [TopicPartition(topic, 0, 1)])
    with pytest.raises(TypeError):
        admin.alter_consumer_group_offsets(one)
    with pytest.raises(ValueError, match="single consumer group"):
        admin.alter_consumer_group_offsets([one, one])
    with pytest.raises(ValueError):
        admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions("g")])
    with pytest.raises(ValueError):
        admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions("g", [])])
    with pytest.raises(ValueError):  # no offset set (OFFSET_INVALID)
        admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions("g", [TopicPartition(topic, 0)])])
    dup = ConsumerGroupTopicPartitions("g", [TopicPartition(topic, 0, 1), TopicPartition(topic, 0, 2)])
    with pytest.raises(KafkaException) as ei:
        admin.alter_consumer_group_offsets([dup])["g"].result(timeout=10)
    assert ei.value.args[0].code() == KafkaError._INVALID_ARG


G = ConsumerGroupTopicPartitions


@pytest.mark.parametrize("request_, error, message", [
    (None, TypeError, "request cannot be None"),
    (G("g"), TypeError, "request must be a list"),
    ([], ValueError, "single consumer group only"),
    ([G("g"), G("h")], ValueError, "single consumer group only"),
    (["g"], TypeError, "Expected list of 'ConsumerGroupTopicPartitions'"),
    ([G(None)], TypeError, "'group_id' cannot be None"),
    ([G(1)], TypeError, "'group_id' must be a string"),
    ([G("")], ValueError, "'group_id' cannot be empty"),
    ([G("g", (TopicPartition("t", 0),))], TypeError, "must be a list or None"),
    ([G("g", [])], ValueError, "'topic_partitions' cannot be empty"),
    ([G("g", [None])], ValueError, "cannot be None"),
    ([G("g", ["t"])], TypeError, "must be of type TopicPartition"),
    ([G("g", [TopicPartition("", 0)])], ValueError, "'topic' attribute as Empty"),
    ([G("g", [TopicPartition("t", -1)])], ValueError, "negative 'partition' value"),
    ([G("g", [TopicPartition("t", 0, 5)])], ValueError, "must not have 'offset' value"),
])
def test_list_consumer_group_offsets_argument_errors(request_, error, message):
    """confluent-kafka 2.16's checks, types and messages: one group per call, partitions
    without offsets."""
    admin = AdminClient({"bootstrap.servers": "127.0.0.1:1"})
    with pytest.raises(error, match=re.escape(message)):
        admin.list_consumer_group_offsets(request_)


def test_describe_configs_of_a_topic(bootstrap, topic):
    create_topic(bootstrap, topic, partitions=1, config={"retention.ms": "123456"})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    futs = admin.describe_configs([resource], request_timeout=30)
    assert list(futs) == [resource] and ConfigResource("topic", topic) in futs
    configs = futs[resource].result(timeout=30)
    entry = configs["retention.ms"]
    assert isinstance(entry, ConfigEntry) and entry.name == "retention.ms"
    assert entry.value == "123456"
    assert entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert ConfigSource(entry.source) is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert not entry.is_default and not entry.is_read_only and not entry.is_sensitive
    assert not entry.is_synonym and entry.synonyms == {}
    assert all(e.is_default == (e.source == ConfigSource.DEFAULT_CONFIG.value)
               for e in configs.values())
    assert any(e.is_default for e in configs.values())
    assert "cleanup.policy" in configs and all(name == e.name for name, e in configs.items())


def test_describe_configs_errors_per_resource(bootstrap, topic):
    create_topic(bootstrap, topic, partitions=1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    good = ConfigResource("TOPIC", topic)
    missing = ConfigResource(ResourceType.TOPIC, topic + "-missing")
    group = ConfigResource(ResourceType.GROUP, "some-group")
    bad_broker = ConfigResource(ResourceType.BROKER, "not-a-number")
    futs = admin.describe_configs([good, missing, group, bad_broker])
    assert "retention.ms" in futs[good].result(timeout=30)
    for resource, code in ((missing, KafkaError.UNKNOWN_TOPIC_OR_PART),
                           (group, KafkaError._NOT_IMPLEMENTED),
                           (bad_broker, KafkaError._INVALID_ARG)):
        with pytest.raises(KafkaException) as ei:
            futs[resource].result(timeout=30)
        assert ei.value.args[0].code() == code, resource
    with pytest.raises(ValueError):
        admin.describe_configs([])
    with pytest.raises(ValueError):
        admin.describe_configs([topic])
    with pytest.raises(ValueError):
        ConfigResource("no-such-type", "x")


def test_describe_configs_of_a_broker(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    node = admin.describe_cluster().result(timeout=30).nodes[0]
    resource = ConfigResource(ResourceType.BROKER, str(node.id))
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    assert len(configs) > 10
    assert all(isinstance(e, ConfigEntry) and e.name == name for name, e in configs.items())


def test_incremental_alter_configs_then_describe(bootstrap, topic):
    create_topic(bootstrap, topic, partitions=1, config={"segment.ms": "600000"})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)

    def described():
        return admin.describe_configs([resource])[resource].result(timeout=30)

    change = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "987654", incremental_operation=AlterConfigOpType.SET)])
    change.add_incremental_config(
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND))
    futs = admin.incremental_alter_configs([change], request_timeout=30)
    assert list(futs) == [resource]
    assert futs[resource].result(timeout=30) is None
    configs = described()
    assert configs["retention.ms"].value == "987654"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert set(configs["cleanup.policy"].value.split(",")) == {"delete", "compact"}
    assert configs["segment.ms"].value == "600000"  # untouched

    # validate_only changes nothing.
    dry = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    assert admin.incremental_alter_configs([dry], validate_only=True)[dry].result(timeout=30) is None
    assert described()["retention.ms"].value == "987654"

    # DELETE and SUBTRACT revert to the defaults.
    undo = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SUBTRACT)])
    assert admin.incremental_alter_configs([undo])[undo].result(timeout=30) is None
    configs = described()
    after_undo = (configs["retention.ms"], configs["cleanup.policy"])
    assert configs["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value, after_undo
    assert configs["retention.ms"].value != "987654", after_undo
    assert configs["cleanup.policy"].value == "delete", after_undo

    bad = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as ei:
        admin.incremental_alter_configs([bad])[bad].result(timeout=30)
    assert ei.value.args[0].code() == KafkaError.INVALID_CONFIG


def test_incremental_alter_configs_argument_errors(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    with pytest.raises(TypeError):
        admin.incremental_alter_configs([topic])
    with pytest.raises(ValueError):
        admin.incremental_alter_configs([ConfigResource("topic", topic)])
    with pytest.raises(TypeError):  # no incremental_operation
        admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry("retention.ms", "1")])])
    with pytest.raises(ValueError):  # SET needs a value
        admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.SET)])])


def test_alter_configs_replaces_every_override(bootstrap, topic):
    create_topic(bootstrap, topic, partitions=1, config={"segment.ms": "600000"})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.ms": "5000"})
    with pytest.warns(DeprecationWarning):
        futs = admin.alter_configs([resource])
    assert futs[resource].result(timeout=30) is None
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    assert configs["retention.ms"].value == "5000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def test_describe_cluster(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.describe_cluster(request_timeout=30)
    assert isinstance(fut, concurrent.futures.Future)
    cluster = fut.result(timeout=30)
    assert isinstance(cluster, DescribeClusterResult)
    md = admin.list_topics(timeout=10)
    assert cluster.cluster_id == md.cluster_id and cluster.cluster_id
    assert sorted(n.id for n in cluster.nodes) == sorted(md.brokers)
    host, port = bootstrap.rsplit(":", 1)
    assert any(n.port == int(port) for n in cluster.nodes)
    for n in cluster.nodes:
        assert isinstance(n, Node) and n.id_string == str(n.id)
        assert (n.host, n.port) == (md.brokers[n.id].host, md.brokers[n.id].port)
    assert isinstance(cluster.controller, Node)
    assert cluster.controller.id in [n.id for n in cluster.nodes]
    assert cluster.authorized_operations is None
    with pytest.raises(KafkaException) as ei:
        admin.describe_cluster(include_authorized_operations=True)
    assert ei.value.args[0].code() == KafkaError._NOT_IMPLEMENTED


def test_list_offsets(bootstrap, topic):
    create_topic(bootstrap, topic, partitions=2)
    base = 1_700_000_000_000
    produce_n(bootstrap, topic, 5, partition=0, timestamp=base)
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def one(tp, spec):
        futs = admin.list_offsets({tp: spec}, request_timeout=30)
        [(key, fut)] = futs.items()
        assert key == TopicPartition(tp.topic, tp.partition) and key.offset == spec._value
        info = fut.result(timeout=30)
        assert isinstance(info, ListOffsetsResultInfo)
        return info

    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    futs = admin.list_offsets({p0: OffsetSpec.earliest(), p1: OffsetSpec.latest()})
    assert set(futs) == {p0, p1}
    assert futs[p0].result(timeout=30).offset == 0
    assert futs[p1].result(timeout=30).offset == 0
    latest = one(p0, OffsetSpec.latest())
    assert (latest.offset, latest.timestamp) == (5, -1)
    assert latest.leader_epoch is None or latest.leader_epoch >= 0
    # produce_n gives every record the same timestamp: the first one at or after it is 0.
    at = one(p0, OffsetSpec.for_timestamp(base))
    assert (at.offset, at.timestamp) == (0, base)
    after = one(p0, OffsetSpec.for_timestamp(base + 1))
    assert (after.offset, after.timestamp, after.leader_epoch) == (-1, -1, None)
    assert one(p0, OffsetSpec.max_timestamp()).timestamp == base
    assert one(p1, OffsetSpec.max_timestamp()).offset == -1
    assert OffsetSpec(-2) is OffsetSpec.earliest() and OffsetSpec(7).timestamp == 7

    assert admin.list_offsets({}) == {}
    with pytest.raises(TypeError):
        admin.list_offsets([p0])
    with pytest.raises(TypeError):
        admin.list_offsets({p0: -1})
    with pytest.raises(ValueError):
        admin.list_offsets({TopicPartition(topic, -1): OffsetSpec.latest()})
    with pytest.raises(TypeError):
        admin.list_offsets({p0: OffsetSpec.latest()}, isolation_level=0)
    # Without transactions the last stable offset is the high watermark.
    assert admin.list_offsets({p0: OffsetSpec.latest()},
                              isolation_level=IsolationLevel.READ_COMMITTED)[p0] \
        .result(timeout=30).offset == 5
    missing = TopicPartition(topic, 7)
    with pytest.raises(KafkaException) as ei:
        admin.list_offsets({missing: OffsetSpec.latest()})[missing].result(timeout=60)
    assert ei.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_delete_records(bootstrap, topic):
    create_topic(bootstrap, topic, partitions=2)
    produce_n(bootstrap, topic, 5, partition=0)
    produce_n(bootstrap, topic, 3, partition=1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    p0, p1 = TopicPartition(topic, 0, 2), TopicPartition(topic, 1, OFFSET_END)
    futs = admin.delete_records([p0, p1], request_timeout=30)
    assert set(futs) == {p0, p1}
    deleted = futs[p0].result(timeout=30)
    assert isinstance(deleted, DeletedRecords) and deleted.low_watermark == 2
    assert futs[p1].result(timeout=30).low_watermark == 3
    earliest = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest(),
                                   TopicPartition(topic, 1): OffsetSpec.earliest()})
    assert sorted((tp.partition, f.result(timeout=30).offset) for tp, f in earliest.items()) == [
        (0, 2), (1, 3)]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-" + topic})
    try:
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (2, 5)
    finally:
        c.close()

    beyond = TopicPartition(topic, 0, 99)
    with pytest.raises(KafkaException) as ei:
        admin.delete_records([beyond])[beyond].result(timeout=30)
    assert ei.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    dup = admin.delete_records([TopicPartition(topic, 0, 3), TopicPartition(topic, 0, 4)])
    for f in dup.values():
        with pytest.raises(KafkaException) as ei:
            f.result(timeout=10)
        assert ei.value.args[0].code() == KafkaError._INVALID_ARG
    assert admin.delete_records([]) == {}
    with pytest.raises(TypeError):
        admin.delete_records(TopicPartition(topic, 0, 1))
    with pytest.raises(ValueError):
        admin.delete_records([TopicPartition(topic, -1, 1)])


def test_request_timeout_bounds_the_call():
    admin = AdminClient({"bootstrap.servers": "127.0.0.1:1"})
    start = time.monotonic()
    fut = admin.describe_cluster(request_timeout=0.5)
    with pytest.raises(KafkaException) as ei:
        fut.result(timeout=30)
    assert ei.value.args[0].code() == KafkaError._TIMED_OUT
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("call", [
    lambda a: a.create_topics([NewTopic("never", 1)], request_timeout=0.5)["never"],
    lambda a: a.delete_topics(["never"], request_timeout=0.5)["never"],
    lambda a: a.create_partitions([NewPartitions("never", 2)], request_timeout=0.5)["never"],
    lambda a: a.list_consumer_groups(request_timeout=0.5),
    lambda a: a.describe_consumer_groups(["g"], request_timeout=0.5)["g"],
    lambda a: a.delete_consumer_groups(["g"], request_timeout=0.5)["g"],
    lambda a: a.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g")],
                                            request_timeout=0.5)["g"],
    lambda a: a.describe_topics(TopicCollection(["t"]), request_timeout=0.5)["t"],
], ids=["create_topics", "delete_topics", "create_partitions", "list_consumer_groups",
        "describe_consumer_groups", "delete_consumer_groups", "list_consumer_group_offsets",
        "describe_topics"])
def test_request_timeout_bounds_every_group_and_topic_call(call):
    # A listener that accepts connections and never answers (a hung broker), and
    # default.api.timeout.ms is 60 s: only the request_timeout can end the call this soon.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        start = time.monotonic()
        with pytest.raises(KafkaException) as ei:
            call(admin).result(timeout=30)
        assert ei.value.args[0].code() == KafkaError._TIMED_OUT
        assert time.monotonic() - start < 10


def test_operation_timeout_reaches_the_broker_and_bad_ones_are_refused(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert admin.create_topics([NewTopic(topic, 1)], operation_timeout=30)[topic].result(
        timeout=30) is None
    with pytest.raises(ValueError, match="operation_timeout"):
        admin.create_topics([NewTopic(topic + "-x", 1)], operation_timeout=-5)
    with pytest.raises(ValueError, match="operation_timeout"):
        admin.delete_topics([topic], operation_timeout=float("nan"))
    assert admin.delete_topics([topic], operation_timeout=30)[topic].result(timeout=30) is None


def test_group_call_options_are_honoured_or_refused_by_name(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    with pytest.raises(TypeError, match="'no_such_option'"):
        admin.describe_consumer_groups(["g"], no_such_option=1)
    with pytest.raises(NotImplementedError, match="include_authorized_operations"):
        admin.describe_consumer_groups(["g"], include_authorized_operations=True)
    with pytest.raises(NotImplementedError, match="require_stable"):
        admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g")],
                                          require_stable=True)
    with pytest.raises(TypeError, match="ConsumerGroupType"):
        admin.list_consumer_groups(types={"CLASSIC"})
    # Their no-op values are accepted, as confluent-kafka's defaults: the call goes out (an
    # unknown group is described as DEAD by odradek-broker, GROUP_ID_NOT_FOUND by Kafka 4.x).
    fut = admin.describe_consumer_groups(["g"], include_authorized_operations=False)["g"]
    err = fut.exception(timeout=30)
    assert err is None or err.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND, err
