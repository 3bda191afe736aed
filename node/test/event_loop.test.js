'use strict'
// Nothing blocks the event loop: timers keep firing while a consumer waits for records and a
// producer pushes many messages.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { monitorEventLoopDelay } = require('node:perf_hooks')
const { Kafka } = require('..')
const { startBroker, uniqueName } = require('./helpers/broker')
const native = require('../lib/native')

let broker

before(async () => { broker = await startBroker() })
after(async () => { await broker.stop() })

test('a long native poll and a large send leave the event loop free', async () => {
  const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: 0 })
  const admin = kafka.admin()
  await admin.connect()
  const topic = uniqueName('loop')
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  await admin.disconnect()

  const consumer = new native.NativeConsumer({ 'bootstrap.servers': broker.bootstrap, 'group.id': uniqueName('g'), 'enable.auto.commit': 'false' })
  consumer.subscribe([topic], null)
  const histogram = monitorEventLoopDelay({ resolution: 10 })
  histogram.enable()
  let ticks = 0
  const timer = setInterval(() => { ticks++ }, 20)
  const started = Date.now()
  // Nothing to read: the poll waits its full 1.5 s on the runtime, not on this thread.
  const polled = await consumer.poll(1500)
  const waited = Date.now() - started
  clearInterval(timer)
  histogram.disable()
  assert.equal(polled.records.length, 0)
  assert.ok(waited >= 1400, `poll returned after ${waited} ms`)
  assert.ok(ticks >= 20, `only ${ticks} timer ticks in ${waited} ms`)
  assert.ok(histogram.max < 1000e6, `event loop stalled for ${histogram.max / 1e6} ms`)
  await consumer.close()

  const producer = kafka.producer()
  await producer.connect()
  const value = Buffer.alloc(100, 1)
  const messages = Array.from({ length: 20000 }, () => ({ value }))
  let tocks = 0
  const timer2 = setInterval(() => { tocks++ }, 5)
  const sending = producer.send({ topic, messages })
  const beforeSettled = tocks
  await sending
  clearInterval(timer2)
  assert.equal(beforeSettled, 0, 'send returned a promise before doing the work')
  await producer.disconnect()
})
