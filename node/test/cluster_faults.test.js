'use strict'
// The Node.js package on a 3-node Apache Kafka while nodes fail (issue 27): an idempotent
// producer (acks -1, one sending loop per partition) and a two-member consumer group run while
// the fault harness (tests/cluster/kafka-cluster.sh) kills the leader of partition 0 and
// restarts it, pauses a node past the broker session timeout, kills the active controller and
// cuts a node off from clients. Afterwards no send failed, every acknowledged record was
// consumed, each partition's log holds each acknowledged record once at its acknowledged offset
// in send order, while one node was cut off the partitions the others lead went on, and no
// commit failed with UNKNOWN_MEMBER_ID (the members' session, 20 s, outlasts every fault).
//
// Needs Java and the Kafka jars: runs when ODRADEK_FAULT_CLUSTER=1 (the cluster tier of
// scripts/test.sh), skipped otherwise.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { Kafka } = require('..')
const { uniqueName, waitFor } = require('./helpers/broker')

const HARNESS = path.resolve(__dirname, '..', '..', 'tests', 'cluster', 'kafka-cluster.sh')
const PARTITIONS = 6
const enabled = process.env.ODRADEK_FAULT_CLUSTER === '1'

function harness (...args) {
  return execFileSync(HARNESS, args, { stdio: ['ignore', 'pipe', 'inherit'], timeout: 300000 }).toString().trim()
}

const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))

test('producer and group survive a leader kill, a pause, a controller kill and a cut', { skip: !enabled && 'needs the 3-node fault cluster (ODRADEK_FAULT_CLUSTER=1)', timeout: 600000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'odradek-node-cluster-'))
  const bootstrap = harness('start', dir, '3')
  // Commits that failed because a member was no longer in its group (the consumer logs each
  // failed commit with the error's type).
  const unknownMember = []
  const logCreator = () => ({ label, log }) => {
    if (log.message === 'Failed to commit offsets' && log.type === 'UNKNOWN_MEMBER_ID') unknownMember.push(log.timestamp)
    console.error(JSON.stringify({ level: label, ...log }))
  }
  const kafka = new Kafka({ brokers: bootstrap.split(','), clientId: 'node-faults', logCreator })
  const admin = kafka.admin()
  const producer = kafka.producer({ idempotent: true })
  const members = []
  try {
    await admin.connect()
    const topic = uniqueName('node-faults')
    await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] }] })
    const leaders = async () => {
      const meta = await admin.fetchTopicMetadata({ topics: [topic] })
      const out = []
      for (const p of meta.topics[0].partitions) out[p.partitionId] = p.leader
      return out
    }
    await producer.connect()
    const acked = Array.from({ length: PARTITIONS }, () => [])
    const failures = []
    let writing = true
    const writers = Array.from({ length: PARTITIONS }, async (_, partition) => {
      let seq = 0
      while (writing) {
        try {
          const [meta] = await producer.send({ topic, acks: -1, messages: [{ partition, value: `${partition}:${seq}` }] })
          acked[partition].push({ seq, offset: Number(meta.baseOffset), at: Date.now() })
        } catch (e) {
          failures.push(`${partition}:${seq}: ${e.message}`)
        }
        seq++
        await sleep(5)
      }
    })

    const consumed = new Set()
    const groupId = uniqueName('node-faults-group')
    for (let i = 0; i < 2; i++) {
      const c = kafka.consumer({ groupId, sessionTimeout: 20000, heartbeatInterval: 2000 })
      await c.connect()
      await c.subscribe({ topics: [topic], fromBeginning: true })
      await c.run({ eachMessage: async ({ message }) => { consumed.add(message.value.toString()) } })
      members.push(c)
    }

    const counts = () => acked.map(a => a.length)
    const awaitProgress = async (what) => {
      const before = counts()
      await waitFor(() => counts().every((n, p) => n > before[p]), { timeoutMs: 90000, intervalMs: 100, what: `every partition acknowledged again after ${what}` })
    }

    await awaitProgress('the start')
    const victim = (await leaders())[0]
    harness('kill', dir, String(victim))
    await awaitProgress('killing a leader')
    harness('restart', dir, String(victim))

    const frozen = (await leaders())[1]
    harness('pause', dir, String(frozen))
    await sleep(9000)
    await awaitProgress('pausing a node')
    harness('resume', dir, String(frozen))

    const controller = harness('controller', dir)
    harness('kill', dir, controller)
    await awaitProgress('killing the controller')
    harness('restart', dir, controller)

    const led = await leaders()
    const cut = led[2]
    harness('cut', dir, String(cut))
    const cutAt = Date.now()
    await sleep(10000)
    const healedAt = Date.now()
    harness('heal', dir, String(cut))
    for (let p = 0; p < PARTITIONS; p++) {
      if (led[p] === cut) continue
      const during = acked[p].filter(a => a.at >= cutAt + 5000 && a.at < healedAt).length
      assert.ok(during > 0, `partition ${p} (leader ${led[p]}) acknowledged nothing while node ${cut} was cut off`)
    }
    await awaitProgress('healing the cut')

    writing = false
    await Promise.all(writers)
    assert.deepEqual(failures, [], 'no send failed')
    const want = acked.flatMap((a, p) => a.map(({ seq }) => `${p}:${seq}`))
    await waitFor(() => want.every(v => consumed.has(v)), { timeoutMs: 90000, intervalMs: 200, what: `all ${want.length} acknowledged records consumed` })
    for (const c of members.splice(0)) await c.disconnect()
    assert.deepEqual(unknownMember, [], 'no commit failed with UNKNOWN_MEMBER_ID')

    // The log, read by a fresh group: each acknowledged record once, at its offset, in order.
    const reader = kafka.consumer({ groupId: uniqueName('node-faults-check') })
    await reader.connect()
    await reader.subscribe({ topics: [topic], fromBeginning: true })
    const logs = Array.from({ length: PARTITIONS }, () => [])
    let read = 0
    await reader.run({
      eachMessage: async ({ partition, message }) => {
        logs[partition].push({ offset: Number(message.offset), seq: Number(message.value.toString().split(':')[1]) })
        read++
      }
    })
    const ends = (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high), 0)
    await waitFor(() => read >= ends, { timeoutMs: 90000, intervalMs: 200, what: `the whole log (${ends} records) read` })
    await reader.disconnect()
    for (let p = 0; p < PARTITIONS; p++) {
      const seqs = logs[p].map(r => r.seq)
      const sorted = [...new Set(seqs)].sort((a, b) => a - b)
      assert.deepEqual(seqs, sorted, `partition ${p}: duplicates or reordering in the log`)
      const at = new Map(logs[p].map(r => [r.offset, r.seq]))
      for (const { seq, offset } of acked[p]) {
        assert.equal(at.get(offset), seq, `partition ${p}: acknowledged ${seq} at offset ${offset} lost`)
      }
    }
  } finally {
    for (const c of members) await c.disconnect().catch(() => {})
    await producer.disconnect().catch(() => {})
    await admin.disconnect().catch(() => {})
    try { harness('stop', dir) } catch (_) {}
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
