"""A Kafka cluster inside your tests: in-process, started in milliseconds, with fault injection.

:class:`Cluster` runs real Kafka brokers (odradek's reference broker, compiled into this
package) on ephemeral loopback ports of the test's own process. Any Kafka client talks to it
unchanged: odradek, confluent-kafka, kafka-python, aiokafka::

    from odradek.testing import Cluster

    with Cluster(brokers=3, topics={"orders": 3}) as cluster:
        producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers})
        cluster.push_request_errors("OffsetCommit", ["COORDINATOR_NOT_AVAILABLE"] * 2)
        cluster.set_partition_leader("orders", 0, 2)    # leader epoch bumped
        cluster.set_broker_down(3)                       # port refuses connections
        ...
        assert any(r.api_name == "Produce" for r in cluster.requests())

With pytest, the plugin (installed with the package) provides the ``kafka_cluster`` fixture (a
fresh cluster per test; ``@pytest.mark.kafka_cluster(brokers=3, topics={"t": 2})`` shapes it)
and ``kafka_bootstrap`` (its ``bootstrap.servers``).

The brokers share one log store: a moved leader keeps its data, there is no replication and no
ISR, and a broker that goes down leaves its partitions without a leader until it comes back.
API keys are given by name (``"Produce"``, ``"OffsetCommit"``) or number; error codes by
protocol name (``"NOT_LEADER_OR_FOLLOWER"``) or number.
"""

from typing import Any, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from .._odradek import _TestCluster

ApiKey = Union[str, int]
ErrorCode = Union[str, int]

__all__ = ["Cluster", "Request"]


class Request(NamedTuple):
    """One request a broker received (see :meth:`Cluster.requests`)."""

    api_key: int
    api_name: str
    api_version: int
    client_id: Optional[str]
    correlation_id: int
    peer: str
    broker: int
    partitions: List[Tuple[str, int]]
    #: What the cluster did to the whole request: "error", "delay", "drop", "close" or None.
    action: Optional[str]
    #: The injected error's name when ``action == "error"``.
    error: Optional[str]
    #: Errors injected into single partitions: (topic, partition, error name).
    item_errors: List[Tuple[str, int, str]]


