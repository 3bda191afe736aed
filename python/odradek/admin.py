"""The admin client (confluent-kafka's ``confluent_kafka.admin`` shape).

Every call returns at once with a dict of :class:`concurrent.futures.Future`, one per item, that
resolves to ``None`` or raises :class:`~odradek.KafkaException` with the broker's error for that
item (``TOPIC_ALREADY_EXISTS``, ``UNKNOWN_TOPIC_OR_PART``, ``INVALID_PARTITIONS``, ...).

Supported in this release: ``create_topics``, ``delete_topics``, ``create_partitions``,
``list_topics``. Other confluent-kafka admin calls (configs, groups, ACLs, offsets) are not
available yet.
"""

import concurrent.futures
from typing import Any, Dict, List, Optional

from ._odradek import ClusterMetadata, _AdminClient

__all__ = ["AdminClient", "NewTopic", "NewPartitions"]


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

    def list_topics(self, topic: Optional[str] = None, timeout: float = -1) -> ClusterMetadata:
        """Cluster metadata, as :meth:`odradek.Producer.list_topics` (never creates a topic)."""
        return self._core.list_topics(topic, timeout)
