# mypy: disable-error-code="arg-type,return-value,assignment,override,import-untyped,import-not-found,misc"
"""Protobuf serializer and deserializer with confluent-kafka's API: the message's file is
registered as a base64 ``FileDescriptorProto`` (its imports as references, Google's well-known
types skipped), and each value is framed with Confluent's header and the message indexes."""
import base64
from typing import Any, Dict, List, Optional

from .._odradek import read_header
from ..serialization import Deserializer, SerializationContext, SerializationError, Serializer
from ._common import SchemaIdCache, check_rules, merge_conf
from .client import (Schema, SchemaReference, SchemaRegistryClient,
                     reference_subject_name_strategy)

__all__ = ["ProtobufDeserializer", "ProtobufSerializer"]


def _is_builtin(name: str) -> bool:
    return name.startswith("google/protobuf/") or name.startswith("google/type/") or name.startswith("confluent/")


def _schema_to_str(file_desc: Any) -> str:
    from google.protobuf import descriptor_pb2
    fdp = descriptor_pb2.FileDescriptorProto()
    file_desc.CopyToProto(fdp)
    return base64.standard_b64encode(fdp.SerializeToString()).decode("ascii")


def _message_indexes(desc: Any) -> List[int]:
    path = []
    while desc.containing_type is not None:
        path.append(list(desc.containing_type.nested_types).index(desc))
        desc = desc.containing_type
    path.append(list(desc.file.message_types_by_name.values()).index(desc))
    return list(reversed(path))


def _zigzag(out: bytearray, v: int) -> None:
    n = (v << 1) ^ (v >> 63)
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _read_zigzag(data: bytes, pos: int) -> tuple:
    shift = n = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise SerializationError("truncated message indexes")
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (n >> 1) ^ -(n & 1), pos


class ProtobufSerializer(Serializer):
    """Serializes messages of ``msg_type``.

    conf: ``auto.register.schemas``, ``normalize.schemas``, ``use.latest.version``,
    ``skip.known.types`` (True), ``subject.name.strategy``, ``reference.subject.name.strategy``,
    ``use.deprecated.format`` (False; True is refused).
    """

    _default_conf = {
        "auto.register.schemas": True,
        "normalize.schemas": False,
        "use.latest.version": False,
        "use.schema.id": None,
        "skip.known.types": True,
        "subject.name.strategy": None,
        "reference.subject.name.strategy": reference_subject_name_strategy,
        "use.deprecated.format": False,
    }

    def __init__(self, msg_type: Any, schema_registry_client: SchemaRegistryClient,
                 conf: Optional[Dict[str, Any]] = None, rule_conf: Optional[dict] = None,
                 rule_registry: Any = None) -> None:
        check_rules(rule_conf, rule_registry)
        c = merge_conf(self._default_conf, conf)
        if c["use.deprecated.format"]:
            raise ValueError("use.deprecated.format=True is not supported by odradek")
        self._registry = schema_registry_client
        self._msg_type = msg_type
        self._desc = msg_type.DESCRIPTOR
        self._auto_register = c["auto.register.schemas"]
        self._normalize = c["normalize.schemas"]
        self._use_latest = c["use.latest.version"]
        self._skip_known = c["skip.known.types"]
        self._strategy = c["subject.name.strategy"]
        self._ref_strategy = c["reference.subject.name.strategy"]
        idx = bytearray()
        indexes = _message_indexes(self._desc)
        if indexes == [0]:
            idx.append(0)
        else:
            _zigzag(idx, len(indexes))
            for i in indexes:
                _zigzag(idx, i)
        self._index_bytes = bytes(idx)
        self._known = SchemaIdCache()

    def _dependencies(self, ctx: Any, file_desc: Any) -> List[SchemaReference]:
        refs = []
        for dep in file_desc.dependencies:
            if self._skip_known and _is_builtin(dep.name):
                continue
            dep_refs = self._dependencies(ctx, dep)
            subject = self._ref_strategy(ctx, dep)
            schema = Schema(_schema_to_str(dep), "PROTOBUF", dep_refs)
            if self._auto_register:
                self._registry.register_schema(subject, schema, normalize_schemas=self._normalize)
            reg = self._registry.lookup_schema(subject, schema, normalize_schemas=self._normalize)
            refs.append(SchemaReference(dep.name, subject, reg.version))
        return refs

    def _lookup(self, ctx: Any, subject: str) -> int:
        if self._use_latest:
            return self._registry.get_latest_version(subject).schema_id
        schema = Schema(_schema_to_str(self._desc.file), "PROTOBUF", self._dependencies(ctx, self._desc.file))
        if self._auto_register:
            return self._registry.register_schema(subject, schema, normalize_schemas=self._normalize)
        return self._registry.lookup_schema(subject, schema, normalize_schemas=self._normalize).schema_id

    def __call__(self, message: Any, ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        if message is None:
            return None
        if not isinstance(message, self._msg_type):
            raise ValueError("message must be of type {} not {}".format(self._msg_type, type(message)))
        subject = self._strategy(ctx, self._desc.full_name) if ctx is not None else None
        if subject is None:
            raise SerializationError("the subject name strategy returned no subject")
        sid = self._known.get_or(subject, lambda: self._lookup(ctx, subject))
        return b"\x00" + sid.to_bytes(4, "big") + self._index_bytes + message.SerializeToString()


class ProtobufDeserializer(Deserializer):
    """Deserializes messages framed by the registry into ``message_type``."""

    _default_conf = {
        "use.latest.version": False,
        "subject.name.strategy": None,
        "use.deprecated.format": False,
    }

    def __init__(self, message_type: Any, conf: Optional[Dict[str, Any]] = None,
                 schema_registry_client: Optional[SchemaRegistryClient] = None,
                 rule_conf: Optional[dict] = None, rule_registry: Any = None) -> None:
        check_rules(rule_conf, rule_registry)
        c = merge_conf(self._default_conf, conf)
        if c["use.deprecated.format"]:
            raise ValueError("use.deprecated.format=True is not supported by odradek")
        self._msg_type = message_type
        self._registry = schema_registry_client

    def __call__(self, data: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Any:
        if data is None:
            return None
        try:
            _, pos = read_header(data)
        except ValueError as e:
            raise SerializationError(str(e))
        count, pos = _read_zigzag(data, pos)
        if count < 0 or count > len(data):
            raise SerializationError("bad message index count %d" % count)
        for _ in range(count):
            _, pos = _read_zigzag(data, pos)
        msg = self._msg_type()
        try:
            msg.ParseFromString(data[pos:])
        except Exception as e:
            raise SerializationError("not a %s: %s" % (self._msg_type.DESCRIPTOR.full_name, e))
        return msg
