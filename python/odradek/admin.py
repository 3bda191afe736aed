"""The admin client (confluent-kafka's ``confluent_kafka.admin`` shape).

Every call returns at once with a dict of :class:`concurrent.futures.Future`, one per item (or a
single future), that resolves to the item's result or raises :class:`~odradek.KafkaException`
with the broker's error for that item (``TOPIC_ALREADY_EXISTS``, ``UNKNOWN_TOPIC_OR_PART``,
``INVALID_PARTITIONS``, ...).

Supported in this release: topics (``create_topics``, ``delete_topics``, ``create_partitions``,
``list_topics``, ``describe_topics`` of a :class:`TopicCollection`), consumer groups
(``list_consumer_groups``, ``describe_consumer_groups`` with members, state and coordinator,
``list_consumer_group_offsets`` and ``alter_consumer_group_offsets`` of one group per call as in
confluent-kafka 2.16, ``delete_consumer_groups``), configs of topics and brokers
(``describe_configs``, ``incremental_alter_configs``, the deprecated ``alter_configs``),
``describe_cluster``, ``list_offsets`` (read_uncommitted) and ``delete_records``, ACLs
(``create_acls``, ``describe_acls``, ``delete_acls``) and SCRAM credentials
(``describe_user_scram_credentials``, ``alter_user_scram_credentials``), and, beyond
confluent-kafka, client quotas (``describe_client_quotas``, ``alter_client_quotas``, with the Java
client's :class:`ClientQuotaEntity`, :class:`ClientQuotaFilter`,
:class:`ClientQuotaFilterComponent` and :class:`ClientQuotaAlteration`). :meth:`AdminClient.poll`
serves ``throttle_cb``. Not available yet: ``elect_leaders``, group configs.
"""

import base64
import concurrent.futures
import functools
import operator
import struct
import warnings
from enum import Enum
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Union

from ._odradek import (
    OFFSET_INVALID,
    ClusterMetadata,
    KafkaError,
    KafkaException,
    TopicPartition,
    _AdminClient,
)
from ._admin_security import SecurityAdminMixin
from ._quotas import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClientQuotaFilterComponent,
    ClientQuotaMatchType,
    QuotaAdminMixin,
)
from ._futures import _chained, _future, _timeout
from ._acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, _enum
from ._resource import (
    RESOURCE_ANY,
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    RESOURCE_TRANSACTIONAL_ID,
    RESOURCE_UNKNOWN,
    ResourcePatternType,
    ResourceType,
)
from ._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)

__all__ = [
    "AdminClient",
    "NewTopic",
    "NewPartitions",
    "ConsumerGroupState",
    "ConsumerGroupType",
    "ConsumerGroupListing",
    "ListConsumerGroupsResult",
    "ConsumerGroupDescription",
    "MemberDescription",
    "MemberAssignment",
    "ConsumerGroupTopicPartitions",
    "ResourceType",
    "ResourcePatternType",
    "AclOperation",
    "AclPermissionType",
    "AclBinding",
    "AclBindingFilter",
    "ScramMechanism",
    "ScramCredentialInfo",
    "UserScramCredentialsDescription",
    "UserScramCredentialAlteration",
    "UserScramCredentialUpsertion",
    "UserScramCredentialDeletion",
    "ClientQuotaEntity",
    "ClientQuotaMatchType",
    "ClientQuotaFilterComponent",
    "ClientQuotaFilter",
    "ClientQuotaAlteration",
    "ConfigSource",
    "AlterConfigOpType",
    "ConfigEntry",
    "ConfigResource",
    "Node",
    "Uuid",
    "TopicCollection",
    "TopicPartitionInfo",
    "TopicDescription",
    "DescribeClusterResult",
    "IsolationLevel",
    "OffsetSpec",
    "ListOffsetsResultInfo",
    "DeletedRecords",
    "RESOURCE_UNKNOWN",
    "RESOURCE_ANY",
    "RESOURCE_TOPIC",
    "RESOURCE_GROUP",
    "RESOURCE_BROKER",
    "RESOURCE_TRANSACTIONAL_ID",
    "CONFIG_SOURCE_UNKNOWN_CONFIG",
    "CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG",
    "CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG",
    "CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG",
    "CONFIG_SOURCE_STATIC_BROKER_CONFIG",
    "CONFIG_SOURCE_DEFAULT_CONFIG",
    "CONFIG_SOURCE_GROUP_CONFIG",
]

# Config sources, numbered as confluent-kafka (librdkafka) numbers them.
CONFIG_SOURCE_UNKNOWN_CONFIG = 0
CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG = 1
CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG = 2
CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG = 3
CONFIG_SOURCE_STATIC_BROKER_CONFIG = 4
CONFIG_SOURCE_DEFAULT_CONFIG = 5
CONFIG_SOURCE_GROUP_CONFIG = 8


class ConsumerGroupState(Enum):
    """A consumer group's state (values as confluent-kafka numbers them)."""

    UNKNOWN = 0
    PREPARING_REBALANCING = 1
    COMPLETING_REBALANCING = 2
    STABLE = 3
    DEAD = 4
    EMPTY = 5

    @classmethod
    def _from_broker(cls, state: str) -> "ConsumerGroupState":
        return {
            "PreparingRebalance": cls.PREPARING_REBALANCING,
            "CompletingRebalance": cls.COMPLETING_REBALANCING,
            "Stable": cls.STABLE,
            "Dead": cls.DEAD,
            "Empty": cls.EMPTY,
        }.get(state, cls.UNKNOWN)


class ConsumerGroupType(Enum):
    """A group's protocol (values as confluent-kafka numbers them): ``CONSUMER`` is KIP-848's."""

    UNKNOWN = 0
    CONSUMER = 1
    CLASSIC = 2

    @classmethod
    def _from_broker(cls, group_type: str) -> "ConsumerGroupType":
        return {"consumer": cls.CONSUMER, "classic": cls.CLASSIC}.get(group_type.lower(), cls.UNKNOWN)


class ConsumerGroupListing:
    """One group of :meth:`AdminClient.list_consumer_groups`."""

    def __init__(self, group_id: str, is_simple_consumer_group: bool,
                 state: ConsumerGroupState = ConsumerGroupState.UNKNOWN,
                 type: ConsumerGroupType = ConsumerGroupType.UNKNOWN) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.state = state
        self.type = type


