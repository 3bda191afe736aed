'use strict'
// Test your consumer's retry logic against a broker that fails the first two commits.
//
//   node --test examples/node/commit_retry.test.js
//
// The application code uses KafkaJS's API: the same test runs with require('kafkajs')
// (KAFKA_CLIENT=kafkajs). odradek/testing starts the cluster inside the test process.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { useCluster } = require('odradek/testing')
const { Kafka, logLevel } = require(process.env.KAFKA_CLIENT || 'odradek')

// ---- the application code under test --------------------------------------------------------
/** Commits `offsets`, retrying errors Kafka calls retriable; resolves with the attempts used. */
async function commitWithRetry (consumer, offsets, { attempts = 5, backoffMs = 100 } = {}) {
  for (let attempt = 1; ; attempt++) {
    try {
      await consumer.commitOffsets(offsets)
      return attempt
    } catch (e) {
      if (!e.retriable || attempt === attempts) throw e
      await new Promise((resolve) => setTimeout(resolve, backoffMs * attempt))
    }
  }
}

/** Consumes `count` messages of `topic`, then commits them (autoCommit off). */
async function processBatch (kafka, topic, groupId, count) {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const values = []
  let last = null
  let done
  const finished = new Promise((resolve) => { done = resolve })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      values.push(message.value.toString())
      last = { partition, offset: String(Number(message.offset) + 1) }
      if (values.length === count) done()
    }
  })
  await finished
  const attempts = await commitWithRetry(consumer, [{ topic, ...last }])
  await consumer.disconnect()
  return { values, attempts }
}

// ---- the test -------------------------------------------------------------------------------
const kafkaCluster = useCluster({ topics: { orders: 1 }, recordRequests: true }, { before, after })

test('the consumer retries two failed commits', async () => {
  const cluster = kafkaCluster.cluster
  const kafka = new Kafka({ clientId: 'billing', brokers: cluster.brokers, logLevel: logLevel.NOTHING })
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic: 'orders', messages: ['order-0', 'order-1', 'order-2'].map((value) => ({ value })) })
  await producer.disconnect()

  // The broker refuses the next two OffsetCommit requests, as a coordinator that is moving.
  cluster.pushRequestErrors('OffsetCommit', ['COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_NOT_AVAILABLE'])

  const { values, attempts } = await processBatch(kafka, 'orders', 'billing', 3)
  assert.deepEqual(values, ['order-0', 'order-1', 'order-2'])

  const admin = kafka.admin()
  await admin.connect()
  const [orders] = await admin.fetchOffsets({ groupId: 'billing', topics: ['orders'] })
  await admin.disconnect()
  assert.equal(orders.partitions[0].offset, '3')

  // Two refused, then accepted: by the client library's own retry of coordinator errors or by
  // commitWithRetry (attempts > 1), whichever the library leaves to the application.
  const commits = cluster.requests().filter((r) => r.apiName === 'OffsetCommit')
  assert.deepEqual(commits.map((r) => r.error), ['COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_NOT_AVAILABLE', null])
  assert.ok(attempts >= 1 && attempts <= 3)
})
