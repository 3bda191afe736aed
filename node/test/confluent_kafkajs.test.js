'use strict'
// require('odradek').KafkaJS: @confluentinc/kafka-javascript's KafkaJS namespace. One script
// written against that package (admin, producer with librdkafka properties, consumers with
// eachMessage and eachBatch, commits, the package's refusals) runs on odradek; with
// ODRADEK_CONFLUENT_JS_DIR naming a directory where @confluentinc/kafka-javascript is installed
// (npm install @confluentinc/kafka-javascript there), the same script runs on it too, against
// the same broker.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('fs')
const path = require('path')
const { startBroker, uniqueName, waitFor, ROOT } = require('./helpers/broker')
const { KafkaJS } = require('..')

let broker
before(async () => { broker = await startBroker() })
after(async () => { if (broker) await broker.stop() })

/** Rejects with an error whose message matches `pattern` and whose code is `code`. */
async function refused (f, pattern, code) {
  await assert.rejects(f, (e) => {
    assert.match(e.message, pattern)
    if (code !== undefined) assert.equal(e.code, code, `${e.message}: code ${e.code}, expected ${code}`)
    return true
  })
}

/**
 * The application: written against @confluentinc/kafka-javascript's KafkaJS API only (`ns` is
 * its namespace, or odradek's). Asserts as it goes; resolves what it observed.
 */
async function application (ns, bootstrap) {
  const { Kafka, logLevel } = ns
  const clients = []
  const base = new Kafka({ kafkaJS: { brokers: [bootstrap], clientId: 'cfk-app', logLevel: logLevel.ERROR } })
  // Every client, to disconnect them all should an assertion fail.
  const kafka = {}
  for (const type of ['producer', 'consumer', 'admin']) kafka[type] = (config) => { const c = base[type](config); clients.push(c); return c }
  try {
    return await steps(ns, bootstrap, kafka)
  } finally {
    await Promise.all(clients.map(c => c.disconnect().catch(() => {})))
  }
}