class ListConsumerGroupsResult:
    """What :meth:`AdminClient.list_consumer_groups` resolves to."""

    def __init__(self, valid: Optional[List[ConsumerGroupListing]] = None,
                 errors: Optional[List[KafkaError]] = None) -> None:
        self.valid = valid or []
        self.errors = errors or []


class MemberAssignment:
    """The partitions assigned to a group member."""

    def __init__(self, topic_partitions: Optional[List[TopicPartition]] = None) -> None:
        self.topic_partitions = topic_partitions or []


class MemberDescription:
    """One member of a described group."""

    def __init__(self, member_id: str, client_id: str, host: str, assignment: MemberAssignment,
                 group_instance_id: Optional[str] = None,
                 target_assignment: Optional[MemberAssignment] = None) -> None:
        self.member_id = member_id
        self.client_id = client_id
        self.host = host
        self.assignment = assignment
        self.group_instance_id = group_instance_id
        # What the broker means the member to own (KIP-848 groups; None in a classic group).
        self.target_assignment = target_assignment


class ConsumerGroupDescription:
    """What each future of :meth:`AdminClient.describe_consumer_groups` resolves to;
    ``coordinator`` is the :class:`Node` that coordinates the group (and answered)."""

    def __init__(self, group_id: str, is_simple_consumer_group: bool,
                 members: List[MemberDescription], partition_assignor: str,
                 state: ConsumerGroupState, coordinator: Optional["Node"] = None,
                 authorized_operations: Optional[List[Any]] = None,
                 type: ConsumerGroupType = ConsumerGroupType.UNKNOWN) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.members = members
        self.partition_assignor = partition_assignor
        self.state = state
        self.coordinator = coordinator
        self.authorized_operations = authorized_operations
        self.type = type


class ConsumerGroupTopicPartitions:
    """A group id and (optionally) partitions: the request and the result of
    :meth:`AdminClient.list_consumer_group_offsets`."""

    def __init__(self, group_id: str,
                 topic_partitions: Optional[List[TopicPartition]] = None) -> None:
        self.group_id = group_id
        self.topic_partitions = topic_partitions


class Node:
    """A broker: :class:`DescribeClusterResult` ``controller`` and ``nodes``."""

    def __init__(self, id: int, host: str, port: int, rack: Optional[str] = None) -> None:
        self.id = id
        self.id_string = str(id)
        self.host = host
        self.port = port
        self.rack = rack

    def __str__(self) -> str:
        return "(%d) %s:%d %s" % (self.id, self.host, self.port,
                                  "(Rack - %s)" % self.rack if self.rack else "")

    def __repr__(self) -> str:
        return "Node(id=%d, host=%r, port=%d, rack=%r)" % (self.id, self.host, self.port,
                                                           self.rack)


class Uuid:
    """A topic id: 128 bits as Kafka's two signed 64-bit halves. ``str()`` is its base64 form
    (as confluent-kafka prints it); equal and hashed by value."""

    __slots__ = ("_msb", "_lsb")

    def __init__(self, most_significant_bits: int, least_significant_bits: int) -> None:
        self._msb = _int64(most_significant_bits)
        self._lsb = _int64(least_significant_bits)

    def get_most_significant_bits(self) -> int:
        return self._msb

    def get_least_significant_bits(self) -> int:
        return self._lsb

    def __str__(self) -> str:
        raw = struct.pack(">qq", self._msb, self._lsb)
        return base64.b64encode(raw).decode("ascii").rstrip("=")

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Uuid):
            return NotImplemented
        return (self._msb, self._lsb) == (other._msb, other._lsb)

    def __hash__(self) -> int:
        return self._msb ^ self._lsb


def _int64(value: Any) -> int:
    """``value`` as a signed 64-bit int: TypeError for a non-integer, OverflowError out of
    range (as confluent-kafka's ``Uuid`` refuses them)."""
    n = operator.index(value)
    if not -(1 << 63) <= n < (1 << 63):
        raise OverflowError("int too big to convert")
    return n


class TopicCollection:
    """The topics :meth:`AdminClient.describe_topics` describes, by name."""

    def __init__(self, topic_names: List[str]) -> None:
        self.topic_names = topic_names


class TopicPartitionInfo:
    """One partition of a :class:`TopicDescription`: its ``id``, ``leader`` (a :class:`Node`,
    None without a leader), ``replicas`` and ``isr`` (lists of :class:`Node`)."""

    def __init__(self, id: int, leader: Optional[Node], replicas: List[Node],
                 isr: List[Node]) -> None:
        self.id = id
        self.leader = leader
        self.replicas = replicas
        self.isr = isr


class TopicDescription:
    """What each future of :meth:`AdminClient.describe_topics` resolves to."""

    def __init__(self, name: str, topic_id: Uuid, is_internal: bool,
                 partitions: List[TopicPartitionInfo],
                 authorized_operations: Optional[List[Union[str, int, AclOperation]]] = None
                 ) -> None:
        self.name = name
        self.topic_id = topic_id
        self.is_internal = is_internal
        self.partitions = partitions
        self.authorized_operations: Optional[List[AclOperation]] = None
        if authorized_operations:
            self.authorized_operations = [
                AclOperation(op) if isinstance(op, int) else _enum(op, AclOperation, "operation")
                for op in authorized_operations
            ]


class DescribeClusterResult:
    """What :meth:`AdminClient.describe_cluster` resolves to. ``authorized_operations`` is
    not reported by this release (None)."""

    def __init__(self, controller: Optional[Node], nodes: List[Node],
                 cluster_id: Optional[str] = None,
                 authorized_operations: Optional[List[Any]] = None) -> None:
        self.cluster_id = cluster_id
        self.controller = controller
        self.nodes = nodes
        self.authorized_operations = authorized_operations or None


