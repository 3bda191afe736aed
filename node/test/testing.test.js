'use strict'
// odradek/testing through its public API only, with odradek and kafkajs as the client under
// test (the same KafkaJS-style code runs on both): an injected NOT_LEADER_OR_FOLLOWER on
// Produce is retried and delivered once; COORDINATOR_NOT_AVAILABLE on OffsetCommit is
// retried; a broker taken down is reported and recovered from; a moved leader is followed; a
// delayed response triggers requestTimeout; the request log shows what the client sent.
const { test, describe, before, after, beforeEach, afterEach } = require('node:test')
const assert = require('node:assert/strict')
const { Cluster, withCluster, useCluster } = require('odradek/testing')

const CLIENTS = ['odradek', 'kafkajs']

function kafkaFor (client, cluster, extra = {}) {
  const { Kafka, logLevel } = require(client)
  return new Kafka({
    clientId: 'testing-test',
    brokers: cluster.brokers,
    logLevel: logLevel.NOTHING,
    retry: { retries: 8, initialRetryTime: 50, maxRetryTime: 500 },
    ...extra
  })
}

async function waitFor (what, fn, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Every value of `topic` from the beginning, waiting for `expect` values (then a bit more). */
async function readAll (client, cluster, topic, expect) {
  const kafka = kafkaFor(client, cluster)
  const consumer = kafka.consumer({ groupId: `reader-${Date.now()}-${Math.random()}`, maxWaitTimeInMs: 100 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const values = []
  await consumer.run({ eachMessage: async ({ message }) => { values.push(message.value.toString()) } })
  await waitFor(`${expect} values of ${topic}`, () => values.length >= expect)
  await new Promise((resolve) => setTimeout(resolve, 300))
  await consumer.disconnect()
  return values
}

const ofApi = (log, name) => log.filter((r) => r.apiName === name)

for (const client of CLIENTS) {
  describe(`${client} against odradek/testing`, () => {
    test('NOT_LEADER_OR_FOLLOWER on Produce is retried and delivered once', async () => {
      await withCluster({ topics: { t: 1 }, recordRequests: true }, async (cluster) => {
        cluster.pushRequestErrors('Produce', ['NOT_LEADER_OR_FOLLOWER', 'NOT_LEADER_OR_FOLLOWER'])
        const producer = kafkaFor(client, cluster).producer()
        await producer.connect()
        await producer.send({ topic: 't', messages: [{ value: 'once' }] })
        await producer.disconnect()
        assert.equal(cluster.pendingRules, 0)
        const produces = ofApi(cluster.requests(), 'Produce')
        assert.deepEqual(produces.slice(0, 2).map((r) => r.error), ['NOT_LEADER_OR_FOLLOWER', 'NOT_LEADER_OR_FOLLOWER'])
        assert.equal(produces[produces.length - 1].action, null)
        assert.deepEqual(await readAll(client, cluster, 't', 1), ['once'])
      })
    })

    test('COORDINATOR_NOT_AVAILABLE on OffsetCommit is retried', async () => {
      await withCluster({ topics: { t: 1 } }, async (cluster) => {
        const kafka = kafkaFor(client, cluster)
        const producer = kafka.producer()
        await producer.connect()
        await producer.send({ topic: 't', messages: [{ value: 'a' }, { value: 'b' }, { value: 'c' }] })
        cluster.recordRequests()
        cluster.pushRequestErrors('OffsetCommit', ['COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_NOT_AVAILABLE'])
        const consumer = kafka.consumer({ groupId: 'g', maxWaitTimeInMs: 100, retry: { retries: 8, initialRetryTime: 50 } })
        await consumer.connect()
        await consumer.subscribe({ topics: ['t'], fromBeginning: true })
        let seen = 0
        await consumer.run({ autoCommitInterval: 100, eachMessage: async () => { seen++ } })
        // kafkajs commits after a batch: keep batches coming until a commit is accepted.
        await waitFor('a commit accepted after the two refused ones', async () => {
          const commits = ofApi(cluster.requests(), 'OffsetCommit')
          const refused = commits.filter((r) => r.error === 'COORDINATOR_NOT_AVAILABLE').length
          if (refused === 2 && commits.some((r) => r.action === null)) return true
          if (seen >= 3) await producer.send({ topic: 't', messages: [{ value: 'more' }] })
          return false
        })
        const admin = kafka.admin()
        await admin.connect()
        const [t] = await admin.fetchOffsets({ groupId: 'g', topics: ['t'] })
        await admin.disconnect()
        await consumer.disconnect()
        await producer.disconnect()
        assert.ok(Number(t.partitions[0].offset) >= 3, JSON.stringify(t))
        const commits = ofApi(cluster.requests(), 'OffsetCommit')
        assert.deepEqual(commits.slice(0, 2).map((r) => r.error), ['COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_NOT_AVAILABLE'])
      })
    })

    test('a broker taken down is reported and recovered from', async () => {
      await withCluster({ topics: { t: 1 } }, async (cluster) => {
        const kafka = kafkaFor(client, cluster, {
          requestTimeout: 500,
          connectionTimeout: 300,
          retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 200 }
        })
        // odradek bounds a send by delivery.timeout.ms (a pass-through property; kafkajs
        // ignores it and gives up after its retries).
        const producer = kafka.producer({ 'delivery.timeout.ms': 1500 })
        await producer.connect()
        await producer.send({ topic: 't', messages: [{ value: 'before' }] })
        await cluster.setBrokerDown(1)
        assert.equal(cluster.isBrokerUp(1), false)
        // The client reports it: the send fails.
        await assert.rejects(producer.send({ topic: 't', messages: [{ value: 'lost' }], timeout: 500 }))
        await cluster.setBrokerUp(1)
        await waitFor('a send after the broker came back', async () => {
          try {
            await producer.send({ topic: 't', messages: [{ value: 'after' }] })
            return true
          } catch (e) {
            return false
          }
        })
        await producer.disconnect()
        const values = await readAll(client, cluster, 't', 2)
        assert.equal(values[0], 'before')
        assert.ok(values.includes('after'), JSON.stringify(values))
        assert.ok(!values.includes('lost'), JSON.stringify(values))
      })
    })

    test('a moved leader is followed', async () => {
      await withCluster({ brokers: 3, topics: { t: 1 }, recordRequests: true }, async (cluster) => {
        assert.equal(cluster.brokers.length, 3)
        assert.equal(cluster.partitionLeader('t', 0).leader, 1)
        const kafka = kafkaFor(client, cluster)
        const producer = kafka.producer()
        await producer.connect()
        const consumer = kafka.consumer({ groupId: 'mover', maxWaitTimeInMs: 100 })
        await consumer.connect()
        await consumer.subscribe({ topics: ['t'], fromBeginning: true })
        const got = []
        await consumer.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()) } })
        await producer.send({ topic: 't', messages: [{ value: 'on-1' }] })
        await waitFor('on-1', () => got.length >= 1)
        assert.equal(cluster.setPartitionLeader('t', 0, 2), 1)
        await producer.send({ topic: 't', messages: [{ value: 'on-2' }] })
        await waitFor('on-2', () => got.length >= 2)
        assert.equal(cluster.setPartitionLeader('t', 0, 3), 2)
        await producer.send({ topic: 't', messages: [{ value: 'on-3' }] })
        await waitFor('on-3', () => got.length >= 3)
        await consumer.disconnect()
        await producer.disconnect()
        assert.deepEqual(got, ['on-1', 'on-2', 'on-3'])
        const log = cluster.requests()
        const okOn = new Set(ofApi(log, 'Produce').filter((r) => r.action === null).map((r) => r.broker))
        assert.ok(okOn.has(1) && okOn.has(2) && okOn.has(3), JSON.stringify([...okOn]))
        const fetchOn = new Set(ofApi(log, 'Fetch').map((r) => r.broker))
        assert.ok(fetchOn.has(2) && fetchOn.has(3), JSON.stringify([...fetchOn]))
      })
    })

    test('a delayed response triggers requestTimeout', async () => {
      await withCluster({ topics: { t: 1 }, recordRequests: true }, async (cluster) => {
        cluster.delayResponses('Produce', 2000, { times: 1 })
        const producer = kafkaFor(client, cluster, { requestTimeout: 500 })
          .producer({ idempotent: true, maxInFlightRequests: 1 })
        await producer.connect()
        const started = Date.now()
        await producer.send({ topic: 't', messages: [{ value: 'late' }] })
        const elapsed = Date.now() - started
        await producer.disconnect()
        const produces = ofApi(cluster.requests(), 'Produce')
        assert.equal(produces[0].action, 'delay')
        assert.ok(produces.length >= 2, JSON.stringify(produces))
        assert.ok(elapsed >= 500, `${elapsed} ms`)
        assert.deepEqual(await readAll(client, cluster, 't', 1), ['late'], 'delivered once')
      })
    })

    test('the request log shows what the client sent', async () => {
      await withCluster({ topics: { t: 1 }, recordRequests: true }, async (cluster) => {
        const producer = kafkaFor(client, cluster, { clientId: 'logged-client' }).producer()
        await producer.connect()
        await producer.send({ topic: 't', messages: [{ value: 'x' }] })
        await producer.disconnect()
        const log = cluster.requests({ clear: true })
        assert.ok(log.length > 0)
        assert.ok(log.every((r) => r.clientId === 'logged-client'), JSON.stringify(log.map((r) => r.clientId)))
        assert.ok(log.every((r) => r.broker === 1))
        const names = new Set(log.map((r) => r.apiName))
        for (const n of ['ApiVersions', 'Metadata', 'Produce']) assert.ok(names.has(n), n)
        const produce = ofApi(log, 'Produce')[0]
        assert.deepEqual(produce.partitions, [{ topic: 't', partition: 0 }])
        assert.ok(produce.apiVersion >= 3)
        assert.deepEqual(cluster.requests(), [])
      })
    })
  })
}

