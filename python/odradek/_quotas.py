"""Client quotas (KIP-546) of :class:`odradek.admin.AdminClient`.

confluent-kafka has no quota calls; these follow its other admin calls (checks that raise
``TypeError`` / ``ValueError`` at once, :class:`concurrent.futures.Future` results) and the Java
client's names and shapes (``ClientQuotaEntity``, ``ClientQuotaFilter``,
``ClientQuotaFilterComponent``, ``ClientQuotaAlteration``).
"""

import concurrent.futures
import math
import numbers
from enum import Enum
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from ._futures import _chained, _future, _timeout
from ._odradek import _AdminClient

Future = concurrent.futures.Future


class ClientQuotaEntity:
    """Whom quotas apply to: entity types (``USER``, ``CLIENT_ID``, ``IP``) mapped to a name,
    or to None for that type's default entity, e.g.
    ``ClientQuotaEntity({ClientQuotaEntity.CLIENT_ID: "app"})`` or
    ``ClientQuotaEntity({"user": "alice", "client-id": None})`` (alice's default client).
    Equal and hashed by its entries: the key of the results of the quota calls."""

    USER = "user"
    CLIENT_ID = "client-id"
    IP = "ip"

    def __init__(self, entries: Mapping[str, Optional[str]]) -> None:
        if not isinstance(entries, Mapping):
            raise TypeError("ClientQuotaEntity expects a dict of entity type to name (or None)")
        for entity_type, name in entries.items():
            if not isinstance(entity_type, str):
                raise TypeError("entity types must be str, not %s" % type(entity_type).__name__)
            if name is not None and not isinstance(name, str):
                raise TypeError("entity %r: the name must be a str or None (the default entity), "
                                "not %s" % (entity_type, type(name).__name__))
        self._entries: Dict[str, Optional[str]] = dict(entries)

    @property
    def entries(self) -> Dict[str, Optional[str]]:
        """Entity type to name (None: the default entity); a copy."""
        return dict(self._entries)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClientQuotaEntity):
            return NotImplemented
        return self._entries == other._entries

    def __hash__(self) -> int:
        return hash(frozenset(self._entries.items()))

    def __repr__(self) -> str:
        return "ClientQuotaEntity(%r)" % (self._entries,)

    def _wire(self) -> List[Tuple[str, Optional[str]]]:
        return sorted(self._entries.items())


class ClientQuotaMatchType(Enum):
    """How a :class:`ClientQuotaFilterComponent` matches (Kafka's numbers)."""

    EXACT = 0
    DEFAULT = 1
    ANY = 2


class ClientQuotaFilterComponent:
    """One entity type a :class:`ClientQuotaFilter` matches: build it with
    :meth:`of_entity` (that name), :meth:`of_default_entity` (the type's default entity) or
    :meth:`of_entity_type` (any entity of the type, named or default)."""

    def __init__(self, entity_type: str, match_type: ClientQuotaMatchType,
                 match: Optional[str] = None) -> None:
        if not isinstance(entity_type, str):
            raise TypeError("entity_type must be a str")
        if not isinstance(match_type, ClientQuotaMatchType):
            raise TypeError("match_type must be a ClientQuotaMatchType")
        if match_type == ClientQuotaMatchType.EXACT:
            if not isinstance(match, str):
                raise TypeError("an EXACT component needs the entity name (str) in match")
        elif match is not None:
            raise ValueError("only an EXACT component has a match")
        self.entity_type = entity_type
        self.match_type = match_type
        self.match = match

    @classmethod
    def of_entity(cls, entity_type: str, name: str) -> "ClientQuotaFilterComponent":
        """The entity of this type with this name."""
        return cls(entity_type, ClientQuotaMatchType.EXACT, name)

    @classmethod
    def of_default_entity(cls, entity_type: str) -> "ClientQuotaFilterComponent":
        """The type's default entity."""
        return cls(entity_type, ClientQuotaMatchType.DEFAULT)

    @classmethod
    def of_entity_type(cls, entity_type: str) -> "ClientQuotaFilterComponent":
        """Any entity of the type, named or default."""
        return cls(entity_type, ClientQuotaMatchType.ANY)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClientQuotaFilterComponent):
            return NotImplemented
        return (self.entity_type, self.match_type, self.match) == (
            other.entity_type, other.match_type, other.match)

    def __hash__(self) -> int:
        return hash((self.entity_type, self.match_type, self.match))

    def __repr__(self) -> str:
        return "ClientQuotaFilterComponent(%r, %s, %r)" % (
            self.entity_type, self.match_type.name, self.match)


