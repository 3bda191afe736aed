'use strict'
// The core's own log reaches the KafkaJS logger (logLevel / logCreator) under the `odradek`
// namespace, with the module as `target`: debug lines at DEBUG, none below the level asked for.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka, logLevel } = require('..')
const { startBroker, waitFor, uniqueName } = require('./helpers/broker')

let broker

before(async () => { broker = await startBroker() })
after(async () => { await broker.stop() })

// Port 1 refuses connections (a released ephemeral port could be taken by another test's
// broker meanwhile).
const DEAD = '127.0.0.1:1'

/** Sends one record through a client whose first bootstrap server is dead; its log lines. */
async function sendLogged (level) {
  const logs = []
  const kafka = new Kafka({
    clientId: 'core-log-test',
    brokers: [DEAD, broker.bootstrap],
    logLevel: level,
    logCreator: () => ({ namespace, level, log }) => logs.push({ namespace, level, ...log })
  })
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic: uniqueName('core-log'), messages: [{ value: 'v' }] })
  await producer.disconnect()
  return logs
}

test('at DEBUG the core says which bootstrap server it could not reach', async () => {
  const logs = await sendLogged(logLevel.DEBUG)
  await waitFor(() => logs.some(l => l.namespace === 'odradek' && /bootstrap server unreachable/.test(l.message)),
    { what: 'the core debug line', timeoutMs: 5000 })
  const line = logs.find(l => /bootstrap server unreachable/.test(l.message))
  assert.equal(line.level, logLevel.DEBUG)
  assert.match(line.target, /^odradek::cluster/)
})

test('at INFO no core debug line reaches the logger', async () => {
  const logs = await sendLogged(logLevel.INFO)
  await new Promise(resolve => setTimeout(resolve, 500))
  assert.deepEqual(logs.filter(l => l.namespace === 'odradek' && l.level === logLevel.DEBUG), [])
})