class ConfigSource(Enum):
    """Where a config value comes from. As in confluent-kafka, :attr:`ConfigEntry.source` of a
    described entry is the plain ``int`` (compare with ``ConfigSource.X.value``, or convert
    with ``ConfigSource(entry.source)``)."""

    UNKNOWN_CONFIG = CONFIG_SOURCE_UNKNOWN_CONFIG
    DYNAMIC_TOPIC_CONFIG = CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG
    DYNAMIC_BROKER_CONFIG = CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG
    DYNAMIC_DEFAULT_BROKER_CONFIG = CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG
    STATIC_BROKER_CONFIG = CONFIG_SOURCE_STATIC_BROKER_CONFIG
    DEFAULT_CONFIG = CONFIG_SOURCE_DEFAULT_CONFIG
    GROUP_CONFIG = CONFIG_SOURCE_GROUP_CONFIG


class AlterConfigOpType(Enum):
    """An operation of :meth:`AdminClient.incremental_alter_configs`."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigEntry:
    """A config property: described by :meth:`AdminClient.describe_configs`, or one change
    (with ``incremental_operation``) for :meth:`AdminClient.incremental_alter_configs`.

    ``synonyms`` is always empty and ``is_synonym`` False in described entries (confluent-kafka
    does not request synonyms either); ``is_default`` is ``source == DEFAULT_CONFIG``."""

    def __init__(
        self,
        name: str,
        value: Optional[str],
        source: Union[ConfigSource, int] = ConfigSource.UNKNOWN_CONFIG,
        is_read_only: bool = False,
        is_default: bool = False,
        is_sensitive: bool = False,
        is_synonym: bool = False,
        synonyms: Optional[Dict[str, "ConfigEntry"]] = None,
        incremental_operation: Optional[AlterConfigOpType] = None,
    ) -> None:
        self.name = name
        self.value = value
        self.source = source
        self.is_read_only = bool(is_read_only)
        self.is_default = bool(is_default)
        self.is_sensitive = bool(is_sensitive)
        self.is_synonym = bool(is_synonym)
        self.synonyms: Dict[str, "ConfigEntry"] = synonyms if synonyms is not None else {}
        self.incremental_operation = incremental_operation

    def __repr__(self) -> str:
        return 'ConfigEntry(%s="%s")' % (self.name, self.value)

    def __str__(self) -> str:
        return '%s="%s"' % (self.name, self.value)


@functools.total_ordering
class ConfigResource:
    """A resource with configs: ``ConfigResource(ResourceType.TOPIC, "name")`` or
    ``ConfigResource("broker", "1")`` (type as :class:`ResourceType`, its name in any case, or
    its number). Equal and hashed by type and name: the key of the futures the config calls
    return. This release supports topic and broker resources."""

    Type = ResourceType

    def __init__(
        self,
        restype: Union[ResourceType, str, int],
        name: str,
        set_config: Optional[Dict[str, str]] = None,
        described_configs: Optional[Dict[str, ConfigEntry]] = None,
        error: Optional[KafkaError] = None,
        incremental_configs: Optional[List[ConfigEntry]] = None,
    ) -> None:
        if name is None:
            raise ValueError("Expected resource name to be a string")
        if isinstance(restype, str):
            try:
                restype = ResourceType[restype.upper()]
            except KeyError:
                raise ValueError('Unknown resource type "%s": should be a ConfigResource.Type'
                                 % restype) from None
        elif isinstance(restype, int):
            restype = ResourceType(restype)
        self.restype: ResourceType = restype
        self.restype_int = int(restype.value)
        self.name = name
        self.set_config_dict: Dict[str, str] = dict(set_config or {})
        self.incremental_configs: List[ConfigEntry] = list(incremental_configs or [])
        self.configs = described_configs
        self.error = error

    def __repr__(self) -> str:
        if self.error is not None:
            return "ConfigResource(%s,%s,%r)" % (self.restype, self.name, self.error)
        return "ConfigResource(%s,%s)" % (self.restype, self.name)

    def __hash__(self) -> int:
        return hash((self.restype, self.name))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ConfigResource):
            return NotImplemented
        if self.restype != other.restype:
            return self.restype < other.restype
        return self.name < other.name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConfigResource):
            return NotImplemented
        return self.restype == other.restype and self.name == other.name

    def __len__(self) -> int:
        """The number of configs set with :meth:`set_config`."""
        return len(self.set_config_dict)

    def set_config(self, name: str, value: str, overwrite: bool = True) -> None:
        """Sets a config for :meth:`AdminClient.alter_configs` (unless present and not
        ``overwrite``)."""
        if not overwrite and name in self.set_config_dict:
            return
        self.set_config_dict[name] = value

    def add_incremental_config(self, config_entry: ConfigEntry) -> None:
        """Adds a change (a :class:`ConfigEntry` with ``incremental_operation``) for
        :meth:`AdminClient.incremental_alter_configs`."""
        self.incremental_configs.append(config_entry)


class IsolationLevel(Enum):
    """The isolation level of :meth:`AdminClient.list_offsets`."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, IsolationLevel):
            return NotImplemented
        return bool(self.value < other.value)


class OffsetSpec:
    """Which offset :meth:`AdminClient.list_offsets` looks up: :meth:`earliest`, :meth:`latest`,
    :meth:`max_timestamp` or :meth:`for_timestamp`. ``OffsetSpec(n)`` maps confluent-kafka's
    numbers (-2 earliest, -1 latest, -3 max timestamp, >= 0 a timestamp in ms)."""

    def __new__(cls, index: Optional[int] = None) -> "OffsetSpec":
        if cls is not OffsetSpec:
            return object.__new__(cls)
        if index is None:
            raise TypeError("OffsetSpec() needs an index")
        if index >= 0:
            return TimestampSpec(index)
        try:
            return _SPECS[index]
        except KeyError:
            raise ValueError("unknown OffsetSpec index %d" % index) from None

    #: confluent-kafka's number for the spec (set by each kind).
    _value: int

    @classmethod
    def earliest(cls) -> "OffsetSpec":
        """The log start offset."""
        return _SPECS[-2]

    @classmethod
    def latest(cls) -> "OffsetSpec":
        """The high watermark (the offset the next record gets)."""
        return _SPECS[-1]

    @classmethod
    def max_timestamp(cls) -> "OffsetSpec":
        """The record with the largest timestamp."""
        return _SPECS[-3]

    @classmethod
    def for_timestamp(cls, timestamp: int) -> "OffsetSpec":
        """The first record whose timestamp is at or after ``timestamp`` (ms)."""
        return TimestampSpec(timestamp)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, OffsetSpec):
            return NotImplemented
        return self._value < other._value

    def __repr__(self) -> str:
        return "%s()" % type(self).__name__


