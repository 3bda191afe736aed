'use strict'
// `new Kafka(config)`: the entry point KafkaJS code starts from.
const { clientProps, tokenProvider } = require('./config')
const { createLogger } = require('./logger')
const native = require('./native')
const { logLevel } = require('./constants')
const { KafkaJSNonRetriableError } = require('./errors')
const { Producer } = require('./producer')
const { Consumer } = require('./consumer')
const { Admin } = require('./admin')

const CORE_FILTER = { [logLevel.ERROR]: 'odradek=error', [logLevel.WARN]: 'odradek=warn', [logLevel.INFO]: 'odradek=info', [logLevel.DEBUG]: 'odradek=debug' }

/**
 * The core's own log (connections, metadata, groups, ...) through the KafkaJS logger at its
 * `logLevel`, under the `odradek` namespace with the module as `target`: while any client of
 * this Kafka is connected, a native queue (NativeLog) drained every 200 ms by a timer that does
 * not keep the process alive. Lines are not attributed to a client: every Kafka instance with
 * connected clients gets every client's lines.
 */
function coreLog (level, logger) {
  const filter = CORE_FILTER[level]
  if (!filter) return null
  const log = logger.namespace('odradek')
  const state = { users: 0, queue: null, timer: null }
  const drain = () => {
    if (!state.queue) return
    for (const line of state.queue.take()) {
      const extra = { target: line.target }
      if (line.level === 'ERROR') log.error(line.message, extra)
      else if (line.level === 'WARN') log.warn(line.message, extra)
      else if (line.level === 'INFO') log.info(line.message, extra)
      else log.debug(line.message, extra)
    }
  }
  return {
    hold () {
      if (state.users++ > 0) return
      state.queue = new native.NativeLog(filter)
      state.timer = setInterval(drain, 200)
      state.timer.unref()
    },
    release () {
      if (state.users === 0 || --state.users > 0) return
      drain()
      clearInterval(state.timer)
      state.queue = null
      state.timer = null
    }
  }
}

class Kafka {
  constructor (config = {}) {
    if (!config || (config.brokers === undefined)) {
      throw new KafkaJSNonRetriableError('Failed to connect: expected brokers array and got nothing')
    }
    this._brokers = config.brokers
    this._props = clientProps(config)
    // Under its consumers' own `retry` (their run loop's `retries` and `restartOnFailure`, see
    // lib/consumer.js); a producer's `retries` is Kafka's (lib/config.js).
    this._retry = config.retry
    // KafkaJS's sasl.oauthBearerProvider, handed to every native client.
    this._tokenProvider = tokenProvider(config)
    this._logger = createLogger({ level: config.logLevel, logCreator: config.logCreator })
    this._coreLog = coreLog(config.logLevel === undefined ? logLevel.INFO : config.logLevel, this._logger)
  }

  producer (options = {}) {
    return new Producer(this, options)
  }

  consumer (options = {}) {
    return new Consumer(this, options)
  }

  admin (options = {}) {
    return new Admin(this, options)
  }

  logger () {
    return this._logger
  }

  /** `client` starts (once) receiving the core's log lines with the others (see coreLog). */
  _holdCoreLog (client) {
    if (!this._coreLog || client._holdsCoreLog) return
    client._holdsCoreLog = true
    this._coreLog.hold()
  }

  /** `client` no longer needs the core's log lines. */
  _releaseCoreLog (client) {
    if (!this._coreLog || !client._holdsCoreLog) return
    client._holdsCoreLog = false
    this._coreLog.release()
  }
}

module.exports = { Kafka }
