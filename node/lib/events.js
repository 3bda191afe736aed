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

module.exports = { Instrumentation }
