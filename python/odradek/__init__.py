"""Odradek: a Kafka client with a Rust core.

The API mirrors confluent-kafka, so existing code runs after changing the import::

    from odradek import Producer, Consumer, KafkaError, KafkaException, TopicPartition

Beyond confluent-kafka: :mod:`odradek.aio` (``AIOProducer``, ``AIOConsumer``) and
:meth:`Producer.produce_batch` with lists of values. The admin client is in :mod:`odradek.admin`.
"""

import sysconfig as _sysconfig


def _refuse_free_threaded(gil_disabled: object) -> None:
    """Raises ImportError when ``gil_disabled`` (``sysconfig``'s ``Py_GIL_DISABLED``) says
    this is a free-threaded CPython, which cannot load the abi3 extension module."""
    if gil_disabled:
        raise ImportError(
            "odradek does not support free-threaded CPython (3.13t, 3.14t): its extension "
            "module is built for the stable ABI (abi3), which free-threaded builds cannot "
            "load, even with PYTHON_GIL=1. Use a regular CPython build (e.g. python3.13 "
            "rather than python3.13t).")


# Before the extension module loads: a free-threaded interpreter gets this message rather
# than a loader error.
_refuse_free_threaded(_sysconfig.get_config_var("Py_GIL_DISABLED"))

from ._odradek import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    BrokerMetadata,
    ClusterMetadata,
    Consumer,
    ConsumerGroupMetadata,
    KafkaError,
    KafkaException,
    Message,
    PartitionMetadata,
    Producer,
    ThrottleEvent,
    TopicMetadata,
    TopicPartition,
    libversion,
    version,
)
from .admin import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    IsolationLevel,
    Node,
    TopicCollection,
    TopicPartitionInfo,
    Uuid,
)
from .serializing import DeserializingConsumer, SerializingProducer

__version__ = version()[0]

__all__ = [
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "TIMESTAMP_NOT_AVAILABLE",
    "BrokerMetadata",
    "ClusterMetadata",
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerGroupState",
    "ConsumerGroupType",
    "ConsumerGroupTopicPartitions",
    "DeserializingConsumer",
    "IsolationLevel",
    "KafkaError",
    "KafkaException",
    "Message",
    "Node",
    "PartitionMetadata",
    "Producer",
    "SerializingProducer",
    "ThrottleEvent",
    "TopicCollection",
    "TopicMetadata",
    "TopicPartition",
    "TopicPartitionInfo",
    "Uuid",
    "libversion",
    "version",
]
