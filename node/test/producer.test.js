'use strict'
// Producer: send, sendBatch, headers, keys, acks, compression, partitions, and errors, checked
// by reading the records back.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka, CompressionTypes, KafkaJSError } = require('..')
const { startBroker, uniqueName, waitFor } = require('./helpers/broker')

let broker, kafka, admin

before(async () => {
  broker = await startBroker()
  kafka = new Kafka({ clientId: 'producer-test', brokers: [broker.bootstrap], logLevel: 0 })
  admin = kafka.admin()
  await admin.connect()
})

after(async () => {
  await admin.disconnect()
  await broker.stop()
})

async function topicWith (partitions) {
  const topic = uniqueName('prod')
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }] })
  return topic
}

/** Reads `count` messages of `topic` from the beginning with a fresh group. */
async function readBack (topic, count) {
  const consumer = kafka.consumer({ groupId: uniqueName('reader') })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await consumer.run({ eachMessage: async ({ partition, message }) => { got.push({ partition, ...message }) } })
  try {
    await waitFor(() => got.length >= count, { what: `${count} messages of ${topic}` })
  } finally {
    await consumer.disconnect()
  }
  return got
}

test('send resolves per-partition metadata and the records read back intact', async () => {
  const topic = await topicWith(1)
  const producer = kafka.producer()
  await producer.connect()
  const ts = String(Date.now() - 60000)
  const first = await producer.send({
    topic,
    messages: [
      { key: 'k1', value: 'v1', headers: { h: 'x', multi: ['a', Buffer.from('b')] }, timestamp: ts },
      { key: Buffer.from([0, 1, 2]), value: Buffer.from([255, 0, 7]) },
      { value: null },
      { key: null, value: '' }
    ]
  })
  assert.deepEqual(first, [{ topicName: topic, partition: 0, errorCode: 0, baseOffset: '0', logAppendTime: '-1', logStartOffset: '-1' }])
  const second = await producer.send({ topic, messages: [{ value: 'after' }] })
  assert.equal(second[0].baseOffset, '4')
  await producer.disconnect()

  const got = await readBack(topic, 5)
  assert.deepEqual(got.map(m => m.offset), ['0', '1', '2', '3', '4'])
  assert.equal(got[0].key.toString(), 'k1')
  assert.equal(got[0].value.toString(), 'v1')
  assert.equal(got[0].timestamp, ts)
  assert.equal(got[0].headers.h.toString(), 'x')
  assert.deepEqual(got[0].headers.multi.map(String), ['a', 'b'])
  assert.deepEqual([...got[1].key], [0, 1, 2])
  assert.deepEqual([...got[1].value], [255, 0, 7])
  assert.ok(Buffer.isBuffer(got[1].value))
  assert.equal(got[2].value, null)
  assert.equal(got[2].key, null)
  assert.equal(got[3].value.length, 0)
  assert.equal(got[4].value.toString(), 'after')
})

test('sendBatch writes to several topics and explicit partitions', async () => {
  const a = await topicWith(3)
  const b = await topicWith(2)
  const producer = kafka.producer()
  await producer.connect()
  const result = await producer.sendBatch({
    topicMessages: [
      { topic: a, messages: [{ value: 'a2', partition: 2 }, { value: 'a0', partition: 0 }, { value: 'a2b', partition: 2 }] },
      { topic: b, messages: [{ value: 'b1', partition: 1 }] }
    ]
  })
  const summary = result.map(r => `${r.topicName === a ? 'a' : 'b'}:${r.partition}:${r.baseOffset}`).sort()
  assert.deepEqual(summary, ['a:0:0', 'a:2:0', 'b:1:0'])
  await producer.disconnect()
  const gotA = await readBack(a, 3)
  assert.deepEqual(gotA.filter(m => m.partition === 2).map(m => m.value.toString()), ['a2', 'a2b'])
  const gotB = await readBack(b, 1)
  assert.equal(gotB[0].partition, 1)
})

