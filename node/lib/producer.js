'use strict'
// KafkaJS's producer: connect, send, sendBatch, transaction, disconnect, events.
//
// KafkaJS takes `acks` and `compression` per send call; a Kafka producer fixes both at
// creation. So each combination used gets its own native producer, created on first use and
// sharing nothing but the process's runtime. Most applications use one combination.
const native = require('./native')
const { producerProps, resolveBrokers, takeShellProperties } = require('./config')
const { compressionName, builtInPartitioner } = require('./constants')
const { Instrumentation, throttleListener, clientErrorListener, attachRequestEvents, takeStatisticsInterval, startStatistics } = require('./events')
const errors = require('./errors')
const { Transaction } = require('./transaction')

const { KafkaJSError, KafkaJSNonRetriableError, fromNative } = errors

const EVENTS = {
  CONNECT: 'producer.connect',
  DISCONNECT: 'producer.disconnect',
  REQUEST: 'producer.network.request',
  REQUEST_TIMEOUT: 'producer.network.request_timeout',
  REQUEST_QUEUE_SIZE: 'producer.network.request_queue_size',
  // odradek's extension (KafkaJS has no throttle event): see lib/events.js.
  REQUEST_THROTTLE: 'producer.network.request_throttle',
  CLIENT_ERROR: 'producer.network.client_error',
  // odradek's extension: librdkafka's statistics JSON every `statistics.interval.ms`.
  STATS: 'producer.stats'
}

// librdkafka's RD_KAFKA_RESP_ERR__QUEUE_FULL.
const QUEUE_FULL_CODE = -184

/**
 * Takes librdkafka's `queue.buffering.max.messages` out of the producer's properties (the
 * shell applies it: sends that would leave more messages unsettled fail with `_QUEUE_FULL`, as
 * librdkafka's produce does); null when absent. librdkafka's range, 0..2147483647.
 */
function takeQueueLimit (props) {
  const raw = props['queue.buffering.max.messages']
  delete props['queue.buffering.max.messages']
  if (raw === undefined || raw === null) return null
  const n = Number(String(raw).trim())
  if (!Number.isInteger(n) || n < 0 || n > 2147483647) {
    throw new KafkaJSNonRetriableError(`Invalid value "${raw}" for configuration property "queue.buffering.max.messages": expected an integer in 0..2147483647`)
  }
  return Math.max(1, n)
}

function acksName (acks) {
  if (acks === undefined || acks === null || acks === -1 || acks === 'all') return 'all'
  if (acks === 1 || acks === 0) return String(acks)
  throw new KafkaJSNonRetriableError(`Invalid acks value ${acks}: expected -1, 0 or 1`)
}

class Producer {
  constructor (kafka, options) {
    this._kafka = kafka
    this._options = options
    this._props = producerProps(options, kafka._retry)
    this._idempotent = Boolean(options.idempotent)
    this._transactionalId = options.transactionalId || null
    const partitioner = options.createPartitioner
    this._partition = partitioner && partitioner !== builtInPartitioner && !Object.values(require('./constants').Partitioners).includes(partitioner)
      ? partitioner()
      : null
    this._natives = new Map()
    this._statsTimers = []
    // librdkafka's queue.buffering.max.messages when set: messages sent and not yet settled.
    this._queueMax = null
    this._queued = 0
    this._base = null
    this._connected = false
    this._transaction = null
    this._instrumentation = new Instrumentation(EVENTS)
    this.events = EVENTS
  }

  async connect () {
    if (this._connected) return
    const servers = await resolveBrokers(this._kafka._brokers)
    this._base = { ...this._kafka._props, 'bootstrap.servers': servers, ...this._props }
    this._queueMax = takeQueueLimit(this._base)
    takeShellProperties(this._base)
    this._kafka._holdCoreLog(this)
    try {
      const main = this._native('all', undefined)
      await main.connect()
    } catch (e) {
      this._kafka._releaseCoreLog(this)
      throw fromNative(e)
    }
    this._connected = true
    this._instrumentation.emit(EVENTS.CONNECT, null)
  }

  async disconnect () {
    const natives = [...this._natives.values()]
    this._natives.clear()
    for (const t of this._statsTimers) clearInterval(t)
    this._statsTimers = []
    this._connected = false
    await Promise.all(natives.map(n => n.close().catch(() => {})))
    this._kafka._releaseCoreLog(this)
    this._instrumentation.emit(EVENTS.DISCONNECT, null)
  }

  isIdempotent () {
    return this._idempotent
  }

  on (type, listener) {
    return this._instrumentation.on(type, listener)
  }

  logger () {
    return this._kafka.logger()
  }

  /** The native producer for an acks / compression combination, created on first use. */
  _native (acks, compression, timeout) {
    const codec = compression === undefined ? undefined : compressionName(compression)
    if (codec === null) throw new KafkaJSNonRetriableError(`Compression codec ${compression} is not implemented`)
    const key = `${acks}|${codec || ''}|${timeout === undefined ? '' : timeout}`
    let n = this._natives.get(key)
    if (!n) {
      const props = { ...this._base }
      if (acks !== 'all' || props.acks === undefined) props.acks = acks
      if (codec !== undefined) props['compression.type'] = codec
      if (timeout !== undefined) props['request.timeout.ms'] = String(timeout)
      try {
        const statsMs = takeStatisticsInterval(props)
        n = new native.NativeProducer(props, this._kafka._tokenProvider)
        if (statsMs > 0) this._statsTimers.push(startStatistics(n, statsMs, this._instrumentation, EVENTS.STATS, props['client.id']))
        n.onThrottle(throttleListener(this._instrumentation, EVENTS.REQUEST_THROTTLE, { clientId: props['client.id'], logger: this.logger() }))
        n.onClientError(clientErrorListener(this._instrumentation, EVENTS.CLIENT_ERROR, { clientId: props['client.id'], logger: this.logger() }))
        attachRequestEvents(this._instrumentation, EVENTS, n, props['client.id'])
      } catch (e) {
        throw fromNative(e)
      }
      this._natives.set(key, n)
    }
    return n
  }

