"""Odradek: a Kafka client with a Rust core.

The API mirrors confluent-kafka, so existing code runs after changing the import::

    from odradek import Producer, Consumer, KafkaError, KafkaException, TopicPartition

Beyond confluent-kafka: :mod:`odradek.aio` (``AIOProducer``, ``AIOConsumer``) and
:meth:`Producer.produce_batch` with lists of values. The admin client is in :mod:`odradek.admin`.
"""

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
