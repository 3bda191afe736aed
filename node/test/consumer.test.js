'use strict'
// Consumer: run with eachMessage / eachBatch, commits (auto and manual), seek, pause/resume,
// a group of two sharing partitions, and restart from committed offsets.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka, KafkaJSNonRetriableError } = require('..')
const { startBroker, uniqueName, waitFor } = require('./helpers/broker')

let broker, kafka, admin, producer

before(async () => {
  broker = await startBroker()
  kafka = new Kafka({ clientId: 'consumer-test', brokers: [broker.bootstrap], logLevel: 0 })
  admin = kafka.admin()
  await admin.connect()
  producer = kafka.producer()
  await producer.connect()
})

after(async () => {
  await producer.disconnect()
  await admin.disconnect()
  await broker.stop()
})

async function topicWith (partitions, count = 0) {
  const topic = uniqueName('cons')
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }] })
  if (count > 0) {
    const messages = Array.from({ length: count }, (_, i) => ({ key: `k${i}`, value: `v${i}`, partition: i % partitions }))
    await producer.send({ topic, messages })
  }
  return topic
}

async function committed (groupId, topic) {
  const [t] = await admin.fetchOffsets({ groupId, topics: [topic] })
  return Object.fromEntries(t.partitions.map(p => [p.partition, p.offset]))
}

test('eachMessage sees every record in partition order and autoCommit commits them', async () => {
  const topic = await topicWith(2, 40)
  const groupId = uniqueName('g')
  const consumer = kafka.consumer({ groupId })
  const joined = []
  consumer.on(consumer.events.GROUP_JOIN, (e) => joined.push(e.payload))
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const seen = { 0: [], 1: [] }
  await consumer.run({
    eachMessage: async ({ topic: t, partition, message }) => {
      assert.equal(t, topic)
      seen[partition].push(Number(message.offset))
      assert.equal(message.value.toString(), `v${Number(message.offset) * 2 + partition}`)
    }
  })
  await waitFor(() => seen[0].length + seen[1].length >= 40, { what: '40 messages' })
  assert.deepEqual(seen[0], Array.from({ length: 20 }, (_, i) => i))
  assert.deepEqual(seen[1], Array.from({ length: 20 }, (_, i) => i))
  await waitFor(async () => {
    const c = await committed(groupId, topic)
    return c[0] === '20' && c[1] === '20'
  }, { what: 'auto-commit of 20 + 20' })
  await waitFor(() => joined.length > 0, { what: 'GROUP_JOIN' })
  assert.equal(joined[0].groupId, groupId)
  assert.deepEqual(joined[0].memberAssignment[topic].sort(), [0, 1])
  await consumer.disconnect()
})

test('a restarted consumer resumes after the committed offsets', async () => {
  const topic = await topicWith(1, 10)
  const groupId = uniqueName('g')
  const first = kafka.consumer({ groupId })
  await first.connect()
  await first.subscribe({ topic, fromBeginning: true })
  const seen = []
  await first.run({ eachMessage: async ({ message }) => { seen.push(message.offset) } })
  await waitFor(() => seen.length >= 10, { what: 'first 10' })
  await first.disconnect()
  await producer.send({ topic, messages: [{ value: 'v10' }, { value: 'v11' }] })
  const second = kafka.consumer({ groupId })
  await second.connect()
  await second.subscribe({ topic, fromBeginning: true })
  const later = []
  await second.run({ eachMessage: async ({ message }) => { later.push(message.offset) } })
  await waitFor(() => later.length >= 2, { what: 'two new messages' })
  assert.deepEqual(later, ['10', '11'])
  await second.disconnect()
})

