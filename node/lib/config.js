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

/**
 * KafkaJS's `retry` options: `initialRetryTime` and `maxRetryTime` are the core's
 * `retry.backoff.ms` and `retry.backoff.max.ms` (every retry of producers, consumers and admin
 * clients doubles from one to the other, jittered by ±20%, KIP-580). That is KafkaJS's
 * `multiplier` 2 and `factor` 0.2, the only values taken; others are refused, naming the key.
 * `retries` is validated here and applied by `producerProps` (Kafka's `retries`) and by the
 * consumer's run loop (lib/consumer.js), which also calls `restartOnFailure`, checked here to be
 * a function.
 */
function retryProps (retry, out) {
  if (retry === undefined || retry === null) return
  if (typeof retry !== 'object') throw new KafkaJSNonRetriableError('retry must be an object')
  ms(out, 'retry.backoff.ms', retry.initialRetryTime)
  ms(out, 'retry.backoff.max.ms', retry.maxRetryTime)
  if (retry.factor !== undefined && retry.factor !== null && retry.factor !== 0.2) {
    throw new KafkaJSNonRetriableError(`retry.factor=${retry.factor} is not supported: every backoff is jittered by ±20% (KafkaJS's default factor 0.2)`)
  }
  if (retry.multiplier !== undefined && retry.multiplier !== null && retry.multiplier !== 2) {
    throw new KafkaJSNonRetriableError(`retry.multiplier=${retry.multiplier} is not supported: every backoff doubles per failed attempt (KafkaJS's default multiplier 2)`)
  }
  retries(retry)
  const restart = retry.restartOnFailure
  if (restart !== undefined && restart !== null && typeof restart !== 'function') {
    throw new KafkaJSNonRetriableError(`Invalid value for retry.restartOnFailure: expected an async function (error) => boolean, got ${typeof restart}`)
  }
}

/** KafkaJS's `retry.retries`, checked: a whole number from 0 (undefined when not given). */
function retries (retry) {
  const n = retry && retry.retries
  if (n === undefined || n === null) return undefined
  if (!Number.isInteger(n) || n < 0) throw new KafkaJSNonRetriableError(`Invalid value for retry.retries: ${n}`)
  return n
}

/** Resolves `brokers` (an array, or a function returning one or a Promise of one). */
async function resolveBrokers (brokers) {
  const list = typeof brokers === 'function' ? await brokers() : brokers
  if (!Array.isArray(list) || list.length === 0) {
    throw new KafkaJSNonRetriableError('Failed to connect: expected brokers array and got nothing')
  }
  return list.join(',')
}

/** PEM text of a KafkaJS/Node TLS option (a string, a Buffer, or an array of them). */
function pem (name, value) {
  const parts = Array.isArray(value) ? value : [value]
  return parts.map((v) => {
    if (typeof v === 'string') return v
    if (Buffer.isBuffer(v)) return v.toString('utf8')
    throw new KafkaJSNonRetriableError(`ssl.${name} must be a PEM string or Buffer`)
  }).join('\n')
}

/** `ssl` (true, or Node's tls.connect options) as ssl.* properties. */
function sslProps (ssl, out) {
  if (ssl === true) return
  if (typeof ssl !== 'object') throw new KafkaJSNonRetriableError('ssl must be true or an object of TLS options')
  for (const [k, v] of Object.entries(ssl)) {
    if (v === undefined || v === null) continue
    switch (k) {
      case 'ca': out['ssl.ca.pem'] = pem('ca', v); break
      case 'cert': out['ssl.certificate.pem'] = pem('cert', v); break
      case 'key': out['ssl.key.pem'] = pem('key', v); break
      case 'passphrase': out['ssl.key.password'] = String(v); break
      case 'rejectUnauthorized':
        if (v === false) {
          throw new KafkaJSNonRetriableError("ssl.rejectUnauthorized=false is not supported: the broker's certificate is always verified (give its CA in ssl.ca, or set 'ssl.endpoint.identification.algorithm': 'none' to skip only the host name check)")
        }
        break
      case 'servername':
      case 'checkServerIdentity':
        throw new KafkaJSNonRetriableError(`ssl.${k} is not supported: the host name checked is the broker's; set 'ssl.endpoint.identification.algorithm': 'none' to skip the check`)
      case 'minVersion':
      case 'maxVersion': {
        const versions = ['TLSv1.2', 'TLSv1.3']
        const lo = versions.indexOf(k === 'minVersion' ? v : (ssl.minVersion || 'TLSv1.2'))
        const hi = versions.indexOf(k === 'maxVersion' ? v : (ssl.maxVersion || 'TLSv1.3'))
        if (lo < 0 || hi < 0 || lo > hi) throw new KafkaJSNonRetriableError(`ssl.${k} ${v} is not supported: TLSv1.2 or TLSv1.3`)
        out['ssl.enabled.protocols'] = versions.slice(lo, hi + 1).join(',')
        break
      }
      case 'ciphers': out['ssl.cipher.suites'] = String(v); break
      default:
        throw new KafkaJSNonRetriableError(`ssl.${k} is not supported by odradek`)
    }
  }
}