async function steps (ns, bootstrap, kafka) {
  const { Kafka, CompressionTypes, ErrorCodes, KafkaJSAggregateError, isKafkaJSError } = ns
  const topic = uniqueName('cfk')

  const admin = kafka.admin()
  await admin.connect()
  assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] }), true)
  assert.ok((await admin.listTopics()).includes(topic))
  // Topic failures come together, each with its librdkafka code.
  await assert.rejects(admin.createTopics({ topics: [{ topic: 'not a valid name!', numPartitions: 1 }] }), (e) => {
    assert.ok(e instanceof KafkaJSAggregateError, e.name)
    assert.equal(e.errors[0].code, ErrorCodes.ERR_TOPIC_EXCEPTION)
    assert.equal(e.errors[0].topic, 'not a valid name!')
    return true
  })

  // acks and compression per producer; linger.ms is a librdkafka property.
  const producer = kafka.producer({ kafkaJS: { acks: -1, compression: CompressionTypes.GZIP }, 'linger.ms': 5 })
  await producer.connect()
  const sent = await producer.send({
    topic,
    messages: Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, value: `v${i}`, headers: { n: String(i) } }))
  })
  assert.ok(sent.length >= 1 && sent.every(r => r.topicName === topic && typeof r.baseOffset === 'string' && r.errorCode === 0), JSON.stringify(sent))
  // The package's recommended pattern: sends not awaited, then flush.
  const unawaited = []
  for (let i = 10; i < 20; i++) unawaited.push(producer.send({ topic, messages: [{ key: `k${i}`, value: `v${i}`, headers: { n: String(i) } }] }))
  await producer.flush({ timeout: 10000 })
  await Promise.all(unawaited)
  await producer.sendBatch({ topicMessages: [{ topic, messages: [{ key: 'k20', value: 'v20', headers: { n: '20' } }] }] })
  await refused(() => producer.send({ topic, acks: 1, messages: [{ value: 'x' }] }), /acks/, ErrorCodes.ERR__INVALID_ARG)
  await producer.disconnect()
  const total = 21

  // eachMessage, fromBeginning and autoCommit in the consumer's config: offsets of what was
  // handled are committed by disconnect.
  const group1 = uniqueName('cfk-g1')
  const consumer = kafka.consumer({ kafkaJS: { groupId: group1, fromBeginning: true }, 'fetch.wait.max.ms': 10 })
  await consumer.connect()
  await refused(() => consumer.subscribe({ topic, fromBeginning: true }), /fromBeginning/, ErrorCodes.ERR__INVALID_ARG)
  await consumer.subscribe({ topics: [topic] })
  await refused(() => consumer.run({ autoCommit: false, eachMessage: async () => {} }), /autoCommit/, ErrorCodes.ERR__INVALID_ARG)
  const seen = new Map()
  await consumer.run({
    eachMessage: async ({ topic: t, partition, message }) => {
      assert.equal(t, topic)
      seen.set(message.value.toString(), { partition, key: message.key.toString(), header: message.headers.n.toString(), offset: message.offset })
    }
  })
  await waitFor(() => seen.size === total, { what: `${total} messages with eachMessage (have ${seen.size})`, timeoutMs: 60000 })
  assert.deepEqual(consumer.assignment().map(tp => tp.partition).sort(), [0, 1])
  await consumer.disconnect()
  for (let i = 0; i < total; i++) {
    const m = seen.get(`v${i}`)
    assert.ok(m, `v${i} consumed`)
    assert.equal(m.key, `k${i}`)
    assert.equal(m.header, String(i))
  }
  const committedSum = (offsets) => offsets.flatMap(t => t.partitions).reduce((s, p) => s + Math.max(0, Number(p.offset)), 0)
  assert.equal(committedSum(await admin.fetchOffsets({ groupId: group1, topics: [topic] })), total, 'eachMessage offsets committed at disconnect')

  // eachBatch with autoCommit off and batches of at most 4 (js.consumer.max.batch.size); the
  // application commits what it was given.
  const group2 = uniqueName('cfk-g2')
  const batcher = kafka.consumer({ kafkaJS: { groupId: group2, fromBeginning: true, autoCommit: false }, 'js.consumer.max.batch.size': 4 })
  await batcher.connect()
  await batcher.subscribe({ topics: [topic] })
  const batched = []
  let largest = 0
  await batcher.run({
    eachBatch: async ({ batch }) => {
      largest = Math.max(largest, batch.messages.length)
      for (const m of batch.messages) batched.push(m.value.toString())
    }
  })
  await waitFor(() => batched.length === total, { what: `${total} messages with eachBatch (have ${batched.length})`, timeoutMs: 60000 })
  assert.ok(largest >= 1 && largest <= 4, `batches of at most 4, largest ${largest}`)
  assert.deepEqual([...batched].sort(), [...seen.keys()].sort())
  assert.equal(committedSum(await admin.fetchOffsets({ groupId: group2, topics: [topic] })), 0, 'nothing committed with autoCommit off')
  await waitFor(async () => {
    await batcher.commitOffsets()
    return committedSum(await admin.fetchOffsets({ groupId: group2, topics: [topic] })) === total
  }, { what: 'commitOffsets() to commit every handled message', timeoutMs: 30000 })
  const committed = await batcher.committed([{ topic, partition: 0 }, { topic, partition: 1 }])
  assert.equal(committed.reduce((s, p) => s + Number(p.offset), 0), total)

  // A transaction is the producer itself; it commits a record and the group's offsets together.
  const txProducer = kafka.producer({ kafkaJS: { transactionalId: uniqueName('cfk-tx') } })
  await txProducer.connect()
  assert.equal(await txProducer.transaction(), txProducer)
  assert.equal(txProducer.isActive(), true)
  await txProducer.send({ topic, messages: [{ key: 'tx', value: 'in a transaction' }] })
  await refused(() => txProducer.sendOffsets({ consumerGroupId: group2, topics: [{ topic, partitions: [{ partition: 0, offset: '1' }] }] }), /consumer/, ErrorCodes.ERR__INVALID_ARG)
  await txProducer.sendOffsets({ consumer: batcher, topics: [{ topic, partitions: [{ partition: 0, offset: '1' }] }] })
  await txProducer.commit()
  assert.equal(txProducer.isActive(), false)
  await txProducer.disconnect()
  const afterTxn = await admin.fetchOffsets({ groupId: group2, topics: [topic] })
  assert.equal(afterTxn[0].partitions.find(p => p.partition === 0).offset, '1', 'offsets committed with the transaction')
  await waitFor(() => batched.includes('in a transaction'), { what: 'the committed transactional record', timeoutMs: 30000 })
  await batcher.disconnect()

  // librdkafka properties reach the client, which names the one it refuses.
  await refused(async () => {
    const p = kafka.producer({ 'batch.size': 'large' })
    try { await p.connect() } finally { await p.disconnect().catch(() => {}) }
  }, /batch\.size/)
  await refused(async () => {
    const p = kafka.producer({ debug: 'nonsense' })
    try { await p.connect() } finally { await p.disconnect().catch(() => {}) }
  }, /"debug"/)
  // What the package refuses, by name.
  await refused(async () => {
    const p = kafka.producer({ kafkaJS: { createPartitioner: () => () => 0 } })
    await p.connect()
  }, /createPartitioner/, ErrorCodes.ERR__NOT_IMPLEMENTED)
  await refused(async () => new Kafka({ brokers: [bootstrap] }), /brokers.*kafkaJS/s)
  await refused(async () => {
    const c = kafka.consumer({ kafkaJS: { groupId: group1, autoCommitThreshold: 10 } })
    await c.connect()
  }, /autoCommitThreshold/, ErrorCodes.ERR__NOT_IMPLEMENTED)
  await refused(async () => {
    const k = new Kafka({ kafkaJS: { brokers: [bootstrap], ssl: { rejectUnauthorized: false } } })
    await k.producer().connect()
  }, /ssl/, ErrorCodes.ERR__INVALID_ARG)

  await admin.deleteTopics({ topics: [topic] })
  await admin.disconnect()
  return { consumed: seen.size, batched: batched.length, largestBatch: largest, isKafkaJSError: isKafkaJSError(new ns.KafkaJSError('x')) }
}