test('two consumers in one group share the partitions', async () => {
  const topic = await topicWith(4)
  const groupId = uniqueName('shared')
  const seen = [new Map(), new Map()]
  const consumers = [kafka.consumer({ groupId }), kafka.consumer({ groupId })]
  for (const [i, c] of consumers.entries()) {
    await c.connect()
    await c.subscribe({ topic, fromBeginning: true })
    await c.run({ eachMessage: async ({ partition, message }) => { seen[i].set(`${partition}:${message.offset}`, message.value.toString()) } })
  }
  // Both members must own partitions before the records go out, so neither takes all.
  await waitFor(() => consumers.every(c => c._native.assignment().length > 0) &&
    consumers.reduce((n, c) => n + c._native.assignment().length, 0) === 4, { what: 'both members assigned', timeoutMs: 60000 })
  const a = consumers[0]._native.assignment().map(tp => tp.partition)
  const b = consumers[1]._native.assignment().map(tp => tp.partition)
  assert.deepEqual([...a, ...b].sort(), [0, 1, 2, 3], 'every partition assigned exactly once')
  const messages = Array.from({ length: 80 }, (_, i) => ({ value: `m${i}`, partition: i % 4 }))
  await producer.send({ topic, messages })
  await waitFor(() => seen[0].size + seen[1].size >= 80, { what: '80 messages across the group', timeoutMs: 60000 })
  assert.equal(seen[0].size + seen[1].size, 80, 'no message twice')
  assert.ok(seen[0].size > 0 && seen[1].size > 0, 'both members consumed')
  for (const [i, c] of consumers.entries()) {
    const mine = new Set(c._native.assignment().map(tp => tp.partition))
    for (const k of seen[i].keys()) assert.ok(mine.has(Number(k.split(':')[0])), `member ${i} got ${k} of a partition it does not own`)
  }
  await Promise.all(consumers.map(c => c.disconnect()))
  const description = await admin.describeGroups([groupId])
  assert.equal(description.groups[0].groupId, groupId)
  assert.equal(description.groups[0].members.length, 0)
})

test('eachBatch with manual resolveOffset and commitOffsets', async () => {
  const topic = await topicWith(1, 30)
  const groupId = uniqueName('g')
  const consumer = kafka.consumer({ groupId })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const seen = []
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, isRunning, isStale }) => {
      assert.equal(batch.topic, topic)
      assert.equal(batch.firstOffset(), batch.messages[0].offset)
      for (const m of batch.messages) {
        if (!isRunning() || isStale()) break
        seen.push(Number(m.offset))
        resolveOffset(m.offset)
      }
    }
  })
  await waitFor(() => seen.length >= 30, { what: '30 messages' })
  assert.deepEqual(seen, Array.from({ length: 30 }, (_, i) => i))
  assert.equal((await committed(groupId, topic))[0], '-1', 'autoCommit false commits nothing')
  await consumer.commitOffsets([{ topic, partition: 0, offset: '17' }])
  assert.equal((await committed(groupId, topic))[0], '17')
  await consumer.disconnect()
})

test('eachBatch that resolves only part of a batch gets the rest again', async () => {
  const topic = await topicWith(1, 10)
  const consumer = kafka.consumer({ groupId: uniqueName('g') })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const deliveries = []
  let firstCall = true
  await consumer.run({
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset }) => {
      deliveries.push(batch.messages.map(m => Number(m.offset)))
      if (firstCall && batch.messages.length > 3) {
        firstCall = false
        resolveOffset(batch.messages[2].offset)
        return
      }
      for (const m of batch.messages) resolveOffset(m.offset)
    }
  })
  await waitFor(() => deliveries.length >= 2 && deliveries.slice(1).flat().includes(9), { what: 'the rest after a partial batch' })
  const flat = deliveries.flat()
  const after = flat.slice(deliveries[0].length)
  assert.equal(after[0], 3, `delivery resumes after the resolved offset: ${JSON.stringify(deliveries)}`)
  await consumer.disconnect()
})

test('a failing eachMessage sees the same message again', async () => {
  const topic = await topicWith(1, 5)
  const consumer = kafka.consumer({ groupId: uniqueName('g'), retry: { initialRetryTime: 10 } })
  const crashes = []
  consumer.on(consumer.events.CRASH, (e) => crashes.push(e.payload.error))
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const seen = []
  let failed = false
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(message.offset)
      if (message.offset === '2' && !failed) {
        failed = true
        throw new Error('boom')
      }
    }
  })
  await waitFor(() => seen.includes('4'), { what: 'all five' })
  assert.deepEqual(seen, ['0', '1', '2', '2', '3', '4'])
  // A failure within the retries (5 by default) is no crash, as in KafkaJS.
  assert.deepEqual(crashes, [])
  await consumer.disconnect()
})

