# mypy: disable-error-code="arg-type,return-value,assignment,override,import-untyped,import-not-found,misc"
"""JSON Schema serializer and deserializer with confluent-kafka's API: values are JSON
documents framed with Confluent's header; with ``validate`` (the default) every document is
checked against the schema with the ``jsonschema`` package (needed then)."""
import json
from typing import Any, Callable, Dict, Optional, Union

from .._odradek import read_header
from ..serialization import Deserializer, SerializationContext, SerializationError, Serializer
from ._common import SchemaIdCache, check_rules, merge_conf, resolve_references
from .client import Schema, SchemaRegistryClient

__all__ = ["JSONDeserializer", "JSONSerializer"]


def _validator(schema: Dict[str, Any], refs: Any) -> Any:
    try:
        import jsonschema
    except ImportError:
        raise ImportError("validate=True needs the jsonschema package (pip install jsonschema)")
    cls = jsonschema.validators.validator_for(schema)
    if refs:
        try:
            from referencing import Registry, Resource
            reg = Registry().with_resources(
                [(name, Resource.from_contents(json.loads(text))) for name, text in refs])
            return cls(schema, registry=reg)
        except ImportError:
            pass
    return cls(schema)


def _validate(v: Any, obj: Any) -> None:
    import jsonschema
    try:
        v.validate(obj)
    except jsonschema.ValidationError as e:
        raise SerializationError(e.message)


class JSONSerializer(Serializer):
    """Serializes dicts (or objects, through ``to_dict``) as JSON documents.

    conf: ``auto.register.schemas``, ``normalize.schemas``, ``use.latest.version``,
    ``subject.name.strategy`` (the record name is the schema's ``title``), ``validate`` (True).
    """

    _default_conf = {
        "auto.register.schemas": True,
        "normalize.schemas": False,
        "use.latest.version": False,
        "use.schema.id": None,
        "subject.name.strategy": None,
        "validate": True,
    }

    def __init__(self, schema_str: Union[str, Schema, None], schema_registry_client: SchemaRegistryClient,
                 to_dict: Optional[Callable[[Any, SerializationContext], dict]] = None,
                 conf: Optional[Dict[str, Any]] = None, rule_conf: Optional[dict] = None,
                 rule_registry: Any = None, json_encode: Optional[Callable] = None) -> None:
        check_rules(rule_conf, rule_registry)
        self._registry = schema_registry_client
        if isinstance(schema_str, str):
            schema_str = Schema(schema_str, "JSON")
        self._schema = schema_str
        self._to_dict = to_dict
        self._encode = json_encode or json.dumps
        c = merge_conf(self._default_conf, conf)
        self._auto_register = c["auto.register.schemas"]
        self._normalize = c["normalize.schemas"]
        self._use_latest = c["use.latest.version"]
        self._strategy = c["subject.name.strategy"]
        self._validate = c["validate"]
        self._parsed = json.loads(self._schema.schema_str) if self._schema is not None else None
        self._record_name = self._parsed.get("title") if isinstance(self._parsed, dict) else None
        self._validator = None
        if self._validate and self._parsed is not None:
            self._validator = _validator(self._parsed, resolve_references(self._registry, self._schema))
        self._known = SchemaIdCache()

    def _lookup(self, subject: str) -> int:
        if self._use_latest:
            return self._registry.get_latest_version(subject).schema_id
        if self._auto_register:
            return self._registry.register_schema(subject, self._schema, normalize_schemas=self._normalize)
        return self._registry.lookup_schema(subject, self._schema, normalize_schemas=self._normalize).schema_id

    def __call__(self, obj: Any, ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        if obj is None:
            return None
        subject = self._strategy(ctx, self._record_name) if ctx is not None else None
        if subject is None:
            raise SerializationError("the subject name strategy returned no subject")
        sid = self._known.get_or(subject, lambda: self._lookup(subject))
        value = self._to_dict(obj, ctx) if self._to_dict is not None else obj
        if self._validator is not None:
            _validate(self._validator, value)
        return b"\x00" + sid.to_bytes(4, "big") + self._encode(value).encode("utf-8")


class JSONDeserializer(Deserializer):
    """Deserializes JSON documents framed by the registry; validates them with ``validate``
    against ``schema_str`` or, without one, against the writer's schema from the registry."""

    _default_conf = {
        "use.latest.version": False,
        "subject.name.strategy": None,
        "validate": True,
    }

    def __init__(self, schema_str: Union[str, Schema, None], from_dict: Optional[Callable] = None,
                 schema_registry_client: Optional[SchemaRegistryClient] = None,
                 conf: Optional[Dict[str, Any]] = None, rule_conf: Optional[dict] = None,
                 rule_registry: Any = None, json_decode: Optional[Callable] = None) -> None:
        check_rules(rule_conf, rule_registry)
        if schema_str is None and schema_registry_client is None:
            raise ValueError("JSONDeserializer needs schema_str or schema_registry_client")
        if isinstance(schema_str, str):
            schema_str = Schema(schema_str, "JSON")
        self._registry = schema_registry_client
        self._from_dict = from_dict
        self._decode = json_decode or json.loads
        c = merge_conf(self._default_conf, conf)
        self._validate = c["validate"]
        self._fixed = None
        if schema_str is not None and self._validate:
            refs = resolve_references(self._registry, schema_str) if self._registry is not None else []
            self._fixed = _validator(json.loads(schema_str.schema_str), refs)
        self._by_id: Dict[int, Any] = {}

    def __call__(self, data: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Any:
        if data is None:
            return None
        try:
            sid, off = read_header(data)
        except ValueError as e:
            raise SerializationError(str(e))
        try:
            obj = self._decode(data[off:].decode("utf-8") if self._decode is json.loads else data[off:])
        except ValueError as e:
            raise SerializationError("not a JSON document: %s" % e)
        if self._validate:
            v = self._fixed
            if v is None and self._registry is not None:
                v = self._by_id.get(sid)
                if v is None:
                    s = self._registry.get_schema(sid)
                    v = _validator(json.loads(s.schema_str), resolve_references(self._registry, s))
                    self._by_id[sid] = v
            if v is not None:
                _validate(v, obj)
        if self._from_dict is not None:
            return self._from_dict(obj, ctx)
        return obj
