'use strict'
// A classic consumer group shared by stock KafkaJS members and ours: both advertise KafkaJS's
// default assigner under its protocol name (RoundRobinAssigner), so the broker finds a common
// protocol, whichever member leads computes the assignment and the other side decodes it.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const stock = require('kafkajs')
const { Kafka } = require('..')
const { startBroker, uniqueName, waitFor } = require('./helpers/broker')

const GROUP_TIMING = { sessionTimeout: 10000, heartbeatInterval: 500 }
let broker, ours, theirs, admin, producer

before(async () => {
  broker = await startBroker()
  ours = new Kafka({ clientId: 'interop-odradek', brokers: [broker.bootstrap], logLevel: 0 })
  theirs = new stock.Kafka({ clientId: 'interop-kafkajs', brokers: [broker.bootstrap], logLevel: stock.logLevel.NOTHING })
  admin = ours.admin()
  await admin.connect()
  producer = ours.producer()
  await producer.connect()
})

after(async () => {
  await producer.disconnect()
  await admin.disconnect()
  await broker.stop()
})

/** Starts a member of `groupId` on `topic` recording what it reads and what it owns. */
async function member (kafka, groupId, topic) {
  const consumer = kafka.consumer({ groupId, ...GROUP_TIMING })
  const state = { consumer, owned: [], seen: new Map(), join: null }
  consumer.on(consumer.events.GROUP_JOIN, e => {
    state.owned = (e.payload.memberAssignment[topic] || []).slice().sort((a, b) => a - b)
    state.join = e.payload
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      state.seen.set(`${partition}:${message.offset}`, message.value.toString())
    }
  })
  return state
}

async function sharedGroup (leaderIsStock) {
  const topic = uniqueName('interop')
  await admin.createTopics({ topics: [{ topic, numPartitions: 4 }] })
  const groupId = uniqueName('interop-g')
  const [first, second] = leaderIsStock ? [theirs, ours] : [ours, theirs]
  const a = await member(first, groupId, topic)
  await waitFor(() => a.owned.length === 4, { what: 'the first member owns all four', timeoutMs: 30000 })
  const b = await member(second, groupId, topic)
  await waitFor(() => a.owned.length === 2 && b.owned.length === 2, { what: 'two partitions each', timeoutMs: 30000 })
  assert.deepEqual([...a.owned, ...b.owned].sort(), [0, 1, 2, 3], 'every partition owned exactly once')
  // GROUP_JOIN agrees on both sides: one leader, named by both, and the chosen protocol.
  assert.deepEqual([a.join.isLeader, b.join.isLeader].filter(Boolean), [true], JSON.stringify([a.join, b.join]))
  const leader = a.join.isLeader ? a.join : b.join
  assert.equal(leader.leaderId, leader.memberId)
  assert.equal(a.join.leaderId, b.join.leaderId)
  assert.equal(a.join.groupProtocol, 'RoundRobinAssigner')
  assert.equal(b.join.groupProtocol, 'RoundRobinAssigner')
  assert.ok(a.join.duration >= 0 && b.join.duration >= 0)
  const described = await admin.describeGroups([groupId])
  assert.equal(described.groups[0].protocol, 'RoundRobinAssigner')
  assert.equal(described.groups[0].members.length, 2)

  const messages = Array.from({ length: 40 }, (_, i) => ({ value: `m${i}`, partition: i % 4 }))
  await producer.send({ topic, messages })
  await waitFor(() => a.seen.size + b.seen.size >= 40, { what: 'all 40 messages read', timeoutMs: 30000 })
  assert.equal(a.seen.size + b.seen.size, 40, 'no message read twice')
  for (const [state, name] of [[a, 'first'], [b, 'second']]) {
    for (const key of state.seen.keys()) {
      assert.ok(state.owned.includes(Number(key.split(':')[0])), `${name} member read only its own partitions`)
    }
  }
  // The leader leaves: the other member takes every partition.
  await a.consumer.disconnect()
  await waitFor(() => b.owned.length === 4, { what: 'the remaining member owns all four', timeoutMs: 30000 })
  await b.consumer.disconnect()
}

test('a stock KafkaJS leader assigns to our member', () => sharedGroup(true))

test('our leader assigns to a stock KafkaJS member', () => sharedGroup(false))

test('a stock KafkaJS leader hands our member a topic it did not subscribe to: RECEIVED_UNSUBSCRIBED_TOPICS, and it is left alone', async () => {
  const both = uniqueName('interop-both')
  const only = uniqueName('interop-theirs')
  await admin.createTopics({ topics: [{ topic: both, numPartitions: 2 }, { topic: only, numPartitions: 2 }] })
  const groupId = uniqueName('interop-unsub')
  // Stock KafkaJS's round robin assigns every topic of the group to every member.
  const leader = theirs.consumer({ groupId, ...GROUP_TIMING })
  const leaderJoined = []
  leader.on(leader.events.GROUP_JOIN, e => leaderJoined.push(e.payload))
  await leader.connect()
  await leader.subscribe({ topics: [both, only], fromBeginning: true })
  await leader.run({ eachMessage: async () => {} })
  await waitFor(() => leaderJoined.length > 0, { what: 'the stock leader joined', timeoutMs: 30000 })
  const member = ours.consumer({ groupId, ...GROUP_TIMING })
  const stray = []
  const read = []
  member.on(member.events.RECEIVED_UNSUBSCRIBED_TOPICS, e => stray.push(e.payload))
  await member.connect()
  await member.subscribe({ topics: [both], fromBeginning: true })
  await member.run({ eachMessage: async ({ topic }) => { read.push(topic) } })
  await waitFor(() => stray.length > 0, { what: 'RECEIVED_UNSUBSCRIBED_TOPICS', timeoutMs: 30000 })
  await producer.send({ topic: only, messages: Array.from({ length: 8 }, (_, i) => ({ value: `o${i}`, partition: i % 2 })) })
  await producer.send({ topic: both, messages: Array.from({ length: 8 }, (_, i) => ({ value: `b${i}`, partition: i % 2 })) })
  await waitFor(() => read.length >= 4, { what: 'our member reads its subscribed topic', timeoutMs: 30000 })
  await new Promise(resolve => setTimeout(resolve, 500))
  await member.disconnect()
  await leader.disconnect()
  const e = stray[0]
  assert.equal(e.groupId, groupId)
  assert.deepEqual(e.topicsNotSubscribed, [only])
  assert.deepEqual(e.assignedTopics.sort(), [both, only].sort())
  assert.ok(e.memberId.length > 0 && e.generationId >= 1, JSON.stringify(e))
  assert.ok(read.every(t => t === both), `read only the subscribed topic: ${[...new Set(read)]}`)
})