/** Records a consumer's lifecycle events, in order: [name, payload]. */
function lifecycle (consumer) {
  const events = []
  for (const name of ['CRASH', 'STOP', 'DISCONNECT', 'GROUP_JOIN']) {
    consumer.on(consumer.events[name], (e) => events.push([name, e.payload]))
  }
  return events
}

test('past its retries a consumer crashes; retry.restartOnFailure resolving false leaves it stopped', async () => {
  const topic = await topicWith(1, 3)
  const groupId = uniqueName('g')
  const asked = []
  const restartOnFailure = async (e) => { asked.push(e); return false }
  const consumer = kafka.consumer({ groupId, retry: { retries: 2, initialRetryTime: 10, restartOnFailure } })
  const events = lifecycle(consumer)
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const seen = []
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(message.offset)
      if (message.offset === '1') throw new Error('boom')
    }
  })
  await waitFor(() => events.some(([name]) => name === 'CRASH'), { what: 'CRASH event' })
  assert.equal(asked.length, 1)
  assert.equal(asked[0].name, 'KafkaJSNumberOfRetriesExceeded')
  assert.equal(asked[0].cause.message, 'boom')
  assert.equal(asked[0].retryCount, 2)
  const [, crash] = events.find(([name]) => name === 'CRASH')
  assert.deepEqual(crash, { error: asked[0], groupId, restart: false })
  // As KafkaJS: the crashed consumer stopped and disconnected before CRASH was emitted.
  assert.deepEqual(events.map(([name]) => name), ['GROUP_JOIN', 'STOP', 'DISCONNECT', 'CRASH'])
  // The first try and the two retries, then nothing more: it stays stopped.
  await new Promise(resolve => setTimeout(resolve, 1000))
  assert.deepEqual(seen, ['0', '1', '1', '1'])
  assert.equal(events.length, 4)
  assert.deepEqual(await committed(groupId, topic), { 0: '1' })
  await consumer.disconnect()
})

test('retry.restartOnFailure resolving true restarts a crashed consumer, which gets the message again', async () => {
  const topic = await topicWith(1, 3)
  const groupId = uniqueName('g')
  const asked = []
  const restartOnFailure = async (e) => { asked.push(e); return true }
  const consumer = kafka.consumer({ groupId, retry: { retries: 1, initialRetryTime: 10, restartOnFailure } })
  const events = lifecycle(consumer)
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const seen = []
  let failures = 0
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(message.offset)
      if (message.offset === '1' && failures < 2) {
        failures++
        throw new Error('boom')
      }
    }
  })
  const joins = () => events.filter(([name]) => name === 'GROUP_JOIN').length
  await waitFor(() => seen.includes('2') && joins() === 2, { what: 'the rest after the restart' })
  // The try and its one retry crash the consumer; restarted, it gets offset 1 a third time.
  assert.deepEqual(seen, ['0', '1', '1', '1', '2'])
  assert.equal(asked.length, 1)
  assert.equal(asked[0].name, 'KafkaJSNumberOfRetriesExceeded')
  assert.deepEqual(events.map(([name]) => name), ['GROUP_JOIN', 'STOP', 'DISCONNECT', 'CRASH', 'GROUP_JOIN'])
  assert.equal(events[3][1].restart, true)
  await consumer.disconnect()
})

