"""ACL bindings and filters (confluent-kafka's ``confluent_kafka.admin`` classes)."""

import functools
from enum import Enum
from typing import Any, Dict, List, Optional, Tuple, Type, TypeVar

from ._resource import ResourcePatternType, ResourceType


class AclOperation(Enum):
    """The operation an ACL allows or denies."""

    UNKNOWN = 0  #: Unknown
    ANY = 1  #: In a filter, matches any operation
    ALL = 2  #: Every operation
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, AclOperation):
            return NotImplemented
        return bool(self.value < other.value)


class AclPermissionType(Enum):
    """Whether an ACL allows or denies."""

    UNKNOWN = 0  #: Unknown
    ANY = 1  #: In a filter, matches either
    DENY = 2  #: Denies (wins over any ALLOW)
    ALLOW = 3  #: Allows

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, AclPermissionType):
            return NotImplemented
        return bool(self.value < other.value)


E = TypeVar("E", bound=Enum)


def _enum(value: Any, cls: Type[E], what: str) -> E:
    """An enum member from a member or its name (case-insensitive), as confluent-kafka
    accepts."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        try:
            return cls[value.upper()]
        except KeyError:
            raise ValueError("Unknown value \"%s\": should be a %s" % (value, cls.__name__))
    raise TypeError("%s must be a %s or its name, not %r" % (what, cls.__name__, value))


@functools.total_ordering
class AclBinding:
    """One ACL: ``principal`` from ``host`` is allowed or denied ``operation`` on the resources
    ``restype`` / ``name`` / ``resource_pattern_type`` select. Used by
    :meth:`AdminClient.create_acls`; returned by ``describe_acls`` and ``delete_acls``."""

    _forbidden: Dict[str, List[Enum]] = {
        "restype": [ResourceType.ANY],
        "resource_pattern_type": [ResourcePatternType.ANY, ResourcePatternType.MATCH],
        "operation": [AclOperation.ANY],
        "permission_type": [AclPermissionType.ANY],
    }
    _optional: Tuple[str, ...] = ()

    def __init__(self, restype: Any, name: Optional[str], resource_pattern_type: Any,
                 principal: Optional[str], host: Optional[str], operation: Any,
                 permission_type: Any) -> None:
        for attr, value in (("name", name), ("principal", principal), ("host", host)):
            if value is None and attr not in self._optional:
                raise ValueError("Expected %s to be not None" % attr)
            if value is not None and not isinstance(value, str):
                raise TypeError("Expected %s to be a str" % attr)
        for attr, value in (("restype", restype), ("resource_pattern_type", resource_pattern_type),
                            ("operation", operation), ("permission_type", permission_type)):
            if value is None:
                raise ValueError("Expected %s to be not None" % attr)
        self.restype = _enum(restype, ResourceType, "restype")
        self.name = name
        self.resource_pattern_type = _enum(resource_pattern_type, ResourcePatternType,
                                           "resource_pattern_type")
        self.principal = principal
        self.host = host
        self.operation = _enum(operation, AclOperation, "operation")
        self.permission_type = _enum(permission_type, AclPermissionType, "permission_type")
        for attr, forbidden in self._forbidden.items():
            value = getattr(self, attr)
            if value in forbidden:
                raise ValueError("Cannot use enum %s, value %s in this class" % (attr, value.name))

    def _to_tuple(self) -> Tuple[Any, ...]:
        return (self.restype, self.name, self.resource_pattern_type, self.principal, self.host,
                self.operation, self.permission_type)

    def _wire(self) -> Tuple[Any, ...]:
        return (self.restype.value, self.name, self.resource_pattern_type.value, self.principal,
                self.host, self.operation.value, self.permission_type.value)

    @classmethod
    def _from_wire(cls, t: Tuple[int, str, int, str, str, int, int]) -> "AclBinding":
        def member(enum: Type[E], value: int) -> E:
            try:
                return enum(value)
            except ValueError:
                return enum["UNKNOWN"]

        b = cls.__new__(cls)
        b.restype = member(ResourceType, t[0])
        b.name = t[1]
        b.resource_pattern_type = member(ResourcePatternType, t[2])
        b.principal = t[3]
        b.host = t[4]
        b.operation = member(AclOperation, t[5])
        b.permission_type = member(AclPermissionType, t[6])
        return b

    def __repr__(self) -> str:
        return "%s(%s,%s,%s,%s,%s,%s,%s)" % ((type(self).__name__,) + self._to_tuple())

    def __hash__(self) -> int:
        return hash(self._to_tuple())

    def __eq__(self, other: object) -> bool:
        if self.__class__ != other.__class__:
            return NotImplemented
        assert isinstance(other, AclBinding)
        return self._to_tuple() == other._to_tuple()

    def __lt__(self, other: object) -> bool:
        if self.__class__ != other.__class__:
            return NotImplemented
        assert isinstance(other, AclBinding)
        return _sort_key(self) < _sort_key(other)


def _sort_key(b: AclBinding) -> Tuple[Any, ...]:
    return tuple("" if v is None else v for v in b._to_tuple())


class AclBindingFilter(AclBinding):
    """Selects ACLs for :meth:`AdminClient.describe_acls` and ``delete_acls``: ``None`` names
    match any value, ``ANY`` enums match any member, and ``ResourcePatternType.MATCH`` selects
    every ACL that applies to the named resource (literal, wildcard and prefixed)."""

    _forbidden = {
        "restype": [ResourceType.UNKNOWN],
        "resource_pattern_type": [ResourcePatternType.UNKNOWN],
        "operation": [AclOperation.UNKNOWN],
        "permission_type": [AclPermissionType.UNKNOWN],
    }
    _optional = ("name", "principal", "host")