class TimestampSpec(OffsetSpec):
    """:meth:`OffsetSpec.for_timestamp`."""

    def __init__(self, timestamp: int) -> None:
        self.timestamp = timestamp
        self._value = timestamp

    def __repr__(self) -> str:
        return "TimestampSpec(%d)" % self.timestamp


class MaxTimestampSpec(OffsetSpec):
    """:meth:`OffsetSpec.max_timestamp`."""

    _value = -3


class LatestSpec(OffsetSpec):
    """:meth:`OffsetSpec.latest`."""

    _value = -1


class EarliestSpec(OffsetSpec):
    """:meth:`OffsetSpec.earliest`."""

    _value = -2


_SPECS: Dict[int, OffsetSpec] = {-3: MaxTimestampSpec(), -2: EarliestSpec(), -1: LatestSpec()}


class ListOffsetsResultInfo:
    """What each future of :meth:`AdminClient.list_offsets` resolves to. ``offset`` and
    ``timestamp`` are -1 when unknown (no record matches; earliest / latest have no
    timestamp); ``leader_epoch`` is None when unknown."""

    def __init__(self, offset: int, timestamp: int, leader_epoch: int) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.leader_epoch: Optional[int] = leader_epoch if leader_epoch >= 0 else None

    def __repr__(self) -> str:
        return "ListOffsetsResultInfo(offset=%d, timestamp=%d, leader_epoch=%r)" % (
            self.offset, self.timestamp, self.leader_epoch)


class DeletedRecords:
    """What each future of :meth:`AdminClient.delete_records` resolves to."""

    def __init__(self, low_watermark: int) -> None:
        self.low_watermark = low_watermark

    def __repr__(self) -> str:
        return "DeletedRecords(low_watermark=%d)" % self.low_watermark


class NewTopic:
    """A topic to create. ``num_partitions`` / ``replication_factor`` of -1 use the broker's
    defaults."""

    def __init__(
        self,
        topic: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        replica_assignment: Optional[List[List[int]]] = None,
        config: Optional[Dict[str, str]] = None,
    ) -> None:
        if replica_assignment:
            raise ValueError("replica_assignment is not supported in this release")
        self.topic = topic
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.replica_assignment = replica_assignment
        self.config = dict(config or {})

    def __repr__(self) -> str:
        return "NewTopic(topic=%s,num_partitions=%d)" % (self.topic, self.num_partitions)


class NewPartitions:
    """Raises a topic's partition count to ``new_total_count``."""

    def __init__(
        self,
        topic: str,
        new_total_count: int,
        replica_assignment: Optional[List[List[int]]] = None,
    ) -> None:
        if replica_assignment:
            raise ValueError("replica_assignment is not supported in this release")
        self.topic = topic
        self.new_total_count = new_total_count
        self.replica_assignment = replica_assignment

    def __repr__(self) -> str:
        return "NewPartitions(topic=%s,new_total_count=%d)" % (self.topic, self.new_total_count)


def _operation(operation_timeout: Optional[float]) -> Optional[float]:
    """``operation_timeout`` for the native client: None when unset (0 or -1, the defaults:
    the broker gets as long as the request may take); other negative values are refused there."""
    if operation_timeout is None or operation_timeout in (0, -1):
        return None
    return float(operation_timeout)


def _only_options(method: str, kwargs: Dict[str, Any], **defaults: Any) -> Optional[float]:
    """The ``request_timeout`` among a call's keyword options. An option confluent-kafka has
    but this client does not implement is refused (NotImplementedError naming it) unless it
    has its no-op value in ``defaults``; an unknown one is a TypeError, as in Python."""
    request_timeout: Optional[float] = kwargs.pop("request_timeout", None)
    for name, value in kwargs.items():
        if name not in defaults:
            raise TypeError(f"{method}() got an unexpected keyword argument '{name}'")
        if value != defaults[name] and value is not None:
            raise NotImplementedError(f"{method}(): '{name}' is not supported by odradek")
    return request_timeout


def _futures(keys: List[str]) -> Dict[str, "concurrent.futures.Future[None]"]:
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate topics in the request")
    out: Dict[str, "concurrent.futures.Future[None]"] = {}
    for k in keys:
        f: "concurrent.futures.Future[None]" = concurrent.futures.Future()
        f.set_running_or_notify_cancel()
        out[k] = f
    return out


