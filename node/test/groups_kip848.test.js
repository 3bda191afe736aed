'use strict'
// Consumer groups on KIP-848's consumer protocol ('group.protocol': 'consumer', passed through
// as a librdkafka-style property): the broker assigns, members reconcile incrementally. Against
// our broker (fast heartbeats set here) or Apache Kafka with ODRADEK_TEST_BOOTSTRAP (started by
// scripts/test.sh with the same group.consumer.* values).
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka } = require('..')
const { startBroker, uniqueName, waitFor } = require('./helpers/broker')

const FAST = {
  'group.consumer.heartbeat.interval.ms': '500',
  'group.consumer.min.heartbeat.interval.ms': '500',
  'group.consumer.session.timeout.ms': '6000',
  'group.consumer.min.session.timeout.ms': '6000'
}
let broker, kafka, admin, producer

before(async () => {
  broker = await startBroker({ overrides: FAST })
  kafka = new Kafka({ clientId: 'kip848-test', brokers: [broker.bootstrap], logLevel: 0 })
  admin = kafka.admin()
  await admin.connect()
  producer = kafka.producer()
  await producer.connect()
})

after(async () => {
  await producer.disconnect()
  await admin.disconnect()
  await broker.stop()
})

test('two consumer-protocol members share the partitions and read everything once', async () => {
  const topic = uniqueName('k848')
  await admin.createTopics({ topics: [{ topic, numPartitions: 4 }] })
  const groupId = uniqueName('g848')
  const seen = [new Map(), new Map()]
  const consumers = [0, 1].map(() => kafka.consumer({ groupId, 'group.protocol': 'consumer' }))
  for (const [i, c] of consumers.entries()) {
    await c.connect()
    await c.subscribe({ topic, fromBeginning: true })
    await c.run({ eachMessage: async ({ partition, message }) => { seen[i].set(`${partition}:${message.offset}`, message.value.toString()) } })
  }
  await waitFor(() => consumers.every(c => c._native.assignment().length === 2), { what: 'two partitions each', timeoutMs: 60000 })
  const owned = consumers.map(c => c._native.assignment().map(tp => tp.partition))
  assert.deepEqual([...owned[0], ...owned[1]].sort(), [0, 1, 2, 3], 'every partition assigned exactly once')
  const messages = Array.from({ length: 80 }, (_, i) => ({ value: `m${i}`, partition: i % 4 }))
  await producer.send({ topic, messages })
  await waitFor(() => seen[0].size + seen[1].size >= 80, { what: '80 messages across the group', timeoutMs: 60000 })
  assert.equal(seen[0].size + seen[1].size, 80, 'no message twice')
  const description = await admin.describeGroups([groupId])
  assert.equal(description.groups[0].members.length, 2)
  assert.equal(description.groups[0].protocol, 'uniform', 'the broker-side assignor')
  // One leaves: the other takes everything.
  await consumers[1].disconnect()
  await waitFor(() => consumers[0]._native.assignment().length === 4, { what: 'the survivor owns all four', timeoutMs: 60000 })
  await consumers[0].disconnect()
})

test('KafkaJS session and heartbeat settings are refused with the consumer protocol, naming them', async () => {
  // connect() checks the consumer's whole configuration (its probe of the cluster uses it).
  const consumer = kafka.consumer({ groupId: uniqueName('g848bad'), 'group.protocol': 'consumer', sessionTimeout: 30000 })
  await assert.rejects(consumer.connect(), /session\.timeout\.ms.*group\.protocol=consumer/)
  await consumer.disconnect()
})
