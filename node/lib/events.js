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
  }

  on (type, listener) {
    if (!this.known.has(type)) {
      const { KafkaJSError } = require('./errors')
      throw new KafkaJSError(`Event name should be one of ${[...this.known].join(', ')}`, { retriable: false })
    }
    const wrapped = (event) => { Promise.resolve().then(() => listener(event)).catch(() => {}) }
    this.emitter.on(type, wrapped)
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

module.exports = { Instrumentation, throttleListener, clientErrorListener }
