'use strict'
// compat/same_script.js runs unchanged on kafkajs (from npm) and on odradek, against the same
// broker: producer, consumer group, admin and transactions.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const path = require('path')
const { startBroker } = require('./helpers/broker')
const { runNode } = require('./helpers/run')

const SCRIPT = path.join(__dirname, '..', 'compat', 'same_script.js')
let broker
let odradekTransactions

before(async () => {
  broker = await startBroker()
  // Transactions run in the script for every client once odradek's producer has them.
  odradekTransactions = typeof require('../lib/native').NativeProducer.prototype.beginTransaction === 'function'
})

after(async () => {
  await broker.stop()
})

const parity = {}

for (const client of ['kafkajs', 'odradek']) {
  test(`same_script.js with ${client}`, async () => {
    const env = { KAFKA_CLIENT: client, KAFKA_BOOTSTRAP: broker.bootstrap, KAFKAJS_NO_PARTITIONER_WARNING: '1' }
    if (!odradekTransactions) env.SKIP_TRANSACTIONS = '1'
    const r = await runNode([SCRIPT], { env, timeoutMs: 180000 })
    const line = r.stdout.trim().split('\n').pop() || '{}'
    const out = JSON.parse(line)
    assert.equal(r.code, 0, `${line}\n${r.stderr}`)
    assert.equal(out.ok, true)
    assert.equal(out.group.committed, 200)
    assert.ok(out.group.consumed >= 200)
    if (!odradekTransactions) assert.equal(out.transactions.skipped, true)
    else assert.deepEqual(out.transactions.values, ['committed-1', 'committed-2', 'committed-3'])
    parity[client] = out.parity
  })
}

test('both clients saw the same instrumentation payloads, GROUP_JOIN and concurrency', () => {
  assert.ok(parity.kafkajs && parity.odradek, 'both scripts ran')
  assert.deepEqual(parity.odradek, parity.kafkajs)
  assert.deepEqual(parity.odradek.join, { isLeader: true, leaderIsMember: true, groupProtocol: 'RoundRobinAssigner' })
  assert.equal(parity.odradek.concurrent, true)
})