test('a @confluentinc/kafka-javascript application runs on require("odradek").KafkaJS', async () => {
  const observed = await application(KafkaJS, broker.bootstrap)
  assert.deepEqual(observed, { consumed: 21, batched: 22, largestBatch: observed.largestBatch, isKafkaJSError: true })
})

const peerDir = process.env.ODRADEK_CONFLUENT_JS_DIR
test('the same application on @confluentinc/kafka-javascript itself (ODRADEK_CONFLUENT_JS_DIR)', { skip: !peerDir && 'ODRADEK_CONFLUENT_JS_DIR is not set' }, async () => {
  const peer = require(require.resolve('@confluentinc/kafka-javascript', { paths: [peerDir] })).KafkaJS
  const observed = await application(peer, broker.bootstrap)
  assert.deepEqual(observed, { consumed: 21, batched: 22, largestBatch: observed.largestBatch, isKafkaJSError: true })
})

test('the namespace exports what the package exports, with its values', () => {
  const names = ['Kafka', 'KafkaJSError', 'KafkaJSPartialMessageError', 'KafkaJSProtocolError', 'KafkaJSConnectionError',
    'KafkaJSRequestTimeoutError', 'KafkaJSSASLAuthenticationError', 'KafkaJSOffsetOutOfRange', 'KafkaJSGroupCoordinatorNotFound',
    'KafkaJSNotImplemented', 'KafkaJSTimeout', 'KafkaJSCreateTopicError', 'KafkaJSDeleteGroupsError', 'KafkaJSDeleteTopicRecordsError',
    'KafkaJSAggregateError', 'KafkaJSNoBrokerAvailableError', 'isRebalancing', 'isKafkaJSError', 'ErrorCodes', 'logLevel',
    'PartitionAssigners', 'PartitionAssignors', 'CompressionTypes', 'ConsumerGroupTypes', 'ConsumerGroupStates', 'AclOperationTypes', 'IsolationLevel']
  assert.deepEqual(Object.keys(KafkaJS).sort(), [...names].sort())
  assert.deepEqual(KafkaJS.logLevel, { NOTHING: 0, ERROR: 1, WARN: 2, INFO: 3, DEBUG: 4 })
  assert.equal(KafkaJS.CompressionTypes.GZIP, 'gzip')
  assert.equal(KafkaJS.PartitionAssigners.cooperativeSticky, 'cooperative-sticky')
  assert.equal(KafkaJS.ErrorCodes.ERR__QUEUE_FULL, -184)
  assert.equal(KafkaJS.ErrorCodes.ERR_UNKNOWN_TOPIC_OR_PART, 3)
  assert.equal(KafkaJS.ErrorCodes.ERR_GROUP_COORDINATOR_NOT_AVAILABLE, 15)
  // The errors odradek's clients throw are the namespace's classes.
  assert.ok(new KafkaJS.KafkaJSNoBrokerAvailableError('x') instanceof KafkaJS.KafkaJSConnectionError)
  assert.ok(KafkaJS.isKafkaJSError(new (require('..').KafkaJSNonRetriableError)('x')))
  assert.equal(KafkaJS.isRebalancing({ code: 27 }), true)
  assert.equal(KafkaJS.isRebalancing({ code: 3 }), false)
})

