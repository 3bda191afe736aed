'use strict'
// KafkaJS admin parity: createPartitions, describeConfigs, alterConfigs, describeCluster,
// deleteTopicRecords, setOffsets, resetOffsets and deleteGroups, with KafkaJS's result shapes
// and errors (run against our broker and, in the compatibility tier, Apache Kafka).
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const {
  Kafka, ConfigResourceTypes, KafkaJSError, KafkaJSProtocolError, KafkaJSNonRetriableError,
  KafkaJSDeleteGroupsError
} = require('..')
const { startBroker, uniqueName, waitFor } = require('./helpers/broker')

let broker, kafka, admin

before(async () => {
  broker = await startBroker()
  kafka = new Kafka({ clientId: 'admin-parity', brokers: [broker.bootstrap], logLevel: 0 })
  admin = kafka.admin()
  await admin.connect()
})

after(async () => {
  await admin.disconnect()
  await broker.stop()
})

async function produce (topic, partition, n) {
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: Array.from({ length: n }, (_, i) => ({ value: `v${i}`, partition })) })
  await producer.disconnect()
}

test('createPartitions raises the count and refuses a smaller one', async () => {
  const topic = uniqueName('parts')
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  assert.equal(await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] }), true)
  await waitFor(async () => (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length === 3, { what: '3 partitions' })
  await assert.rejects(admin.createPartitions({ topicPartitions: [{ topic, count: 2 }] }),
    (e) => e instanceof KafkaJSProtocolError && e.type === 'INVALID_PARTITIONS')
  await assert.rejects(admin.createPartitions({ topicPartitions: [] }), KafkaJSNonRetriableError)
  await assert.rejects(admin.createPartitions({ topicPartitions: [{ topic, count: 4, assignments: [[1]] }] }), /assignments/)
})

test('describeConfigs and alterConfigs of a topic; describeConfigs of a broker; describeCluster', async () => {
  const topic = uniqueName('cfg')
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'retention.ms', value: '60000' }] }] })
  const described = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }] })
  assert.equal(described.resources.length, 1)
  const r = described.resources[0]
  assert.equal(r.errorCode, 0)
  assert.equal(r.resourceName, topic)
  assert.deepEqual(r.configEntries.map(e => [e.configName, e.configValue, e.isDefault, e.configSource]), [['retention.ms', '60000', false, 1]])

  const altered = await admin.alterConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '120000' }] }] })
  assert.deepEqual(altered.resources.map(x => [x.resourceName, x.errorCode]), [[topic, 0]])
  await waitFor(async () => {
    const d = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }] })
    return d.resources[0].configEntries[0].configValue === '120000'
  }, { what: 'altered retention.ms' })
  await assert.rejects(admin.alterConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: 'soon' }] }] }), KafkaJSError)
  await assert.rejects(admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }], includeSynonyms: true }), /includeSynonyms/)

  const cluster = await admin.describeCluster()
  assert.ok(cluster.brokers.length >= 1 && typeof cluster.clusterId === 'string' && cluster.clusterId.length > 0)
  assert.ok(cluster.brokers.every(b => Number.isInteger(b.nodeId) && b.host && b.port > 0))
  const id = String(cluster.brokers[0].nodeId)
  const brokerConfigs = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.BROKER, name: id, configNames: ['log.retention.hours'] }] })
  assert.equal(brokerConfigs.resources[0].configEntries[0].configName, 'log.retention.hours')
})

test('deleteTopicRecords moves the low watermark', async () => {
  const topic = uniqueName('records')
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  await produce(topic, 0, 5)
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '3' }] })
  let offsets = await admin.fetchTopicOffsets(topic)
  assert.deepEqual(offsets.map(o => [o.partition, o.low, o.high]), [[0, '3', '5']])
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '-1' }] })
  offsets = await admin.fetchTopicOffsets(topic)
  assert.equal(offsets[0].low, '5')
  await assert.rejects(admin.deleteTopicRecords({ topic, partitions: [] }), KafkaJSNonRetriableError)
})

test('setOffsets, resetOffsets and deleteGroups', async () => {
  const topic = uniqueName('offsets')
  const groupId = uniqueName('g')
  await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] })
  await produce(topic, 0, 4)
  await produce(topic, 1, 2)
  await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '1' }, { partition: 1, offset: '2' }] })
  const read = async () => (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions
    .map(p => [p.partition, p.offset]).sort((a, b) => a[0] - b[0])
  assert.deepEqual(await read(), [[0, '1'], [1, '2']])
  await admin.resetOffsets({ groupId, topic, earliest: true })
  assert.deepEqual(await read(), [[0, '0'], [1, '0']])
  await admin.resetOffsets({ groupId, topic })
  assert.deepEqual(await read(), [[0, '4'], [1, '2']])

  assert.deepEqual(await admin.deleteGroups([groupId]), [{ groupId, errorCode: 0 }])
  const missing = uniqueName('never-a-group')
  await assert.rejects(admin.deleteGroups([missing]), (e) =>
    e instanceof KafkaJSDeleteGroupsError && e.groups.length === 1 && e.groups[0].groupId === missing &&
    e.groups[0].errorCode === 69)
})
