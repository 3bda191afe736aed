"""Type stubs for the native module odradek._odradek (checked by mypy.stubtest in the tests)."""

import asyncio
import builtins
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from typing_extensions import disjoint_base, final

_Payload = Union[str, bytes, bytearray, memoryview, None]
_HeaderValue = Union[str, bytes, None]
_Headers = Union[Dict[str, _HeaderValue], Sequence[Tuple[str, _HeaderValue]], None]
_DeliveryCallback = Callable[[Optional["KafkaError"], "Message"], Any]

__all__ = [
    "KafkaException", "KafkaError", "TopicPartition", "ThrottleEvent", "Message", "Producer", "Consumer",
    "ClusterMetadata", "BrokerMetadata", "TopicMetadata", "PartitionMetadata", "_resolve",
    "_AIOProducer", "_AdminClient", "version", "libversion", "_error_codes", "TIMESTAMP_NOT_AVAILABLE",
    "TIMESTAMP_CREATE_TIME", "TIMESTAMP_LOG_APPEND_TIME", "OFFSET_BEGINNING", "OFFSET_END",
    "OFFSET_STORED", "OFFSET_INVALID",
]

TIMESTAMP_NOT_AVAILABLE: int
TIMESTAMP_CREATE_TIME: int
TIMESTAMP_LOG_APPEND_TIME: int
OFFSET_BEGINNING: int
OFFSET_END: int
OFFSET_STORED: int
OFFSET_INVALID: int

def version() -> Tuple[str, int]: ...
def libversion() -> Tuple[str, int]: ...
def _error_codes() -> List[Tuple[str, int]]: ...
def _resolve(batch: List[Any]) -> None: ...

class KafkaException(Exception):
    """Raised for every Kafka or client error; ``args[0]`` is the KafkaError."""