test('the ESM entry exports the same namespace', async () => {
  const { runNode } = require('./helpers/run')
  const entry = JSON.stringify(path.join(__dirname, '..', 'index.mjs'))
  const r = await runNode(['--input-type=module', '-e', `import { KafkaJS } from ${entry}; import def from ${entry};
console.log(JSON.stringify({ same: KafkaJS === def.KafkaJS, kafka: typeof KafkaJS.Kafka, info: KafkaJS.logLevel.INFO }))`])
  assert.equal(r.code, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), { same: true, kafka: 'function', info: 3 })
})

test('ErrorCodes names every code odradek raises as librdkafka does (bindings/src/codes.rs)', { skip: !fs.existsSync(path.join(ROOT, 'bindings/src/codes.rs')) && 'not in the repository' }, () => {
  const codes = fs.readFileSync(path.join(ROOT, 'bindings/src/codes.rs'), 'utf8')
  const kafka = fs.readFileSync(path.join(ROOT, 'client-core/src/error_code.rs'), 'utf8')
  const expected = {}
  for (const [, code, name] of codes.matchAll(/= (-\d+), "_(\w+)"/g)) expected[`ERR__${name}`] = Number(code)
  const renames = new Map([...codes.matchAll(/\((-?\d+), "(\w+)"\),/g)].map(([, c, n]) => [Number(c), n]))
  for (const [, code, name] of kafka.matchAll(/\(\w+, (-?\d+), "(\w+)", (?:true|false)\)/g)) {
    expected[`ERR_${renames.get(Number(code)) || name}`] = Number(code)
  }
  assert.ok(Object.keys(expected).length > 190)
  for (const [name, code] of Object.entries(expected)) assert.equal(KafkaJS.ErrorCodes[name], code, name)
})

test('kafkaJS options are refused by name where the package or odradek cannot take them', async () => {
  const kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: ['127.0.0.1:1'] } })
  const cases = [
    [() => kafka.producer({ idempotent: true }), /'idempotent' is a KafkaJS option.*kafkaJS block/],
    [() => kafka.producer({ kafkaJS: { groupId: 'g' } }), /'groupId' property is not supported in a producer's kafkaJS block/],
    [() => kafka.producer({ kafkaJS: { compression: 1 } }), /'compression' property must be one of CompressionTypes/],
    [() => kafka.producer({ 'dr_cb': () => {} }), /'dr_cb' is not supported/],
    [() => kafka.producer({ nonsense: 1 }), /No such configuration property: "nonsense"/],
    [() => kafka.consumer({ kafkaJS: { groupId: 'g' }, 'enable.auto.offset.store': false }), /enable\.auto\.offset\.store/],
    [() => kafka.consumer({ kafkaJS: { groupId: 'g' }, 'js.consumer.max.cache.size.per.worker.ms': 500 }), /js\.consumer\.max\.cache\.size\.per\.worker\.ms/],
    [() => kafka.consumer({ kafkaJS: { groupId: 'g', partitionAssigners: ['range'] }, 'group.protocol': 'consumer' }), /partitionAssigners is not supported when group.protocol/],
    [() => new KafkaJS.Kafka({ kafkaJS: { brokers: ['b:1'], retry: { factor: 0.3 } } }).admin(), /retry\.factor/],
    [() => new KafkaJS.Kafka({ kafkaJS: { brokers: ['b:1'], logLevel: 5 } }).admin(), /log level/],
    [() => new KafkaJS.Kafka({ kafkaJS: { brokers: () => ['b:1'] } }).admin(), /'brokers' property must be an array/]
  ]
  for (const [f, pattern] of cases) {
    assert.throws(f, (e) => {
      assert.ok(KafkaJS.isKafkaJSError(e), e.stack)
      assert.match(e.message, pattern)
      assert.ok(e.code === KafkaJS.ErrorCodes.ERR__INVALID_ARG || e.code === KafkaJS.ErrorCodes.ERR__NOT_IMPLEMENTED, `${e.message}: ${e.code}`)
      assert.ok(e.type.startsWith('ERR__'), e.type)
      return true
    })
  }
  const admin = kafka.admin()
  await refused(() => admin.createTopics({ topics: [{ topic: 't' }], validateOnly: true }), /validateOnly/, KafkaJS.ErrorCodes.ERR__NOT_IMPLEMENTED)
  await refused(() => admin.fetchOffsets({ groupId: 'g', resolveOffsets: true }), /resolveOffsets/, KafkaJS.ErrorCodes.ERR__NOT_IMPLEMENTED)
  const consumer = kafka.consumer({ kafkaJS: { groupId: 'g' } })
  await refused(() => consumer.subscribe({ topics: ['t'] }), /while connected/, KafkaJS.ErrorCodes.ERR__STATE)
})

