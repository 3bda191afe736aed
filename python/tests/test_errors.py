"""KafkaError / KafkaException / TopicPartition / Message value types (no broker needed)."""
import pickle

import pytest

import odradek
from odradek import KafkaError, KafkaException, Message, TopicPartition

# A sample of confluent-kafka's constants (librdkafka's numbering), which must not change.
CONFLUENT_CODES = {
    "_BAD_MSG": -199, "_DESTROY": -197, "_TRANSPORT": -195, "_MSG_TIMED_OUT": -192,
    "_PARTITION_EOF": -191, "_UNKNOWN_PARTITION": -190, "_UNKNOWN_TOPIC": -188,
    "_ALL_BROKERS_DOWN": -187, "_INVALID_ARG": -186, "_TIMED_OUT": -185, "_QUEUE_FULL": -184,
    "_STATE": -172, "_NOT_IMPLEMENTED": -170, "_NO_OFFSET": -168, "_INTR": -163,
    "_PURGE_QUEUE": -152, "_PURGE_INFLIGHT": -151, "_FATAL": -150, "_DESTROY_BROKER": -137,
    "UNKNOWN": -1, "NO_ERROR": 0, "OFFSET_OUT_OF_RANGE": 1, "INVALID_MSG": 2,
    "UNKNOWN_TOPIC_OR_PART": 3, "NOT_LEADER_FOR_PARTITION": 6, "REQUEST_TIMED_OUT": 7,
    "MSG_SIZE_TOO_LARGE": 10, "TOPIC_EXCEPTION": 17, "UNSUPPORTED_VERSION": 35,
    "PRODUCER_FENCED": 90, "SHARE_SESSION_LIMIT_REACHED": 133,
}


@pytest.mark.parametrize("name,code", sorted(CONFLUENT_CODES.items()))
def test_code_constants(name, code):
    assert getattr(KafkaError, name) == code
    assert KafkaError(code).name() == name


def test_kafka_error_behaves_like_confluent():
    e = KafkaError(KafkaError._MSG_TIMED_OUT)
    assert e.code() == -192 and e.name() == "_MSG_TIMED_OUT"
    assert e.str() and "timed out" in e.str()
    assert repr(e) == str(e) == 'KafkaError{code=_MSG_TIMED_OUT,val=-192,str="%s"}' % e.str()
    assert e == -192 and e == KafkaError(-192, "other text") and e != 5
    assert hash(e) == hash(KafkaError(-192))
    assert not e.fatal() and not e.retriable() and not e.txn_requires_abort()
    f = KafkaError(KafkaError._FATAL, "boom", fatal=True, retriable=False)
    assert f.fatal() and f.str() == "boom"
    assert pickle.loads(pickle.dumps(f)).str() == "boom"
    x = KafkaException(e)
    assert x.args[0] is e and str(x) == str(e)
    assert issubclass(KafkaException, Exception)


def test_topic_partition():
    tp = TopicPartition("t", 1, 5)
    assert (tp.topic, tp.partition, tp.offset, tp.metadata, tp.leader_epoch, tp.error) == \
        ("t", 1, 5, None, None, None)
    assert TopicPartition("t").partition == -1 and TopicPartition("t").offset == odradek.OFFSET_INVALID
    assert tp == TopicPartition("t", 1, 7) and hash(tp) == hash(TopicPartition("t", 1))
    assert tp != TopicPartition("t", 2) and len({tp, TopicPartition("t", 1, 9)}) == 1
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 2), TopicPartition("a", 1)]) == \
        [TopicPartition("a", 1), TopicPartition("a", 2), TopicPartition("b", 0)]
    tp.offset = 9
    assert tp.offset == 9
    assert str(tp) == "TopicPartition{topic=t,partition=1,offset=9,leader_epoch=None,error=None}"
    assert (odradek.OFFSET_BEGINNING, odradek.OFFSET_END, odradek.OFFSET_STORED,
            odradek.OFFSET_INVALID) == (-2, -1, -1000, -1001)


def test_message_constructor_and_setters():
    m = Message()
    assert (m.topic(), m.partition(), m.offset(), m.key(), m.value(), m.headers(), m.error()) == \
        (None,) * 7
    assert m.timestamp() == (odradek.TIMESTAMP_NOT_AVAILABLE, 0) and len(m) == 0
    m = Message(topic="t", partition=1, offset=2, key=b"k", value=b"vv",
                headers=[("a", b"b")], timestamp=(odradek.TIMESTAMP_LOG_APPEND_TIME, 7))
    assert (m.topic(), m.partition(), m.offset(), m.key(), m.value(), len(m)) == ("t", 1, 2, b"k", b"vv", 2)
    assert m.timestamp() == (2, 7) and m.headers() == [("a", b"b")]
    m.set_value(b"new")
    m.set_key(None)
    m.set_headers([("x", None)])
    m.set_topic("u")
    m.set_error(KafkaError(KafkaError._PARTITION_EOF))
    assert (m.value(), m.key(), m.headers(), m.topic()) == (b"new", None, [("x", None)], "u")
    assert m.error().code() == KafkaError._PARTITION_EOF
    assert (odradek.TIMESTAMP_NOT_AVAILABLE, odradek.TIMESTAMP_CREATE_TIME,
            odradek.TIMESTAMP_LOG_APPEND_TIME) == (0, 1, 2)


def test_version():
    assert odradek.__version__ == odradek.version()[0]
    assert isinstance(odradek.libversion()[1], int)