class AdminClient(SecurityAdminMixin, QuotaAdminMixin):
    """A Kafka admin client. Configuration as for :class:`odradek.Producer`; ``throttle_cb``
    is served by :meth:`poll`."""

    def __init__(self, conf: Optional[Dict[str, Any]] = None, **kwargs: Any) -> None:
        self._core = _AdminClient(conf, **kwargs)

    def poll(self, timeout: Optional[float] = None) -> int:
        """Serves ``throttle_cb`` (a :class:`~odradek.ThrottleEvent` for each response a
        broker throttled, and one when the throttling ended) on this thread, waiting up to
        ``timeout`` seconds (None or -1: forever) for the first; returns how many callbacks
        ran. An exception raised by the callback propagates from here."""
        return self._core.poll(timeout)

    def create_topics(
        self,
        new_topics: List[NewTopic],
        operation_timeout: float = 0,
        request_timeout: float = -1,
        validate_only: bool = False,
    ) -> Dict[str, "concurrent.futures.Future[None]"]:
        """Creates topics; one future per topic name. ``operation_timeout`` (seconds; 0: as
        long as the request may take) bounds the controller's work, after which a topic's
        future fails with ``REQUEST_TIMED_OUT``; ``request_timeout`` bounds the call."""
        futs = _futures([t.topic for t in new_topics])
        items = [(t.topic, t.num_partitions, t.replication_factor,
                  [(str(k), str(v)) for k, v in t.config.items()]) for t in new_topics]
        self._core.create_topics(items, validate_only, _operation(operation_timeout),
                                 _timeout(request_timeout), list(futs.values()))
        return futs

    def delete_topics(
        self, topics: List[str], operation_timeout: float = 0, request_timeout: float = -1
    ) -> Dict[str, "concurrent.futures.Future[None]"]:
        """Deletes topics; one future per topic name (the timeouts as for
        :meth:`create_topics`)."""
        futs = _futures(list(topics))
        self._core.delete_topics(list(topics), _operation(operation_timeout),
                                 _timeout(request_timeout), list(futs.values()))
        return futs

    def create_partitions(
        self,
        new_partitions: List[NewPartitions],
        operation_timeout: float = 0,
        request_timeout: float = -1,
        validate_only: bool = False,
    ) -> Dict[str, "concurrent.futures.Future[None]"]:
        """Raises partition counts; one future per topic name (the timeouts as for
        :meth:`create_topics`)."""
        futs = _futures([p.topic for p in new_partitions])
        items = [(p.topic, p.new_total_count) for p in new_partitions]
        self._core.create_partitions(items, validate_only, _operation(operation_timeout),
                                     _timeout(request_timeout), list(futs.values()))
        return futs

    def list_consumer_groups(
        self, request_timeout: float = -1, states: Optional[Set[ConsumerGroupState]] = None,
        types: Optional[Set[ConsumerGroupType]] = None, **kwargs: Any,
    ) -> "concurrent.futures.Future[ListConsumerGroupsResult]":
        """Every consumer group on every broker (optionally only those in ``states`` and of
        ``types``)."""
        _only_options("list_consumer_groups", kwargs)
        if states is not None and not isinstance(states, set):
            raise TypeError("'states' must be a set")
        if types is not None and not isinstance(types, set):
            raise TypeError("'types' must be a set")
        if types and not all(isinstance(t, ConsumerGroupType) for t in types):
            raise TypeError("All elements of types must be of type ConsumerGroupType")

        def convert(raw: Tuple[List[Tuple[str, str, str, str]], List[KafkaError]]) -> Any:
            listings = [
                ConsumerGroupListing(gid, ptype == "", ConsumerGroupState._from_broker(state),
                                     ConsumerGroupType._from_broker(gtype))
                for gid, ptype, state, gtype in raw[0]
            ]
            if states:
                listings = [g for g in listings if g.state in states]
            if types:
                listings = [g for g in listings if g.type in types]
            return ListConsumerGroupsResult(listings, list(raw[1]))

        out, raw = _chained(convert)
        self._core.list_groups(_timeout(request_timeout), raw)
        return out

    def describe_consumer_groups(
        self, group_ids: List[str], **kwargs: Any
    ) -> Dict[str, "concurrent.futures.Future[ConsumerGroupDescription]"]:
        """Members, assignor and state of each group; one future per group id."""
        request_timeout = _only_options("describe_consumer_groups", kwargs,
                                        include_authorized_operations=False)
        if not isinstance(group_ids, list):
            raise TypeError("Expected input to be list of group ids to be described")
        if not group_ids:
            raise ValueError("Expected at least one group to be described")
        out: Dict[str, "concurrent.futures.Future[ConsumerGroupDescription]"] = {}
        raws = []
        for gid in group_ids:
            fut, raw = _chained(_describe)
            out[gid] = fut
            raws.append(raw)
        self._core.describe_groups(list(group_ids), _timeout(request_timeout), raws)
        return out

    def list_consumer_group_offsets(
        self, list_consumer_group_offsets_request: List[ConsumerGroupTopicPartitions],
        **kwargs: Any,
    ) -> Dict[str, "concurrent.futures.Future[ConsumerGroupTopicPartitions]"]:
        """A group's committed offsets (of the given partitions, or all); one group per call
        (ValueError otherwise), as in confluent-kafka 2.16."""
        _check_list_offsets(list_consumer_group_offsets_request)
        request_timeout = _only_options("list_consumer_group_offsets", kwargs,
                                        require_stable=False)
        request = list_consumer_group_offsets_request[0]
        parts = None
        if request.topic_partitions is not None:
            parts = [(tp.topic, tp.partition) for tp in request.topic_partitions]

        def convert(raw: List[Tuple[str, int, int, str, Optional[KafkaError]]]) -> Any:
            tps = []
            for topic, partition, offset, metadata, error in raw:
                tp = TopicPartition(topic, partition, offset, metadata or None)
                tp.error = error
                tps.append(tp)
            return ConsumerGroupTopicPartitions(request.group_id, tps)

        fut, raw = _chained(convert)
        self._core.list_group_offsets(request.group_id, parts, _timeout(request_timeout), raw)
        return {request.group_id: fut}

    def delete_consumer_groups(
        self, group_ids: List[str], **kwargs: Any
    ) -> Dict[str, "concurrent.futures.Future[None]"]:
        """Deletes groups without members; one future per group id."""
        request_timeout = _only_options("delete_consumer_groups", kwargs)
        if not isinstance(group_ids, list):
            raise TypeError("Expected input to be list of group ids to be deleted")
        if not group_ids:
            raise ValueError("Expected at least one group to be deleted")
        futs = _futures(list(group_ids))
        self._core.delete_groups(list(group_ids), _timeout(request_timeout), list(futs.values()))
        return futs

    def alter_consumer_group_offsets(
        self, alter_consumer_group_offsets_request: List[ConsumerGroupTopicPartitions],
        request_timeout: float = -1,
    ) -> Dict[str, "concurrent.futures.Future[ConsumerGroupTopicPartitions]"]:
        """Sets a group's committed offsets (one group per call, as in confluent-kafka). The
        group must have no active members. The future resolves to the group's
        :class:`ConsumerGroupTopicPartitions`: the partitions of the request, each with the
        broker's ``error`` for it (e.g. ``UNKNOWN_MEMBER_ID`` while the group has members) or
        None; it raises when the call itself failed (e.g. no coordinator). The partitions'
        ``metadata`` is not committed by this release."""
        _check_alter_offsets(alter_consumer_group_offsets_request)
        request = alter_consumer_group_offsets_request[0]
        assert request.topic_partitions is not None
        wanted = [(tp.topic, tp.partition, tp.offset) for tp in request.topic_partitions]
        if len({(t, p) for t, p, _ in wanted}) != len(wanted):
            return {request.group_id: _failed(KafkaError._INVALID_ARG,
                                              "Duplicate partitions not allowed")}

        def convert(raw: List[Tuple[str, int, Optional[KafkaError]]]) -> Any:
            errors = {(t, p): e for t, p, e in raw}
            tps = []
            for topic, partition, offset in wanted:
                tp = TopicPartition(topic, partition, offset)
                if (topic, partition) in errors:
                    tp.error = errors[(topic, partition)]
                else:
                    tp.error = KafkaError(KafkaError._BAD_MSG,
                                          "the broker's answer does not name this partition")
                tps.append(tp)
            return ConsumerGroupTopicPartitions(request.group_id, tps)

        fut, raw = _chained(convert)
        self._core.alter_group_offsets(request.group_id, wanted, _timeout(request_timeout), raw)
        return {request.group_id: fut}

    def describe_configs(
        self, resources: List[ConfigResource], request_timeout: float = -1
    ) -> Dict[ConfigResource, "concurrent.futures.Future[Dict[str, ConfigEntry]]"]:
        """Every config of each resource (topics and brokers); one future per resource, which
        resolves to ``{name: ConfigEntry}``."""
        _check_resources(resources, ValueError)

        def convert(raw: List[Tuple[str, Optional[str], int, bool, bool]]) -> Any:
            return {
                name: ConfigEntry(name, value, source=source, is_read_only=read_only,
                                  is_default=source == CONFIG_SOURCE_DEFAULT_CONFIG,
                                  is_sensitive=sensitive)
                for name, value, source, read_only, sensitive in raw
            }

        out: Dict[ConfigResource, "concurrent.futures.Future[Dict[str, ConfigEntry]]"] = {}
        items, raws = [], []
        for r in resources:
            if r in out:
                continue
            refused = _unsupported(r)
            if refused is not None:
                out[r] = refused
                continue
            out[r], raw = _chained(convert)
            items.append((r.restype_int, r.name))
            raws.append(raw)
        if items:
            self._core.describe_configs(items, _timeout(request_timeout), raws)
        return out

    def incremental_alter_configs(
        self, resources: List[ConfigResource], request_timeout: float = -1,
        validate_only: bool = False, broker: Optional[int] = None,
    ) -> Dict[ConfigResource, "concurrent.futures.Future[None]"]:
        """Applies each resource's ``incremental_configs`` (:class:`ConfigEntry` with an
        :class:`AlterConfigOpType`: SET, DELETE, APPEND, SUBTRACT), leaving other configs as
        they are; one future per resource, resolving to None. ``broker`` is accepted for
        compatibility and ignored: topic changes go to the controller, broker changes to that
        broker."""
        _check_resources(resources, TypeError)
        for r in resources:
            if not r.incremental_configs:
                raise ValueError("expected non-empty list of ConfigEntry to alter incrementally "
                                 "in incremental_configs field")
            for e in r.incremental_configs:
                if not isinstance(e, ConfigEntry):
                    raise TypeError("Expected list of ConfigEntry in incremental_configs")
                if not isinstance(e.incremental_operation, AlterConfigOpType):
                    raise TypeError("ConfigEntry %r needs an incremental_operation "
                                    "(AlterConfigOpType)" % e.name)
                if e.incremental_operation != AlterConfigOpType.DELETE and e.value is None:
                    raise ValueError("ConfigEntry %r: %s needs a value"
                                     % (e.name, e.incremental_operation.name))

        def changes(r: ConfigResource) -> Any:
            ops = []
            for e in r.incremental_configs:
                assert e.incremental_operation is not None
                value = None if e.value is None else str(e.value)
                ops.append((e.name, e.incremental_operation.value, value))
            return ops

        return self._alter(resources, changes, True, validate_only, request_timeout)

    def alter_configs(
        self, resources: List[ConfigResource], request_timeout: float = -1,
        validate_only: bool = False,
    ) -> Dict[ConfigResource, "concurrent.futures.Future[None]"]:
        """Deprecated (as in confluent-kafka; use :meth:`incremental_alter_configs`): each
        resource's overrides become exactly its ``set_config`` values, every other config
        reverts to its default. One future per resource, resolving to None."""
        warnings.warn("alter_configs has been deprecated. Use incremental_alter_configs instead.",
                      category=DeprecationWarning, stacklevel=2)
        _check_resources(resources, ValueError)
        return self._alter(resources,
                           lambda r: [(str(k), str(v)) for k, v in r.set_config_dict.items()],
                           False, validate_only, request_timeout)

    def _alter(
        self, resources: List[ConfigResource], changes: Callable[[ConfigResource], Any],
        incremental: bool, validate_only: bool, request_timeout: float,
    ) -> Dict[ConfigResource, "concurrent.futures.Future[None]"]:
        """The shared half of :meth:`alter_configs` and :meth:`incremental_alter_configs`."""
        if len(set(resources)) != len(resources):
            raise ValueError("duplicate resources in the request")
        out: Dict[ConfigResource, "concurrent.futures.Future[None]"] = {}
        items, futs = [], []
        for r in resources:
            refused = _unsupported(r)
            if refused is not None:
                out[r] = refused
                continue
            out[r] = _future()
            items.append((r.restype_int, r.name, changes(r)))
            futs.append(out[r])
        if items and incremental:
            self._core.incremental_alter_configs(items, validate_only, _timeout(request_timeout),
                                                 futs)
        elif items:
            self._core.alter_configs(items, validate_only, _timeout(request_timeout), futs)
        return out

    def describe_cluster(
        self, request_timeout: float = -1, include_authorized_operations: bool = False
    ) -> "concurrent.futures.Future[DescribeClusterResult]":
        """The cluster id, the controller and every broker, as a :class:`DescribeClusterResult`.
        ``include_authorized_operations=True`` raises ``KafkaException(_NOT_IMPLEMENTED)``
        (this release does not report ACL operations)."""
        if include_authorized_operations:
            raise KafkaException(KafkaError(
                KafkaError._NOT_IMPLEMENTED,
                "include_authorized_operations is not supported in this release"))

        def convert(raw: Tuple[str, Optional[int], List[Tuple[int, str, int, Optional[str]]]]
                    ) -> Any:
            cluster_id, controller_id, brokers = raw
            nodes = [Node(i, host, port, rack) for i, host, port, rack in brokers]
            controller = next((n for n in nodes if n.id == controller_id), None)
            return DescribeClusterResult(controller, nodes, cluster_id or None)

        fut, raw = _chained(convert)
        self._core.describe_cluster(_timeout(request_timeout), raw)
        return fut

    def describe_topics(
        self, topics: TopicCollection, **kwargs: Any
    ) -> Dict[str, "concurrent.futures.Future[TopicDescription]"]:
        """Partitions (leader, replicas, in-sync replicas as :class:`Node`), topic id and
        internal flag of each topic; one future per topic name, resolving to a
        :class:`TopicDescription` or raising ``UNKNOWN_TOPIC_OR_PART``. Options:
        ``request_timeout``; ``include_authorized_operations=True`` is not supported."""
        if not isinstance(topics, TopicCollection):
            raise TypeError("Expected input to be instance of TopicCollection")
        names = topics.topic_names
        if not isinstance(names, list):
            raise TypeError("Expected list of topic names to be described")
        for i, name in enumerate(names):
            if not isinstance(name, str):
                raise TypeError("Expected list of topics strings, not %s" % type(name).__name__)
            if not name:
                raise ValueError("Empty topic name at index %d isn't allowed" % i)
        request_timeout = _only_options("describe_topics", kwargs,
                                        include_authorized_operations=False)
        if len(set(names)) != len(names):
            return {n: _failed(KafkaError._INVALID_ARG, "Duplicate topics not allowed")
                    for n in names}

        def node(raw: Tuple[int, Optional[str], int, Optional[str]]) -> Node:
            return Node(raw[0], raw[1], raw[2], raw[3])  # type: ignore[arg-type]

        def convert(raw: Tuple[str, Tuple[int, int], bool, List[Any]]) -> TopicDescription:
            name, (msb, lsb), internal, partitions = raw
            infos = [TopicPartitionInfo(p, None if leader is None else node(leader),
                                        [node(n) for n in replicas], [node(n) for n in isr])
                     for p, leader, replicas, isr in partitions]
            return TopicDescription(name, Uuid(msb, lsb), internal, infos)

        out: Dict[str, "concurrent.futures.Future[TopicDescription]"] = {}
        raws = []
        for n in names:
            out[n], raw = _chained(convert)
            raws.append(raw)
        if names:
            self._core.describe_topics(list(names), _timeout(request_timeout), raws)
        return out

    def list_offsets(
        self, topic_partition_offsets: Dict[TopicPartition, OffsetSpec],
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
        request_timeout: float = -1,
    ) -> Dict[TopicPartition, "concurrent.futures.Future[ListOffsetsResultInfo]"]:
        """Looks up an offset of each partition (:class:`OffsetSpec`). Keyed, as in
        confluent-kafka, by ``TopicPartition(topic, partition, spec value)`` (equal to
        ``TopicPartition(topic, partition)``); each future resolves to a
        :class:`ListOffsetsResultInfo`. With ``IsolationLevel.READ_COMMITTED``, latest is the
        last stable offset (before the first open transaction)."""
        if not isinstance(topic_partition_offsets, dict):
            raise TypeError("Expected topic_partition_offsets to be dict of "
                            "[TopicPartitions,OffsetSpec] for list offsets request")
        for tp, spec in topic_partition_offsets.items():
            _check_partition(tp, "partition")
            if spec is None:
                raise TypeError("OffsetSpec cannot be None")
            if not isinstance(spec, OffsetSpec):
                raise TypeError("Value must be a OffsetSpec")
        if not isinstance(isolation_level, IsolationLevel):
            raise TypeError("isolation_level argument should be an IsolationLevel")
        out: Dict[TopicPartition, "concurrent.futures.Future[ListOffsetsResultInfo]"] = {}
        queries, raws = [], []
        for tp, spec in topic_partition_offsets.items():
            key = TopicPartition(tp.topic, int(tp.partition), int(spec._value))
            out[key], raw = _chained(lambda r: ListOffsetsResultInfo(*r))
            queries.append((tp.topic, int(tp.partition), int(spec._value)))
            raws.append(raw)
        if queries:
            self._core.list_offsets(queries, isolation_level == IsolationLevel.READ_COMMITTED,
                                    _timeout(request_timeout), raws)
        return out

    def delete_records(
        self, topic_partition_offsets: List[TopicPartition], request_timeout: float = -1,
        operation_timeout: float = -1,
    ) -> Dict[TopicPartition, "concurrent.futures.Future[DeletedRecords]"]:
        """Deletes the records before each partition's ``offset`` (``OFFSET_END``: all of
        them); keyed by the given partitions, each future resolves to a
        :class:`DeletedRecords` with the new low watermark."""
        if not isinstance(topic_partition_offsets, list):
            raise TypeError("Expected Request to be a list, got '%s' "
                            % type(topic_partition_offsets).__name__)
        for tp in topic_partition_offsets:
            if not isinstance(tp, TopicPartition):
                raise TypeError("Element of the request list must be of type 'TopicPartition'"
                                " got '%s' " % type(tp).__name__)
            if tp.partition < 0:
                raise ValueError("'partition' cannot be negative")
        out: Dict[TopicPartition, "concurrent.futures.Future[DeletedRecords]"] = {}
        if len({(tp.topic, tp.partition) for tp in topic_partition_offsets}) != len(
                topic_partition_offsets):
            for tp in topic_partition_offsets:
                out[tp] = _failed(KafkaError._INVALID_ARG, "Duplicate partitions not allowed")
            return out
        items, raws = [], []
        for tp in topic_partition_offsets:
            out[tp], raw = _chained(DeletedRecords)
            items.append((tp.topic, tp.partition, tp.offset))
            raws.append(raw)
        if items:
            self._core.delete_records(items, _operation(operation_timeout),
                                      _timeout(request_timeout), raws)
        return out

    def list_topics(self, topic: Optional[str] = None, timeout: float = -1) -> ClusterMetadata:
        """Cluster metadata, as :meth:`odradek.Producer.list_topics` (never creates a topic)."""
        return self._core.list_topics(topic, timeout)