test('the same key always lands on the same partition', async () => {
  const topic = await topicWith(3)
  const producer = kafka.producer()
  await producer.connect()
  const messages = []
  for (let i = 0; i < 60; i++) messages.push({ key: `key-${i % 6}`, value: String(i) })
  await producer.send({ topic, messages })
  await producer.disconnect()
  const got = await readBack(topic, 60)
  const where = new Map()
  for (const m of got) {
    const k = m.key.toString()
    if (where.has(k)) assert.equal(where.get(k), m.partition, `key ${k} moved`)
    where.set(k, m.partition)
  }
  assert.ok(new Set(where.values()).size > 1, 'six keys should spread over more than one partition')
})

test('every compression codec and acks setting round-trips', async () => {
  const topic = await topicWith(1)
  const producer = kafka.producer()
  await producer.connect()
  const codecs = [CompressionTypes.None, CompressionTypes.GZIP, CompressionTypes.Snappy, CompressionTypes.LZ4, CompressionTypes.ZSTD]
  let n = 0
  for (const compression of codecs) {
    const messages = Array.from({ length: 20 }, (_, i) => ({ value: `codec-${compression}-${i}-${'x'.repeat(50)}` }))
    await producer.send({ topic, compression, messages })
    n += messages.length
  }
  await producer.send({ topic, acks: 1, messages: [{ value: 'acks1' }] })
  const zero = await producer.send({ topic, acks: 0, messages: [{ value: 'acks0' }] })
  assert.equal(zero.length, 1)
  n += 2
  await producer.disconnect()
  const got = await readBack(topic, n)
  assert.equal(got.length, n)
  assert.equal(got[0].value.toString(), `codec-0-0-${'x'.repeat(50)}`)
  assert.equal(got[n - 1].value.toString(), 'acks0')
})

test('Kafka property names pass through to the producer', async () => {
  const topic = await topicWith(1)
  const producer = kafka.producer({ 'linger.ms': 5, 'batch.size': 16384, 'compression.type': 'lz4' })
  await producer.connect()
  const r = await producer.send({ topic, messages: [{ value: 'passed through' }] })
  assert.equal(r[0].baseOffset, '0')
  await producer.disconnect()
  const bad = kafka.producer({ 'no.such.property': 1 })
  await assert.rejects(bad.connect(), (e) => e instanceof KafkaJSError && e.name === 'KafkaJSNonRetriableError' && /no\.such\.property/.test(e.message))
})

test('errors are KafkaJS-shaped: name, code, type, retriable', async () => {
  const producer = kafka.producer({ idempotent: true })
  await assert.rejects(producer.send({ topic: 'x', messages: [{ value: 'v' }] }),
    (e) => e instanceof KafkaJSError && e.name === 'KafkaJSError' && /disconnected/.test(e.message) && e.retriable === false)
  await producer.connect()
  await assert.rejects(producer.send({ topic: 'x', acks: 1, messages: [{ value: 'v' }] }),
    (e) => e.name === 'KafkaJSNonRetriableError' && e.retriable === false)
  await assert.rejects(producer.send({ topic: 'x', messages: [{ value: 12 }] }),
    (e) => e.name === 'KafkaJSNonRetriableError' && e.type === '_INVALID_ARG' && e.code === -186 && /value/.test(e.message))
  const topic = await topicWith(1)
  await assert.rejects(producer.send({ topic, messages: [{ value: 'v', partition: 7 }] }),
    (e) => e.name === 'KafkaJSProtocolError' && e.type === 'UNKNOWN_TOPIC_OR_PARTITION' && e.code === 3)
  await producer.disconnect()

  const strict = kafka.producer({ allowAutoTopicCreation: false, 'max.block.ms': 300 })
  await strict.connect()
  await assert.rejects(strict.send({ topic: uniqueName('missing'), messages: [{ value: 'v' }] }),
    (e) => e.name === 'KafkaJSProtocolError' && e.type === 'UNKNOWN_TOPIC_OR_PARTITION' && e.retriable === true)
  await strict.disconnect()
})