test('an unrecoverable handler error crashes the consumer at once, without restart or restartOnFailure', async () => {
  const topic = await topicWith(1, 2)
  const groupId = uniqueName('g')
  const asked = []
  const consumer = kafka.consumer({ groupId, retry: { initialRetryTime: 10, restartOnFailure: async (e) => { asked.push(e); return true } } })
  const events = lifecycle(consumer)
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const seen = []
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(message.offset)
      throw new TypeError('a bug')
    }
  })
  await waitFor(() => events.some(([name]) => name === 'CRASH'), { what: 'CRASH event' })
  const [, crash] = events.find(([name]) => name === 'CRASH')
  assert.equal(crash.restart, false)
  assert.equal(crash.error.name, 'KafkaJSNonRetriableError')
  assert.equal(crash.error.cause.name, 'TypeError')
  assert.deepEqual(asked, [])
  await new Promise(resolve => setTimeout(resolve, 500))
  assert.deepEqual(seen, ['0'])
  await consumer.disconnect()
})

test('seek moves a running consumer', async () => {
  const topic = await topicWith(1, 20)
  const consumer = kafka.consumer({ groupId: uniqueName('g') })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const seen = []
  let sought = false
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(Number(message.offset))
      if (message.offset === '15' && !sought) {
        sought = true
        consumer.seek({ topic, partition: 0, offset: '5' })
      }
    }
  })
  await waitFor(() => seen.filter(o => o === 19).length >= 1 && sought && seen.lastIndexOf(5) > seen.indexOf(15), { what: 'replay after seek' })
  const afterSeek = seen.slice(seen.indexOf(15) + 1)
  assert.equal(afterSeek[0], 5)
  assert.deepEqual(afterSeek.slice(0, 15), Array.from({ length: 15 }, (_, i) => i + 5))
  assert.throws(() => consumer.seek({ topic, partition: 0, offset: 'abc' }), KafkaJSNonRetriableError)
  await consumer.disconnect()
})

test('pause holds a partition back and resume releases it', async () => {
  const topic = await topicWith(2)
  const consumer = kafka.consumer({ groupId: uniqueName('g') })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const seen = []
  await consumer.run({ eachMessage: async ({ partition, message }) => { seen.push(`${partition}:${message.value}`) } })
  await waitFor(() => consumer._native.assignment().length === 2, { what: 'assignment' })
  consumer.pause([{ topic, partitions: [1] }])
  assert.deepEqual(consumer.paused(), [{ topic, partitions: [1] }])
  await producer.send({ topic, messages: [{ value: 'a', partition: 0 }, { value: 'b', partition: 1 }] })
  await waitFor(() => seen.includes('0:a'), { what: 'unpaused partition' })
  await producer.send({ topic, messages: [{ value: 'c', partition: 0 }] })
  await waitFor(() => seen.includes('0:c'), { what: 'unpaused partition again' })
  assert.ok(!seen.includes('1:b'), 'paused partition delivered')
  consumer.resume([{ topic }])
  assert.deepEqual(consumer.paused(), [])
  await waitFor(() => seen.includes('1:b'), { what: 'resumed partition' })
  await consumer.disconnect()
})

test('subscribe by RegExp and argument errors', async () => {
  const prefix = uniqueName('rx')
  await admin.createTopics({ topics: [{ topic: `${prefix}-a`, numPartitions: 1 }, { topic: `${prefix}-b`, numPartitions: 1 }] })
  await producer.send({ topic: `${prefix}-a`, messages: [{ value: 'A' }] })
  await producer.send({ topic: `${prefix}-b`, messages: [{ value: 'B' }] })
  const consumer = kafka.consumer({ groupId: uniqueName('g') })
  await consumer.connect()
  await consumer.subscribe({ topics: [new RegExp(`^${prefix}-.*`)], fromBeginning: true })
  const seen = new Set()
  await consumer.run({ eachMessage: async ({ topic, message }) => { seen.add(`${topic}=${message.value}`) } })
  await waitFor(() => seen.size >= 2, { what: 'both matching topics' })
  assert.deepEqual([...seen].sort(), [`${prefix}-a=A`, `${prefix}-b=B`])
  await assert.rejects(consumer.subscribe({ topic: 'late' }), KafkaJSNonRetriableError)
  await consumer.disconnect()
  assert.throws(() => kafka.consumer({}), KafkaJSNonRetriableError)
  const idle = kafka.consumer({ groupId: uniqueName('g') })
  await assert.rejects(idle.run({ eachMessage: async () => {} }), KafkaJSNonRetriableError)
})

