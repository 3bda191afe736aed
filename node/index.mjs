// ESM entry: the same objects as the CommonJS entry.
import odradek from './index.js'

export const {
  Kafka,
  CompressionTypes,
  CompressionCodecs,
  logLevel,
  Partitioners,
  PartitionAssigners,
  ResourceTypes,
  ConfigResourceTypes,
  AclResourceTypes,
  ResourcePatternTypes,
  AclOperationTypes,
  AclPermissionTypes,
  KafkaJSError,
  KafkaJSNonRetriableError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
  KafkaJSOffsetOutOfRange,
  KafkaJSCreateTopicError,
  KafkaJSDeleteTopicError,
  KafkaJSDeleteGroupsError,
  KafkaJSDeleteTopicRecordsError,
  KafkaJSClientQuotaError,
  KafkaJSConnectionError,
  KafkaJSRequestTimeoutError,
  KafkaJSTimeout,
  KafkaJSNotImplemented,
  KafkaJSSASLAuthenticationError,
  KafkaJSAggregateError,
  KafkaJS
} = odradek

export default odradek