test('client config merges over the common config; logLevel and logger take the package\'s levels', async () => {
  const lines = []
  let setTo = null
  const logger = {
    info: (m) => lines.push(['info', m]),
    warn: (m) => lines.push(['warn', m]),
    error: (m) => lines.push(['error', m]),
    debug: (m) => lines.push(['debug', m]),
    namespace () { return this },
    setLogLevel (l) { setTo = l }
  }
  const kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: [broker.bootstrap], logLevel: KafkaJS.logLevel.ERROR } })
  // The producer's block overrides the common logLevel and adds a logger, told its level.
  const producer = kafka.producer({ kafkaJS: { logLevel: KafkaJS.logLevel.DEBUG, logger } })
  assert.equal(setTo, KafkaJS.logLevel.DEBUG)
  assert.equal(producer.logger(), logger)

  // Without a logger: odradek's, whose setLogLevel takes the package's numbers (INFO is 3).
  const view = kafka.producer().logger()
  const printed = []
  const consoleError = console.error
  console.error = (line) => printed.push(JSON.parse(line).message)
  try {
    view.info('hidden at ERROR')
    view.setLogLevel(KafkaJS.logLevel.INFO)
    view.info('shown at INFO')
    view.debug('hidden at INFO')
    view.setLogLevel(KafkaJS.logLevel.DEBUG)
    view.debug('shown at DEBUG')
  } finally {
    console.error = consoleError
  }
  assert.deepEqual(printed, ['shown at INFO', 'shown at DEBUG'])

  // A clientId in one consumer's block (a common option) is that consumer's only.
  const topic = uniqueName('cfk-merge')
  const groupId = uniqueName('cfk-merge-g')
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  const consumer = kafka.consumer({ kafkaJS: { groupId, clientId: 'named-consumer' } })
  await consumer.connect()
  await consumer.subscribe({ topic })
  await consumer.run({ eachMessage: async () => {} })
  try {
    const members = await waitFor(async () => {
      const { groups } = await admin.describeGroups([groupId])
      return groups[0].state === KafkaJS.ConsumerGroupStates.STABLE && groups[0].members.length === 1 && groups[0].members
    }, { what: 'a stable group with one member' })
    assert.equal(members[0].clientId, 'named-consumer')
    assert.equal(consumer.rebalanceProtocol(), 'EAGER')
  } finally {
    await consumer.disconnect()
    await admin.disconnect()
  }
})

test('stats_cb receives the statistics every statistics.interval.ms', async (t) => {
  const kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: [broker.bootstrap], logLevel: KafkaJS.logLevel.ERROR } })
  const stats = []
  let producer
  try {
    producer = kafka.producer({ 'statistics.interval.ms': 100, stats_cb: (e) => stats.push(JSON.parse(e.message)) })
  } catch (e) {
    if (e.code === KafkaJS.ErrorCodes.ERR__NOT_IMPLEMENTED) return t.skip('this build has no statistics events')
    throw e
  }
  await producer.connect()
  try {
    await waitFor(() => stats.length >= 2, { what: 'two statistics', timeoutMs: 10000 })
    assert.equal(stats[0].type, 'producer')
  } finally {
    await producer.disconnect()
  }
})