test('records for a missing topic are held and fail together at their delivery timeout', async () => {
  // The core holds records whose topic has no metadata: send() calls that are not awaited keep
  // their order and all fail at their own delivery timeout, not one max.block.ms after another.
  const producer = kafka.producer({ allowAutoTopicCreation: false, 'delivery.timeout.ms': 2000, 'request.timeout.ms': 1000 })
  await producer.connect()
  const topic = uniqueName('missing')
  const start = Date.now()
  const calls = []
  for (let i = 0; i < 200; i++) {
    calls.push(producer.send({ topic, messages: [{ value: `v${i}` }, { value: `w${i}` }] })
      .then(() => { throw new Error('delivered to a missing topic') }, (e) => ({ e, at: Date.now() - start })))
  }
  const issued = Date.now() - start
  const results = await Promise.all(calls)
  for (const { e } of results) {
    assert.equal(e.name, 'KafkaJSProtocolError')
    assert.equal(e.type, 'UNKNOWN_TOPIC_OR_PARTITION')
  }
  const times = results.map(r => r.at)
  assert.ok(Math.min(...times) >= 1900, `failed before the delivery timeout: ${Math.min(...times)} ms`)
  assert.ok(Math.max(...times) - Math.min(...times) < 1000 + issued, `spread ${Math.min(...times)}..${Math.max(...times)} ms`)
  await producer.disconnect()
})

test('held records count against buffer.memory: a full buffer rejects the call at once', async () => {
  const producer = kafka.producer({ allowAutoTopicCreation: false, 'buffer.memory': 4096, 'delivery.timeout.ms': 2000, 'request.timeout.ms': 1000 })
  await producer.connect()
  const topic = uniqueName('missing')
  const big = 'x'.repeat(1000)
  const first = producer.send({ topic, messages: [{ value: big }, { value: big }, { value: big }] })
    .then(() => null, (e) => e)
  const start = Date.now()
  await assert.rejects(producer.send({ topic, messages: [{ value: big }] }),
    (e) => e.name === 'KafkaJSError' && e.type === '_QUEUE_FULL' && e.retriable === true && /buffer\.memory/.test(e.message))
  assert.ok(Date.now() - start < 1000, 'refused without waiting')
  const e = await first
  assert.equal(e && e.type, 'UNKNOWN_TOPIC_OR_PARTITION')
  // The held records failed and gave their room back.
  await assert.rejects(producer.send({ topic, messages: [{ value: 'small' }] }),
    (err) => err.type === 'UNKNOWN_TOPIC_OR_PARTITION')
  await producer.disconnect()
})

test('send({ timeout }) becomes the request.timeout.ms of the producer that sends it', async () => {
  const topic = await topicWith(1)
  const timed = new Kafka({ clientId: 'timeout-test', brokers: [broker.bootstrap], logLevel: 0, requestTimeout: 20000 })
  const p = timed.producer({ 'delivery.timeout.ms': 60000 })
  await p.connect()
  try {
    const [first] = await p.send({ topic, timeout: 20000, messages: [{ value: 'x' }] })
    assert.equal(first.errorCode, 0)
    const [second] = await p.send({ topic, timeout: 5000, messages: [{ value: 'y' }] })
    assert.equal(second.errorCode, 0)
    // It reaches the Kafka producer: 200 s is more than its delivery.timeout.ms allows.
    await assert.rejects(p.send({ topic, timeout: 200000, messages: [{ value: 'z' }] }),
      (e) => /request\.timeout\.ms/.test(e.message) && /delivery\.timeout\.ms/.test(e.message))
    await assert.rejects(p.send({ topic, timeout: -1, messages: [{ value: 'z' }] }), /Invalid timeout -1/)
  } finally {
    await p.disconnect()
  }
  assert.deepEqual((await readBack(topic, 2)).map(m => m.value.toString()).sort(), ['x', 'y'])
  const txn = timed.producer({ transactionalId: `tx-timeout-${Date.now()}`, idempotent: true, maxInFlightRequests: 1 })
  await txn.connect()
  try {
    const t = await txn.transaction()
    await assert.rejects(t.send({ topic, timeout: 5000, messages: [{ value: 'w' }] }),
      (e) => e instanceof KafkaJSError && /request\.timeout\.ms/.test(e.message) && /20000/.test(e.message))
    await assert.rejects(t.send({ topic, compression: CompressionTypes.GZIP, messages: [{ value: 'w' }] }),
      (e) => e instanceof KafkaJSError && /compression\.type/.test(e.message))
    await t.send({ topic, timeout: 20000, compression: CompressionTypes.None, messages: [{ value: 'w' }] })
    await t.abort()
  } finally {
    await txn.disconnect()
  }
})
