# mypy: disable-error-code="arg-type,return-value,assignment,override,import-untyped,import-not-found,misc"
"""``SerializingProducer`` and ``DeserializingConsumer``: confluent-kafka's producer and consumer
that run a serializer on each key and value (``key.serializer`` / ``value.serializer``,
``key.deserializer`` / ``value.deserializer`` in the configuration), on top of
:class:`odradek.Producer` and :class:`odradek.Consumer`."""
from typing import Any, Dict, List, Optional

from ._odradek import Consumer as _Consumer
from ._odradek import Producer as _Producer
from .error import (ConsumeError, KeyDeserializationError, KeySerializationError,
                    ValueDeserializationError, ValueSerializationError)
from .serialization import MessageField, SerializationContext

__all__ = ["DeserializingConsumer", "SerializingProducer"]

_PRODUCER_KEYS = ("key.serializer", "value.serializer")
_CONSUMER_KEYS = ("key.deserializer", "value.deserializer")


def _split(conf: Dict[str, Any], keys: tuple) -> tuple:
    if not isinstance(conf, dict):
        raise TypeError("expected configuration dict")
    rest = {k: v for k, v in conf.items() if k not in keys}
    return rest, tuple(conf.get(k) for k in keys)


class SerializingProducer(_Producer):
    """A producer that serializes keys and values with the configured serializers.

    ``SerializingProducer({'bootstrap.servers': ..., 'value.serializer': AvroSerializer(...)})``
    """

    def __new__(cls, conf: Dict[str, Any]):
        rest, _ = _split(conf, _PRODUCER_KEYS)
        return super().__new__(cls, rest)

    def __init__(self, conf: Dict[str, Any]) -> None:
        _, (self._key_serializer, self._value_serializer) = _split(conf, _PRODUCER_KEYS)

    def produce(self, topic: str, key: Any = None, value: Any = None, partition: int = -1,
                on_delivery: Any = None, timestamp: int = 0, headers: Any = None) -> None:
        """Serializes ``key`` and ``value`` and produces the record (see ``Producer.produce``).

        Raises KeySerializationError / ValueSerializationError when a serializer fails."""
        if not isinstance(topic, str):
            raise TypeError("topic must be a str")
        ctx = SerializationContext(topic, MessageField.KEY, headers)
        if self._key_serializer is not None:
            try:
                key = self._key_serializer(key, ctx)
            except Exception as se:
                raise KeySerializationError(se)
        ctx.field = MessageField.VALUE
        if self._value_serializer is not None:
            try:
                value = self._value_serializer(value, ctx)
            except Exception as se:
                raise ValueSerializationError(se)
        super().produce(topic, value, key, headers=headers, partition=partition,
                        timestamp=timestamp, on_delivery=on_delivery)


class DeserializingConsumer(_Consumer):
    """A consumer whose messages carry deserialized keys and values.

    ``poll()`` raises ConsumeError for a message carrying an error, and
    KeyDeserializationError / ValueDeserializationError when a deserializer fails."""

    def __new__(cls, conf: Dict[str, Any]):
        rest, _ = _split(conf, _CONSUMER_KEYS)
        return super().__new__(cls, rest)

    def __init__(self, conf: Dict[str, Any]) -> None:
        _, (self._key_deserializer, self._value_deserializer) = _split(conf, _CONSUMER_KEYS)

    def _deserialize(self, msg: Any) -> Any:
        ctx = SerializationContext(msg.topic(), MessageField.KEY, msg.headers())
        if self._key_deserializer is not None:
            try:
                msg.set_key(self._key_deserializer(msg.key(), ctx))
            except Exception as se:
                raise KeyDeserializationError(exception=se, kafka_message=msg)
        ctx.field = MessageField.VALUE
        if self._value_deserializer is not None:
            try:
                msg.set_value(self._value_deserializer(msg.value(), ctx))
            except Exception as se:
                raise ValueDeserializationError(exception=se, kafka_message=msg)
        return msg

    def poll(self, timeout: float = -1) -> Optional[Any]:
        """The next message, deserialized, or None on timeout."""
        msg = super().poll(timeout)
        if msg is None:
            return None
        if msg.error() is not None:
            raise ConsumeError(msg.error(), kafka_message=msg)
        return self._deserialize(msg)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> List[Any]:
        """Not supported, as in confluent-kafka's DeserializingConsumer."""
        raise NotImplementedError
