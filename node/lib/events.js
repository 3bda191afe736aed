'use strict'
// KafkaJS's instrumentation events: `client.on(client.events.X, listener)` returns a function
// that removes the listener; listeners get `{ id, type, timestamp, payload }`.
const { EventEmitter } = require('events')

let nextId = 0

class Instrumentation {
  constructor (events) {
    this.events = events
    this.emitter = new EventEmitter()
    this.known = new Set(Object.values(events))
    // Called with the type of every listener added (see `whenListened`).
    this.watchers = new Set()
  }

  /**
   * Calls `fn` once, as soon as any of `types` has a listener (at once if one has already):
   * what an event costs to produce is paid only once somebody listens.
   */
  whenListened (types, fn) {
    if (types.some(t => this.has(t))) return fn()
    const watcher = (type) => {
      if (!types.includes(type)) return
      this.watchers.delete(watcher)
      fn()
    }
    this.watchers.add(watcher)
  }

  on (type, listener) {
    if (!this.known.has(type)) {
      const { KafkaJSError } = require('./errors')
      throw new KafkaJSError(`Event name should be one of ${[...this.known].join(', ')}`, { retriable: false })
    }
    const wrapped = (event) => { Promise.resolve().then(() => listener(event)).catch(() => {}) }
    this.emitter.on(type, wrapped)
    for (const w of [...this.watchers]) w(type)
    return () => this.emitter.removeListener(type, wrapped)
  }

  has (type) {
    return this.emitter.listenerCount(type) > 0
  }

  emit (type, payload) {
    if (!this.has(type)) return
    this.emitter.emit(type, { id: nextId++, type, timestamp: Date.now(), payload })
  }
}

/**
 * The native clients' throttle callback as `type` events (odradek's extension: KafkaJS has no
 * throttle event, it only delays the connection's request queue until `throttledUntil` and logs
 * "Client side throttling in effect"). One event per response with a non-zero throttle time
 * (KIP-219), and one with `throttleTime: 0` when the broker stops throttling.
 */
function throttleListener (instrumentation, type, { clientId, logger }) {
  const log = logger.namespace('RequestQueue')
  return ({ broker, nodeId, throttleTime }) => {
    const now = Date.now()
    if (throttleTime > 0) log.debug(`Client side throttling in effect for ${throttleTime}ms`, { broker, clientId })
    instrumentation.emit(type, { broker, clientId, nodeId, throttleTime, throttledUntil: now + throttleTime })
  }
}

/**
 * The native clients' client-level errors (librdkafka's `error_cb` events: a broker that cannot
 * be reached any more, `_TRANSPORT`; every broker down, `_ALL_BROKERS_DOWN`; an authentication
 * failure) logged at error level in the `Connection` namespace, as KafkaJS logs connection
 * errors, and emitted as `type` events (odradek's extension). The same code comes at most once
 * a second; `_ALL_BROKERS_DOWN` once each time every known broker is down.
 */
function clientErrorListener (instrumentation, type, { clientId, logger }) {
  const log = logger.namespace('Connection')
  return ({ code, name, message }) => {
    log.error(message, { clientId, code, type: name })
    instrumentation.emit(type, { clientId, code, type: name, message })
  }
}

/**
 * KafkaJS's `network.request`, `network.request_timeout` and `network.request_queue_size`
 * events of a native client, with KafkaJS's payloads, attached to the native client only once
 * the application listens to one of them (`events` holds the client's REQUEST,
 * REQUEST_TIMEOUT and REQUEST_QUEUE_SIZE names). `alsoFor` names more event types whose
 * listeners need the request events; `onAnswered` sees every answered request first.
 */
function attachRequestEvents (instrumentation, events, nativeClient, clientId, { alsoFor = [], onAnswered = null } = {}) {
  const types = [events.REQUEST, events.REQUEST_TIMEOUT, events.REQUEST_QUEUE_SIZE, ...alsoFor]
  instrumentation.whenListened(types, () => {
    nativeClient.onRequest((e) => {
      if (onAnswered && e.kind === 'request') onAnswered(e)
      if (e.kind === 'request_queue_size') {
        instrumentation.emit(events.REQUEST_QUEUE_SIZE, { broker: e.broker, clientId, queueSize: e.queueSize })
        return
      }
      const payload = {
        broker: e.broker,
        clientId,
        correlationId: e.correlationId,
        createdAt: e.createdAt,
        sentAt: e.sentAt,
        pendingDuration: e.pendingDuration,
        apiName: e.apiName,
        apiKey: e.apiKey,
        apiVersion: e.apiVersion
      }
      if (e.kind === 'request_timeout') {
        instrumentation.emit(events.REQUEST_TIMEOUT, payload)
      } else {
        instrumentation.emit(events.REQUEST, { ...payload, size: e.size, duration: e.duration })
      }
    })
  })
}

/**
 * Takes librdkafka's `statistics.interval.ms` out of a native client's properties (the shell
 * applies it, not the core) and returns it: 0 (off) when absent. librdkafka's range,
 * 0..86400000, is enforced with its message shape.
 */
function takeStatisticsInterval (props) {
  const raw = props['statistics.interval.ms']
  delete props['statistics.interval.ms']
  if (raw === undefined || raw === null) return 0
  const ms = Number(String(raw).trim())
  if (!Number.isInteger(ms) || ms < 0 || ms > 86400000) {
    const { KafkaJSNonRetriableError } = require('./errors')
    throw new KafkaJSNonRetriableError(`Invalid value "${raw}" for configuration property "statistics.interval.ms": expected an integer in 0..86400000`)
  }
  return ms
}

/**
 * Emits a `type` event every `ms` with the native client's statistics, librdkafka's JSON
 * (docs/statistics.md), as `{ clientId, message }` (node-rdkafka's `event.stats` payload shape).
 * Each call starts new window statistics. The timer does not keep the process alive; returns it
 * for `clearInterval` on disconnect.
 */
function startStatistics (nativeClient, ms, instrumentation, type, clientId) {
  const timer = setInterval(() => {
    let message
    try {
      message = nativeClient.statistics()
    } catch (e) {
      return
    }
    instrumentation.emit(type, { clientId, message })
  }, ms)
  timer.unref()
  return timer
}

module.exports = { Instrumentation, throttleListener, clientErrorListener, attachRequestEvents, takeStatisticsInterval, startStatistics }