describe('useCluster with node:test hooks, once per suite', () => {
  const kafka = useCluster({ brokers: 2, topics: { u: 2 } }, { before, after })
  test('the cluster runs while the suite does', () => {
    assert.ok(kafka.cluster.running)
    assert.equal(kafka.brokers.length, 2)
    assert.deepEqual(kafka.cluster.brokerIds, [1, 2])
    assert.equal(kafka.cluster.partitionLeader('u', 1).leader, 2)
  })
})

describe('useCluster per test', () => {
  const kafka = useCluster({}, { beforeEach, afterEach })
  let previous = null
  for (const n of [1, 2]) {
    test(`fresh cluster ${n}`, () => {
      assert.notEqual(kafka.bootstrap, previous)
      previous = kafka.bootstrap
      kafka.cluster.createTopic('x', 1)
    })
  }
})

test('useCluster picks Jest/Vitest globals and explains what it needs', async () => {
  assert.throws(() => useCluster({}), /hooks/)
  const hooks = []
  globalThis.beforeAll = (fn) => hooks.push(['beforeAll', fn])
  globalThis.afterAll = (fn) => hooks.push(['afterAll', fn])
  try {
    const handle = useCluster({ brokers: 1 })
    assert.deepEqual(hooks.map(([n]) => n), ['beforeAll', 'afterAll'])
    await hooks[0][1]()
    assert.ok(handle.cluster.running)
    const c = handle.cluster
    await hooks[1][1]()
    assert.equal(handle.cluster, null)
    assert.equal(c.running, false)
  } finally {
    delete globalThis.beforeAll
    delete globalThis.afterAll
  }
})

