"""Resource and pattern types, numbered as confluent-kafka (librdkafka) and Kafka's wire number
them (``BROKER`` is Kafka's ``CLUSTER`` resource, named ``kafka-cluster`` in ACLs)."""

from enum import Enum

RESOURCE_UNKNOWN = 0
RESOURCE_ANY = 1
RESOURCE_TOPIC = 2
RESOURCE_GROUP = 3
RESOURCE_BROKER = 4
RESOURCE_TRANSACTIONAL_ID = 5


class ResourceType(Enum):
    """Kafka resource types (values as confluent-kafka numbers them)."""

    UNKNOWN = RESOURCE_UNKNOWN
    ANY = RESOURCE_ANY
    TOPIC = RESOURCE_TOPIC
    GROUP = RESOURCE_GROUP
    BROKER = RESOURCE_BROKER
    TRANSACTIONAL_ID = RESOURCE_TRANSACTIONAL_ID

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ResourceType):
            return NotImplemented
        return bool(self.value < other.value)


class ResourcePatternType(Enum):
    """How an ACL's resource name is matched."""

    UNKNOWN = 0  #: Unknown
    ANY = 1  #: In a filter, matches any pattern type
    MATCH = 2  #: In a filter, every ACL that applies to the named resource
    LITERAL = 3  #: The name exactly (``*`` is the wildcard)
    PREFIXED = 4  #: Every resource whose name starts with the name

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ResourcePatternType):
            return NotImplemented
        return bool(self.value < other.value)
