"""Serializers and the serialization context, as ``confluent_kafka.serialization``.

``Serializer(obj, ctx) -> bytes`` and ``Deserializer(bytes, ctx) -> obj`` are what
:class:`odradek.SerializingProducer` and :class:`odradek.DeserializingConsumer` call for keys
and values; the built-in ones encode like confluent-kafka's (big-endian 4-byte int, 8-byte
double, UTF-8 strings), so records cross between the two libraries unchanged.
"""
import struct as _struct
from enum import Enum
from typing import Any, Callable, Optional

from ._odradek import KafkaException

__all__ = [
    "Deserializer",
    "DoubleDeserializer",
    "DoubleSerializer",
    "IntegerDeserializer",
    "IntegerSerializer",
    "MessageField",
    "SerializationContext",
    "SerializationError",
    "Serializer",
    "StringDeserializer",
    "StringSerializer",
]


class MessageField(str, Enum):
    """Which part of a message is being (de)serialized."""

    NONE = "none"
    KEY = "key"
    VALUE = "value"

    def __new__(cls, value: str) -> "MessageField":
        obj = str.__new__(cls, value)
        obj._value_ = value
        return obj

    def __str__(self) -> str:
        return str(self.value)


class SerializationContext(object):
    """Topic, field and headers of the message being (de)serialized."""

    __slots__ = ["topic", "field", "headers"]

    def __init__(self, topic: str, field: MessageField, headers: Any = None) -> None:
        self.topic = topic
        self.field = field
        self.headers = headers


class SerializationError(KafkaException):
    """Generic error from the serializer package."""


class Serializer(object):
    """Turns an object into bytes (subclass and implement ``__call__``)."""

    __slots__: list = []

    def __call__(self, obj: Any, ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        raise NotImplementedError

    def set_cluster_id_resolver(self, resolver: Callable[[], Any]) -> None:
        """Accepted for confluent-kafka compatibility; unused."""

    def close(self) -> None:
        """Releases what the serializer holds (nothing by default)."""


class Deserializer(object):
    """Turns bytes into an object (subclass and implement ``__call__``)."""

    __slots__: list = []

    def __call__(self, value: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Any:
        raise NotImplementedError

    def set_cluster_id_resolver(self, resolver: Callable[[], Any]) -> None:
        """Accepted for confluent-kafka compatibility; unused."""

    def close(self) -> None:
        """Releases what the deserializer holds (nothing by default)."""


class DoubleSerializer(Serializer):
    """IEEE 754 binary64, big-endian."""

    def __call__(self, obj: Optional[float], ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        if obj is None:
            return None
        try:
            return _struct.pack(">d", obj)
        except _struct.error as e:
            raise SerializationError(str(e))


class DoubleDeserializer(Deserializer):
    """IEEE 754 binary64, big-endian."""

    def __call__(self, value: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Optional[float]:
        if value is None:
            return None
        try:
            return _struct.unpack(">d", value)[0]
        except _struct.error as e:
            raise SerializationError(str(e))


class IntegerSerializer(Serializer):
    """32-bit signed int, big-endian."""

    def __call__(self, obj: Optional[int], ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        if obj is None:
            return None
        try:
            return _struct.pack(">i", obj)
        except _struct.error as e:
            raise SerializationError(str(e))


class IntegerDeserializer(Deserializer):
    """32-bit signed int, big-endian."""

    def __call__(self, value: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Optional[int]:
        if value is None:
            return None
        try:
            return _struct.unpack(">i", value)[0]
        except _struct.error as e:
            raise SerializationError(str(e))


class StringSerializer(Serializer):
    """A str in ``codec`` (default UTF-8)."""

    def __init__(self, codec: str = "utf_8") -> None:
        self.codec = codec

    def __call__(self, obj: Optional[str], ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        if obj is None:
            return None
        try:
            return obj.encode(self.codec)
        except (AttributeError, UnicodeError, LookupError) as e:
            raise SerializationError(str(e))


class StringDeserializer(Deserializer):
    """A str in ``codec`` (default UTF-8)."""

    def __init__(self, codec: str = "utf_8") -> None:
        self.codec = codec

    def __call__(self, value: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Optional[str]:
        if value is None:
            return None
        try:
            return value.decode(self.codec)
        except (UnicodeError, LookupError, AttributeError) as e:
            raise SerializationError(str(e))
