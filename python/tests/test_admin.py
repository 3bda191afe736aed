"""odradek.admin.AdminClient: create / delete topics, create partitions, list_topics."""
import concurrent.futures
import time

import pytest

from odradek import KafkaError, KafkaException, Producer
from odradek.admin import AdminClient, NewPartitions, NewTopic


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