test('faults, coordinators, versions and bad arguments', async () => {
  const cluster = await Cluster.start({ brokers: 3, topics: [{ topic: 'v', numPartitions: 3 }] })
  try {
    assert.deepEqual([0, 1, 2].map((p) => cluster.partitionLeader('v', p).leader), [1, 2, 3])
    cluster.setCoordinator('group', 'g', 3)
    assert.equal(cluster.coordinator('group', 'g'), 3)
    cluster.setApiVersion('Produce', 3, 7)
    cluster.clearApiVersion('Produce')
    const id = cluster.addRule('Fetch', { drop: true, times: null })
    assert.equal(cluster.pendingRules, 1)
    assert.equal(cluster.removeRule(id), true)
    assert.throws(() => cluster.addRule('Produce', {}), /needs/)
    assert.throws(() => cluster.pushRequestErrors('NoSuchApi', ['NONE']), /unknown API/)
    await assert.rejects(cluster.setBrokerDown(9), /no broker 9/)
    await cluster.setBrokerDown(2)
    assert.equal(cluster.isBrokerUp(2), false)
    await cluster.setBrokerUp(2)
    assert.equal(cluster.partitionLeader('v', 1).epoch, 2, 'down and up bump the epoch')
    assert.equal(await cluster.closeConnections(), 0)
  } finally {
    await cluster.stop()
  }
  assert.equal(cluster.running, false)
  await cluster.stop()
})

test('start + stop is fast enough to do per test', async () => {
  for (const brokers of [1, 3]) {
    await (await Cluster.start({ brokers })).stop()
    const started = process.hrtime.bigint()
    for (let i = 0; i < 5; i++) await (await Cluster.start({ brokers })).stop()
    const eachMs = Number(process.hrtime.bigint() - started) / 5e6
    assert.ok(eachMs < 500, `${brokers} brokers: ${eachMs} ms`)
  }
})

test('the documented example (examples/node/commit_retry.test.js) passes with either client', async () => {
  const fs = require('fs')
  const os = require('os')
  const path = require('path')
  const { runNode } = require('./helpers/run')
  const pkg = path.resolve(__dirname, '..')
  // The example requires 'odradek' / 'kafkajs' as an application would.
  const modules = fs.mkdtempSync(path.join(os.tmpdir(), 'odradek-testing-example-'))
  fs.symlinkSync(pkg, path.join(modules, 'odradek'), 'dir')
  fs.symlinkSync(path.join(pkg, 'node_modules', 'kafkajs'), path.join(modules, 'kafkajs'), 'dir')
  try {
    for (const client of CLIENTS) {
      const r = await runNode(['--test', path.join(pkg, '..', 'examples', 'node', 'commit_retry.test.js')],
        { env: { NODE_PATH: modules, KAFKA_CLIENT: client, KAFKAJS_NO_PARTITIONER_WARNING: '1' }, timeoutMs: 120000 })
      assert.equal(r.code, 0, `${client}:\n${r.stdout}\n${r.stderr}`)
    }
  } finally {
    fs.rmSync(modules, { recursive: true, force: true })
  }
})
