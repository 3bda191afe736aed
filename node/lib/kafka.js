'use strict'
// `new Kafka(config)`: the entry point KafkaJS code starts from.
const { clientProps, tokenProvider } = require('./config')
const { createLogger } = require('./logger')
const { KafkaJSNonRetriableError } = require('./errors')
const { Producer } = require('./producer')
const { Consumer } = require('./consumer')
const { Admin } = require('./admin')

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
}

module.exports = { Kafka }
