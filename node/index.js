'use strict'
// odradek: a Kafka client with KafkaJS's API on Odradek's Rust core.
//   const { Kafka } = require('odradek')   // instead of require('kafkajs')
//   const { Kafka } = require('odradek').KafkaJS   // instead of @confluentinc/kafka-javascript's
const { Kafka } = require('./lib/kafka')
const constants = require('./lib/constants')
const errors = require('./lib/errors')

const { fromNative, parse, ...errorClasses } = errors

module.exports = {
  Kafka,
  CompressionTypes: constants.CompressionTypes,
  CompressionCodecs: constants.CompressionCodecs,
  logLevel: constants.logLevel,
  Partitioners: constants.Partitioners,
  PartitionAssigners: constants.PartitionAssigners,
  ResourceTypes: constants.ResourceTypes,
  ConfigResourceTypes: constants.ConfigResourceTypes,
  AclResourceTypes: constants.AclResourceTypes,
  ResourcePatternTypes: constants.ResourcePatternTypes,
  AclOperationTypes: constants.AclOperationTypes,
  AclPermissionTypes: constants.AclPermissionTypes,
  ...errorClasses,
  // @confluentinc/kafka-javascript's KafkaJS namespace (lib/confluent_kafkajs.js).
  KafkaJS: require('./lib/confluent_kafkajs')
}