class ClientQuotaFilter:
    """Which entities :meth:`AdminClient.describe_client_quotas` describes: those matching every
    component; with ``strict``, only entities with no other entity type. Build it with
    :meth:`contains`, :meth:`contains_only` or :meth:`all`."""

    def __init__(self, components: List[ClientQuotaFilterComponent],
                 strict: bool = False) -> None:
        if not isinstance(components, (list, tuple)):
            raise TypeError("components must be a list of ClientQuotaFilterComponent")
        for c in components:
            if not isinstance(c, ClientQuotaFilterComponent):
                raise TypeError("components must be a list of ClientQuotaFilterComponent")
        self.components = list(components)
        self.strict = bool(strict)

    @classmethod
    def contains(cls, components: List[ClientQuotaFilterComponent]) -> "ClientQuotaFilter":
        """Entities matching every component, whatever other types they have."""
        return cls(components, False)

    @classmethod
    def contains_only(cls, components: List[ClientQuotaFilterComponent]) -> "ClientQuotaFilter":
        """Entities matching every component and having no other entity type."""
        return cls(components, True)

    @classmethod
    def all(cls) -> "ClientQuotaFilter":
        """Every entity with a quota."""
        return cls([], False)

    def __repr__(self) -> str:
        return "ClientQuotaFilter(%r, strict=%r)" % (self.components, self.strict)


def _check_value(key: Any, value: Any) -> Optional[float]:
    """A quota value as the wire carries it: a finite number, or None to remove the key."""
    if not isinstance(key, str):
        raise TypeError("quota keys must be str, not %s" % type(key).__name__)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("quota %r: the value must be a number (int or float) or None to remove "
                        "it, not %s" % (key, type(value).__name__))
    v = float(value)
    if not math.isfinite(v):
        raise ValueError("quota %r: the value must be a finite number, not %r" % (key, value))
    return v


class ClientQuotaAlteration:
    """Changes to one entity's quotas for :meth:`AdminClient.alter_client_quotas`. ``ops`` is
    a dict of quota key (``producer_byte_rate``, ``consumer_byte_rate``,
    ``request_percentage``, ``controller_mutation_rate``, ``connection_creation_rate``) to its
    new value, None removing the key, or a list of :class:`ClientQuotaAlteration.Op`. Values
    must be numbers: anything else raises ``TypeError`` naming the key."""

    class Op:
        """One change: set ``key`` to ``value``, or remove it (``value`` None)."""

        def __init__(self, key: str, value: Optional[float]) -> None:
            self.value = _check_value(key, value)
            self.key = key

        def __eq__(self, other: object) -> bool:
            if not isinstance(other, ClientQuotaAlteration.Op):
                return NotImplemented
            return (self.key, self.value) == (other.key, other.value)

        def __hash__(self) -> int:
            return hash((self.key, self.value))

        def __repr__(self) -> str:
            return "ClientQuotaAlteration.Op(%r, %r)" % (self.key, self.value)

    def __init__(self, entity: ClientQuotaEntity,
                 ops: Union[Mapping[str, Optional[float]], Iterable["ClientQuotaAlteration.Op"]]
                 ) -> None:
        if not isinstance(entity, ClientQuotaEntity):
            raise TypeError("entity must be a ClientQuotaEntity")
        if isinstance(ops, Mapping):
            self.ops = [ClientQuotaAlteration.Op(k, v) for k, v in ops.items()]
        else:
            self.ops = list(ops)
            for op in self.ops:
                if not isinstance(op, ClientQuotaAlteration.Op):
                    raise TypeError("ops must be a dict of key to value or a list of "
                                    "ClientQuotaAlteration.Op")
        self.entity = entity

    def __repr__(self) -> str:
        return "ClientQuotaAlteration(%r, %r)" % (self.entity, self.ops)

    def _wire(self) -> Tuple[List[Tuple[str, Optional[str]]], List[Tuple[str, Optional[float]]]]:
        # Checked again: attributes may have been changed since construction.
        return self.entity._wire(), [(op.key, _check_value(op.key, op.value)) for op in self.ops]