/** Reads `topic` with `partitionsConsumedConcurrently: n`; returns the most handlers running at once and what each partition saw. */
async function concurrently (topic, n, count) {
  const consumer = kafka.consumer({ groupId: uniqueName('g-conc') })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let running = 0
  let most = 0
  let read = 0
  const offsets = new Map()
  await consumer.run({
    partitionsConsumedConcurrently: n,
    eachMessage: async ({ partition, message }) => {
      running++
      most = Math.max(most, running)
      await new Promise(resolve => setTimeout(resolve, 5))
      if (!offsets.has(partition)) offsets.set(partition, [])
      offsets.get(partition).push(Number(message.offset))
      running--
      read++
    }
  })
  await waitFor(() => read >= count, { what: `${count} messages` })
  await consumer.disconnect()
  return { most, offsets }
}

test('partitionsConsumedConcurrently runs partitions at once, each in order', async () => {
  const topic = await topicWith(4, 80)
  const parallel = await concurrently(topic, 4, 80)
  assert.ok(parallel.most >= 2, `at most ${parallel.most} handler(s) ran at once`)
  assert.ok(parallel.most <= 4)
  for (const [partition, seen] of parallel.offsets) {
    assert.deepEqual(seen, Array.from({ length: 20 }, (_, i) => i), `partition ${partition} in order`)
  }
  const serial = await concurrently(topic, 1, 80)
  assert.equal(serial.most, 1)
  await assert.rejects(kafka.consumer({ groupId: 'x' }).run({ partitionsConsumedConcurrently: 0, eachMessage: async () => {} }), /partitionsConsumedConcurrently/)
})

test('eachBatch sees the high watermark and the lag behind it', async () => {
  const topic = await topicWith(1, 10)
  const consumer = kafka.consumer({ groupId: uniqueName('g-hw') })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const batches = []
  await consumer.run({
    eachBatch: async ({ batch }) => {
      batches.push({ hw: batch.highWatermark, lag: batch.offsetLag(), low: batch.offsetLagLow(), first: batch.firstOffset(), last: batch.lastOffset() })
    }
  })
  await waitFor(() => batches.some(b => b.last === '9'), { what: 'the last batch' })
  await consumer.disconnect()
  for (const b of batches) {
    assert.equal(b.hw, '10')
    assert.equal(b.lag, String(9 - Number(b.last)))
    assert.equal(b.low, String(9 - Number(b.first)))
  }
})

test('fromBeginning is per subscription: by name and by RegExp', async () => {
  const early = await topicWith(1, 3)
  const late = await topicWith(1, 3)
  const byPattern = await topicWith(1, 3)
  const consumer = kafka.consumer({ groupId: uniqueName('g-per-topic') })
  await consumer.connect()
  await consumer.subscribe({ topic: early, fromBeginning: true })
  await consumer.subscribe({ topic: late })
  await consumer.subscribe({ topic: new RegExp(`^${byPattern}$`), fromBeginning: true })
  const seen = []
  await consumer.run({ eachMessage: async ({ topic, message }) => { seen.push(`${topic}:${message.value}`) } })
  await waitFor(() => seen.filter(s => s.startsWith(early) || s.startsWith(byPattern)).length === 6, { what: 'both fromBeginning topics from the start' })
  // The late topic started at its end: only what is produced now arrives.
  await waitFor(async () => {
    await producer.send({ topic: late, messages: [{ value: 'new', partition: 0 }] })
    return seen.includes(`${late}:new`)
  }, { what: 'the late topic\'s new message', intervalMs: 500 })
  await consumer.disconnect()
  assert.deepEqual(seen.filter(s => s.startsWith(`${late}:`) && !s.endsWith(':new')), [], 'nothing old from the late topic')
  assert.deepEqual(seen.filter(s => s.startsWith(`${early}:`)), [0, 1, 2].map(i => `${early}:v${i}`))
})