const MECHANISMS = { plain: 'PLAIN', 'scram-sha-256': 'SCRAM-SHA-256', 'scram-sha-512': 'SCRAM-SHA-512', oauthbearer: 'OAUTHBEARER' }

/** `sasl` ({ mechanism, username, password } or { mechanism: 'oauthbearer', oauthBearerProvider }). */
function saslProps (sasl, out) {
  const mechanism = MECHANISMS[String(sasl.mechanism || '').toLowerCase()]
  if (!mechanism) {
    throw new KafkaJSNonRetriableError(`SASL mechanism ${sasl.mechanism} is not supported by odradek (plain, scram-sha-256, scram-sha-512, oauthbearer)`)
  }
  out['sasl.mechanism'] = mechanism
  if (mechanism === 'OAUTHBEARER') {
    if (typeof sasl.oauthBearerProvider !== 'function') {
      throw new KafkaJSNonRetriableError('sasl.oauthBearerProvider must be an async function returning { value }')
    }
    return
  }
  if (typeof sasl.username !== 'string' || typeof sasl.password !== 'string') {
    throw new KafkaJSNonRetriableError(`SASL ${mechanism} needs username and password strings`)
  }
  out['sasl.username'] = sasl.username
  out['sasl.password'] = sasl.password
}

/**
 * KafkaJS's `oauthBearerProvider` as the native token callback: called whenever a connection
 * authenticates and the cached token is due; answers JSON the addon parses.
 */
function tokenProvider (config) {
  const provider = config.sasl && config.sasl.oauthBearerProvider
  if (typeof provider !== 'function') return undefined
  return async () => {
    const token = await provider()
    if (!token || typeof token.value !== 'string') throw new Error('oauthBearerProvider must return { value: string }')
    return JSON.stringify({ value: token.value, principal: token.principal, lifetimeMs: token.lifetimeMs, extensions: token.extensions })
  }
}

/** Client-wide properties from `new Kafka(config)`. */
function clientProps (config) {
  const out = {}
  if (config.ssl) sslProps(config.ssl, out)
  if (config.sasl) saslProps(config.sasl, out)
  if (config.sasl) out['security.protocol'] = config.ssl ? 'SASL_SSL' : 'SASL_PLAINTEXT'
  else if (config.ssl) out['security.protocol'] = 'SSL'
  if (config.reauthenticationThreshold !== undefined) {
    throw new KafkaJSNonRetriableError('reauthenticationThreshold is not supported: sessions are renewed at 90% of the lifetime the broker grants')
  }
  out['client.id'] = config.clientId || 'kafkajs'
  // One deadline covers connect, TLS and SASL here: KafkaJS's connectionTimeout plus, when the
  // connection authenticates, its authenticationTimeout (10 s by default).
  const secured = Boolean(config.ssl || config.sasl)
  if (config.connectionTimeout !== undefined || (secured && config.authenticationTimeout !== undefined)) {
    const connect = config.connectionTimeout !== undefined ? config.connectionTimeout : 1000
    const auth = secured ? (config.authenticationTimeout !== undefined ? config.authenticationTimeout : 10000) : 0
    ms(out, 'socket.connection.setup.timeout.ms', connect + auth)
  }
  ms(out, 'request.timeout.ms', config.requestTimeout)
  retryProps(config.retry, out)
  return Object.assign(out, passThrough(config))
}

/**
 * Producer properties from `kafka.producer(options)`; `clientRetry` is `new Kafka({ retry })`.
 * `retry.retries` (the producer's, else the client's) is Kafka's `retries`: how many times a
 * failed batch is sent again (within `delivery.timeout.ms`) before its records fail.
 */
function producerProps (opts, clientRetry) {
  const out = {}
  if (opts.idempotent !== undefined) out['enable.idempotence'] = String(Boolean(opts.idempotent))
  if (opts.maxInFlightRequests !== undefined && opts.maxInFlightRequests !== null) {
    out['max.in.flight.requests.per.connection'] = String(opts.maxInFlightRequests)
  }
  if (opts.allowAutoTopicCreation !== undefined) out['allow.auto.create.topics'] = String(Boolean(opts.allowAutoTopicCreation))
  ms(out, 'metadata.max.age.ms', opts.metadataMaxAge)
  ms(out, 'transaction.timeout.ms', opts.transactionalId ? opts.transactionTimeout : undefined)
  if (opts.transactionalId) out['transactional.id'] = String(opts.transactionalId)
  retryProps(opts.retry, out)
  const n = retries(opts.retry) !== undefined ? retries(opts.retry) : retries(clientRetry)
  if (n !== undefined) out.retries = String(n)
  return Object.assign(out, passThrough(opts))
}