def _described(raw: List[Tuple[List[Tuple[str, Optional[str]]], List[Tuple[str, float]]]]
               ) -> Dict[ClientQuotaEntity, Dict[str, float]]:
    return {ClientQuotaEntity(dict(entity)): dict(values) for entity, values in raw}


class QuotaAdminMixin:
    """Client quota administration (needs ``self._core``, the native client)."""

    _core: _AdminClient

    def describe_client_quotas(
        self, filter: ClientQuotaFilter, request_timeout: float = -1
    ) -> "Future[Dict[ClientQuotaEntity, Dict[str, float]]]":
        """The quotas of the entities ``filter`` matches: one future resolving to
        ``{ClientQuotaEntity: {key: value}}`` (Java's ``DescribeClientQuotasResult.entities()``),
        or raising :class:`~odradek.KafkaException` (``INVALID_REQUEST`` for a malformed
        filter, ``UNSUPPORTED_VERSION`` for an unknown entity type,
        ``CLUSTER_AUTHORIZATION_FAILED`` without DESCRIBE_CONFIGS on the cluster).
        ``request_timeout`` (seconds) bounds the call (``_TIMED_OUT``)."""
        if not isinstance(filter, ClientQuotaFilter):
            raise TypeError("filter must be a ClientQuotaFilter")
        components = [(c.entity_type, c.match_type.value, c.match) for c in filter.components]
        fut, raw = _chained(_described)
        self._core.describe_client_quotas(components, filter.strict, _timeout(request_timeout),
                                          raw)
        return fut

    def alter_client_quotas(
        self, alterations: List[ClientQuotaAlteration], validate_only: bool = False,
        request_timeout: float = -1,
    ) -> "Dict[ClientQuotaEntity, Future[None]]":
        """Sets and removes quotas: one future per entity, resolving to None or raising
        :class:`~odradek.KafkaException` with the broker's refusal (``INVALID_REQUEST`` for an
        unknown key or entity type, a value that is not positive, or not whole where the key
        needs it; ``CLUSTER_AUTHORIZATION_FAILED``). With ``validate_only`` nothing changes.
        ``request_timeout`` (seconds) bounds the call (``_TIMED_OUT``). Non-numeric values raise
        ``TypeError`` naming the key before anything is sent."""
        if not isinstance(alterations, list):
            raise TypeError("Expected input to be list of ClientQuotaAlteration")
        if not alterations:
            raise ValueError("Expected at least one ClientQuotaAlteration")
        for a in alterations:
            if not isinstance(a, ClientQuotaAlteration):
                raise TypeError("Expected list of ClientQuotaAlteration")
        if len({a.entity for a in alterations}) != len(alterations):
            raise ValueError("duplicate entities in the request")
        items = [a._wire() for a in alterations]
        out: Dict[ClientQuotaEntity, "Future[None]"] = {}
        futs = []
        for a in alterations:
            out[a.entity] = _future()
            futs.append(out[a.entity])
        self._core.alter_client_quotas(items, bool(validate_only), _timeout(request_timeout),
                                       futs)
        return out
