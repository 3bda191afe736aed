'use strict'
// CLIENT_ERROR events (odradek's extension, librdkafka's error_cb events) and their log lines:
// every broker down is told once per episode; a client of a live broker tells nothing.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const net = require('node:net')
const { Kafka, logLevel } = require('..')
const { startBroker, waitFor } = require('./helpers/broker')

let broker

before(async () => { broker = await startBroker() })
after(async () => { await broker.stop() })

/** An address nothing listens on: bound, then released. */
async function deadAddress () {
  const server = net.createServer()
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise(resolve => server.close(resolve))
  return `127.0.0.1:${port}`
}

/** A Kafka whose log lines are kept in `logs`. */
function kafkaWithLogs (brokers, logs) {
  return new Kafka({
    clientId: 'events-test',
    brokers,
    logLevel: logLevel.ERROR,
    logCreator: () => ({ namespace, level, log }) => logs.push({ namespace, level, ...log })
  })
}

test('a producer whose only broker is down emits _ALL_BROKERS_DOWN once and logs it', async () => {
  const logs = []
  const kafka = kafkaWithLogs([await deadAddress()], logs)
  const producer = kafka.producer()
  const events = []
  producer.on(producer.events.CLIENT_ERROR, e => events.push(e.payload))
  await assert.rejects(producer.connect())
  await waitFor(() => events.length > 0, { timeoutMs: 15000, what: 'a CLIENT_ERROR event' })
  // Nothing more for the same episode (the connect retries are over; give stragglers a moment).
  await new Promise(resolve => setTimeout(resolve, 300))
  assert.deepEqual(events.map(e => e.type), ['_ALL_BROKERS_DOWN'])
  assert.equal(events[0].code, -187)
  assert.match(events[0].message, /1\/1 brokers are down/)
  assert.equal(events[0].clientId, 'events-test')
  const logged = logs.filter(l => String(l.namespace).endsWith('Connection') && /brokers are down/.test(l.message))
  assert.equal(logged.length, 1, JSON.stringify(logs))
  assert.equal(logged[0].level, logLevel.ERROR)
  await producer.disconnect()
})

test('an admin client of a live broker emits no CLIENT_ERROR', async () => {
  const logs = []
  const kafka = kafkaWithLogs([broker.bootstrap], logs)
  const admin = kafka.admin()
  const events = []
  admin.on(admin.events.CLIENT_ERROR, e => events.push(e.payload))
  await admin.connect()
  await admin.listTopics()
  await admin.disconnect()
  assert.deepEqual(events, [])
  assert.deepEqual(logs.filter(l => String(l.namespace).endsWith('Connection')), [])
})