@disjoint_base
class KafkaError:
    def __new__(
        cls,
        error: int,
        reason: Optional[builtins.str] = None,
        fatal: bool = False,
        retriable: bool = False,
        txn_requires_abort: bool = False,
    ) -> "KafkaError": ...
    def code(self) -> int: ...
    def name(self) -> builtins.str: ...
    def str(self) -> builtins.str: ...
    def fatal(self) -> bool: ...
    def retriable(self) -> bool: ...
    def txn_requires_abort(self) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> Tuple[Any, Tuple[int, builtins.str, bool, bool, bool]]: ...
    # Client-side codes (negative, librdkafka's numbering).
    _BAD_MSG: int
    _BAD_COMPRESSION: int
    _DESTROY: int
    _FAIL: int
    _TRANSPORT: int
    _CRIT_SYS_RESOURCE: int
    _RESOLVE: int
    _MSG_TIMED_OUT: int
    _PARTITION_EOF: int
    _UNKNOWN_PARTITION: int
    _FS: int
    _UNKNOWN_TOPIC: int
    _ALL_BROKERS_DOWN: int
    _INVALID_ARG: int
    _TIMED_OUT: int
    _QUEUE_FULL: int
    _ISR_INSUFF: int
    _NODE_UPDATE: int
    _SSL: int
    _WAIT_COORD: int
    _UNKNOWN_GROUP: int
    _IN_PROGRESS: int
    _PREV_IN_PROGRESS: int
    _EXISTING_SUBSCRIPTION: int
    _ASSIGN_PARTITIONS: int
    _REVOKE_PARTITIONS: int
    _CONFLICT: int
    _STATE: int
    _UNKNOWN_PROTOCOL: int
    _NOT_IMPLEMENTED: int
    _AUTHENTICATION: int
    _NO_OFFSET: int
    _OUTDATED: int
    _TIMED_OUT_QUEUE: int
    _UNSUPPORTED_FEATURE: int
    _WAIT_CACHE: int
    _INTR: int
    _KEY_SERIALIZATION: int
    _VALUE_SERIALIZATION: int
    _KEY_DESERIALIZATION: int
    _VALUE_DESERIALIZATION: int
    _PARTIAL: int
    _READ_ONLY: int
    _NOENT: int
    _UNDERFLOW: int
    _INVALID_TYPE: int
    _RETRY: int
    _PURGE_QUEUE: int
    _PURGE_INFLIGHT: int
    _FATAL: int
    _INCONSISTENT: int
    _GAPLESS_GUARANTEE: int
    _MAX_POLL_EXCEEDED: int
    _UNKNOWN_BROKER: int
    _NOT_CONFIGURED: int
    _FENCED: int
    _APPLICATION: int
    _ASSIGNMENT_LOST: int
    _NOOP: int
    _AUTO_OFFSET_RESET: int
    _LOG_TRUNCATION: int
    _INVALID_DIFFERENT_RECORD: int
    _DESTROY_BROKER: int
    # Kafka protocol codes (librdkafka's names where they differ from Apache Kafka's).
    UNKNOWN: int
    NO_ERROR: int
    OFFSET_OUT_OF_RANGE: int
    INVALID_MSG: int
    UNKNOWN_TOPIC_OR_PART: int
    INVALID_MSG_SIZE: int
    LEADER_NOT_AVAILABLE: int
    NOT_LEADER_FOR_PARTITION: int
    REQUEST_TIMED_OUT: int
    BROKER_NOT_AVAILABLE: int
    REPLICA_NOT_AVAILABLE: int
    MSG_SIZE_TOO_LARGE: int
    STALE_CTRL_EPOCH: int
    OFFSET_METADATA_TOO_LARGE: int
    NETWORK_EXCEPTION: int
    COORDINATOR_LOAD_IN_PROGRESS: int
    COORDINATOR_NOT_AVAILABLE: int
    NOT_COORDINATOR: int
    TOPIC_EXCEPTION: int
    RECORD_LIST_TOO_LARGE: int
    NOT_ENOUGH_REPLICAS: int
    NOT_ENOUGH_REPLICAS_AFTER_APPEND: int
    INVALID_REQUIRED_ACKS: int
    ILLEGAL_GENERATION: int
    INCONSISTENT_GROUP_PROTOCOL: int
    INVALID_GROUP_ID: int
    UNKNOWN_MEMBER_ID: int
    INVALID_SESSION_TIMEOUT: int
    REBALANCE_IN_PROGRESS: int
    INVALID_COMMIT_OFFSET_SIZE: int
    TOPIC_AUTHORIZATION_FAILED: int
    GROUP_AUTHORIZATION_FAILED: int
    CLUSTER_AUTHORIZATION_FAILED: int
    INVALID_TIMESTAMP: int
    UNSUPPORTED_SASL_MECHANISM: int
    ILLEGAL_SASL_STATE: int
    UNSUPPORTED_VERSION: int
    TOPIC_ALREADY_EXISTS: int
    INVALID_PARTITIONS: int
    INVALID_REPLICATION_FACTOR: int
    INVALID_REPLICA_ASSIGNMENT: int
    INVALID_CONFIG: int
    NOT_CONTROLLER: int
    INVALID_REQUEST: int
    UNSUPPORTED_FOR_MESSAGE_FORMAT: int
    POLICY_VIOLATION: int
    OUT_OF_ORDER_SEQUENCE_NUMBER: int
    DUPLICATE_SEQUENCE_NUMBER: int
    INVALID_PRODUCER_EPOCH: int
    INVALID_TXN_STATE: int
    INVALID_PRODUCER_ID_MAPPING: int
    INVALID_TRANSACTION_TIMEOUT: int
    CONCURRENT_TRANSACTIONS: int
    TRANSACTION_COORDINATOR_FENCED: int
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED: int
    SECURITY_DISABLED: int
    OPERATION_NOT_ATTEMPTED: int
    KAFKA_STORAGE_ERROR: int
    LOG_DIR_NOT_FOUND: int
    SASL_AUTHENTICATION_FAILED: int
    UNKNOWN_PRODUCER_ID: int
    REASSIGNMENT_IN_PROGRESS: int
    DELEGATION_TOKEN_AUTH_DISABLED: int
    DELEGATION_TOKEN_NOT_FOUND: int
    DELEGATION_TOKEN_OWNER_MISMATCH: int
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: int
    DELEGATION_TOKEN_AUTHORIZATION_FAILED: int
    DELEGATION_TOKEN_EXPIRED: int
    INVALID_PRINCIPAL_TYPE: int
    NON_EMPTY_GROUP: int
    GROUP_ID_NOT_FOUND: int
    FETCH_SESSION_ID_NOT_FOUND: int
    INVALID_FETCH_SESSION_EPOCH: int
    LISTENER_NOT_FOUND: int
    TOPIC_DELETION_DISABLED: int
    FENCED_LEADER_EPOCH: int
    UNKNOWN_LEADER_EPOCH: int
    UNSUPPORTED_COMPRESSION_TYPE: int
    STALE_BROKER_EPOCH: int
    OFFSET_NOT_AVAILABLE: int
    MEMBER_ID_REQUIRED: int
    PREFERRED_LEADER_NOT_AVAILABLE: int
    GROUP_MAX_SIZE_REACHED: int
    FENCED_INSTANCE_ID: int
    ELIGIBLE_LEADERS_NOT_AVAILABLE: int
    ELECTION_NOT_NEEDED: int
    NO_REASSIGNMENT_IN_PROGRESS: int
    GROUP_SUBSCRIBED_TO_TOPIC: int
    INVALID_RECORD: int
    UNSTABLE_OFFSET_COMMIT: int
    THROTTLING_QUOTA_EXCEEDED: int
    PRODUCER_FENCED: int
    RESOURCE_NOT_FOUND: int
    DUPLICATE_RESOURCE: int
    UNACCEPTABLE_CREDENTIAL: int
    INCONSISTENT_VOTER_SET: int
    INVALID_UPDATE_VERSION: int
    FEATURE_UPDATE_FAILED: int
    PRINCIPAL_DESERIALIZATION_FAILURE: int
    SNAPSHOT_NOT_FOUND: int
    POSITION_OUT_OF_RANGE: int
    UNKNOWN_TOPIC_ID: int
    DUPLICATE_BROKER_REGISTRATION: int
    BROKER_ID_NOT_REGISTERED: int
    INCONSISTENT_TOPIC_ID: int
    INCONSISTENT_CLUSTER_ID: int
    TRANSACTIONAL_ID_NOT_FOUND: int
    FETCH_SESSION_TOPIC_ID_ERROR: int
    INELIGIBLE_REPLICA: int
    NEW_LEADER_ELECTED: int
    OFFSET_MOVED_TO_TIERED_STORAGE: int
    FENCED_MEMBER_EPOCH: int
    UNRELEASED_INSTANCE_ID: int
    UNSUPPORTED_ASSIGNOR: int
    STALE_MEMBER_EPOCH: int
    MISMATCHED_ENDPOINT_TYPE: int
    UNSUPPORTED_ENDPOINT_TYPE: int
    UNKNOWN_CONTROLLER_ID: int
    UNKNOWN_SUBSCRIPTION_ID: int
    TELEMETRY_TOO_LARGE: int
    INVALID_REGISTRATION: int
    TRANSACTION_ABORTABLE: int
    INVALID_RECORD_STATE: int
    SHARE_SESSION_NOT_FOUND: int
    INVALID_SHARE_SESSION_EPOCH: int
    FENCED_STATE_EPOCH: int
    INVALID_VOTER_KEY: int
    DUPLICATE_VOTER: int
    VOTER_NOT_FOUND: int
    INVALID_REGULAR_EXPRESSION: int
    REBOOTSTRAP_REQUIRED: int
    STREAMS_INVALID_TOPOLOGY: int
    STREAMS_INVALID_TOPOLOGY_EPOCH: int
    STREAMS_TOPOLOGY_FENCED: int
    SHARE_SESSION_LIMIT_REACHED: int

