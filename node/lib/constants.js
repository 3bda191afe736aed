'use strict'
// KafkaJS's enums, with the values KafkaJS uses, so code comparing against them keeps working.

const CompressionTypes = { None: 0, GZIP: 1, Snappy: 2, LZ4: 3, ZSTD: 4 }

// KafkaJS needs codecs registered for everything but gzip; the core has all of them built in,
// so registering one is accepted and changes nothing.
const CompressionCodecs = { [CompressionTypes.GZIP]: () => ({}) }

/** Kafka's `compression.type` value for a KafkaJS compression type. */
function compressionName (type) {
  switch (type) {
    case undefined:
    case null:
    case CompressionTypes.None: return 'none'
    case CompressionTypes.GZIP: return 'gzip'
    case CompressionTypes.Snappy: return 'snappy'
    case CompressionTypes.LZ4: return 'lz4'
    case CompressionTypes.ZSTD: return 'zstd'
    default: return null
  }
}

const logLevel = { NOTHING: 0, ERROR: 1, WARN: 2, INFO: 4, DEBUG: 5 }

const ResourceTypes = { UNKNOWN: 0, ANY: 1, TOPIC: 2, GROUP: 3, CLUSTER: 4, TRANSACTIONAL_ID: 5, DELEGATION_TOKEN: 6 }
const ConfigResourceTypes = { UNKNOWN: 0, TOPIC: 2, BROKER: 4, BROKER_LOGGER: 8 }
// KafkaJS's ACL enums: the numbers of Kafka's wire protocol.
const AclResourceTypes = ResourceTypes
const ResourcePatternTypes = { UNKNOWN: 0, ANY: 1, MATCH: 2, LITERAL: 3, PREFIXED: 4 }
const AclOperationTypes = {
  UNKNOWN: 0,
  ANY: 1,
  ALL: 2,
  READ: 3,
  WRITE: 4,
  CREATE: 5,
  DELETE: 6,
  ALTER: 7,
  DESCRIBE: 8,
  CLUSTER_ACTION: 9,
  DESCRIBE_CONFIGS: 10,
  ALTER_CONFIGS: 11,
  IDEMPOTENT_WRITE: 12
}
const AclPermissionTypes = { UNKNOWN: 0, ANY: 1, DENY: 2, ALLOW: 3 }

// The core partitions like the Java client (murmur2 of the key; sticky for keyless records),
// which is what KafkaJS's DefaultPartitioner (= JavaCompatiblePartitioner) does for keyed
// records. These markers select it; any other function is called per message, as in KafkaJS.
const builtInPartitioner = () => () => undefined
const Partitioners = {
  DefaultPartitioner: builtInPartitioner,
  JavaCompatiblePartitioner: builtInPartitioner,
  LegacyPartitioner: builtInPartitioner
}

// KafkaJS's round-robin assigner, as a marker: the core assigns partitions itself.
const PartitionAssigners = { roundRobin: function roundRobin () { return { name: 'RoundRobinAssigner' } } }

module.exports = {
  CompressionTypes,
  CompressionCodecs,
  compressionName,
  logLevel,
  ResourceTypes,
  ConfigResourceTypes,
  AclResourceTypes,
  ResourcePatternTypes,
  AclOperationTypes,
  AclPermissionTypes,
  Partitioners,
  PartitionAssigners,
  builtInPartitioner
}
