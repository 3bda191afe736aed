'use strict'
// KafkaJS options -> Kafka property names for the native clients.
//
// Every option KafkaJS names is translated here; an option whose name contains a dot is a
// Kafka property (`'linger.ms'`, `'batch.size'`, ...) and passes through unchanged, which is
// how settings KafkaJS has no name for are reached. The core validates the result and names
// any key it does not know.
const { KafkaJSNonRetriableError } = require('./errors')

/** Kafka properties (keys with a dot) among `opts`, as strings. */
function passThrough (opts) {
  const out = {}
  for (const [k, v] of Object.entries(opts || {})) {
    if (k.includes('.') && v !== undefined && v !== null) out[k] = String(v)
  }
  return out
}

function ms (out, key, value) {
  if (value === undefined || value === null) return
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new KafkaJSNonRetriableError(`Invalid value for ${key}: ${value}`)
  }
  out[key] = String(Math.floor(value))
}

/** Resolves `brokers` (an array, or a function returning one or a Promise of one). */
async function resolveBrokers (brokers) {
  const list = typeof brokers === 'function' ? await brokers() : brokers
  if (!Array.isArray(list) || list.length === 0) {
    throw new KafkaJSNonRetriableError('Failed to connect: expected brokers array and got nothing')
  }
  return list.join(',')
}

/** Client-wide properties from `new Kafka(config)`. */
function clientProps (config) {
  if (config.ssl) throw new KafkaJSNonRetriableError('ssl is not supported by odradek yet')
  if (config.sasl) throw new KafkaJSNonRetriableError('sasl is not supported by odradek yet')
  const out = {}
  out['client.id'] = config.clientId || 'kafkajs'
  ms(out, 'socket.connection.setup.timeout.ms', config.connectionTimeout)
  ms(out, 'request.timeout.ms', config.requestTimeout)
  const retry = config.retry || {}
  ms(out, 'retry.backoff.ms', retry.initialRetryTime)
  ms(out, 'retry.backoff.max.ms', retry.maxRetryTime)
  return Object.assign(out, passThrough(config))
}

/** Producer properties from `kafka.producer(options)`. */
function producerProps (opts) {
  const out = {}
  if (opts.idempotent !== undefined) out['enable.idempotence'] = String(Boolean(opts.idempotent))
  if (opts.maxInFlightRequests !== undefined && opts.maxInFlightRequests !== null) {
    out['max.in.flight.requests.per.connection'] = String(opts.maxInFlightRequests)
  }
  if (opts.allowAutoTopicCreation !== undefined) out['allow.auto.create.topics'] = String(Boolean(opts.allowAutoTopicCreation))
  ms(out, 'metadata.max.age.ms', opts.metadataMaxAge)
  ms(out, 'transaction.timeout.ms', opts.transactionalId ? opts.transactionTimeout : undefined)
  if (opts.transactionalId) out['transactional.id'] = String(opts.transactionalId)
  const retry = opts.retry || {}
  ms(out, 'retry.backoff.ms', retry.initialRetryTime)
  ms(out, 'retry.backoff.max.ms', retry.maxRetryTime)
  return Object.assign(out, passThrough(opts))
}

/** Consumer properties from `kafka.consumer(options)` and the subscriptions. */
function consumerProps (opts, fromBeginning) {
  const out = {}
  out['group.id'] = opts.groupId
  // The run loop commits what handlers finished (see lib/consumer.js), never what was polled.
  out['enable.auto.commit'] = 'false'
  out['auto.offset.reset'] = fromBeginning ? 'earliest' : 'latest'
  // KafkaJS hands the application whole fetch responses; a poll of 500 records (Kafka's
  // default) would cut them into many small batches.
  out['max.poll.records'] = '10000'
  ms(out, 'session.timeout.ms', opts.sessionTimeout)
  ms(out, 'heartbeat.interval.ms', opts.heartbeatInterval)
  ms(out, 'max.poll.interval.ms', opts.rebalanceTimeout)
  ms(out, 'metadata.max.age.ms', opts.metadataMaxAge)
  ms(out, 'fetch.max.wait.ms', opts.maxWaitTimeInMs)
  if (opts.maxBytesPerPartition !== undefined) out['max.partition.fetch.bytes'] = String(opts.maxBytesPerPartition)
  if (opts.minBytes !== undefined) out['fetch.min.bytes'] = String(opts.minBytes)
  if (opts.maxBytes !== undefined) out['fetch.max.bytes'] = String(opts.maxBytes)
  if (opts.allowAutoTopicCreation !== undefined) out['allow.auto.create.topics'] = String(Boolean(opts.allowAutoTopicCreation))
  if (opts.readUncommitted !== undefined) out['isolation.level'] = opts.readUncommitted ? 'read_uncommitted' : 'read_committed'
  if (opts.maxInFlightRequests !== undefined && opts.maxInFlightRequests !== null) {
    out['max.in.flight.requests.per.connection'] = String(opts.maxInFlightRequests)
  }
  const retry = opts.retry || {}
  ms(out, 'retry.backoff.ms', retry.initialRetryTime)
  ms(out, 'retry.backoff.max.ms', retry.maxRetryTime)
  return Object.assign(out, passThrough(opts))
}

module.exports = { clientProps, producerProps, consumerProps, resolveBrokers, passThrough }
