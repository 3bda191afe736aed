'use strict'
// librdkafka's properties in the librdkafka-property form of the Node package
// (`require('odradek').KafkaJS`, @confluentinc/kafka-javascript's API): every property at its
// default builds a producer and a consumer that still round-trip, and realistic service
// configurations are accepted (docs/configuration.md).
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('fs')
const path = require('path')
const { KafkaJS } = require('..')
const { startBroker, uniqueName, waitFor } = require('./helpers/broker')

const TABLE = path.join(__dirname, '..', '..', 'client-core', 'src', 'librdkafka_properties.tsv')
// Set through the API (callables) or librdkafka's own feature list, never as strings.
const NOT_STRINGS = new Set(['builtin.features'])
// @confluentinc/kafka-javascript's KafkaJS API refuses these itself (it fixes their values), so
// do we: see node/README.md.
const REFUSED_BY_THE_PEER = new Set(['enable.auto.offset.store'])

/** Every property of `scope` ('P' or 'C') and '*' with a default, as strings. */
function librdkafkaDefaults (scope) {
  const out = {}
  for (const line of fs.readFileSync(TABLE, 'utf8').split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue
    const [, name, cp, , def, kind] = line.split('\t')
    if (kind === 'see dedicated API' || NOT_STRINGS.has(name) || REFUSED_BY_THE_PEER.has(name)) continue
    if (cp !== scope && cp !== '*') continue
    if (def === '' || def.includes('\\')) continue
    out[name] = def
  }
  return out
}

let broker, kafka

before(async () => {
  broker = await startBroker()
  kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: [broker.bootstrap], logLevel: KafkaJS.logLevel.NOTHING } })
})

after(async () => {
  await broker.stop()
})

test('every librdkafka property at its default still round-trips', async () => {
  const producerDefaults = librdkafkaDefaults('P')
  const consumerDefaults = librdkafkaDefaults('C')
  assert.ok(Object.keys(producerDefaults).length > 80 && Object.keys(consumerDefaults).length > 80)
  const topic = uniqueName('defaults')
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  await admin.disconnect()
  const producer = kafka.producer({ ...producerDefaults, 'linger.ms': 1, 'allow.auto.create.topics': true })
  await producer.connect()
  await producer.send({ topic, messages: Array.from({ length: 5 }, (_, i) => ({ value: `v${i}`, partition: 0 })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ ...consumerDefaults, kafkaJS: { groupId: uniqueName('defaults-g'), fromBeginning: true } })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic] })
  const seen = []
  try {
    await consumer.run({ eachMessage: async ({ message }) => { seen.push(message.value.toString()) } })
    await waitFor(() => seen.length >= 5, { what: 'five messages' })
  } finally {
    await consumer.disconnect()
  }
  assert.deepEqual(seen.sort(), ['v0', 'v1', 'v2', 'v3', 'v4'])
})

const REALISTIC = {
  'tuned producer': ['producer', {
    'linger.ms': 50, 'batch.num.messages': 10000, 'batch.size': 1000000, 'queue.buffering.max.kbytes': 1048576,
    'compression.codec': 'lz4', 'socket.nagle.disable': true, 'sticky.partitioning.linger.ms': 10,
    'enable.idempotence': true, 'queue.buffering.max.messages': 200000, 'statistics.interval.ms': 60000
  }],
  'tuned rack-aware consumer': ['consumer', {
    'fetch.wait.max.ms': 100, 'queued.min.messages': 10000, 'fetch.queue.backoff.ms': 0,
    'queued.max.messages.kbytes': 65536, 'client.rack': 'use1-az1', 'enable.partition.eof': false
  }],
  'cloud settings with debug': ['producer', {
    'socket.keepalive.enable': true, 'metadata.max.age.ms': 60000, 'topic.metadata.refresh.interval.ms': 30000,
    'broker.address.family': 'v4', debug: 'broker,protocol', 'api.version.request': true,
    'enable.metrics.push': false, 'client.dns.lookup': 'use_all_dns_ips'
  }],
  'KIP-848 consumer': ['consumer', {
    'group.protocol': 'consumer', 'group.remote.assignor': 'uniform', 'group.instance.id': 'worker-1',
    'max.poll.interval.ms': 60000
  }]
}

for (const [name, [kind, conf]] of Object.entries(REALISTIC)) {
  test(`a realistic configuration is accepted: ${name}`, async () => {
    const client = kind === 'producer'
      ? kafka.producer(conf)
      : kafka.consumer({ ...conf, kafkaJS: { groupId: uniqueName('realistic') } })
    await client.connect()
    await client.disconnect()
  })
}

test('shell properties the KafkaJS API fixes are refused at other values, naming them', async () => {
  for (const [name, value] of [['enable.partition.eof', true], ['delivery.report.only.error', true]]) {
    const client = name === 'enable.partition.eof'
      ? kafka.consumer({ [name]: value, kafkaJS: { groupId: 'x' } })
      : kafka.producer({ [name]: value })
    const attempt = name === 'enable.partition.eof'
      ? (async () => { await client.connect(); await client.subscribe({ topics: ['t'] }); await client.run({ eachMessage: async () => {} }) })()
      : client.connect()
    await assert.rejects(attempt, (e) => e.message.includes(name), name)
    await client.disconnect().catch(() => {})
  }
})

test('queue.buffering.max.messages bounds what one producer has unsettled', async () => {
  const topic = uniqueName('qfull')
  const producer = kafka.producer({ 'queue.buffering.max.messages': 3, 'allow.auto.create.topics': true })
  await producer.connect()
  await assert.rejects(
    producer.send({ topic, messages: Array.from({ length: 4 }, (_, i) => ({ value: `v${i}` })) }),
    (e) => e.code === -184 && /Queue full/.test(e.message)
  )
  await producer.send({ topic, messages: Array.from({ length: 3 }, (_, i) => ({ value: `v${i}` })) })
  await producer.disconnect()
})