class Cluster:
    """An in-process Kafka cluster of ``brokers`` brokers (node ids 1..N).

    :param brokers: number of brokers.
    :param partitions: partitions of auto-created topics (``num.partitions``).
    :param topics: topics created before it starts: ``{"name": partitions}``.
    :param config: broker settings with Apache Kafka's names (``server.properties`` keys).
    :param storage: ``"memory"`` (a RAM-backed temporary directory, the default),
        ``"tempdir"``, or a directory path that is kept (and reused) after :meth:`stop`.
    :param record_requests: turn the request log on from the first request.

    Use it as a context manager, or call :meth:`stop` (it is also stopped when collected).
    """

    def __init__(self, brokers: int = 1, partitions: int = 1,
                 topics: Optional[Mapping[str, int]] = None,
                 config: Optional[Mapping[str, Any]] = None,
                 storage: str = "memory", record_requests: bool = False) -> None:
        conf = [(str(k), _conf_value(v)) for k, v in (config or {}).items()]
        self._native = _TestCluster(int(brokers), int(partitions),
                                    [(str(t), int(n)) for t, n in (topics or {}).items()],
                                    conf, str(storage), bool(record_requests))

    # ---- lifecycle -------------------------------------------------------------------
    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stops every broker and removes the data (idempotent)."""
        self._native.stop()

    @property
    def running(self) -> bool:
        return self._native.is_running()

    @property
    def bootstrap_servers(self) -> str:
        """``bootstrap.servers`` for clients: ``host:port`` of every broker, comma-separated."""
        return self._native.bootstrap()

    @property
    def broker_ids(self) -> List[int]:
        return self._native.broker_ids()

    def broker_address(self, broker: int) -> str:
        """``host:port`` of a broker (the same while it is down and after it comes back)."""
        addr = self._native.broker_address(int(broker))
        if addr is None:
            raise ValueError("no broker %r" % (broker,))
        return addr

    @property
    def data_dir(self) -> str:
        return self._native.data_dir()

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Creates a topic (partition p is led by broker ``p % N + 1``)."""
        self._native.create_topic(name, int(partitions))

    # ---- fault injection -------------------------------------------------------------
    def push_request_errors(self, api: ApiKey, errors: Iterable[ErrorCode], *,
                            broker: Optional[int] = None, topic: Optional[str] = None,
                            partition: Optional[int] = None, client_id: Optional[str] = None,
                            delays_ms: Optional[Sequence[int]] = None) -> None:
        """The next requests of ``api`` fail with ``errors``, one per request, in order.

        Narrow it to one ``broker``, ``client_id``, ``topic`` or ``partition`` (with ``topic``):
        a partition's error fails only that partition of a Produce, Fetch, ListOffsets or
        OffsetForLeaderEpoch request, the rest is answered normally. ``delays_ms[i]`` holds
        the i-th error back that long (librdkafka's ``push_request_error_rtts``).
        """
        errors = list(errors)
        delays = list(delays_ms or [])
        if delays and len(delays) != len(errors):
            raise ValueError("delays_ms needs one delay per error")
        for i, error in enumerate(errors):
            self.add_rule(api, error=error, delay_ms=delays[i] if delays else 0, times=1,
                          broker=broker, topic=topic, partition=partition, client_id=client_id)

    def add_rule(self, api: ApiKey, *, error: Optional[ErrorCode] = None, delay_ms: int = 0,
                 drop: bool = False, close: bool = False, times: Optional[int] = 1,
                 broker: Optional[int] = None, topic: Optional[str] = None,
                 partition: Optional[int] = None, client_id: Optional[str] = None) -> int:
        """Adds one rule for requests of ``api``; returns its id (for :meth:`remove_rule`).

        Exactly one of: ``error`` (answer with it instead of handling the request; with
        ``delay_ms``, answer that much later), ``drop`` (read, never answer), ``close`` (close
        the connection), or only ``delay_ms`` (handle, then answer that much later).
        ``times``: how many matching requests (None: every one until removed).
        """
        chosen = [k for k, on in (("error", error is not None), ("drop", drop), ("close", close))
                  if on]
        if len(chosen) > 1:
            raise ValueError("choose one of error, drop, close")
        if chosen:
            action = chosen[0]
        elif delay_ms > 0:
            action = "delay"
        else:
            raise ValueError("a rule needs error, drop, close or delay_ms")
        return self._native.add_rule(api, action, error, int(delay_ms),
                                     None if times is None else int(times), broker, topic,
                                     partition, client_id)

    def delay_responses(self, api: ApiKey, delay_ms: int, *, times: Optional[int] = None,
                        **filters: Any) -> int:
        """Handles requests of ``api`` normally but answers ``delay_ms`` later (every request
        until removed unless ``times``). Later responses on the connection wait too."""
        return self.add_rule(api, delay_ms=delay_ms, times=times, **filters)

    def drop_responses(self, api: ApiKey, *, times: Optional[int] = 1, **filters: Any) -> int:
        """Reads requests of ``api`` and never answers them."""
        return self.add_rule(api, drop=True, times=times, **filters)

    def remove_rule(self, rule_id: int) -> bool:
        return self._native.remove_rule(int(rule_id))

    def clear_rules(self) -> None:
        self._native.clear_rules()

    @property
    def pending_rules(self) -> int:
        """Rules (pushed errors included) not used up yet."""
        return self._native.pending_rules()

    def close_connections(self, broker: Optional[int] = None,
                          client_id: Optional[str] = None) -> int:
        """Cuts open connections (of one broker and/or one client id); returns how many."""
        return self._native.close_connections(broker, client_id)

    def connection_count(self, broker: int) -> int:
        return self._native.connection_count(int(broker))

    def set_broker_down(self, broker: int) -> None:
        """Takes a broker down: listener closed, connections cut, out of Metadata; its
        partitions have no leader until :meth:`set_broker_up`."""
        self._native.set_broker_down(int(broker))

    def set_broker_up(self, broker: int) -> None:
        """Brings a broker back on the same port (its partitions get a new leader epoch)."""
        self._native.set_broker_up(int(broker))

    def is_broker_up(self, broker: int) -> bool:
        return self._native.is_broker_up(int(broker))

    def set_broker_rtt(self, broker: int, rtt_ms: int) -> None:
        """Adds ``rtt_ms`` before every response of a broker (0 removes it)."""
        self._native.set_broker_rtt(int(broker), int(rtt_ms))

    def set_partition_leader(self, topic: str, partition: int, broker: int) -> int:
        """Moves a partition's leader (-1: no leader) and returns the new leader epoch."""
        return self._native.set_partition_leader(topic, int(partition), int(broker))

    def set_partition_follower(self, topic: str, partition: int,
                               broker: Optional[int]) -> None:
        """Makes ``broker`` a read replica the leader names in Fetch responses (KIP-392)."""
        self._native.set_partition_follower(topic, int(partition), broker)

    def partition_leader(self, topic: str, partition: int) -> Tuple[int, int, Optional[int]]:
        """``(leader, leader_epoch, follower)`` of a partition."""
        return self._native.partition_leader(topic, int(partition))

    def set_coordinator(self, kind: str, key: str, broker: Optional[int]) -> None:
        """Pins the coordinator of a group (``kind="group"``) or transactional id
        (``"transaction"``) to a broker; None restores Kafka's placement."""
        self._native.set_coordinator(kind, key, broker)

    def coordinator(self, kind: str, key: str) -> int:
        return self._native.coordinator(kind, key)

    def set_api_version(self, api: ApiKey, min_version: int, max_version: int) -> None:
        """Serves only these versions of ``api`` (ApiVersions advertises them; others close the
        connection, as Kafka does)."""
        self._native.set_api_version(api, int(min_version), int(max_version))

    def clear_api_version(self, api: ApiKey) -> None:
        self._native.clear_api_version(api)

    # ---- observation -----------------------------------------------------------------
    def record_requests(self, on: bool = True) -> None:
        """Turns the request log on (or off, keeping what was logged)."""
        self._native.record_requests(bool(on))

    def requests(self, clear: bool = False) -> List[Request]:
        """The logged requests, oldest first (emptying the log with ``clear=True``)."""
        return [Request(*r) for r in self._native.requests(bool(clear))]

    def __repr__(self) -> str:
        if not self.running:
            return "<odradek.testing.Cluster stopped>"
        return "<odradek.testing.Cluster %s>" % self.bootstrap_servers


def _conf_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


