"""Schema Registry support, as ``confluent_kafka.schema_registry``: a client of any
Confluent-compatible registry (ours: ``odradek-schema-registry`` or
``odradek-broker --schema-registry``) and the Avro (encoded in Rust), JSON Schema and Protobuf
serializers in ``.avro``, ``.json_schema`` and ``.protobuf``."""
from .client import (RegisteredSchema, Schema, SchemaReference, SchemaRegistryClient,
                     SchemaVersion, record_subject_name_strategy, reference_subject_name_strategy,
                     topic_record_subject_name_strategy, topic_subject_name_strategy)
from .error import SchemaRegistryError

__all__ = [
    "RegisteredSchema",
    "Schema",
    "SchemaReference",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "SchemaVersion",
    "record_subject_name_strategy",
    "reference_subject_name_strategy",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
]