  _check (topicMessages) {
    if (!this._connected) throw new KafkaJSError('The producer is disconnected', { retriable: false })
    if (!Array.isArray(topicMessages)) throw new KafkaJSNonRetriableError('Invalid topicMessages: expected an array')
    for (const { topic, messages } of topicMessages) {
      if (!topic || typeof topic !== 'string') throw new KafkaJSNonRetriableError(`Invalid topic ${topic}`)
      if (!Array.isArray(messages)) throw new KafkaJSNonRetriableError(`Invalid messages array [${messages}] for topic "${topic}"`)
      for (const m of messages) {
        if (m === null || typeof m !== 'object') throw new KafkaJSNonRetriableError(`Invalid message without value for topic "${topic}": ${JSON.stringify(m)}`)
      }
    }
  }

  /** Runs a custom KafkaJS partitioner for messages without a partition. */
  async _applyPartitioner (n, topicMessages) {
    if (!this._partition) return topicMessages
    const topics = topicMessages.map(t => t.topic)
    const counts = await n.partitionsFor(topics)
    return topicMessages.map(({ topic, messages }, i) => {
      const partitionMetadata = Array.from({ length: counts[i] }, (_, p) => ({ partitionId: p, leader: 0, replicas: [0], isr: [0], partitionErrorCode: 0 }))
      return {
        topic,
        messages: messages.map(message => message.partition !== undefined && message.partition !== null
          ? message
          : { ...message, partition: this._partition({ topic, partitionMetadata, message }) })
      }
    })
  }

  async send ({ topic, messages, acks, timeout, compression } = {}) {
    return this.sendBatch({ topicMessages: [{ topic, messages }], acks, timeout, compression })
  }

  async sendBatch ({ topicMessages, acks, timeout, compression } = {}) {
    if (this._transactionalId && !(this._transaction && this._transaction._active)) {
      throw new KafkaJSNonRetriableError('Cannot send messages outside of a transaction with a transactional producer: use producer.transaction()')
    }
    return this._sendBatch({ topicMessages, acks, timeout, compression })
  }

  async _sendBatch ({ topicMessages, acks, timeout, compression }) {
    this._check(topicMessages)
    // KafkaJS sends `timeout` as the Produce request's timeout: here it is the request.timeout.ms
    // of the native producer that sends it (one per value used, like acks and compression).
    let requestTimeout
    if (timeout !== undefined && timeout !== null) {
      if (!Number.isInteger(timeout) || timeout <= 0 || timeout > 2147483647) {
        throw new KafkaJSNonRetriableError(`Invalid timeout ${timeout}: expected a positive integer (ms)`)
      }
      const fixed = Number((this._base && this._base['request.timeout.ms']) || 30000)
      if (timeout !== fixed) requestTimeout = timeout
    }
    const a = acksName(acks)
    if (this._idempotent && a !== 'all') {
      throw new KafkaJSNonRetriableError("Not requiring ack for all messages invalidates the idempotent producer's EoS guarantees")
    }
    const n = this._native(a, compression, requestTimeout)
    const count = topicMessages.reduce((sum, { messages }) => sum + messages.length, 0)
    if (this._queueMax !== null && this._queued + count > this._queueMax) {
      const e = new KafkaJSError(`Local: Queue full: ${this._queued} messages waiting for delivery, queue.buffering.max.messages is ${this._queueMax}`, { retriable: true })
      e.code = QUEUE_FULL_CODE
      e.type = '_QUEUE_FULL'
      throw e
    }
    this._queued += count
    try {
      const list = await this._applyPartitioner(n, topicMessages)
      return await n.send(list)
    } catch (e) {
      throw fromNative(e)
    } finally {
      this._queued -= count
    }
  }

  /**
   * A transactional producer is one Kafka producer (its transactional.id fences any other), so
   * a transaction's send cannot pick its own `timeout` or `compression`: one other than the
   * producer's is refused, naming the property to set instead.
   */
  _checkTransactionalSend ({ timeout, compression }) {
    const fixedTimeout = Number((this._base && this._base['request.timeout.ms']) || 30000)
    if (timeout !== undefined && timeout !== null && timeout !== fixedTimeout) {
      throw new KafkaJSNonRetriableError(`send({ timeout: ${timeout} }) in a transaction: its produce requests wait ${fixedTimeout} ms; set 'request.timeout.ms' (or the client's requestTimeout) to ${timeout} instead`)
    }
    if (compression !== undefined && compression !== null) {
      const codec = compressionName(compression)
      const fixedCodec = (this._base && this._base['compression.type']) || 'none'
      if (codec !== fixedCodec) {
        throw new KafkaJSNonRetriableError(`send({ compression: ${compression} }) in a transaction: this producer compresses with ${fixedCodec}; set 'compression.type' on the producer instead`)
      }
    }
  }

  /** Starts a transaction (needs `transactionalId`). */
  async transaction () {
    if (!this._transactionalId) {
      throw new KafkaJSNonRetriableError('Must provide transactional id for transactional producer')
    }
    if (!this._connected) throw new KafkaJSError('The producer is disconnected', { retriable: false })
    if (this._transaction && this._transaction._active) {
      throw new KafkaJSNonRetriableError('There is already an ongoing transaction for this producer. Please end the transaction before beginning another.')
    }
    const n = this._native('all', undefined)
    this._transaction = await Transaction.begin(this, n)
    return this._transaction
  }
}

module.exports = { Producer, EVENTS }