def _describe(raw: Tuple[str, str, str, str, List[Any], str,
                          Optional[Tuple[int, str, int, Optional[str]]]]
              ) -> ConsumerGroupDescription:
    gid, state, ptype, protocol, members, gtype, coordinator = raw

    def assignment(parts: List[Tuple[str, int]]) -> MemberAssignment:
        return MemberAssignment([TopicPartition(t, p) for t, p in parts])

    described = [
        MemberDescription(member_id, client_id, host, assignment(parts), instance_id,
                          None if target is None else assignment(target))
        for member_id, instance_id, client_id, host, parts, target in members
    ]
    return ConsumerGroupDescription(gid, ptype == "", described, protocol,
                                    ConsumerGroupState._from_broker(state),
                                    None if coordinator is None else Node(*coordinator),
                                    type=ConsumerGroupType._from_broker(gtype))


def _failed(code: int, reason: str) -> "concurrent.futures.Future[Any]":
    """A future already failed with ``KafkaException(KafkaError(code, reason))``."""
    f = _future()
    f.set_exception(KafkaException(KafkaError(code, reason)))
    return f


def _check_partition(tp: Any, what: str) -> None:
    if tp is None:
        raise TypeError("%s cannot be None" % what)
    if not isinstance(tp, TopicPartition):
        raise TypeError("%s must be a TopicPartition" % what)
    if tp.topic is None:
        raise TypeError("%s topic name cannot be None" % what)
    if not isinstance(tp.topic, str):
        raise TypeError("%s topic name must be string" % what)
    if not tp.topic:
        raise ValueError("%s topic name cannot be empty" % what)
    if tp.partition < 0:
        raise ValueError("%s index must be non-negative" % what)


