'use strict'
// Transactions: commit, abort, sendOffsets (consume-transform-produce), and their errors.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka, KafkaJSNonRetriableError } = require('..')
const { startBroker, uniqueName, waitFor } = require('./helpers/broker')

let broker, kafka, admin

before(async () => {
  broker = await startBroker()
  kafka = new Kafka({ clientId: 'txn-test', brokers: [broker.bootstrap], logLevel: 0 })
  admin = kafka.admin()
  await admin.connect()
})

after(async () => {
  await admin.disconnect()
  await broker.stop()
})

async function readCommitted (topic, count) {
  const consumer = kafka.consumer({ groupId: uniqueName('rc'), readUncommitted: false })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const values = []
  await consumer.run({ eachMessage: async ({ message }) => { values.push(message.value.toString()) } })
  await waitFor(() => values.length >= count, { what: `${count} committed values` })
  await consumer.disconnect()
  return values
}

test('committed transactions are read, aborted ones are not', async () => {
  const topic = uniqueName('txn')
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  const producer = kafka.producer({ transactionalId: uniqueName('tx'), idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  await assert.rejects(producer.send({ topic, messages: [{ value: 'outside' }] }), KafkaJSNonRetriableError)
  const t1 = await producer.transaction()
  assert.equal(t1.isActive(), true)
  await assert.rejects(producer.transaction(), KafkaJSNonRetriableError)
  await t1.send({ topic, messages: [{ value: 'a' }, { value: 'b' }] })
  await t1.commit()
  assert.equal(t1.isActive(), false)
  await assert.rejects(t1.send({ topic, messages: [{ value: 'late' }] }), KafkaJSNonRetriableError)
  const t2 = await producer.transaction()
  await t2.sendBatch({ topicMessages: [{ topic, messages: [{ value: 'dropped' }] }] })
  await t2.abort()
  const t3 = await producer.transaction()
  await t3.send({ topic, messages: [{ value: 'c' }] })
  await t3.commit()
  await producer.disconnect()
  assert.deepEqual(await readCommitted(topic, 3), ['a', 'b', 'c'])
})

test('sendOffsets commits the group offsets with the transaction', async () => {
  const input = uniqueName('txn-in')
  const output = uniqueName('txn-out')
  await admin.createTopics({ topics: [{ topic: input, numPartitions: 1 }, { topic: output, numPartitions: 1 }] })
  const plain = kafka.producer()
  await plain.connect()
  await plain.send({ topic: input, messages: [{ value: '1' }, { value: '2' }, { value: '3' }] })
  await plain.disconnect()

  const groupId = uniqueName('ctp')
  const producer = kafka.producer({ transactionalId: uniqueName('ctp-tx'), idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const consumer = kafka.consumer({ groupId })
  await consumer.connect()
  await consumer.subscribe({ topic: input, fromBeginning: true })
  let done = 0
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic, partition, message }) => {
      const txn = await producer.transaction()
      await txn.send({ topic: output, messages: [{ value: String(Number(message.value) * 10) }] })
      await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition, offset: String(Number(message.offset) + 1) }] }] })
      if (message.value.toString() === '2') await txn.abort()
      else await txn.commit()
      done++
    }
  })
  await waitFor(() => done >= 3, { what: 'three transformed messages' })
  await consumer.disconnect()
  await producer.disconnect()
  assert.deepEqual(await readCommitted(output, 2), ['10', '30'])
  const [offsets] = await admin.fetchOffsets({ groupId, topics: [input] })
  assert.equal(offsets.partitions[0].offset, '3')
})

test('transaction() needs a transactionalId', async () => {
  const producer = kafka.producer()
  await producer.connect()
  await assert.rejects(producer.transaction(), (e) => e.name === 'KafkaJSNonRetriableError' && /transactional id/.test(e.message))
  await producer.disconnect()
})

test('sendOffsets({ consumer }) carries the membership: a replaced static member is fenced (KIP-447)', async () => {
  const topic = uniqueName('txn-fence')
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  const groupId = uniqueName('g-fence')
  const member = (joined) => {
    const c = kafka.consumer({ groupId, 'group.instance.id': 'fence-1', heartbeatInterval: 10000, sessionTimeout: 30000 })
    c.on(c.events.GROUP_JOIN, () => { joined.push(Date.now()) })
    return c
  }
  const firstJoins = []
  const first = member(firstJoins)
  await first.connect()
  await first.subscribe({ topic, fromBeginning: true })
  await first.run({ eachMessage: async () => {} })
  await waitFor(() => firstJoins.length > 0, { what: 'the first member joined' })
  const producer = kafka.producer({ transactionalId: uniqueName('tx-fence'), idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const offsets = [{ topic, partitions: [{ partition: 0, offset: '1' }] }]
  const ok = await producer.transaction()
  await ok.sendOffsets({ consumer: first, topics: offsets })
  await ok.commit()
  const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] })
  assert.equal(committed.partitions[0].offset, '1')

  // The same group.instance.id joins again: the first member is replaced, and a commit with its
  // (old) membership must be fenced, not accepted.
  const secondJoins = []
  const second = member(secondJoins)
  await second.connect()
  await second.subscribe({ topic, fromBeginning: true })
  await second.run({ eachMessage: async () => {} })
  await waitFor(() => secondJoins.length > 0, { what: 'the replacing member joined' })
  const fenced = await producer.transaction()
  const stale = [{ topic, partitions: [{ partition: 0, offset: '2' }] }]
  await assert.rejects(fenced.sendOffsets({ consumer: first, topics: stale }),
    (e) => /FENCED_INSTANCE_ID|UNKNOWN_MEMBER_ID|ILLEGAL_GENERATION/.test(`${e.type} ${e.message}`))
  await fenced.abort()
  const [after] = await admin.fetchOffsets({ groupId, topics: [topic] })
  assert.equal(after.partitions[0].offset, '1', 'the fenced commit changed nothing')
  await producer.disconnect()
  await second.disconnect()
  await first.disconnect().catch(() => {})
})