@disjoint_base
class TopicPartition:
    topic: str
    partition: int
    offset: int
    metadata: Optional[str]
    leader_epoch: Optional[int]
    error: Optional[KafkaError]
    def __new__(
        cls,
        topic: str,
        partition: int = ...,
        offset: int = ...,
        metadata: Optional[str] = None,
        leader_epoch: Optional[int] = None,
    ) -> "TopicPartition": ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __lt__(self, other: "TopicPartition", /) -> bool: ...
    def __le__(self, other: "TopicPartition", /) -> bool: ...
    def __gt__(self, other: "TopicPartition", /) -> bool: ...
    def __ge__(self, other: "TopicPartition", /) -> bool: ...

@disjoint_base
class ThrottleEvent:
    """What ``throttle_cb`` receives: a broker throttled a request."""
    broker_name: str
    broker_id: int
    throttle_time: float
    def __new__(cls, broker_name: str, broker_id: int, throttle_time: float) -> "ThrottleEvent": ...

@disjoint_base
class Message:
    def __new__(
        cls,
        topic: Optional[str] = None,
        partition: Optional[int] = None,
        offset: Optional[int] = None,
        key: Optional[bytes] = None,
        value: Optional[bytes] = None,
        headers: _Headers = None,
        error: Optional[KafkaError] = None,
        timestamp: Optional[Tuple[int, int]] = None,
        latency: Optional[float] = None,
        leader_epoch: Optional[int] = None,
    ) -> "Message": ...
    def topic(self) -> Optional[str]: ...
    def partition(self) -> Optional[int]: ...
    def offset(self) -> Optional[int]: ...
    def key(self) -> Optional[bytes]: ...
    def value(self) -> Optional[bytes]: ...
    def headers(self) -> Optional[List[Tuple[str, Optional[bytes]]]]: ...
    def timestamp(self) -> Tuple[int, int]: ...
    def error(self) -> Optional[KafkaError]: ...
    def latency(self) -> Optional[float]: ...
    def leader_epoch(self) -> Optional[int]: ...
    def __len__(self) -> int: ...
    def set_value(self, value: Optional[bytes]) -> None: ...
    def set_key(self, key: Optional[bytes]) -> None: ...
    def set_headers(self, headers: _Headers) -> None: ...
    def set_topic(self, topic: Optional[str]) -> None: ...
    def set_error(self, error: Optional[KafkaError]) -> None: ...

