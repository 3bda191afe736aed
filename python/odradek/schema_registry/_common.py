# mypy: disable-error-code="arg-type,return-value,assignment,override,import-untyped,import-not-found,misc"
"""What the schema-aware serializers share: configuration checking, subject names, references."""
from typing import Any, Callable, Dict, List, Optional, Tuple

from .client import Schema, SchemaRegistryClient, topic_subject_name_strategy

_UNSUPPORTED = "data contract rules (rule_conf, rule_registry) are not supported by odradek"


def check_rules(rule_conf: Any, rule_registry: Any) -> None:
    """Refuses data-contract rules rather than ignoring them."""
    if rule_conf or rule_registry is not None:
        raise ValueError(_UNSUPPORTED)


def merge_conf(defaults: Dict[str, Any], conf: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """``defaults`` overridden by ``conf``; unknown keys raise ValueError, as in confluent-kafka."""
    out = dict(defaults)
    if conf is not None:
        if not isinstance(conf, dict):
            raise ValueError("conf must be a dict")
        unknown = set(conf) - set(defaults)
        if unknown:
            raise ValueError("Unrecognized properties: {}".format(", ".join(sorted(unknown))))
        out.update(conf)
    for k in ("auto.register.schemas", "normalize.schemas", "use.latest.version"):
        if k in out and not isinstance(out[k], bool):
            raise ValueError("%s must be a boolean value" % k)
    if out.get("use.latest.version") and out.get("auto.register.schemas"):
        raise ValueError("cannot enable both use.latest.version and auto.register.schemas")
    strategy = out.get("subject.name.strategy")
    if strategy is None:
        out["subject.name.strategy"] = topic_subject_name_strategy
    elif not callable(strategy):
        raise ValueError("subject.name.strategy must be callable")
    return out


def resolve_references(client: SchemaRegistryClient, schema: Schema, fmt: Optional[str] = None,
                       seen: Optional[set] = None) -> List[Tuple[str, str]]:
    """(name, schema text) of every schema ``schema`` references, deepest first."""
    seen = set() if seen is None else seen
    out: List[Tuple[str, str]] = []
    for ref in schema.references or []:
        if ref.name in seen:
            continue
        seen.add(ref.name)
        reg = client.get_version(ref.subject, ref.version, fmt=fmt)
        out.extend(resolve_references(client, reg.schema, fmt, seen))
        out.append((ref.name, reg.schema.schema_str))
    return out


class SchemaIdCache(object):
    """subject -> (schema id, writer state), filled once per subject."""

    def __init__(self) -> None:
        self.by_subject: Dict[str, Any] = {}

    def get_or(self, subject: str, make: Callable[[], Any]) -> Any:
        hit = self.by_subject.get(subject)
        if hit is None:
            hit = make()
            self.by_subject[subject] = hit
        return hit
