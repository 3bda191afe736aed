'use strict'
// KafkaJS's admin client: topics, metadata, offsets and consumer groups.
const native = require('./native')
const { resolveBrokers, passThrough } = require('./config')
const { Instrumentation } = require('./events')
const {
  KafkaJSError, KafkaJSNonRetriableError, KafkaJSCreateTopicError, KafkaJSDeleteTopicError,
  KafkaJSAggregateError, KafkaJSTimeout, fromNative, parse
} = require('./errors')

const EVENTS = {
  CONNECT: 'admin.connect',
  DISCONNECT: 'admin.disconnect',
  REQUEST: 'admin.network.request',
  REQUEST_TIMEOUT: 'admin.network.request_timeout',
  REQUEST_QUEUE_SIZE: 'admin.network.request_queue_size'
}

const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))

class Admin {
  constructor (kafka, options) {
    this._kafka = kafka
    this._options = options
    this._native = null
    this._instrumentation = new Instrumentation(EVENTS)
    this.events = EVENTS
  }

  on (type, listener) {
    return this._instrumentation.on(type, listener)
  }

  logger () {
    return this._kafka.logger()
  }

  async connect () {
    const servers = await resolveBrokers(this._kafka._brokers)
    try {
      const n = new native.NativeAdmin({ ...this._kafka._props, 'bootstrap.servers': servers, ...passThrough(this._options) }, this._kafka._tokenProvider)
      await n.connect()
      this._native = n
    } catch (e) {
      throw fromNative(e)
    }
    this._instrumentation.emit(EVENTS.CONNECT, null)
  }

  async disconnect () {
    if (this._native) this._native.close()
    this._native = null
    this._instrumentation.emit(EVENTS.DISCONNECT, null)
  }

  _n () {
    if (!this._native) throw new KafkaJSError('The admin client is not connected: call connect() first', { retriable: false })
    return this._native
  }

  async _call (f) {
    const n = this._n()
    try {
      return await f(n)
    } catch (e) {
      throw fromNative(e)
    }
  }

  /** Resolves true when every topic was created, false when some already existed. */
  async createTopics ({ topics, validateOnly = false, waitForLeaders = true, timeout = 5000 } = {}) {
    if (!Array.isArray(topics) || topics.length === 0) throw new KafkaJSNonRetriableError(`Invalid topics array ${topics}`)
    const names = new Set()
    for (const t of topics) {
      if (!t || typeof t.topic !== 'string' || !t.topic) throw new KafkaJSNonRetriableError(`Invalid topics array, the topic names have to be a valid string`)
      if (names.has(t.topic)) throw new KafkaJSNonRetriableError('Invalid topics array, it cannot have multiple entries for the same topic')
      names.add(t.topic)
    }
    const specs = topics.map(t => ({
      topic: t.topic,
      numPartitions: t.numPartitions,
      replicationFactor: t.replicationFactor,
      configEntries: (t.configEntries || []).map(({ name, value }) => ({ name, value: String(value) }))
    }))
    const results = await this._call(n => n.createTopics(specs, validateOnly))
    let allCreated = true
    const failures = []
    for (const r of results) {
      if (!r.error) continue
      const parsed = parse(r.error)
      if (parsed && parsed.type === 'TOPIC_ALREADY_EXISTS') {
        allCreated = false
        continue
      }
      failures.push(new KafkaJSCreateTopicError(fromNative(r.error), r.name))
    }
    if (failures.length === 1) throw failures[0]
    if (failures.length > 1) throw new KafkaJSAggregateError('Topic creation errors', failures)
    if (waitForLeaders && !validateOnly) await this._waitForLeaders(topics.map(t => t.topic), timeout)
    return allCreated
  }

  async _waitForLeaders (topics, timeout) {
    const deadline = Date.now() + Math.max(timeout, 1000)
    for (;;) {
      const meta = await this._call(n => n.describeTopics(topics))
      const ready = meta.every(t => !t.error && t.partitions.length > 0 && t.partitions.every(p => p.leader >= 0))
      if (ready) return
      if (Date.now() > deadline) throw new KafkaJSTimeout(`Topics ${topics.join(', ')} have no leaders after ${timeout} ms`)
      await sleep(50)
    }
  }

  async deleteTopics ({ topics, timeout } = {}) {
    if (!Array.isArray(topics)) throw new KafkaJSNonRetriableError(`Invalid topics array ${topics}`)
    const results = await this._call(n => n.deleteTopics(topics))
    const failures = results.filter(r => r.error).map(r => new KafkaJSDeleteTopicError(fromNative(r.error), r.name))
    if (failures.length === 1) throw failures[0]
    if (failures.length > 1) throw new KafkaJSAggregateError('Topic deletion errors', failures)
  }

  async listTopics () {
    return this._call(n => n.listTopics())
  }

  async fetchTopicMetadata ({ topics } = {}) {
    const meta = await this._call(n => n.describeTopics(topics && topics.length ? topics : null))
    const failed = meta.find(t => t.error)
    if (failed) throw fromNative(failed.error)
    return {
      topics: meta.map(t => ({
        name: t.name,
        partitions: t.partitions.map(p => ({
          partitionErrorCode: p.partitionErrorCode,
          partitionId: p.partitionId,
          leader: p.leader,
          replicas: p.replicas,
          isr: p.isr,
          offlineReplicas: p.offlineReplicas
        }))
      }))
    }
  }

  async fetchTopicOffsets (topic) {
    const found = await this._call(n => n.topicOffsets(topic))
    return found.map(({ partition, low, high }) => ({ partition, offset: high, high, low }))
  }

  async fetchTopicOffsetsByTimestamp (topic, timestamp) {
    const found = await this._call(n => n.offsetsByTimestamp(topic, Number(timestamp === undefined ? Date.now() : timestamp)))
    return found.map(({ partition, offset }) => ({ partition, offset }))
  }

  async fetchOffsets ({ groupId, topics, resolveOffsets = false } = {}) {
    if (!groupId) throw new KafkaJSNonRetriableError(`Invalid groupId ${groupId}`)
    if (topics !== undefined && !Array.isArray(topics)) throw new KafkaJSNonRetriableError('Expected topics array to be set')
    const found = await this._call(n => n.fetchOffsets(groupId, topics === undefined || topics.length === 0 ? null : topics))
    const out = found.map(({ topic, partitions }) => ({
      topic,
      partitions: partitions.map(({ partition, offset, metadata }) => ({ partition, offset, metadata: metadata === undefined ? null : metadata }))
    }))
    if (resolveOffsets) {
      for (const t of out) {
        if (!t.partitions.some(p => p.offset === '-1')) continue
        const ends = await this.fetchTopicOffsets(t.topic)
        for (const p of t.partitions) {
          if (p.offset !== '-1') continue
          const end = ends.find(e => e.partition === p.partition)
          if (end) p.offset = end.high
        }
      }
    }
    return out
  }

  async listGroups () {
    const groups = await this._call(n => n.listGroups())
    return { groups: groups.map(({ groupId, protocolType }) => ({ groupId, protocolType })) }
  }

  async describeGroups (groupIds) {
    if (!Array.isArray(groupIds)) throw new KafkaJSNonRetriableError(`Invalid groupIds array ${groupIds}`)
    const groups = await this._call(n => n.describeGroups(groupIds))
    return { groups }
  }
}

module.exports = { Admin, EVENTS }
