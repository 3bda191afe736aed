'use strict'
// odradek/testing: a Kafka cluster inside the test's own process, started in milliseconds, with
// fault injection. Real brokers (odradek's reference broker, compiled into the addon) on
// ephemeral loopback ports: any client works against them (odradek, kafkajs, ...).
//
//   const { Cluster } = require('odradek/testing')
//   const cluster = await Cluster.start({ brokers: 3, topics: [{ topic: 'orders', numPartitions: 3 }] })
//   const kafka = new Kafka({ brokers: cluster.brokers })      // kafkajs or odradek
//   cluster.pushRequestErrors('OffsetCommit', ['COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_NOT_AVAILABLE'])
//   cluster.setPartitionLeader('orders', 0, 2)                  // leader epoch bumped
//   await cluster.setBrokerDown(3)                              // port refuses connections
//   cluster.requests().filter(r => r.apiName === 'Produce')    // what the client sent
//   await cluster.stop()                                       // or `await using cluster = ...`
//
// Test frameworks: `useCluster(options, hooks)` registers start/stop in the framework's
// hooks and returns a handle whose `.cluster` / `.brokers` are set while tests run:
//   node:test  useCluster(opts, { before, after })           (from 'node:test'), or
//              { beforeEach, afterEach } for a fresh cluster per test
//   Jest/Vitest  useCluster(opts)  (the global beforeAll/afterAll), or pass them explicitly
// `withCluster(opts, async (cluster) => ...)` runs one function against a fresh cluster.
//
// API keys are names ('Produce', 'OffsetCommit') or numbers; error codes are protocol names
// ('NOT_LEADER_OR_FOLLOWER') or numbers. The brokers share one log store: a moved leader keeps
// its data, there is no replication and no ISR, and a broker that goes down leaves its
// partitions without a leader until it comes back.

const { NativeTestCluster } = require('./native')

function str (v) {
  return v === undefined || v === null ? undefined : String(v)
}

class Cluster {
  constructor (native) {
    this._native = native
  }

  /**
   * Starts a cluster. Options: brokers (1), partitions of auto-created topics (1), topics
   * ([{ topic, numPartitions }] or { name: partitions }), config ({ 'server.properties key':
   * value }), storage ('memory' | 'tempdir' | a directory kept after stop), recordRequests.
   */
  static async start (options = {}) {
    let topics = options.topics || []
    if (!Array.isArray(topics)) {
      topics = Object.entries(topics).map(([topic, numPartitions]) => ({ topic, numPartitions }))
    }
    const config = {}
    for (const [k, v] of Object.entries(options.config || {})) config[k] = String(v)
    const native = await NativeTestCluster.start({
      brokers: options.brokers,
      partitions: options.partitions,
      topics: topics.map((t) => ({ topic: t.topic, numPartitions: t.numPartitions })),
      config,
      storage: options.storage,
      recordRequests: options.recordRequests
    })
    return new Cluster(native)
  }

  /** `host:port,...` (librdkafka-style `bootstrap.servers`). */
  get bootstrap () { return this._native.bootstrap() }
  /** `['host:port', ...]` (KafkaJS's `brokers`). */
  get brokers () { return this.bootstrap.split(',') }
  get brokerIds () { return this._native.brokerIds() }
  get running () { return this._native.isRunning() }
  get dataDir () { return this._native.dataDir() }
  brokerAddress (broker) {
    const a = this._native.brokerAddress(broker)
    if (a == null) throw new Error(`no broker ${broker}`)
    return a
  }

  createTopic (name, numPartitions = 1) { this._native.createTopic(name, numPartitions) }

  /** Stops every broker and removes the data (idempotent). */
  async stop () { await this._native.stop() }
  async [Symbol.asyncDispose] () { await this.stop() }

  // ---- fault injection ----------------------------------------------------------------

  /**
   * The next requests of `api` fail with `errors`, one per request, in order. Options:
   * broker, topic, partition (with topic: only that partition of a Produce, Fetch,
   * ListOffsets or OffsetForLeaderEpoch fails, the rest is answered), clientId, delaysMs
   * (one delay per error: the error is answered that much later).
   */
  pushRequestErrors (api, errors, { broker, topic, partition, clientId, delaysMs } = {}) {
    if (delaysMs && delaysMs.length !== errors.length) throw new Error('delaysMs needs one delay per error')
    errors.forEach((error, i) => {
      this.addRule(api, { error, delayMs: delaysMs ? delaysMs[i] : 0, times: 1, broker, topic, partition, clientId })
    })
  }

  /**
   * Adds one rule for requests of `api`; returns its id. One of: error (answered instead of
   * handling; with delayMs, answered that much later), drop: true (never answered), close:
   * true (connection closed), or only delayMs (handled, answered later). times: how many
   * matching requests (null: every one until removed; default 1). Filters: broker, topic,
   * partition, clientId.
   */
  addRule (api, { error, delayMs = 0, drop = false, close = false, times = 1, broker, topic, partition, clientId } = {}) {
    const chosen = [['error', error !== undefined && error !== null], ['drop', drop], ['close', close]].filter(([, on]) => on)
    if (chosen.length > 1) throw new Error('choose one of error, drop, close')
    let action
    if (chosen.length) action = chosen[0][0]
    else if (delayMs > 0) action = 'delay'
    else throw new Error('a rule needs error, drop, close or delayMs')
    return this._native.addRule({
      api: String(api),
      action,
      error: str(error),
      delayMs,
      times: times === null ? undefined : times,
      broker,
      topic,
      partition,
      clientId
    })
  }

