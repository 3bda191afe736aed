"""Client errors that wrap a serializer's failure, as ``confluent_kafka.error``."""
from typing import Any, Optional

from ._odradek import KafkaError, KafkaException
from .serialization import SerializationError

__all__ = [
    "ConsumeError",
    "KafkaError",
    "KafkaException",
    "KeyDeserializationError",
    "KeySerializationError",
    "ProduceError",
    "SerializationError",
    "ValueDeserializationError",
    "ValueSerializationError",
]


class _KafkaClientError(KafkaException):
    """Wraps an error of a client call: the KafkaError, the original exception, the message."""

    def __init__(self, kafka_error: KafkaError, exception: Optional[Exception] = None,
                 kafka_message: Any = None) -> None:
        super().__init__(kafka_error)
        self.exception = exception
        self.kafka_message = kafka_message

    @property
    def code(self) -> int:
        return self.args[0].code()

    @property
    def name(self) -> str:
        return self.args[0].name()


class ConsumeError(_KafkaClientError):
    """An error while consuming (the message carries it)."""


class KeyDeserializationError(ConsumeError, SerializationError):
    """The key deserializer failed."""

    def __init__(self, exception: Optional[Exception] = None, kafka_message: Any = None) -> None:
        super().__init__(KafkaError(KafkaError._KEY_DESERIALIZATION, str(exception)),
                         exception=exception, kafka_message=kafka_message)


class ValueDeserializationError(ConsumeError, SerializationError):
    """The value deserializer failed."""

    def __init__(self, exception: Optional[Exception] = None, kafka_message: Any = None) -> None:
        super().__init__(KafkaError(KafkaError._VALUE_DESERIALIZATION, str(exception)),
                         exception=exception, kafka_message=kafka_message)


class ProduceError(_KafkaClientError):
    """An error while producing."""

    def __init__(self, kafka_error: KafkaError, exception: Optional[Exception] = None) -> None:
        super().__init__(kafka_error, exception, None)


class KeySerializationError(ProduceError, SerializationError):
    """The key serializer failed."""

    def __init__(self, exception: Optional[Exception] = None) -> None:
        super().__init__(KafkaError(KafkaError._KEY_SERIALIZATION, str(exception)), exception=exception)


class ValueSerializationError(ProduceError, SerializationError):
    """The value serializer failed."""

    def __init__(self, exception: Optional[Exception] = None) -> None:
        super().__init__(KafkaError(KafkaError._VALUE_SERIALIZATION, str(exception)), exception=exception)