@final
class BrokerMetadata:
    @property
    def id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...

@final
class PartitionMetadata:
    @property
    def id(self) -> int: ...
    @property
    def leader(self) -> int: ...
    @property
    def replicas(self) -> List[int]: ...
    @property
    def isrs(self) -> List[int]: ...
    @property
    def error(self) -> Optional[KafkaError]: ...

@final
class TopicMetadata:
    @property
    def topic(self) -> str: ...
    @property
    def partitions(self) -> Dict[int, PartitionMetadata]: ...
    @property
    def error(self) -> Optional[KafkaError]: ...

@final
class ClusterMetadata:
    @property
    def cluster_id(self) -> Optional[str]: ...
    @property
    def controller_id(self) -> int: ...
    @property
    def brokers(self) -> Dict[int, BrokerMetadata]: ...
    @property
    def topics(self) -> Dict[str, TopicMetadata]: ...
    @property
    def orig_broker_id(self) -> int: ...
    @property
    def orig_broker_name(self) -> str: ...

@disjoint_base
class Producer:
    def __new__(cls, conf: Optional[Dict[str, Any]] = None, **kwargs: Any) -> "Producer": ...
    def produce(
        self,
        topic: str,
        value: _Payload = None,
        key: _Payload = None,
        partition: int = ...,
        on_delivery: Optional[_DeliveryCallback] = None,
        timestamp: int = 0,
        headers: _Headers = None,
        callback: Optional[_DeliveryCallback] = None,
    ) -> None: ...
    def produce_batch(
        self,
        topic: str,
        values: List[Any],
        keys: Optional[List[_Payload]] = None,
        partition: int = ...,
        on_delivery: Optional[_DeliveryCallback] = None,
        timestamp: int = 0,
        headers: _Headers = None,
        callback: Optional[_DeliveryCallback] = None,
    ) -> int: ...
    def poll(self, timeout: Optional[float] = None) -> int: ...
    def flush(self, timeout: Optional[float] = None) -> int: ...
    def __len__(self) -> int: ...
    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None: ...
    def list_topics(self, topic: Optional[str] = None, timeout: Optional[float] = ...) -> ClusterMetadata: ...
    def cluster_id(self, timeout: Optional[float] = ...) -> Optional[str]: ...
    def close(self, timeout: Optional[float] = None) -> bool: ...
    def __enter__(self) -> "Producer": ...
    def __exit__(self, *_args: Any) -> bool: ...
    def init_transactions(self, timeout: Optional[float] = None) -> None: ...
    def begin_transaction(self) -> None: ...
    def commit_transaction(self, timeout: Optional[float] = None) -> None: ...
    def abort_transaction(self, timeout: Optional[float] = None) -> None: ...
    def send_offsets_to_transaction(
        self, positions: Any, group_metadata: Any, timeout: Optional[float] = None
    ) -> None: ...
    def set_sasl_credentials(self, username: str, password: str) -> None: ...