  /** Answers requests of `api` `delayMs` later (every one unless `times`). */
  delayResponses (api, delayMs, { times = null, ...filters } = {}) {
    return this.addRule(api, { delayMs, times, ...filters })
  }

  /** Never answers requests of `api`. */
  dropResponses (api, { times = 1, ...filters } = {}) {
    return this.addRule(api, { drop: true, times, ...filters })
  }

  removeRule (id) { return this._native.removeRule(id) }
  clearRules () { this._native.clearRules() }
  /** Rules (pushed errors included) not used up yet. */
  get pendingRules () { return this._native.pendingRules() }

  /** Cuts open connections ({ broker, clientId } narrow it); resolves with how many. */
  async closeConnections ({ broker, clientId } = {}) {
    return this._native.closeConnections(broker, clientId)
  }

  connectionCount (broker) { return this._native.connectionCount(broker) }
  /** Takes a broker down: listener closed, connections cut, out of Metadata. */
  async setBrokerDown (broker) { await this._native.setBrokerDown(broker) }
  /** Brings a broker back on the same port (its partitions get a new leader epoch). */
  async setBrokerUp (broker) { await this._native.setBrokerUp(broker) }
  isBrokerUp (broker) { return this._native.isBrokerUp(broker) }
  /** Adds `rttMs` before every response of a broker (0 removes it). */
  setBrokerRtt (broker, rttMs) { this._native.setBrokerRtt(broker, rttMs) }

  /** Moves a partition's leader (-1: none); returns the new leader epoch. */
  setPartitionLeader (topic, partition, broker) { return this._native.setPartitionLeader(topic, partition, broker) }
  /** Makes `broker` a read replica the leader names in Fetch responses (null clears it). */
  setPartitionFollower (topic, partition, broker) { this._native.setPartitionFollower(topic, partition, broker) }
  /** { leader, epoch, follower } of a partition. */
  partitionLeader (topic, partition) { return this._native.partitionLeader(topic, partition) }

  /** Pins the coordinator of a group ('group') or transactional id ('transaction'). */
  setCoordinator (kind, key, broker) { this._native.setCoordinator(kind, key, broker) }
  coordinator (kind, key) { return this._native.coordinator(kind, key) }

  /** Serves only these versions of `api` (others close the connection, as Kafka does). */
  setApiVersion (api, minVersion, maxVersion) { this._native.setApiVersion(String(api), minVersion, maxVersion) }
  clearApiVersion (api) { this._native.clearApiVersion(String(api)) }

  // ---- observation -------------------------------------------------------------------

  /** Turns the request log on (or off, keeping what was logged). */
  recordRequests (on = true) { this._native.recordRequests(on) }

  /**
   * The logged requests, oldest first: { apiKey, apiName, apiVersion, clientId,
   * correlationId, peer, broker, partitions: [{ topic, partition }], action ('error' |
   * 'delay' | 'drop' | 'close' | null), error, itemErrors: [{ topic, partition, error }] }.
   */
  requests ({ clear = false } = {}) {
    return this._native.requests(clear).map((r) => ({
      ...r,
      clientId: r.clientId ?? null,
      action: r.action ?? null,
      error: r.error ?? null
    }))
  }
}

/** Runs `fn(cluster)` against a fresh cluster and stops it afterwards. */
async function withCluster (options, fn) {
  if (typeof options === 'function') { fn = options; options = {} }
  const cluster = await Cluster.start(options)
  try {
    return await fn(cluster)
  } finally {
    await cluster.stop()
  }
}

/**
 * Registers a cluster's start and stop in a test framework's hooks; returns a handle whose
 * `cluster`, `bootstrap` and `brokers` are set while the tests run. `hooks`: { before, after }
 * (once per file or suite: node:test's before/after, Jest's and Vitest's beforeAll/afterAll)
 * or { beforeEach, afterEach } (a fresh cluster per test). Without `hooks`, the global
 * beforeAll/afterAll of Jest and Vitest (with globals) are used.
 */
function useCluster (options = {}, hooks) {
  const g = globalThis
  let start, stop
  if (hooks && (hooks.beforeEach || hooks.afterEach)) {
    start = hooks.beforeEach; stop = hooks.afterEach
  } else if (hooks) {
    start = hooks.before || hooks.beforeAll; stop = hooks.after || hooks.afterAll
  } else {
    start = g.beforeAll; stop = g.afterAll
  }
  if (typeof start !== 'function' || typeof stop !== 'function') {
    throw new Error("useCluster needs the framework's hooks: useCluster(opts, { before, after }) with node:test, or Jest/Vitest globals")
  }
  const handle = {
    cluster: null,
    get bootstrap () { return this.cluster && this.cluster.bootstrap },
    get brokers () { return this.cluster && this.cluster.brokers }
  }
  start(async () => { handle.cluster = await Cluster.start(options) })
  stop(async () => {
    const c = handle.cluster
    handle.cluster = null
    if (c) await c.stop()
  })
  return handle
}

module.exports = { Cluster, withCluster, useCluster }
