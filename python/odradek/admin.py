"""The admin client (confluent-kafka's ``confluent_kafka.admin`` shape).

Every call returns at once with a dict of :class:`concurrent.futures.Future`, one per item, that
resolves to ``None`` or raises :class:`~odradek.KafkaException` with the broker's error for that
item (``TOPIC_ALREADY_EXISTS``, ``UNKNOWN_TOPIC_OR_PART``, ``INVALID_PARTITIONS``, ...).

Supported in this release: ``create_topics``, ``delete_topics``, ``create_partitions``,
``list_topics``, and consumer groups: ``list_consumer_groups``, ``describe_consumer_groups``,
``list_consumer_group_offsets``, ``delete_consumer_groups``. Other confluent-kafka admin calls
(configs, ACLs, altering offsets) are not available yet.
"""

import concurrent.futures
from enum import Enum
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ._odradek import ClusterMetadata, KafkaError, TopicPartition, _AdminClient

__all__ = [
    "AdminClient",
    "NewTopic",
    "NewPartitions",
    "ConsumerGroupState",
    "ConsumerGroupListing",
    "ListConsumerGroupsResult",
    "ConsumerGroupDescription",
    "MemberDescription",
    "MemberAssignment",
    "ConsumerGroupTopicPartitions",
]


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


class ConsumerGroupListing:
    """One group of :meth:`AdminClient.list_consumer_groups`."""

    def __init__(self, group_id: str, is_simple_consumer_group: bool,
                 state: ConsumerGroupState = ConsumerGroupState.UNKNOWN) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.state = state


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
                 group_instance_id: Optional[str] = None) -> None:
        self.member_id = member_id
        self.client_id = client_id
        self.host = host
        self.assignment = assignment
        self.group_instance_id = group_instance_id


class ConsumerGroupDescription:
    """What each future of :meth:`AdminClient.describe_consumer_groups` resolves to.
    ``coordinator`` is not reported by this release (None)."""

    def __init__(self, group_id: str, is_simple_consumer_group: bool,
                 members: List[MemberDescription], partition_assignor: str,
                 state: ConsumerGroupState, coordinator: Any = None) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.members = members
        self.partition_assignor = partition_assignor
        self.state = state
        self.coordinator = coordinator


class ConsumerGroupTopicPartitions:
    """A group id and (optionally) partitions: the request and the result of
    :meth:`AdminClient.list_consumer_group_offsets`."""

    def __init__(self, group_id: str,
                 topic_partitions: Optional[List[TopicPartition]] = None) -> None:
        self.group_id = group_id
        self.topic_partitions = topic_partitions


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


def _futures(keys: List[str]) -> Dict[str, "concurrent.futures.Future[None]"]:
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate topics in the request")
    out: Dict[str, "concurrent.futures.Future[None]"] = {}
    for k in keys:
        f: "concurrent.futures.Future[None]" = concurrent.futures.Future()
        f.set_running_or_notify_cancel()
        out[k] = f
    return out


