'use strict'
// KafkaJS's instrumentation events fed by the core: REQUEST (every answered request, with
// KafkaJS's payload), REQUEST_QUEUE_SIZE (requests waiting for an in-flight slot), HEARTBEAT,
// FETCH_START and FETCH. The core only builds request events once somebody listens.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka } = require('..')
const { startBroker, uniqueName, waitFor } = require('./helpers/broker')

let broker, kafka, admin

before(async () => {
  broker = await startBroker()
  kafka = new Kafka({ clientId: 'instr-test', brokers: [broker.bootstrap], logLevel: 0 })
  admin = kafka.admin()
  await admin.connect()
})

after(async () => {
  await admin.disconnect()
  await broker.stop()
})

test('REQUEST events carry KafkaJS payloads, also for a listener added after connect', async () => {
  const topic = uniqueName('instr-p')
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  const producer = kafka.producer()
  await producer.connect()
  const seen = []
  producer.on(producer.events.REQUEST, ({ payload }) => seen.push(payload))
  await producer.send({ topic, messages: [{ value: 'a' }, { value: 'b' }] })
  await waitFor(() => seen.some(p => p.apiName === 'Produce'), { what: 'a Produce REQUEST event' })
  await producer.disconnect()
  const p = seen.find(p => p.apiName === 'Produce')
  assert.equal(p.apiKey, 0)
  assert.equal(p.clientId, 'instr-test')
  assert.equal(p.broker, broker.bootstrap)
  assert.ok(Number.isInteger(p.correlationId) && p.correlationId > 0, JSON.stringify(p))
  assert.ok(p.apiVersion >= 3 && p.size > 0 && p.duration >= 0 && p.pendingDuration >= 0, JSON.stringify(p))
  assert.ok(p.sentAt >= p.createdAt && Math.abs(p.sentAt - Date.now()) < 60000, JSON.stringify(p))
})

test('REQUEST_QUEUE_SIZE reports requests waiting for an in-flight slot', async () => {
  const topic = uniqueName('instr-q')
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  const limited = kafka.admin({ 'max.in.flight.requests.per.connection': 1 })
  const sizes = []
  limited.on(limited.events.REQUEST_QUEUE_SIZE, ({ payload }) => sizes.push(payload))
  await limited.connect()
  await Promise.all(Array.from({ length: 8 }, () => limited.fetchTopicOffsets(topic)))
  await waitFor(() => sizes.some(s => s.queueSize >= 1), { what: 'a queued request' })
  await limited.disconnect()
  const s = sizes.find(s => s.queueSize >= 1)
  assert.equal(s.clientId, 'instr-test')
  assert.equal(typeof s.broker, 'string')
  assert.equal(sizes[sizes.length - 1].queueSize, 0, 'the queue drains')
})

test('the consumer emits HEARTBEAT, FETCH_START and FETCH', async () => {
  const topic = uniqueName('instr-c')
  await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] })
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: [{ value: 'x', partition: 0 }, { value: 'y', partition: 1 }] })
  await producer.disconnect()
  const groupId = uniqueName('instr-g')
  const consumer = kafka.consumer({ groupId, heartbeatInterval: 100 })
  const heartbeats = []
  const fetches = []
  let fetchStarts = 0
  consumer.on(consumer.events.HEARTBEAT, ({ payload }) => heartbeats.push(payload))
  consumer.on(consumer.events.FETCH, ({ payload }) => fetches.push(payload))
  consumer.on(consumer.events.FETCH_START, () => { fetchStarts++ })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let read = 0
  await consumer.run({ eachMessage: async () => { read++ } })
  await waitFor(() => read === 2 && heartbeats.length > 0, { what: 'both records and a heartbeat' })
  await consumer.disconnect()
  const hb = heartbeats[0]
  assert.equal(hb.groupId, groupId)
  assert.ok(hb.memberId.length > 0 && hb.groupGenerationId >= 1, JSON.stringify(hb))
  assert.ok(fetchStarts >= fetches.length && fetches.length > 0)
  assert.equal(fetches.reduce((n, f) => n + f.numberOfBatches, 0) >= 1, true)
  assert.ok(fetches.every(f => f.numberOfBatches >= 0 && f.duration >= 0))
})