def _check_resources(resources: Any, error: Callable[[str], Exception]) -> None:
    """confluent-kafka's checks of a config call's resources (``error``: the exception type
    it raises for a non-resource element, which differs between its calls)."""
    if not isinstance(resources, list):
        raise error("Expected list of %r" % ConfigResource)
    for r in resources:
        if not isinstance(r, ConfigResource):
            raise error("Expected list of %r" % ConfigResource)
    if not resources:
        raise ValueError("Expected non-empty list of ConfigResource objects")


def _unsupported(r: ConfigResource) -> "Optional[concurrent.futures.Future[Any]]":
    """A failed future for a resource whose configs this release cannot handle, else None."""
    if r.restype == ResourceType.TOPIC:
        return None
    if r.restype == ResourceType.BROKER:
        try:
            int(r.name)
            return None
        except (TypeError, ValueError):
            return _failed(KafkaError._INVALID_ARG,
                           "a broker resource is named by its node id, not %r" % (r.name,))
    if r.restype == ResourceType.GROUP:
        return _failed(KafkaError._NOT_IMPLEMENTED, "group configs are not supported in this "
                       "release")
    return _failed(KafkaError._INVALID_ARG, "resource type %s has no configs" % r.restype.name)


def _check_list_offsets(request: Any) -> None:
    """confluent-kafka's checks of a ``list_consumer_group_offsets`` request."""
    if request is None:
        raise TypeError("request cannot be None")
    if not isinstance(request, list):
        raise TypeError("request must be a list")
    if len(request) != 1:
        raise ValueError("Currently we support listing offsets for a single consumer group only")
    for req in request:
        if not isinstance(req, ConsumerGroupTopicPartitions):
            raise TypeError("Expected list of 'ConsumerGroupTopicPartitions'")
        if req.group_id is None:
            raise TypeError("'group_id' cannot be None")
        if not isinstance(req.group_id, str):
            raise TypeError("'group_id' must be a string")
        if not req.group_id:
            raise ValueError("'group_id' cannot be empty")
        if req.topic_partitions is None:
            continue
        if not isinstance(req.topic_partitions, list):
            raise TypeError("'topic_partitions' must be a list or None")
        if not req.topic_partitions:
            raise ValueError("'topic_partitions' cannot be empty")
        for tp in req.topic_partitions:
            if tp is None:
                raise ValueError("Element of 'topic_partitions' cannot be None")
            if not isinstance(tp, TopicPartition):
                raise TypeError("Element of 'topic_partitions' must be of type TopicPartition")
            if tp.topic is None:
                raise TypeError("Element of 'topic_partitions' must not have 'topic' attribute "
                                "as None")
            if not tp.topic:
                raise ValueError("Element of 'topic_partitions' must not have 'topic' attribute "
                                 "as Empty")
            if tp.partition < 0:
                raise ValueError("Element of 'topic_partitions' must not have negative "
                                 "'partition' value")
            if tp.offset != OFFSET_INVALID:
                raise ValueError("Element of 'topic_partitions' must not have 'offset' value")


