# mypy: disable-error-code="arg-type,return-value,assignment,override,import-untyped,import-not-found,misc"
"""Avro serializer and deserializer with confluent-kafka's API, encoding in Rust.

Values are what fastavro takes and returns (records as dicts, unions as the branch's value,
enums as str, bytes and fixed as bytes, datetime/date/time/Decimal/UUID for logical types), so
code written for ``confluent_kafka.schema_registry.avro`` runs unchanged. Records are framed
with Confluent's header (magic byte 0, 4-byte schema id)."""
import json
from typing import Any, Callable, Dict, Optional, Union

from .._odradek import AvroSchema, read_header
from ..serialization import Deserializer, SerializationContext, SerializationError, Serializer
from ._common import SchemaIdCache, check_rules, merge_conf, resolve_references
from .client import Schema, SchemaRegistryClient

__all__ = ["AvroDeserializer", "AvroSerializer"]


def _compile(client: SchemaRegistryClient, schema: Schema) -> AvroSchema:
    named = [text for _, text in resolve_references(client, schema)]
    try:
        return AvroSchema(schema.schema_str, named)
    except ValueError as e:
        raise SerializationError("invalid Avro schema: %s" % e)


class AvroSerializer(Serializer):
    """Serializes dicts (or objects, through ``to_dict``) as Avro with the registry's framing.

    conf: ``auto.register.schemas`` (True), ``normalize.schemas`` (False),
    ``use.latest.version`` (False), ``subject.name.strategy`` (topic_subject_name_strategy).
    """

    _default_conf = {
        "auto.register.schemas": True,
        "normalize.schemas": False,
        "use.latest.version": False,
        "use.schema.id": None,
        "subject.name.strategy": None,
    }

    def __init__(self, schema_registry_client: SchemaRegistryClient,
                 schema_str: Union[str, Schema, None] = None,
                 to_dict: Optional[Callable[[Any, SerializationContext], dict]] = None,
                 conf: Optional[Dict[str, Any]] = None, rule_conf: Optional[dict] = None,
                 rule_registry: Any = None) -> None:
        check_rules(rule_conf, rule_registry)
        self._registry = schema_registry_client
        if isinstance(schema_str, str):
            self._schema: Optional[Schema] = Schema(schema_str, "AVRO")
        elif isinstance(schema_str, Schema) or schema_str is None:
            self._schema = schema_str
        else:
            raise TypeError("You must pass either schema string or schema object")
        if to_dict is not None and not callable(to_dict):
            raise ValueError("to_dict must be callable with the signature to_dict(object, SerializationContext)->dict")
        self._to_dict = to_dict
        c = merge_conf(self._default_conf, conf)
        self._auto_register = c["auto.register.schemas"]
        self._normalize = c["normalize.schemas"]
        self._use_latest = c["use.latest.version"]
        self._use_schema_id = c["use.schema.id"]
        self._strategy = c["subject.name.strategy"]
        if self._schema is None and not (self._use_latest or self._use_schema_id is not None):
            raise ValueError("schema_str is required unless use.latest.version or use.schema.id is set")
        self._writer = _compile(self._registry, self._schema) if self._schema is not None else None
        self._record_name = self._writer.name() if self._writer is not None else None
        self._known = SchemaIdCache()

    def _lookup(self, subject: str) -> Any:
        if self._use_schema_id is not None:
            s = self._registry.get_schema(self._use_schema_id, subject)
            return self._use_schema_id, _compile(self._registry, s)
        if self._use_latest:
            reg = self._registry.get_latest_version(subject)
            return reg.schema_id, _compile(self._registry, reg.schema)
        if self._auto_register:
            sid = self._registry.register_schema(subject, self._schema, normalize_schemas=self._normalize)
        else:
            sid = self._registry.lookup_schema(subject, self._schema, normalize_schemas=self._normalize).schema_id
        return sid, self._writer

    def __call__(self, obj: Any, ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        if obj is None:
            return None
        subject = self._strategy(ctx, self._record_name) if ctx is not None else None
        if subject is None:
            raise SerializationError("the subject name strategy returned no subject (a record name is needed)")
        sid, writer = self._known.get_or(subject, lambda: self._lookup(subject))
        value = self._to_dict(obj, ctx) if self._to_dict is not None else obj
        try:
            return writer.encode_framed(sid, value)
        except (TypeError, ValueError) as e:
            raise SerializationError(str(e))


def _project(reader: Any, value: Any, names: Dict[str, Any]) -> Any:
    """The writer's decoded value as the reader's schema sees it: record fields the reader
    lacks are dropped, fields the writer lacked take the reader's default (Avro resolution for
    records; other differences decode as the writer wrote them)."""
    if isinstance(reader, str):
        reader = names.get(reader, reader)
    if isinstance(reader, list):
        for branch in reader:
            b = names.get(branch, branch) if isinstance(branch, str) else branch
            if isinstance(b, dict) and b.get("type") == "record" and isinstance(value, dict):
                return _project(b, value, names)
        return value
    if not isinstance(reader, dict):
        return value
    t = reader.get("type")
    if t == "record" and isinstance(value, dict):
        name = reader.get("name", "")
        names[name] = reader
        if reader.get("namespace") and "." not in name:
            names[reader["namespace"] + "." + name] = reader
        out = {}
        for f in reader.get("fields", []):
            n = f["name"]
            src = n if n in value else next((a for a in f.get("aliases", []) if a in value), None)
            if src is not None:
                out[n] = _project(f["type"], value[src], names)
            elif "default" in f:
                out[n] = f["default"]
            else:
                raise SerializationError("reader field %s has no default and is missing in the data" % n)
        return out
    if t == "array" and isinstance(value, list):
        return [_project(reader["items"], v, names) for v in value]
    if t == "map" and isinstance(value, dict):
        return {k: _project(reader["values"], v, names) for k, v in value.items()}
    return value


class AvroDeserializer(Deserializer):
    """Deserializes Avro framed by the registry into dicts (or objects, through ``from_dict``).

    With ``schema_str`` (a reader schema) records are resolved to it: fields it lacks are
    dropped, fields the writer lacked take its defaults. ``return_record_name=True`` is refused.
    """

    _default_conf = {
        "use.latest.version": False,
        "subject.name.strategy": None,
    }

    def __init__(self, schema_registry_client: SchemaRegistryClient,
                 schema_str: Union[str, Schema, None] = None,
                 from_dict: Optional[Callable[[dict, SerializationContext], Any]] = None,
                 return_record_name: bool = False, conf: Optional[Dict[str, Any]] = None,
                 rule_conf: Optional[dict] = None, rule_registry: Any = None) -> None:
        check_rules(rule_conf, rule_registry)
        if return_record_name:
            raise ValueError("return_record_name=True is not supported by odradek")
        self._registry = schema_registry_client
        if isinstance(schema_str, str):
            schema_str = Schema(schema_str, "AVRO")
        self._reader = schema_str
        self._reader_json = json.loads(schema_str.schema_str) if schema_str is not None else None
        self._reader_canonical = _compile(schema_registry_client, schema_str).canonical() if schema_str is not None else None
        if from_dict is not None and not callable(from_dict):
            raise ValueError("from_dict must be callable with the signature from_dict(dict, SerializationContext) -> object")
        self._from_dict = from_dict
        merge_conf(self._default_conf, conf)
        self._writers: Dict[int, AvroSchema] = {}

    def __call__(self, data: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Any:
        if data is None:
            return None
        try:
            sid, _ = read_header(data)
        except ValueError as e:
            raise SerializationError(str(e))
        writer = self._writers.get(sid)
        if writer is None:
            writer = _compile(self._registry, self._registry.get_schema(sid))
            self._writers[sid] = writer
        try:
            value = writer.decode_framed(sid, data)
        except (TypeError, ValueError) as e:
            raise SerializationError(str(e))
        if self._reader_json is not None and writer.canonical() != self._reader_canonical:
            value = _project(self._reader_json, value, {})
        if self._from_dict is not None:
            return self._from_dict(value, ctx)
        return value