@disjoint_base
class Consumer:
    def __new__(cls, conf: Optional[Dict[str, Any]] = None, **kwargs: Any) -> "Consumer": ...
    def assign(self, partitions: Sequence[TopicPartition]) -> None: ...
    def incremental_assign(self, partitions: Sequence[TopicPartition]) -> None: ...
    def incremental_unassign(self, partitions: Sequence[TopicPartition]) -> None: ...
    def unassign(self) -> None: ...
    def assignment(self) -> List[TopicPartition]: ...
    def seek(self, partition: TopicPartition) -> None: ...
    def pause(self, partitions: Sequence[TopicPartition]) -> None: ...
    def resume(self, partitions: Sequence[TopicPartition]) -> None: ...
    def position(self, partitions: Sequence[TopicPartition]) -> List[TopicPartition]: ...
    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: Optional[float] = None, cached: bool = False
    ) -> Optional[Tuple[int, int]]: ...
    def offsets_for_times(
        self, partitions: Sequence[TopicPartition], timeout: Optional[float] = None
    ) -> List[TopicPartition]: ...
    def poll(self, timeout: Optional[float] = None) -> Optional[Message]: ...
    def consume(self, num_messages: int = 1, timeout: Optional[float] = ...) -> List[Message]: ...
    def list_topics(self, topic: Optional[str] = None, timeout: Optional[float] = ...) -> ClusterMetadata: ...
    def cluster_id(self, timeout: Optional[float] = ...) -> Optional[str]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Consumer": ...
    def __exit__(self, *_args: Any) -> bool: ...
    def subscribe(
        self,
        topics: List[str],
        on_assign: Optional[Callable[["Consumer", List[TopicPartition]], Any]] = None,
        on_revoke: Optional[Callable[["Consumer", List[TopicPartition]], Any]] = None,
        on_lost: Optional[Callable[["Consumer", List[TopicPartition]], Any]] = None,
    ) -> None: ...
    def unsubscribe(self) -> None: ...
    def commit(
        self, message: Optional[Message] = None, offsets: Optional[Sequence[TopicPartition]] = None,
        asynchronous: bool = True,
    ) -> Optional[List[TopicPartition]]: ...
    def committed(
        self, partitions: Sequence[TopicPartition], timeout: Optional[float] = None
    ) -> List[TopicPartition]: ...
    def store_offsets(
        self, message: Optional[Message] = None, offsets: Optional[Sequence[TopicPartition]] = None
    ) -> None: ...
    def consumer_group_metadata(self) -> "ConsumerGroupMetadata": ...
    def memberid(self) -> Optional[str]: ...
    def set_sasl_credentials(self, username: str, password: str) -> None: ...
    def _take(self) -> Optional[Message]: ...
    def _unsubscribe_now(self) -> None: ...
    def _fetch_async(
        self, future: "asyncio.Future[int]", event_loop: asyncio.AbstractEventLoop, timeout: float
    ) -> None: ...