class AdminClient:
    """A Kafka admin client. Configuration as for :class:`odradek.Producer`."""

    def __init__(self, conf: Optional[Dict[str, Any]] = None, **kwargs: Any) -> None:
        self._core = _AdminClient(conf, **kwargs)

    def create_topics(
        self,
        new_topics: List[NewTopic],
        operation_timeout: float = 0,
        request_timeout: float = -1,
        validate_only: bool = False,
    ) -> Dict[str, "concurrent.futures.Future[None]"]:
        """Creates topics; one future per topic name."""
        futs = _futures([t.topic for t in new_topics])
        items = [(t.topic, t.num_partitions, t.replication_factor,
                  [(str(k), str(v)) for k, v in t.config.items()]) for t in new_topics]
        self._core.create_topics(items, validate_only, list(futs.values()))
        return futs

    def delete_topics(
        self, topics: List[str], operation_timeout: float = 0, request_timeout: float = -1
    ) -> Dict[str, "concurrent.futures.Future[None]"]:
        """Deletes topics; one future per topic name."""
        futs = _futures(list(topics))
        self._core.delete_topics(list(topics), list(futs.values()))
        return futs

    def create_partitions(
        self,
        new_partitions: List[NewPartitions],
        operation_timeout: float = 0,
        request_timeout: float = -1,
        validate_only: bool = False,
    ) -> Dict[str, "concurrent.futures.Future[None]"]:
        """Raises partition counts; one future per topic name."""
        futs = _futures([p.topic for p in new_partitions])
        items = [(p.topic, p.new_total_count) for p in new_partitions]
        self._core.create_partitions(items, validate_only, list(futs.values()))
        return futs

    def list_consumer_groups(
        self, request_timeout: float = -1, states: Optional[Set[ConsumerGroupState]] = None,
        **kwargs: Any,
    ) -> "concurrent.futures.Future[ListConsumerGroupsResult]":
        """Every consumer group on every broker (optionally only those in ``states``)."""
        if states is not None and not isinstance(states, set):
            raise TypeError("'states' must be a set")

        def convert(raw: Tuple[List[Tuple[str, str, str]], List[KafkaError]]) -> Any:
            listings = [
                ConsumerGroupListing(gid, ptype == "", ConsumerGroupState._from_broker(state))
                for gid, ptype, state in raw[0]
            ]
            if states:
                listings = [g for g in listings if g.state in states]
            return ListConsumerGroupsResult(listings, list(raw[1]))

        out, raw = _chained(convert)
        self._core.list_groups(raw)
        return out

    def describe_consumer_groups(
        self, group_ids: List[str], **kwargs: Any
    ) -> Dict[str, "concurrent.futures.Future[ConsumerGroupDescription]"]:
        """Members, assignor and state of each group; one future per group id."""
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
        self._core.describe_groups(list(group_ids), raws)
        return out

    def list_consumer_group_offsets(
        self, list_consumer_group_offsets_request: List[ConsumerGroupTopicPartitions],
        **kwargs: Any,
    ) -> Dict[str, "concurrent.futures.Future[ConsumerGroupTopicPartitions]"]:
        """A group's committed offsets (of the given partitions, or all); one group per call."""
        if not isinstance(list_consumer_group_offsets_request, list):
            raise TypeError("Expected input to be list of ConsumerGroupTopicPartitions")
        if len(list_consumer_group_offsets_request) != 1:
            raise ValueError("Currently we support listing offsets for a single consumer group only")
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
        self._core.list_group_offsets(request.group_id, parts, raw)
        return {request.group_id: fut}

    def delete_consumer_groups(
        self, group_ids: List[str], **kwargs: Any
    ) -> Dict[str, "concurrent.futures.Future[None]"]:
        """Deletes groups without members; one future per group id."""
        if not isinstance(group_ids, list):
            raise TypeError("Expected input to be list of group ids to be deleted")
        if not group_ids:
            raise ValueError("Expected at least one group to be deleted")
        futs = _futures(list(group_ids))
        self._core.delete_groups(list(group_ids), list(futs.values()))
        return futs

    def list_topics(self, topic: Optional[str] = None, timeout: float = -1) -> ClusterMetadata:
        """Cluster metadata, as :meth:`odradek.Producer.list_topics` (never creates a topic)."""
        return self._core.list_topics(topic, timeout)


def _describe(raw: Tuple[str, str, str, str, List[Any]]) -> ConsumerGroupDescription:
    gid, state, ptype, protocol, members = raw
    described = [
        MemberDescription(member_id, client_id, host,
                          MemberAssignment([TopicPartition(t, p) for t, p in parts]),
                          instance_id)
        for member_id, instance_id, client_id, host, parts in members
    ]
    return ConsumerGroupDescription(gid, ptype == "", described, protocol,
                                    ConsumerGroupState._from_broker(state))


def _chained(
    convert: Callable[[Any], Any]
) -> Tuple["concurrent.futures.Future[Any]", "concurrent.futures.Future[Any]"]:
    """A future for the application and a raw one the native client completes; the raw
    result goes through ``convert`` (exceptions pass unchanged)."""
    out: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
    out.set_running_or_notify_cancel()
    raw: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
    raw.set_running_or_notify_cancel()

    def done(f: "concurrent.futures.Future[Any]") -> None:
        exc = f.exception()
        if exc is not None:
            out.set_exception(exc)
            return
        try:
            out.set_result(convert(f.result()))
        except Exception as e:  # a conversion bug must not leave the future pending
            out.set_exception(e)

    raw.add_done_callback(done)
    return out, raw