def _check_alter_offsets(request: Any) -> None:
    """confluent-kafka's checks of an ``alter_consumer_group_offsets`` request."""
    if request is None:
        raise TypeError("request cannot be None")
    if not isinstance(request, list):
        raise TypeError("request must be a list")
    if len(request) != 1:
        raise ValueError("Currently we support altering offsets for a single consumer group only")
    for req in request:
        if not isinstance(req, ConsumerGroupTopicPartitions):
            raise TypeError("Expected list of 'ConsumerGroupTopicPartitions'")
        if req.group_id is None:
            raise TypeError("'group_id' cannot be None")
        if not isinstance(req.group_id, str):
            raise TypeError("'group_id' must be a string")
        if not req.group_id:
            raise ValueError("'group_id' cannot be empty")
        if req.topic_partitions is None:
            raise ValueError("'topic_partitions' cannot be null")
        if not isinstance(req.topic_partitions, list):
            raise TypeError("'topic_partitions' must be a list")
        if not req.topic_partitions:
            raise ValueError("'topic_partitions' cannot be empty")
        for tp in req.topic_partitions:
            if tp is None:
                raise ValueError("Element of 'topic_partitions' cannot be None")
            if not isinstance(tp, TopicPartition):
                raise TypeError("Element of 'topic_partitions' must be of type TopicPartition")
            if tp.topic is None:
                raise TypeError("Element of 'topic_partitions' must not have 'topic' attribute "
                                "as None")
            if not tp.topic:
                raise ValueError("Element of 'topic_partitions' must not have 'topic' attribute "
                                 "as Empty")
            if tp.partition < 0:
                raise ValueError("Element of 'topic_partitions' must not have negative value for "
                                 "'partition' field")
            if tp.offset < 0:
                raise ValueError("Element of 'topic_partitions' must not have negative value for "
                                 "'offset' field")