@final
class ConsumerGroupMetadata:
    @property
    def group_id(self) -> str: ...
    @property
    def member_id(self) -> str: ...
    @property
    def generation_id(self) -> int: ...
    @property
    def group_instance_id(self) -> Optional[str]: ...

@final
class _AIOProducer:
    def __new__(
        cls, event_loop: asyncio.AbstractEventLoop, conf: Optional[Dict[str, Any]] = None, **kwargs: Any
    ) -> "_AIOProducer": ...
    def send(
        self,
        future: "asyncio.Future[Message]",
        topic: str,
        value: _Payload = None,
        key: _Payload = None,
        partition: int = ...,
        timestamp: int = 0,
        headers: _Headers = None,
    ) -> None: ...
    def flush(self, future: "asyncio.Future[int]") -> None: ...
    def close(self, future: "asyncio.Future[int]") -> None: ...
    def __len__(self) -> int: ...
    def list_topics(self, topic: Optional[str] = None, timeout: Optional[float] = ...) -> ClusterMetadata: ...

@final
class _AdminClient:
    def __new__(cls, conf: Optional[Dict[str, Any]] = None, **kwargs: Any) -> "_AdminClient": ...
    def create_topics(
        self, topics: List[Tuple[str, int, int, List[Tuple[str, str]]]], validate_only: bool,
        operation_timeout: Optional[float], timeout: Optional[float], futures: List[Any],
    ) -> None: ...
    def delete_topics(
        self, topics: List[str], operation_timeout: Optional[float], timeout: Optional[float],
        futures: List[Any],
    ) -> None: ...
    def create_partitions(
        self, topics: List[Tuple[str, int]], validate_only: bool,
        operation_timeout: Optional[float], timeout: Optional[float], futures: List[Any],
    ) -> None: ...
    def list_groups(self, timeout: Optional[float], future: Any) -> None: ...
    def describe_groups(
        self, groups: List[str], timeout: Optional[float], futures: List[Any]
    ) -> None: ...
    def delete_groups(
        self, groups: List[str], timeout: Optional[float], futures: List[Any]
    ) -> None: ...
    def list_group_offsets(
        self, group: str, partitions: Optional[List[Tuple[str, int]]],
        timeout: Optional[float], future: Any,
    ) -> None: ...
    def alter_group_offsets(
        self, group: str, offsets: List[Tuple[str, int, int]], timeout: Optional[float],
        future: Any,
    ) -> None: ...
    def describe_configs(
        self, resources: List[Tuple[int, str]], timeout: Optional[float], futures: List[Any]
    ) -> None: ...
    def alter_configs(
        self, changes: List[Tuple[int, str, List[Tuple[str, str]]]], validate_only: bool,
        timeout: Optional[float], futures: List[Any],
    ) -> None: ...
    def incremental_alter_configs(
        self, changes: List[Tuple[int, str, List[Tuple[str, int, Optional[str]]]]],
        validate_only: bool, timeout: Optional[float], futures: List[Any],
    ) -> None: ...
    def describe_cluster(self, timeout: Optional[float], future: Any) -> None: ...
    def describe_topics(
        self, topics: List[str], timeout: Optional[float], futures: List[Any]
    ) -> None: ...
    def poll(self, timeout: Optional[float] = None) -> int: ...
    def describe_client_quotas(
        self, components: List[Tuple[str, int, Optional[str]]], strict: bool,
        timeout: Optional[float], future: Any,
    ) -> None: ...
    def alter_client_quotas(
        self,
        alterations: List[Tuple[List[Tuple[str, Optional[str]]], List[Tuple[str, Optional[float]]]]],
        validate_only: bool, timeout: Optional[float], futures: List[Any],
    ) -> None: ...
    def list_offsets(
        self, queries: List[Tuple[str, int, int]], read_committed: bool,
        timeout: Optional[float], futures: List[Any]
    ) -> None: ...
    def delete_records(
        self, before: List[Tuple[str, int, int]], operation_timeout: Optional[float],
        timeout: Optional[float], futures: List[Any],
    ) -> None: ...
    def create_acls(
        self, acls: List[Tuple[int, str, int, str, str, int, int]], timeout: Optional[float],
        futures: List[Any],
    ) -> None: ...
    def describe_acls(
        self,
        filter: Tuple[int, Optional[str], int, Optional[str], Optional[str], int, int],
        timeout: Optional[float],
        future: Any,
    ) -> None: ...
    def delete_acls(
        self,
        filters: List[Tuple[int, Optional[str], int, Optional[str], Optional[str], int, int]],
        timeout: Optional[float],
        futures: List[Any],
    ) -> None: ...
    def describe_user_scram_credentials(
        self, users: Optional[List[str]], timeout: Optional[float], future: Any
    ) -> None: ...
    def alter_user_scram_credentials(
        self,
        alterations: List[Tuple[str, int, int, Optional[bytes], Optional[bytes]]],
        timeout: Optional[float],
        futures: List[Any],
    ) -> None: ...
    def list_topics(self, topic: Optional[str] = None, timeout: Optional[float] = ...) -> ClusterMetadata: ...

