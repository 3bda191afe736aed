'use strict'
// librdkafka's statistics as STATS events (odradek's extension): `statistics.interval.ms` in the
// producer's and consumer's config; every snapshot validates against docs/statistics.schema.json
// (written from librdkafka's STATISTICS.md, checked against confluent-kafka's output by the
// Python suite), and its numbers match the work done: deliveries, reads, commits, lag.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('fs')
const path = require('path')
const { Kafka, KafkaJSNonRetriableError } = require('..')
const { startBroker, uniqueName, waitFor } = require('./helpers/broker')
const { validate } = require('./helpers/json_schema')

const SCHEMA = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'statistics.schema.json'), 'utf8'))
const COUNT = 50

let broker, kafka, admin

before(async () => {
  broker = await startBroker()
  kafka = new Kafka({ clientId: 'stats-test', brokers: [broker.bootstrap], logLevel: 0 })
  admin = kafka.admin()
  await admin.connect()
})

after(async () => {
  await admin.disconnect()
  await broker.stop()
})

/** Collects the parsed snapshots of `client`'s STATS events. */
function collect (client) {
  const docs = []
  client.on(client.events.STATS, ({ payload }) => {
    assert.equal(typeof payload.message, 'string')
    docs.push(JSON.parse(payload.message))
  })
  return docs
}

test('the producer emits statistics in librdkafka schema with its deliveries', async () => {
  const topic = uniqueName('stats-p')
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  const producer = kafka.producer({ 'statistics.interval.ms': 100 })
  const docs = collect(producer)
  await producer.connect()
  await producer.send({ topic, messages: Array.from({ length: COUNT }, (_, i) => ({ value: `v${i}` })) })
  await waitFor(() => docs.some(d => d.txmsgs >= COUNT), { what: 'a snapshot with every delivery' })
  await producer.disconnect()
  const doc = docs.find(d => d.txmsgs >= COUNT)
  assert.deepEqual(validate(doc, SCHEMA), [])
  assert.equal(doc.type, 'producer')
  assert.equal(doc.client_id, 'stats-test')
  assert.equal(doc.topics[topic].partitions['0'].txmsgs, COUNT)
  assert.equal(doc.msg_cnt, 0)
  const batches = docs.reduce((n, d) => n + ((d.topics[topic] || {}).batchcnt || { sum: 0 }).sum, 0)
  assert.equal(batches, COUNT, 'every record sampled once in the batch windows')
  // Stopped with the producer: no event after disconnect.
  const seen = docs.length
  await new Promise(resolve => setTimeout(resolve, 300))
  assert.equal(docs.length, seen)
})

test('the consumer reports its offsets and lag', async () => {
  const topic = uniqueName('stats-c')
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: Array.from({ length: COUNT }, (_, i) => ({ value: `v${i}` })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: uniqueName('stats-g'), 'statistics.interval.ms': 100 })
  const docs = collect(consumer)
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let read = 0
  await consumer.run({ eachMessage: async () => { read++ } })
  const settled = (d) => {
    const p = ((d.topics[topic] || {}).partitions || {})['0']
    return p && p.committed_offset === COUNT && p.hi_offset === COUNT
  }
  await waitFor(() => docs.some(settled), { what: 'a snapshot with the commit' })
  await consumer.disconnect()
  assert.equal(read, COUNT)
  const doc = docs.find(settled)
  assert.deepEqual(validate(doc, SCHEMA), [])
  const p = doc.topics[topic].partitions['0']
  assert.equal(p.consumer_lag, 0)
  assert.equal(p.app_offset, COUNT)
  assert.equal(p.rxmsgs, COUNT)
  assert.equal(doc.cgrp.state, 'up')
  assert.equal(doc.cgrp.assignment_size, 1)
})

test('statistics.interval.ms out of librdkafka range is refused, naming it', async () => {
  const producer = kafka.producer({ 'statistics.interval.ms': -5 })
  await assert.rejects(producer.connect(), (e) => e instanceof KafkaJSNonRetriableError && /statistics\.interval\.ms/.test(e.message))
})