/**
 * Consumer properties from `kafka.consumer(options)`. `auto.offset.reset` is `latest`, KafkaJS's
 * default; the subscriptions' `fromBeginning` becomes per-topic rules (lib/consumer.js).
 */
function consumerProps (opts) {
  const out = {}
  out['group.id'] = opts.groupId
  // The run loop commits what handlers finished (see lib/consumer.js), never what was polled.
  out['enable.auto.commit'] = 'false'
  out['auto.offset.reset'] = 'latest'
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
  // KafkaJS's rackId: fetch from a replica in this rack when the brokers allow it (KIP-392).
  if (opts.rackId !== undefined && opts.rackId !== null) out['client.rack'] = String(opts.rackId)
  if (opts.readUncommitted !== undefined) out['isolation.level'] = opts.readUncommitted ? 'read_uncommitted' : 'read_committed'
  if (opts.maxInFlightRequests !== undefined && opts.maxInFlightRequests !== null) {
    out['max.in.flight.requests.per.connection'] = String(opts.maxInFlightRequests)
  }
  if (opts.partitionAssigners !== undefined && opts.partitionAssigners !== null) {
    out['partition.assignment.strategy'] = assignmentStrategy(opts.partitionAssigners)
  } else if (String(opts['group.protocol'] || 'classic').trim() !== 'consumer') {
    // KafkaJS's default, [PartitionAssigners.roundRobin], under its protocol name: a group can
    // mix stock KafkaJS members and ours (KIP-848 members take no assignor: the broker assigns).
    out['partition.assignment.strategy'] = 'RoundRobinAssigner'
  }
  retryProps(opts.retry, out)
  return Object.assign(out, passThrough(opts))
}

/**
 * KafkaJS's `partitionAssigners`: its round-robin assigner (`PartitionAssigners.roundRobin`,
 * KafkaJS's default) is the core's round robin under KafkaJS's protocol name
 * `RoundRobinAssigner`, so stock KafkaJS members and ours agree on the group's protocol; a custom
 * assigner function cannot run in the core's group protocol and is refused (Kafka's assignors are
 * chosen with the `partition.assignment.strategy` property: range, roundrobin, sticky,
 * cooperative-sticky).
 */
function assignmentStrategy (assigners) {
  const { PartitionAssigners } = require('./constants')
  if (!Array.isArray(assigners) || assigners.length === 0) {
    throw new KafkaJSNonRetriableError('partitionAssigners must be a non-empty array')
  }
  return assigners.map(a => {
    if (a === PartitionAssigners.roundRobin) return 'RoundRobinAssigner'
    throw new KafkaJSNonRetriableError("partitionAssigners: only PartitionAssigners.roundRobin is supported; choose Kafka's assignors with 'partition.assignment.strategy' (range, roundrobin, sticky, cooperative-sticky)")
  }).join(',')
}

/** Admin client properties from `kafka.admin(options)`. */
function adminProps (opts) {
  const out = {}
  retryProps(opts.retry, out)
  return Object.assign(out, passThrough(opts))
}

/**
 * librdkafka properties the language shells implement (not the core) that the KafkaJS API has
 * a fixed answer to: accepted at the value that describes this package's behaviour, refused
 * naming the property otherwise. Removes them from `props` (a native client's properties).
 */
const SHELL_FIXED = {
  'enable.partition.eof': ['false', 'the KafkaJS API has no end-of-partition events'],
  'delivery.report.only.error': ['false', "send() resolves with every message's metadata"],
  'enable.auto.offset.store': ['true', "the run loop stores (and, with autoCommit, commits) what each handler finished; use autoCommit: false and commitOffsets() to commit by hand"]
}

function takeShellProperties (props) {
  for (const [name, [accepted, why]] of Object.entries(SHELL_FIXED)) {
    if (!(name in props)) continue
    const raw = props[name]
    delete props[name]
    const value = String(raw).trim().toLowerCase()
    const normal = value === '1' ? 'true' : value === '0' ? 'false' : value
    if (normal !== accepted) {
      throw new KafkaJSNonRetriableError(`Configuration property "${name}" = "${raw}" is not supported here: ${why} (only ${accepted} is accepted)`)
    }
  }
  return props
}

module.exports = { clientProps, producerProps, consumerProps, adminProps, resolveBrokers, passThrough, tokenProvider, takeShellProperties }
