'use strict'
// Admin: topics, metadata, offsets, groups, and per-item errors.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka, KafkaJSCreateTopicError, KafkaJSDeleteTopicError, KafkaJSProtocolError, KafkaJSError } = require('..')
const { startBroker, uniqueName, waitFor } = require('./helpers/broker')

let broker, kafka, admin

before(async () => {
  broker = await startBroker()
  kafka = new Kafka({ clientId: 'admin-test', brokers: [broker.bootstrap], logLevel: 0 })
  admin = kafka.admin()
  await admin.connect()
})

after(async () => {
  await admin.disconnect()
  await broker.stop()
})

test('createTopics, listTopics, fetchTopicMetadata, deleteTopics', async () => {
  const a = uniqueName('adm-a')
  const b = uniqueName('adm-b')
  assert.equal(await admin.createTopics({ topics: [{ topic: a, numPartitions: 3 }, { topic: b, numPartitions: 1, configEntries: [{ name: 'retention.ms', value: '60000' }] }] }), true)
  assert.equal(await admin.createTopics({ topics: [{ topic: a, numPartitions: 3 }] }), false, 'existing topic is not an error')
  assert.equal(await admin.createTopics({ validateOnly: true, topics: [{ topic: uniqueName('never'), numPartitions: 1 }] }), true)
  const topics = await admin.listTopics()
  assert.ok(topics.includes(a) && topics.includes(b))
  assert.ok(!topics.includes('__consumer_offsets'))
  const meta = await admin.fetchTopicMetadata({ topics: [a] })
  assert.equal(meta.topics[0].name, a)
  assert.deepEqual(meta.topics[0].partitions.map(p => p.partitionId), [0, 1, 2])
  assert.ok(meta.topics[0].partitions.every(p => p.leader >= 0 && p.isr.length === 1 && p.partitionErrorCode === 0))
  const all = await admin.fetchTopicMetadata()
  assert.ok(all.topics.some(t => t.name === b))
  // KafkaJS's `timeout` is the operation timeout sent with the request: checked, not ignored.
  await assert.rejects(admin.deleteTopics({ topics: [a], timeout: -1 }), /Invalid timeout -1/)
  await assert.rejects(admin.createTopics({ topics: [{ topic: a }], timeout: 'soon' }), /Invalid timeout soon/)
  await admin.deleteTopics({ topics: [a, b], timeout: 10000 })
  await waitFor(async () => !(await admin.listTopics()).includes(a), { what: 'deleted topic gone' })
  await assert.rejects(admin.fetchTopicMetadata({ topics: [a] }), (e) => e instanceof KafkaJSProtocolError && e.type === 'UNKNOWN_TOPIC_OR_PARTITION' && e.code === 3)
})

test('per-topic errors are KafkaJS errors naming the topic', async () => {
  await assert.rejects(admin.createTopics({ topics: [{ topic: uniqueName('bad'), numPartitions: 1, configEntries: [{ name: 'no.such.config', value: '1' }] }] }),
    (e) => e instanceof KafkaJSCreateTopicError && e.type === 'INVALID_CONFIG' && e.code === 40 && e.retriable === false && typeof e.topic === 'string')
  const missing = uniqueName('missing')
  await assert.rejects(admin.deleteTopics({ topics: [missing] }),
    (e) => e instanceof KafkaJSDeleteTopicError && e.type === 'UNKNOWN_TOPIC_OR_PARTITION' && e.topic === missing)
  await assert.rejects(kafka.admin().listTopics(), (e) => e instanceof KafkaJSError && /not connected/.test(e.message))
})

test('topic offsets, group offsets, listGroups and describeGroups', async () => {
  const topic = uniqueName('adm-off')
  await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] })
  const producer = kafka.producer()
  await producer.connect()
  const before = Date.now() - 1
  await producer.send({ topic, messages: [{ value: 'a', partition: 0 }, { value: 'b', partition: 0 }, { value: 'c', partition: 1 }] })
  await producer.disconnect()
  const offsets = await admin.fetchTopicOffsets(topic)
  assert.deepEqual(offsets, [{ partition: 0, offset: '2', high: '2', low: '0' }, { partition: 1, offset: '1', high: '1', low: '0' }])
  const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, before)
  assert.deepEqual(byTime, [{ partition: 0, offset: '0' }, { partition: 1, offset: '0' }])
  const future = await admin.fetchTopicOffsetsByTimestamp(topic, Date.now() + 3600e3)
  assert.deepEqual(future, [{ partition: 0, offset: '2' }, { partition: 1, offset: '1' }])

  const groupId = uniqueName('adm-g')
  const consumer = kafka.consumer({ groupId })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let n = 0
  await consumer.run({ eachMessage: async () => { n++ } })
  await waitFor(() => n >= 3, { what: 'three messages' })
  const { groups } = await admin.listGroups()
  assert.ok(groups.some(g => g.groupId === groupId && g.protocolType === 'consumer'))
  const { groups: [described] } = await admin.describeGroups([groupId])
  assert.equal(described.groupId, groupId)
  assert.equal(described.state, 'Stable')
  assert.equal(described.members.length, 1)
  assert.ok(Buffer.isBuffer(described.members[0].memberAssignment))
  assert.equal(described.members[0].clientId, 'admin-test')
  await consumer.disconnect()
  const fetched = await admin.fetchOffsets({ groupId, topics: [topic] })
  assert.deepEqual(fetched, [{ topic, partitions: [{ partition: 0, offset: '2', metadata: '' }, { partition: 1, offset: '1', metadata: '' }] }])
  const everything = await admin.fetchOffsets({ groupId })
  assert.deepEqual(everything.map(t => t.topic), [topic])
  const none = await admin.fetchOffsets({ groupId: uniqueName('nobody'), topics: [topic], resolveOffsets: true })
  assert.deepEqual(none[0].partitions.map(p => p.offset), ['2', '1'])
})
