'use strict'
// One script, two clients: runs unchanged on kafkajs and on odradek; only the import differs.
//
//   KAFKA_CLIENT=kafkajs|odradek KAFKA_BOOTSTRAP=host:port node compat/same_script.js
//
// It creates topics, produces keyed messages, consumes them with a group of two consumers,
// commits, checks the committed offsets with the admin client and, when the client supports
// it, runs a committed and an aborted transaction and reads back with read_committed. Prints
// one JSON line with what it saw and exits non-zero on any mismatch.
const client = process.env.KAFKA_CLIENT || 'odradek'
const { Kafka, logLevel, CompressionTypes } = require(client === 'kafkajs' ? 'kafkajs' : '..')

const bootstrap = process.env.KAFKA_BOOTSTRAP
if (!bootstrap) {
  console.error('set KAFKA_BOOTSTRAP=host:port')
  process.exit(2)
}
const skipTransactions = process.env.SKIP_TRANSACTIONS === '1'

const run = `${client}-${process.pid}-${Date.now().toString(36)}`
const kafka = new Kafka({ clientId: `same-script-${client}`, brokers: [bootstrap], logLevel: logLevel.NOTHING })

function check (condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`)
}

async function waitFor (condition, what, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 25))
  }
}

async function producerAndGroup (admin) {
  const topic = `same-${run}`
  await admin.createTopics({ topics: [{ topic, numPartitions: 4, replicationFactor: 1 }] })
  const producer = kafka.producer()
  await producer.connect()
  const messages = Array.from({ length: 200 }, (_, i) => ({ key: `key-${i % 10}`, value: `value-${i}`, headers: { n: String(i) } }))
  const sent = await producer.send({ topic, messages: messages.slice(0, 100), compression: CompressionTypes.GZIP })
  check(sent.every(r => r.topicName === topic && r.errorCode === 0), 'send metadata')
  await producer.sendBatch({ topicMessages: [{ topic, messages: messages.slice(100) }] })
  await producer.disconnect()

  const groupId = `same-group-${run}`
  const seen = new Map()
  const perMember = [0, 0]
  const consumers = [kafka.consumer({ groupId }), kafka.consumer({ groupId })]
  for (const [i, consumer] of consumers.entries()) {
    await consumer.connect()
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const value = message.value.toString()
        check(message.headers.n.toString() === value.slice('value-'.length), 'header matches value')
        const keyOf = message.key.toString()
        const prev = seen.get(keyOf)
        check(prev === undefined || prev === partition, `key ${keyOf} stays on one partition`)
        seen.set(keyOf, partition)
        seen.set(value, true)
        perMember[i]++
      }
    })
  }
  await waitFor(() => [...seen.keys()].filter(k => k.startsWith('value-')).length === 200, 'all 200 values')
  await Promise.all(consumers.map(c => c.disconnect()))
  const offsets = await admin.fetchOffsets({ groupId, topics: [topic] })
  const committed = offsets[0].partitions.reduce((n, p) => n + Math.max(0, Number(p.offset)), 0)
  check(committed === 200, `committed offsets add up to 200 (got ${committed})`)
  return { topic, consumed: perMember[0] + perMember[1], members: perMember.filter(n => n > 0).length, committed }
}

async function transactions (admin) {
  const topic = `same-txn-${run}`
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] })
  const producer = kafka.producer({ transactionalId: `same-tx-${run}`, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const committedTxn = await producer.transaction()
  await committedTxn.send({ topic, messages: [{ value: 'committed-1' }, { value: 'committed-2' }] })
  await committedTxn.commit()
  const abortedTxn = await producer.transaction()
  await abortedTxn.send({ topic, messages: [{ value: 'aborted' }] })
  await abortedTxn.abort()
  const last = await producer.transaction()
  await last.send({ topic, messages: [{ value: 'committed-3' }] })
  await last.commit()
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId: `same-txn-group-${run}`, readUncommitted: false })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const values = []
  await consumer.run({ eachMessage: async ({ message }) => { values.push(message.value.toString()) } })
  await waitFor(() => values.includes('committed-3'), 'the last committed transaction')
  await consumer.disconnect()
  check(!values.includes('aborted'), 'aborted records are not read with read_committed')
  check(JSON.stringify(values) === JSON.stringify(['committed-1', 'committed-2', 'committed-3']), `transactional values ${JSON.stringify(values)}`)
  return { values }
}

/** The issue-18 parity items: instrumentation payloads, GROUP_JOIN, per-topic fromBeginning, partitionsConsumedConcurrently, batch lag. */
async function parity (admin) {
  const early = `same-early-${run}`
  const late = `same-late-${run}`
  const wide = `same-wide-${run}`
  await admin.createTopics({ topics: [{ topic: early, numPartitions: 1 }, { topic: late, numPartitions: 1 }, { topic: wide, numPartitions: 3 }] })
  const producer = kafka.producer()
  const requests = []
  producer.on(producer.events.REQUEST, ({ payload }) => requests.push(payload))
  await producer.connect()
  await producer.send({ topic: early, messages: [{ value: 'e0' }, { value: 'e1' }] })
  await producer.send({ topic: late, messages: [{ value: 'old' }] })
  await producer.send({ topic: wide, messages: Array.from({ length: 30 }, (_, i) => ({ value: `w${i}`, partition: i % 3 })) })
  const produce = requests.find(r => r.apiName === 'Produce')
  check(produce !== undefined, 'a REQUEST event for Produce')

  const joins = []
  const heartbeats = []
  const seen = []
  const consumer = kafka.consumer({ groupId: `same-parity-${run}`, heartbeatInterval: 200 })
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => joins.push(payload))
  consumer.on(consumer.events.HEARTBEAT, ({ payload }) => heartbeats.push(payload))
  await consumer.connect()
  await consumer.subscribe({ topics: [early], fromBeginning: true })
  await consumer.subscribe({ topics: [late] })
  await consumer.run({ eachMessage: async ({ topic, message }) => { seen.push(`${topic === early ? 'early' : 'late'}:${message.value}`) } })
  await waitFor(() => seen.filter(s => s.startsWith('early:')).length === 2, 'the fromBeginning topic from its start')
  const deadline = Date.now() + 60000
  while (!seen.includes('late:new')) {
    check(Date.now() < deadline, 'the late topic\'s new message')
    await producer.send({ topic: late, messages: [{ value: 'new' }] })
    await new Promise(resolve => setTimeout(resolve, 500))
  }
  await waitFor(() => heartbeats.length > 0, 'a HEARTBEAT event')
  await consumer.disconnect()
  check(!seen.includes('late:old'), 'the topic without fromBeginning starts at its end')
  const join = joins[0]

  let running = 0
  let most = 0
  let read = 0
  const batches = []
  const wideConsumer = kafka.consumer({ groupId: `same-wide-${run}` })
  await wideConsumer.connect()
  await wideConsumer.subscribe({ topics: [wide], fromBeginning: true })
  await wideConsumer.run({
    partitionsConsumedConcurrently: 3,
    eachBatch: async ({ batch }) => {
      running++
      most = Math.max(most, running)
      batches.push({ hw: batch.highWatermark, lag: batch.offsetLag(), last: batch.lastOffset() })
      await new Promise(resolve => setTimeout(resolve, 50))
      read += batch.messages.length
      running--
    }
  })
  await waitFor(() => read >= 30, 'the three partitions')
  await wideConsumer.disconnect()
  await producer.disconnect()
  check(batches.every(b => b.hw === '10' && b.lag === String(9 - Number(b.last))), `batch lag ${JSON.stringify(batches)}`)
  return {
    requestKeys: Object.keys(produce).sort(),
    produceApiKey: produce.apiKey,
    join: { isLeader: join.isLeader, leaderIsMember: join.leaderId === join.memberId, groupProtocol: join.groupProtocol },
    heartbeatKeys: Object.keys(heartbeats[0]).sort(),
    concurrent: most >= 2
  }
}

async function main () {
  const admin = kafka.admin()
  await admin.connect()
  try {
    const group = await producerAndGroup(admin)
    const txn = skipTransactions ? { skipped: true } : await transactions(admin)
    const parityItems = await parity(admin)
    const { groups } = await admin.listGroups()
    check(groups.some(g => g.groupId === `same-group-${run}`), 'listGroups shows the group')
    await admin.deleteTopics({ topics: [group.topic] })
    console.log(JSON.stringify({ client, ok: true, group, transactions: txn, parity: parityItems }))
  } finally {
    await admin.disconnect()
  }
}

main().catch((e) => {
  console.log(JSON.stringify({ client, ok: false, error: e.message, name: e.name, type: e.type }))
  process.exit(1)
})