@final
class AvroSchema:
    """A compiled Avro schema (odradek.schema_registry.avro encodes and decodes with it)."""
    def __new__(cls, schema: str, named: List[str] = ...) -> "AvroSchema": ...
    def canonical(self) -> str: ...
    def name(self) -> Optional[str]: ...
    def encode(self, obj: Any) -> bytes: ...
    def encode_framed(self, schema_id: int, obj: Any) -> bytes: ...
    def decode(self, data: bytes) -> Any: ...
    def decode_framed(self, schema_id: int, data: bytes) -> Any: ...

def read_header(data: bytes) -> Tuple[int, int]: ...

_Record = Tuple[int, str, int, Optional[str], int, str, int, List[Tuple[str, int]], Optional[str],
                Optional[str], List[Tuple[str, int, str]]]

@final
class _TestCluster:
    """The in-process test cluster behind odradek.testing.Cluster."""
    def __new__(cls, brokers: int, partitions: int, topics: List[Tuple[str, int]],
                config: List[Tuple[str, str]], storage: str,
                record_requests: bool) -> "_TestCluster": ...
    def bootstrap(self) -> str: ...
    def broker_ids(self) -> List[int]: ...
    def broker_address(self, broker: int) -> Optional[str]: ...
    def data_dir(self) -> str: ...
    def create_topic(self, name: str, partitions: int) -> None: ...
    def add_rule(self, api: Union[str, int], action: str, error: Optional[Union[str, int]],
                 delay_ms: int, times: Optional[int], broker: Optional[int],
                 topic: Optional[str], partition: Optional[int],
                 client_id: Optional[str]) -> int: ...
    def remove_rule(self, id: int) -> bool: ...
    def clear_rules(self) -> None: ...
    def pending_rules(self) -> int: ...
    def record_requests(self, on: bool) -> None: ...
    def requests(self, clear: bool) -> List[_Record]: ...
    def close_connections(self, broker: Optional[int], client_id: Optional[str]) -> int: ...
    def connection_count(self, broker: int) -> int: ...
    def set_broker_down(self, broker: int) -> None: ...
    def set_broker_up(self, broker: int) -> None: ...
    def is_broker_up(self, broker: int) -> bool: ...
    def set_broker_rtt(self, broker: int, rtt_ms: int) -> None: ...
    def set_partition_leader(self, topic: str, partition: int, leader: int) -> int: ...
    def set_partition_follower(self, topic: str, partition: int,
                               follower: Optional[int]) -> None: ...
    def partition_leader(self, topic: str, partition: int) -> Tuple[int, int, Optional[int]]: ...
    def set_coordinator(self, kind: str, key: str, broker: Optional[int]) -> None: ...
    def coordinator(self, kind: str, key: str) -> int: ...
    def set_api_version(self, api: Union[str, int], min: int, max: int) -> None: ...
    def clear_api_version(self, api: Union[str, int]) -> None: ...
    def stop(self) -> None: ...
    def is_running(self) -> bool: ...
