'use strict'
// require('odradek').KafkaJS: the `KafkaJS` namespace of @confluentinc/kafka-javascript, so
// code written against it moves over with a one-line import swap. A translation layer onto
// odradek's KafkaJS objects (lib/kafka.js, producer.js, consumer.js, admin.js):
//
// - each config's `kafkaJS: { ... }` block becomes odradek's KafkaJS options, with that
//   package's differences: acks, compression and timeout belong to the producer, fromBeginning
//   and autoCommit to the consumer, `ssl` is a boolean, its logLevel numbers and enums;
// - every other key is a librdkafka property: dotted names pass through to the core, which
//   validates each and names what it refuses; the few without a dot are routed one by one;
// - what that package refuses is refused here, naming the option, and so is what odradek cannot
//   honour. README.md ("Migrating from @confluentinc/kafka-javascript") has the table.
//
// Each client gets its own odradek Kafka built from the merged common and client blocks (that
// package merges them the same way); they share one subscription to the core's log.
const { Kafka: OdradekKafka } = require('./kafka')
const constants = require('./constants')
const errors = require('./errors')

// librdkafka's error codes under librdkafka's names (odradek's codes are numbered the same, see
// bindings/src/codes.rs): client-side ERR__* from -199, Kafka's ERR_* from -1.
const LOCAL_CODES = `BAD_MSG BAD_COMPRESSION DESTROY FAIL TRANSPORT CRIT_SYS_RESOURCE RESOLVE MSG_TIMED_OUT
PARTITION_EOF UNKNOWN_PARTITION FS UNKNOWN_TOPIC ALL_BROKERS_DOWN INVALID_ARG TIMED_OUT
QUEUE_FULL ISR_INSUFF NODE_UPDATE SSL WAIT_COORD UNKNOWN_GROUP IN_PROGRESS PREV_IN_PROGRESS
EXISTING_SUBSCRIPTION ASSIGN_PARTITIONS REVOKE_PARTITIONS CONFLICT STATE UNKNOWN_PROTOCOL
NOT_IMPLEMENTED AUTHENTICATION NO_OFFSET OUTDATED TIMED_OUT_QUEUE UNSUPPORTED_FEATURE WAIT_CACHE
INTR KEY_SERIALIZATION VALUE_SERIALIZATION KEY_DESERIALIZATION VALUE_DESERIALIZATION PARTIAL
READ_ONLY NOENT UNDERFLOW INVALID_TYPE RETRY PURGE_QUEUE PURGE_INFLIGHT FATAL INCONSISTENT
GAPLESS_GUARANTEE MAX_POLL_EXCEEDED UNKNOWN_BROKER NOT_CONFIGURED FENCED APPLICATION
ASSIGNMENT_LOST NOOP AUTO_OFFSET_RESET LOG_TRUNCATION INVALID_DIFFERENT_RECORD DESTROY_BROKER`.split(/\s+/)
const KAFKA_CODES = `UNKNOWN NO_ERROR OFFSET_OUT_OF_RANGE INVALID_MSG UNKNOWN_TOPIC_OR_PART INVALID_MSG_SIZE
LEADER_NOT_AVAILABLE NOT_LEADER_FOR_PARTITION REQUEST_TIMED_OUT BROKER_NOT_AVAILABLE
REPLICA_NOT_AVAILABLE MSG_SIZE_TOO_LARGE STALE_CTRL_EPOCH OFFSET_METADATA_TOO_LARGE
NETWORK_EXCEPTION COORDINATOR_LOAD_IN_PROGRESS COORDINATOR_NOT_AVAILABLE NOT_COORDINATOR
TOPIC_EXCEPTION RECORD_LIST_TOO_LARGE NOT_ENOUGH_REPLICAS NOT_ENOUGH_REPLICAS_AFTER_APPEND
INVALID_REQUIRED_ACKS ILLEGAL_GENERATION INCONSISTENT_GROUP_PROTOCOL INVALID_GROUP_ID
UNKNOWN_MEMBER_ID INVALID_SESSION_TIMEOUT REBALANCE_IN_PROGRESS INVALID_COMMIT_OFFSET_SIZE
TOPIC_AUTHORIZATION_FAILED GROUP_AUTHORIZATION_FAILED CLUSTER_AUTHORIZATION_FAILED
INVALID_TIMESTAMP UNSUPPORTED_SASL_MECHANISM ILLEGAL_SASL_STATE UNSUPPORTED_VERSION
TOPIC_ALREADY_EXISTS INVALID_PARTITIONS INVALID_REPLICATION_FACTOR INVALID_REPLICA_ASSIGNMENT
INVALID_CONFIG NOT_CONTROLLER INVALID_REQUEST UNSUPPORTED_FOR_MESSAGE_FORMAT POLICY_VIOLATION
OUT_OF_ORDER_SEQUENCE_NUMBER DUPLICATE_SEQUENCE_NUMBER INVALID_PRODUCER_EPOCH INVALID_TXN_STATE
INVALID_PRODUCER_ID_MAPPING INVALID_TRANSACTION_TIMEOUT CONCURRENT_TRANSACTIONS
TRANSACTION_COORDINATOR_FENCED TRANSACTIONAL_ID_AUTHORIZATION_FAILED SECURITY_DISABLED
OPERATION_NOT_ATTEMPTED KAFKA_STORAGE_ERROR LOG_DIR_NOT_FOUND SASL_AUTHENTICATION_FAILED
UNKNOWN_PRODUCER_ID REASSIGNMENT_IN_PROGRESS DELEGATION_TOKEN_AUTH_DISABLED
DELEGATION_TOKEN_NOT_FOUND DELEGATION_TOKEN_OWNER_MISMATCH DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
DELEGATION_TOKEN_AUTHORIZATION_FAILED DELEGATION_TOKEN_EXPIRED INVALID_PRINCIPAL_TYPE
NON_EMPTY_GROUP GROUP_ID_NOT_FOUND FETCH_SESSION_ID_NOT_FOUND INVALID_FETCH_SESSION_EPOCH
LISTENER_NOT_FOUND TOPIC_DELETION_DISABLED FENCED_LEADER_EPOCH UNKNOWN_LEADER_EPOCH
UNSUPPORTED_COMPRESSION_TYPE STALE_BROKER_EPOCH OFFSET_NOT_AVAILABLE MEMBER_ID_REQUIRED
PREFERRED_LEADER_NOT_AVAILABLE GROUP_MAX_SIZE_REACHED FENCED_INSTANCE_ID
ELIGIBLE_LEADERS_NOT_AVAILABLE ELECTION_NOT_NEEDED NO_REASSIGNMENT_IN_PROGRESS
GROUP_SUBSCRIBED_TO_TOPIC INVALID_RECORD UNSTABLE_OFFSET_COMMIT THROTTLING_QUOTA_EXCEEDED
PRODUCER_FENCED RESOURCE_NOT_FOUND DUPLICATE_RESOURCE UNACCEPTABLE_CREDENTIAL
INCONSISTENT_VOTER_SET INVALID_UPDATE_VERSION FEATURE_UPDATE_FAILED
PRINCIPAL_DESERIALIZATION_FAILURE SNAPSHOT_NOT_FOUND POSITION_OUT_OF_RANGE UNKNOWN_TOPIC_ID
DUPLICATE_BROKER_REGISTRATION BROKER_ID_NOT_REGISTERED INCONSISTENT_TOPIC_ID
INCONSISTENT_CLUSTER_ID TRANSACTIONAL_ID_NOT_FOUND FETCH_SESSION_TOPIC_ID_ERROR
INELIGIBLE_REPLICA NEW_LEADER_ELECTED OFFSET_MOVED_TO_TIERED_STORAGE FENCED_MEMBER_EPOCH
UNRELEASED_INSTANCE_ID UNSUPPORTED_ASSIGNOR STALE_MEMBER_EPOCH MISMATCHED_ENDPOINT_TYPE
UNSUPPORTED_ENDPOINT_TYPE UNKNOWN_CONTROLLER_ID UNKNOWN_SUBSCRIPTION_ID TELEMETRY_TOO_LARGE
INVALID_REGISTRATION TRANSACTION_ABORTABLE INVALID_RECORD_STATE SHARE_SESSION_NOT_FOUND
INVALID_SHARE_SESSION_EPOCH FENCED_STATE_EPOCH INVALID_VOTER_KEY DUPLICATE_VOTER VOTER_NOT_FOUND
INVALID_REGULAR_EXPRESSION REBOOTSTRAP_REQUIRED STREAMS_INVALID_TOPOLOGY
STREAMS_INVALID_TOPOLOGY_EPOCH STREAMS_TOPOLOGY_FENCED SHARE_SESSION_LIMIT_REACHED`.split(/\s+/)

const ErrorCodes = { ERR__BEGIN: -200 }
LOCAL_CODES.forEach((name, i) => { ErrorCodes[`ERR__${name}`] = -199 + i })
ErrorCodes.ERR__END = -100
KAFKA_CODES.forEach((name, i) => { ErrorCodes[`ERR_${name}`] = i - 1 })
// librdkafka's older names of three codes, kept as aliases.
Object.assign(ErrorCodes, { ERR_GROUP_LOAD_IN_PROGRESS: 14, ERR_GROUP_COORDINATOR_NOT_AVAILABLE: 15, ERR_NOT_COORDINATOR_FOR_GROUP: 16 })
Object.freeze(ErrorCodes)
const CODE_NAMES = new Map()
for (const [name, code] of Object.entries(ErrorCodes)) if (!CODE_NAMES.has(code)) CODE_NAMES.set(code, name)

const C = ErrorCodes
// Codes after which a (transactional) producer is unusable, and those that only abort the
// transaction: `error.fatal` and `error.abortable`.
const FATAL = new Set([C.ERR__FATAL, C.ERR__FENCED, C.ERR_PRODUCER_FENCED, C.ERR_INVALID_PRODUCER_EPOCH, C.ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED])
const ABORTABLE = new Set([C.ERR_TRANSACTION_ABORTABLE])

// The package's error classes missing from KafkaJS's set, on odradek's classes.
class KafkaJSPartialMessageError extends errors.KafkaJSError {
  constructor (e, opts) { super(e, opts); this.name = 'KafkaJSPartialMessageError' }
}
class KafkaJSGroupCoordinatorNotFound extends errors.KafkaJSProtocolError {
  constructor (e, opts) { super(e, opts); this.name = 'KafkaJSGroupCoordinatorNotFound' }
}
class KafkaJSNoBrokerAvailableError extends errors.KafkaJSConnectionError {
  constructor (e, opts) { super(e, opts); this.name = 'KafkaJSNoBrokerAvailableError' }
}
const REFINED = new Map([[C.ERR__ALL_BROKERS_DOWN, KafkaJSNoBrokerAvailableError], [C.ERR__PARTIAL, KafkaJSPartialMessageError], [C.ERR_COORDINATOR_NOT_AVAILABLE, KafkaJSGroupCoordinatorNotFound]])

/**
 * An odradek error in the package's terms: `code` (librdkafka's numbering, ERR_UNKNOWN when
 * there is none), `type` (its ErrorCodes name), `fatal` and `abortable`; the class the package
 * uses for the code where it has its own.
 */
function confluentError (e) {
  if (e instanceof errors.KafkaJSAggregateError) {
    e.errors = e.errors.map(confluentError)
    return e
  }
  if (!(e instanceof errors.KafkaJSError)) return e
  const code = typeof e.code === 'number' ? e.code : C.ERR_UNKNOWN
  let out = e
  const Refined = REFINED.get(code)
  if (Refined && !(e instanceof Refined)) {
    out = Object.assign(new Refined(e.message), { stack: e.stack, retriable: e.retriable, cause: e })
  }
  out.code = code
  out.type = CODE_NAMES.get(code) || 'ERR_UNKNOWN'
  out.fatal = FATAL.has(code)
  out.abortable = ABORTABLE.has(code)
  return out
}

/** An error refusing what the caller asked for (ERR__INVALID_ARG, or another code). */
function refusal (message, code = C.ERR__INVALID_ARG) {
  const e = code === C.ERR__NOT_IMPLEMENTED ? new errors.KafkaJSNotImplemented(message) : new errors.KafkaJSError(message, { retriable: false })
  return confluentError(Object.assign(e, { code }))
}

/** Awaits an odradek call, rethrowing its error in the package's terms. */
async function call (promise) {
  try {
    return await promise
  } catch (e) {
    throw confluentError(e)
  }
}

/** Runs a synchronous odradek call, rethrowing its error in the package's terms. */
function sync (f) {
  try {
    return f()
  } catch (e) {
    throw confluentError(e)
  }
}

/** `promise`, failing with ERR__TIMED_OUT after `ms` when `ms` is a number from 0 (negative: no limit). */
function withTimeout (promise, ms, what) {
  if (ms === undefined || ms === null || (typeof ms === 'number' && ms < 0)) return call(promise)
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return Promise.reject(refusal(`${what}: timeout must be a number of milliseconds`))
  let timer
  const deadline = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(confluentError(Object.assign(new errors.KafkaJSTimeout(`${what} timed out after ${ms} ms`), { code: C.ERR__TIMED_OUT }))), ms)
  })
  return Promise.race([call(promise), deadline]).finally(() => clearTimeout(timer))
}

/** Refuses keys of `options` (a method's argument) other than `known`, and `offOnly` ones unless false. */
function only (what, options, known, offOnly = []) {
  const bad = Object.keys(options || {}).find(k => !known.includes(k) && !(offOnly.includes(k) && !options[k]))
  if (bad !== undefined) throw refusal(`${what}: '${bad}' is not supported`, C.ERR__NOT_IMPLEMENTED)
}

// The package's enums.
const logLevel = Object.freeze({ NOTHING: 0, ERROR: 1, WARN: 2, INFO: 3, DEBUG: 4 })
const CompressionTypes = Object.freeze({ None: 'none', GZIP: 'gzip', Snappy: 'snappy', LZ4: 'lz4', ZSTD: 'zstd' })
const PartitionAssigners = Object.freeze({ roundRobin: 'roundrobin', range: 'range', cooperativeSticky: 'cooperative-sticky' })
const ConsumerGroupStates = Object.freeze({ UNKNOWN: 0, PREPARING_REBALANCE: 1, COMPLETING_REBALANCE: 2, STABLE: 3, DEAD: 4, EMPTY: 5 })
const ConsumerGroupTypes = Object.freeze({ UNKNOWN: 0, CONSUMER: 1, CLASSIC: 2 })
const IsolationLevel = Object.freeze({ READ_UNCOMMITTED: 0, READ_COMMITTED: 1 })

const TO_ODRADEK_LEVEL = { 0: constants.logLevel.NOTHING, 1: constants.logLevel.ERROR, 2: constants.logLevel.WARN, 3: constants.logLevel.INFO, 4: constants.logLevel.DEBUG }
// librdkafka's log_level (syslog severities) as the package's logLevel.
const SEVERITY_LEVEL = [0, 1, 1, 1, 2, 2, 3, 4]
const METHOD = { [constants.logLevel.ERROR]: 'error', [constants.logLevel.WARN]: 'warn', [constants.logLevel.INFO]: 'info', [constants.logLevel.DEBUG]: 'debug' }

// The kafkaJS block's keys, per client type (`common` ones are allowed in every block).
const KEYS = {
  common: ['brokers', 'clientId', 'sasl', 'ssl', 'requestTimeout', 'enforceRequestTimeout', 'connectionTimeout', 'authenticationTimeout', 'retry', 'socketFactory', 'reauthenticationThreshold', 'logLevel', 'logger'],
  producer: ['createPartitioner', 'metadataMaxAge', 'allowAutoTopicCreation', 'transactionTimeout', 'idempotent', 'maxInFlightRequests', 'transactionalId', 'compression', 'acks', 'timeout'],
  consumer: ['groupId', 'partitionAssigners', 'partitionAssignors', 'sessionTimeout', 'rebalanceTimeout', 'heartbeatInterval', 'metadataMaxAge', 'allowAutoTopicCreation', 'maxBytesPerPartition', 'maxWaitTimeInMs', 'minBytes', 'maxBytes', 'readUncommitted', 'maxInFlightRequests', 'rackId', 'fromBeginning', 'autoCommit', 'autoCommitInterval', 'autoCommitThreshold'],
  admin: []
}
// kafkaJS options that mean the same in odradek's KafkaJS options, copied as they are.
const SAME = {
  producer: ['metadataMaxAge', 'allowAutoTopicCreation', 'transactionTimeout', 'idempotent', 'maxInFlightRequests', 'transactionalId'],
  consumer: ['sessionTimeout', 'rebalanceTimeout', 'heartbeatInterval', 'metadataMaxAge', 'allowAutoTopicCreation', 'maxBytesPerPartition', 'maxWaitTimeInMs', 'minBytes', 'maxBytes', 'readUncommitted', 'maxInFlightRequests', 'rackId'],
  admin: []
}
// librdkafka properties without a dot that the core takes as they are.
const CORE_UNDOTTED = ['debug', 'enabled_events', 'partitioner', 'retries']

/** Splits a config into its kafkaJS block and librdkafka properties; KafkaJS names outside the block are refused. */
function split (config, type) {
  const { kafkaJS = {}, ...props } = config || {}
  if (kafkaJS === null || typeof kafkaJS !== 'object') throw refusal('kafkaJS must be an object of KafkaJS options')
  const kafkaJSKeys = type === 'common' ? KEYS.common : KEYS.common.concat(KEYS[type])
  const misplaced = Object.keys(props).find(k => kafkaJSKeys.includes(k) && k !== 'acks')
  if (misplaced !== undefined) {
    throw refusal(`'${misplaced}' is a KafkaJS option, not a librdkafka property: move it into the kafkaJS block ({ kafkaJS: { ${misplaced}: ... } })`)
  }
  return { kafkaJS, props }
}

function bool (key, v) {
  if (v === true || v === 'true') return true
  if (v === false || v === 'false') return false
  throw refusal(`Invalid value "${v}" for configuration property "${key}": expected true or false`)
}

function integer (key, v) {
  const n = Number(v)
  if (!Number.isInteger(n)) throw refusal(`Invalid value "${v}" for configuration property "${key}": expected an integer`)
  return n
}

/** The package's `logger` as an odradek logCreator; the package first tells it its level. */
function logCreatorFor (logger, level) {
  for (const m of ['info', 'warn', 'error', 'debug']) {
    if (typeof logger[m] !== 'function') throw refusal(`logger must have info, warn, error and debug functions (no ${m})`)
  }
  if (typeof logger.setLogLevel === 'function') logger.setLogLevel(level)
  return () => ({ namespace, level, log }) => {
    const { message, ...extra } = log
    logger[METHOD[level]](message, namespace ? { namespace, ...extra } : extra)
  }
}

/** The package's `logger()` over an odradek logger: its setLogLevel takes the package's levels. */
function loggerView (logger) {
  return {
    info: logger.info,
    warn: logger.warn,
    error: logger.error,
    debug: logger.debug,
    namespace: (ns) => loggerView(logger.namespace(ns)),
    setLogLevel: (l) => logger.setLogLevel(TO_ODRADEK_LEVEL[l])
  }
}

/** The package's oauthBearerProvider as odradek's: `lifetime` (ms) becomes `lifetimeMs`. */
function tokenProvider (provider) {
  if (typeof provider !== 'function') throw refusal('sasl.oauthBearerProvider must be an async function')
  return async () => {
    const token = await provider()
    for (const k of ['value', 'principal', 'lifetime']) {
      if (!token || token[k] === undefined) throw refusal(`oauthBearerProvider's token must have a ${k} property`)
    }
    const extensions = token.extensions instanceof Map ? Object.fromEntries(token.extensions) : token.extensions
    return { value: token.value, principal: token.principal, lifetimeMs: token.lifetime, extensions }
  }
}

/**
 * One client's configuration (the common and client blocks merged) in odradek's terms:
 * `kafka` (odradek Kafka options), `options` (the client's KafkaJS options, with the librdkafka
 * properties), `raw` (undotted properties for the core), and what the wrappers apply themselves.
 */
function translate (type, { kafkaJS: k, props }) {
  const allowed = KEYS.common.concat(KEYS[type])
  const unknown = Object.keys(k).find(key => !allowed.includes(key))
  if (unknown !== undefined) throw refusal(`The '${unknown}' property is not supported in a ${type}'s kafkaJS block`)
  for (const key of ['socketFactory', 'reauthenticationThreshold', 'createPartitioner', 'autoCommitThreshold']) {
    if (k[key] !== undefined) throw refusal(`The '${key}' property is not supported${key === 'createPartitioner' ? ": choose a partitioner with the librdkafka property 'partitioner'" : ''}`, C.ERR__NOT_IMPLEMENTED)
  }
  const t = { kafka: {}, options: {}, raw: {}, dotted: {}, acks: undefined, statsCb: null, run: {}, fromBeginning: false, userLogger: null }
  const { kafka, options, raw, dotted } = t

  // librdkafka properties
  let level = k.logLevel === undefined ? logLevel.INFO : k.logLevel
  if (!Object.values(logLevel).includes(level)) throw refusal(`The log level must be one of ${Object.keys(logLevel).join(', ')}, was ${level}`)
  for (const [key, v] of Object.entries(props)) {
    if (v === undefined) continue
    if (key.includes('.')) dotted[key] = v
    else if (key === 'acks' && type === 'producer') t.acks = v
    else if (CORE_UNDOTTED.includes(key) || key === 'acks') raw[key] = String(v)
    else if (key === 'log_level') {
      const severity = integer(key, v)
      if (severity < 0 || severity > 7) throw refusal(`Invalid value "${v}" for configuration property "log_level": expected 0..7`)
      level = SEVERITY_LEVEL[severity]
    } else if (key === 'stats_cb' && typeof v === 'function' && type !== 'admin') t.statsCb = v
    else if (key.endsWith('_cb')) throw refusal(`'${key}' is not supported: use the client's events (client.on(client.events....)) or the kafkaJS options`, C.ERR__NOT_IMPLEMENTED)
    else throw refusal(`No such configuration property: "${key}"`)
  }
  // librdkafka's debug contexts log at debug level.
  if (raw.debug !== undefined) level = logLevel.DEBUG
  for (const key of ['metadata.broker.list', 'bootstrap.servers']) {
    if (dotted[key] !== undefined) k.brokers = String(dotted[key]).split(',').map(s => s.trim()).filter(Boolean)
    delete dotted[key]
  }

  // common kafkaJS options
  if (k.brokers !== undefined && !Array.isArray(k.brokers)) throw refusal("The 'brokers' property must be an array of strings, e.g. ['kafka:9092']")
  kafka.brokers = k.brokers
  kafka.clientId = k.clientId === undefined ? 'rdkafka' : k.clientId
  if (k.ssl !== undefined && typeof k.ssl !== 'boolean') {
    throw refusal("The 'ssl' property must be a boolean; give certificates as librdkafka properties outside the kafkaJS block ('ssl.ca.location', 'ssl.certificate.pem', ...)")
  }
  if (k.ssl) kafka.ssl = true
  if (k.sasl !== undefined) {
    const mechanism = String((k.sasl && k.sasl.mechanism) || '').toLowerCase()
    if (mechanism === 'oauthbearer' && !k.sasl.oauthBearerProvider) {
      // No provider: librdkafka's own token source ('sasl.oauthbearer.method' and friends).
      Object.assign(dotted, { 'sasl.mechanism': 'OAUTHBEARER', 'security.protocol': k.ssl ? 'SASL_SSL' : 'SASL_PLAINTEXT', ...dotted })
    } else {
      kafka.sasl = mechanism === 'oauthbearer' ? { mechanism, oauthBearerProvider: tokenProvider(k.sasl.oauthBearerProvider) } : k.sasl
    }
  }
  const socketTimeout = k.enforceRequestTimeout === false ? 300000 : k.requestTimeout
  if (socketTimeout !== undefined) options['socket.timeout.ms'] = socketTimeout
  if (k.connectionTimeout !== undefined || k.authenticationTimeout !== undefined) {
    options['socket.connection.setup.timeout.ms'] = Math.max(1000, Number(k.connectionTimeout ?? 1000) + Number(k.authenticationTimeout ?? 10000))
  }
  if (k.retry !== undefined && k.retry !== null) {
    const { factor, multiplier, restartOnFailure, ...retry } = k.retry
    if (typeof factor === 'number' || typeof multiplier === 'number') throw refusal("The 'retry.factor' and 'retry.multiplier' properties are not supported: backoffs double, with ±20% jitter")
    if (restartOnFailure) throw refusal("The 'retry.restartOnFailure' property is not supported: the consumer always restarts")
    if (raw.retries !== undefined) delete retry.retries // the librdkafka property wins
    kafka.retry = options.retry = retry
  }
  kafka.logLevel = TO_ODRADEK_LEVEL[level]
  if (k.logger) {
    t.userLogger = k.logger
    kafka.logCreator = logCreatorFor(k.logger, level)
  }

  for (const key of SAME[type]) if (k[key] !== undefined) options[key] = k[key]
  if (type === 'producer') producerOptions(k, t)
  if (type === 'consumer') consumerOptions(k, t)
  // librdkafka properties last: they win over what the kafkaJS block implies, as in the package.
  Object.assign(options, dotted)
  return t
}

function producerOptions (k, t) {
  if (k.acks !== undefined && t.acks === undefined) t.acks = k.acks
  if (t.acks !== undefined) {
    const acks = t.acks === 'all' ? -1 : Number(t.acks)
    if (![-1, 0, 1].includes(acks)) throw refusal(`Invalid value "${t.acks}" for acks: expected -1 (all), 0 or 1`)
    t.acks = acks
  }
  if (k.compression !== undefined) {
    if (!Object.values(CompressionTypes).includes(k.compression)) throw refusal(`The 'compression' property must be one of CompressionTypes (${Object.values(CompressionTypes).join(', ')}), was ${k.compression}`)
    t.options['compression.type'] = k.compression
  }
  if (k.timeout !== undefined) t.options['request.timeout.ms'] = k.timeout
}

function consumerOptions (k, t) {
  const { options, dotted } = t
  options.groupId = dotted['group.id'] !== undefined ? String(dotted['group.id']) : k.groupId
  delete dotted['group.id']
  const classic = String(dotted['group.protocol'] || 'classic').toLowerCase() === 'classic'
  const assigners = k.partitionAssigners !== undefined ? k.partitionAssigners : k.partitionAssignors
  for (const key of ['partitionAssigners', 'partitionAssignors', 'sessionTimeout', 'heartbeatInterval']) {
    if (!classic && k[key] !== undefined) throw refusal(`${key} is not supported when group.protocol is not 'classic'`)
  }
  if (assigners !== undefined) {
    if (!Array.isArray(assigners) || !assigners.every(a => typeof a === 'string')) throw refusal('partitionAssigners must be a list of strings from PartitionAssigners')
    options['partition.assignment.strategy'] = assigners.join(',')
  } else if (classic) {
    options['partition.assignment.strategy'] = PartitionAssigners.roundRobin
  }
  t.fromBeginning = Boolean(k.fromBeginning)
  // Offsets of messages the handlers finished are committed every autoCommitInterval (5 s by
  // default, librdkafka's auto.commit.interval.ms), and when the consumer stops.
  t.run.autoCommit = dotted['enable.auto.commit'] !== undefined ? bool('enable.auto.commit', dotted['enable.auto.commit']) : k.autoCommit !== false
  t.run.autoCommitInterval = dotted['auto.commit.interval.ms'] !== undefined ? integer('auto.commit.interval.ms', dotted['auto.commit.interval.ms']) : (k.autoCommitInterval ?? 5000)
  delete dotted['enable.auto.commit']
  delete dotted['auto.commit.interval.ms']
  if (dotted['enable.auto.offset.store'] !== undefined) throw refusal("Changing 'enable.auto.offset.store' is unsupported: the consumer stores the offsets of messages its handlers finished")
  const batch = dotted['js.consumer.max.batch.size'] !== undefined ? integer('js.consumer.max.batch.size', dotted['js.consumer.max.batch.size']) : 32
  if (batch <= 0 && batch !== -1) throw refusal("'js.consumer.max.batch.size' must be a positive integer or -1 for unlimited batch size")
  // eachBatch's batches are cut from polls of at most this many records; -1 keeps odradek's
  // KafkaJS default (whole fetch responses).
  if (batch !== -1) options['max.poll.records'] = batch
  delete dotted['js.consumer.max.batch.size']
  if (dotted['js.consumer.max.cache.size.per.worker.ms'] !== undefined) {
    throw refusal("'js.consumer.max.cache.size.per.worker.ms' is not supported: odradek has no per-worker message cache; the core's prefetch is bounded by 'queued.max.messages.kbytes'", C.ERR__NOT_IMPLEMENTED)
  }
}

/**
 * `new Kafka({ kafkaJS: { brokers, ... }, ...librdkafkaProperties })`: the configuration every
 * client it creates starts from; each client's own config is merged over it.
 */
class Kafka {
  constructor (config) {
    this._common = split(config, 'common')
    this._coreLog = null
  }

  /** An odradek Kafka for one client and its translated configuration. */
  _client (type, config) {
    const own = split(config, type)
    const t = translate(type, {
      kafkaJS: { ...this._common.kafkaJS, ...own.kafkaJS },
      props: { ...this._common.props, ...own.props }
    })
    const inner = sync(() => new OdradekKafka(t.kafka))
    // Undotted librdkafka properties go to the core with the client-wide ones; the core's log
    // (process-wide) reaches the first client's logger once, not every client's.
    Object.assign(inner._props, t.raw)
    if (this._coreLog) inner._coreLog = this._coreLog
    else this._coreLog = inner._coreLog
    t.inner = inner
    t.logger = t.userLogger || loggerView(inner.logger())
    return t
  }

  /** A producer: `kafkaJS` takes acks, compression and timeout (per producer, not per send). */
  producer (config) {
    return new Producer(this._client('producer', config))
  }

  /** A consumer: `kafkaJS` takes groupId, fromBeginning, autoCommit and autoCommitInterval. */
  consumer (config) {
    return new Consumer(this._client('consumer', config))
  }

  /** An admin client. */
  admin (config) {
    return new Admin(this._client('admin', config))
  }
}

/** Registers the librdkafka `stats_cb` on the client's statistics events (`statistics.interval.ms`). */
function statistics (client, statsCb) {
  if (!statsCb) return
  if (!client.events || !client.events.STATS) throw refusal("'stats_cb' is not supported by this build", C.ERR__NOT_IMPLEMENTED)
  client.on(client.events.STATS, (event) => statsCb(event.payload))
}

function refuseSendOptions (method, record) {
  if (record === null || typeof record !== 'object') throw refusal(`The argument passed to ${method} must be an object`)
  for (const key of ['acks', 'timeout', 'compression']) {
    if (Object.hasOwn(record, key)) throw refusal(`'${key}' is not supported as a property to '${method}': pass it to the producer when creating it (kafka.producer({ kafkaJS: { ${key}: ... } }))`)
  }
}

/** The package's producer; a transaction is the producer itself (`transaction()` returns it). */
class Producer {
  constructor (t) {
    this._t = t
    this._inner = sync(() => t.inner.producer(t.options))
    this._acks = t.acks
    this._txn = null
    this._pending = new Set()
    statistics(this._inner, t.statsCb)
  }

  /** Connects to the cluster (and validates the configuration in the core). */
  async connect () {
    return call(this._inner.connect())
  }

  /** Disconnects, after the sends in flight. */
  async disconnect () {
    await Promise.allSettled([...this._pending])
    return call(this._inner.disconnect())
  }

  _track (promise) {
    const p = call(promise)
    this._pending.add(p)
    const done = () => this._pending.delete(p)
    p.then(done, done)
    return p
  }

  _sender () {
    return this._txn && this._txn.isActive() ? this._txn : this._inner
  }

  /** Sends `{ topic, messages }`; resolves per-partition record metadata once delivered. */
  async send (record) {
    refuseSendOptions('send', record)
    return this._track(this._sender().send({ topic: record.topic, messages: record.messages, acks: this._acks }))
  }

  /** Sends `{ topicMessages }` to several topics at once. */
  async sendBatch (batch) {
    refuseSendOptions('sendBatch', batch)
    return this._track(this._sender().sendBatch({ topicMessages: batch.topicMessages || [], acks: this._acks }))
  }

  /** Resolves when every send issued so far is delivered; ERR__TIMED_OUT after `timeout` ms. */
  async flush (args = { timeout: 500 }) {
    if (!args || !Object.hasOwn(args, 'timeout')) throw refusal('timeout must be set for flushing')
    await withTimeout(Promise.allSettled([...this._pending]), args.timeout, 'flush')
  }

  /** Begins a transaction (needs `transactionalId`); resolves the producer itself. */
  async transaction () {
    if (this._txn && this._txn.isActive()) throw refusal('Can only start one transaction at a time.', C.ERR__STATE)
    this._txn = await call(this._inner.transaction())
    return this
  }

  _active (what) {
    if (!this._txn || !this._txn.isActive()) throw refusal(`Cannot ${what}, no transaction ongoing.`, C.ERR__STATE)
    return this._txn
  }

  /** Commits the ongoing transaction. */
  async commit () {
    return call(this._active('commit').commit())
  }

  /** Aborts the ongoing transaction. */
  async abort () {
    return call(this._active('abort').abort())
  }

  /** Adds a consumer's offsets to the transaction: `{ consumer, topics }` (no consumerGroupId). */
  async sendOffsets ({ consumer, consumerGroupId, topics } = {}) {
    if (consumerGroupId !== undefined || !(consumer instanceof Consumer)) {
      throw refusal('The sendOffsets method must be called with a connected consumer instance and without a consumerGroupId parameter')
    }
    if (!Array.isArray(topics) || topics.length === 0) throw refusal('sendOffsets needs topics: [{ topic, partitions: [{ partition, offset }] }]')
    // The wrapped odradek consumer: its membership fences the commit (KIP-447).
    return call(this._active('sendOffsets').sendOffsets({ consumer: consumer._inner, topics }))
  }

  /** Whether a transaction is ongoing. */
  isActive () {
    return Boolean(this._txn && this._txn.isActive())
  }

  /** The producer's logger. */
  logger () {
    return this._t.logger
  }

  /** An admin client with this producer's configuration. */
  dependentAdmin () {
    return new Admin(this._t)
  }

  /** odradek's instrumentation events (the package has none). */
  on (type, listener) {
    return this._inner.on(type, listener)
  }

  get events () {
    return this._inner.events
  }
}

/** The package's consumer: the subscription is taken before run(), which starts it. */
class Consumer {
  constructor (t) {
    this._t = t
    this._inner = sync(() => t.inner.consumer(t.options))
    this._groupId = t.options.groupId
    this._topics = []
    this._connected = false
    this._started = false
    statistics(this._inner, t.statsCb)
  }

  /** Connects to the cluster. */
  async connect () {
    await call(this._inner.connect())
    this._connected = true
  }

  /** Adds `{ topic }` or `{ topics }` (strings, or RegExps starting with ^) to the subscription; `replace: true` replaces it. */
  async subscribe (subscription) {
    if (!this._connected) throw refusal('Subscribe can only be called while connected.', C.ERR__STATE)
    if (!subscription || typeof subscription !== 'object') throw refusal("The argument passed to subscribe must be an object with 'topics' or 'topic'")
    if (typeof subscription.fromBeginning === 'boolean') {
      throw refusal("'fromBeginning' is not supported as a property to 'subscribe': pass it to the consumer when creating it (kafka.consumer({ kafkaJS: { fromBeginning: true } }))")
    }
    if (this._started) throw refusal('odradek takes the subscription before run(): subscribe before running the consumer', C.ERR__NOT_IMPLEMENTED)
    const topics = subscription.topic !== undefined ? [subscription.topic] : subscription.topics
    if (!Array.isArray(topics)) throw refusal("The argument passed to subscribe must contain 'topics' (an array) or 'topic'")
    for (const topic of topics) {
      if (topic instanceof RegExp) {
        if (topic.flags) throw refusal('If subscribing to topic by RegExp, no flags are allowed.')
        if (!topic.source.startsWith('^')) throw refusal("If subscribing to topic by RegExp, the pattern must start with a '^'.")
      } else if (typeof topic !== 'string' || topic === '') {
        throw refusal(`Invalid topic ${topic} (${typeof topic}), the topic name has to be a String or a RegExp`)
      }
    }
    this._topics = subscription.replace ? [...topics] : this._topics.concat(topics)
  }

  /** Starts `eachMessage` or `eachBatch` (autoCommit and its interval come from the consumer's config). */
  async run (config = {}) {
    for (const key of ['autoCommit', 'autoCommitInterval', 'autoCommitThreshold']) {
      if (Object.hasOwn(config, key)) throw refusal(`'${key}' is not supported as a property to 'run': pass it to the consumer when creating it (kafka.consumer({ kafkaJS: { ${key}: ... } }))`)
    }
    if (!this._started) {
      await call(this._inner.subscribe({ topics: this._topics, fromBeginning: this._t.fromBeginning }))
      this._started = true
    }
    return call(this._inner.run({ ...config, ...this._t.run }))
  }

  /** Commits the given offsets, or (without) those of every message the handlers finished. */
  async commitOffsets (topicPartitions = null) {
    if (topicPartitions && topicPartitions.some(tp => tp.metadata !== undefined && tp.metadata !== null)) {
      throw refusal('commitOffsets: offset metadata is not supported', C.ERR__NOT_IMPLEMENTED)
    }
    // Without a list: what the run loop resolved and has not committed yet.
    const list = topicPartitions || this._inner._uncommittedTopics().flatMap(({ topic, partitions }) => partitions.map(p => ({ topic, ...p })))
    if (list.length === 0) return
    return call(this._inner.commitOffsets(list.map(({ topic, partition, offset }) => ({ topic, partition, offset: String(offset) }))))
  }

  /** The group's committed offsets of `topicPartitions` (default: the assignment); offset '-1' where none. */
  async committed (topicPartitions = null, timeout = -1) {
    const wanted = topicPartitions || this.assignment()
    if (wanted.length === 0) return []
    const admin = this._t.inner.admin(this._t.options)
    const fetch = (async () => {
      await admin.connect()
      try {
        return await admin.fetchOffsets({ groupId: this._groupId, topics: [...new Set(wanted.map(tp => tp.topic))] })
      } finally {
        await admin.disconnect()
      }
    })()
    const found = await withTimeout(fetch, timeout, 'committed')
    return wanted.map(({ topic, partition }) => {
      const p = ((found.find(f => f.topic === topic) || { partitions: [] }).partitions).find(x => x.partition === partition)
      return { topic, partition, offset: p ? p.offset : '-1', metadata: p ? p.metadata : null, leaderEpoch: null }
    })
  }

  /** The partitions assigned to this member (empty before run()). */
  assignment () {
    const n = this._inner._native
    return n ? n.assignment().map(({ topic, partition }) => ({ topic, partition })) : []
  }

  /** 'NONE' before run(); 'COOPERATIVE' with cooperative-sticky or the consumer protocol; else 'EAGER'. */
  rebalanceProtocol () {
    if (!this._inner._native) return 'NONE'
    const o = this._t.options
    const cooperative = String(o['group.protocol'] || '').toLowerCase() === 'consumer' || String(o['partition.assignment.strategy'] || '').includes('cooperative-sticky')
    return cooperative ? 'COOPERATIVE' : 'EAGER'
  }

  /** Moves a partition's position (after run()). */
  seek (topicPartitionOffset) {
    return sync(() => this._inner.seek(topicPartitionOffset))
  }

  /** Pauses fetching `[{ topic, partitions? }]`. */
  pause (topics) {
    return sync(() => this._inner.pause(topics))
  }

  /** Resumes fetching `[{ topic, partitions? }]`. */
  resume (topics) {
    return sync(() => this._inner.resume(topics))
  }

  /** The paused topics and partitions. */
  paused () {
    return this._inner.paused()
  }

  /** The group's description (see Admin.describeGroups). */
  async describeGroup () {
    return groupDescription(await call(this._inner.describeGroup()))
  }

  /** Stops consuming (commits what the handlers finished); odradek's, the package has none. */
  async stop () {
    return call(this._inner.stop())
  }

  /** Stops, commits what the handlers finished, and leaves the group. */
  async disconnect () {
    await call(this._inner.disconnect())
    this._connected = false
  }

  /** The consumer's logger. */
  logger () {
    return this._t.logger
  }

  /** An admin client with this consumer's configuration. */
  dependentAdmin () {
    return new Admin(this._t)
  }

  /** odradek's instrumentation events (the package has none). */
  on (type, listener) {
    return this._inner.on(type, listener)
  }

  get events () {
    return this._inner.events
  }
}

const GROUP_STATES = { PreparingRebalance: 1, CompletingRebalance: 2, Stable: 3, Dead: 4, Empty: 5 }

/** An odradek group description with the package's fields (numeric state, partitionAssignor). */
function groupDescription (g) {
  return { ...g, state: GROUP_STATES[g.state] || ConsumerGroupStates.UNKNOWN, partitionAssignor: g.protocol, isSimpleConsumerGroup: g.protocolType === '' }
}

/** The package's admin client: its methods, over odradek's KafkaJS admin. */
class Admin {
  constructor (t) {
    this._t = t
    this._inner = sync(() => t.inner.admin(t.options))
  }

  /** Connects to the cluster. */
  async connect () {
    return call(this._inner.connect())
  }

  /** Disconnects. */
  async disconnect () {
    return call(this._inner.disconnect())
  }

  /** Creates topics; resolves false when one already existed (waits for their leaders). */
  async createTopics (options = {}) {
    only('createTopics', options, ['topics', 'timeout'])
    for (const topic of options.topics || []) {
      if (topic && Object.hasOwn(topic, 'replicaAssignment')) throw refusal('replicaAssignment is not supported', C.ERR__NOT_IMPLEMENTED)
    }
    try {
      return await withTimeout(this._inner.createTopics({ topics: options.topics, timeout: options.timeout }), options.timeout, 'createTopics')
    } catch (e) {
      // The package reports topic failures together, even one.
      throw e instanceof errors.KafkaJSCreateTopicError ? new errors.KafkaJSAggregateError('Topic creation errors', [e]) : e
    }
  }

  /** Deletes topics. */
  async deleteTopics (options = {}) {
    only('deleteTopics', options, ['topics', 'timeout'])
    await withTimeout(this._inner.deleteTopics({ topics: options.topics }), options.timeout, 'deleteTopics')
  }

  /** The topics' names. */
  async listTopics (options = {}) {
    only('listTopics', options, ['timeout'])
    return withTimeout(this._inner.listTopics(), options.timeout, 'listTopics')
  }

  /** `{ groups: [{ groupId, protocolType, isSimpleConsumerGroup }], errors: [] }`. */
  async listGroups (options = {}) {
    only('listGroups', options, ['timeout'])
    const { groups } = await withTimeout(this._inner.listGroups(), options.timeout, 'listGroups')
    return { groups: groups.map(g => ({ ...g, isSimpleConsumerGroup: g.protocolType === '' })), errors: [] }
  }

  /** `{ groups }`: each group's state (ConsumerGroupStates), protocol and members. */
  async describeGroups (groups, options = {}) {
    only('describeGroups', options, ['timeout'], ['includeAuthorizedOperations'])
    const found = await withTimeout(this._inner.describeGroups(groups), options.timeout, 'describeGroups')
    return { groups: found.groups.map(groupDescription) }
  }

  /** Deletes empty groups; `[{ groupId, errorCode, error }]`. */
  async deleteGroups (groups, options = {}) {
    only('deleteGroups', options, ['timeout'])
    const found = await withTimeout(this._inner.deleteGroups(groups), options.timeout, 'deleteGroups')
    return found.map(g => ({ error: null, ...g }))
  }

  /** A group's committed offsets: `[{ topic, partitions: [{ partition, offset, metadata, leaderEpoch, error }] }]`. */
  async fetchOffsets (options = {}) {
    only('fetchOffsets', options, ['groupId', 'topics', 'timeout'], ['requireStableOffsets'])
    let topics = options.topics
    let wanted = null
    if (Array.isArray(topics) && topics.length && typeof topics[0] === 'object') {
      wanted = new Map(topics.map(t => [t.topic, new Set(t.partitions)]))
      topics = topics.map(t => t.topic)
    }
    const found = await withTimeout(this._inner.fetchOffsets({ groupId: options.groupId, topics }), options.timeout, 'fetchOffsets')
    return found.map(({ topic, partitions }) => ({
      topic,
      partitions: partitions
        .filter(p => !wanted || (wanted.get(topic) && wanted.get(topic).has(p.partition)))
        .map(p => ({ ...p, leaderEpoch: null, error: null }))
    }))
  }

  /** Deletes records before the offsets; `[{ topic, partition, lowWatermark, error }]` (the low watermarks after it). */
  async deleteTopicRecords (options = {}) {
    only('deleteTopicRecords', options, ['topic', 'partitions', 'timeout'])
    const run = async () => {
      await this._inner.deleteTopicRecords({ topic: options.topic, partitions: options.partitions })
      const marks = await this._inner.fetchTopicOffsets(options.topic)
      return options.partitions.map(({ partition }) => ({
        topic: options.topic, partition, lowWatermark: Number((marks.find(m => m.partition === partition) || {}).low), error: null
      }))
    }
    return withTimeout(run(), options.timeout, 'deleteTopicRecords')
  }

  /** The topics' metadata (all topics without `topics`): `[{ name, partitions }]`. */
  async fetchTopicMetadata (options = {}) {
    only('fetchTopicMetadata', options, ['topics', 'timeout'], ['includeAuthorizedOperations'])
    const { topics } = await withTimeout(this._inner.fetchTopicMetadata({ topics: options.topics }), options.timeout, 'fetchTopicMetadata')
    return topics
  }

  /** Per partition: `{ partition, offset, high, low }` (read_uncommitted). */
  async fetchTopicOffsets (topic, options = {}) {
    only('fetchTopicOffsets', options, ['timeout', 'isolationLevel'])
    if (options.isolationLevel !== undefined && options.isolationLevel !== IsolationLevel.READ_UNCOMMITTED) {
      throw refusal('fetchTopicOffsets: isolationLevel READ_COMMITTED is not supported', C.ERR__NOT_IMPLEMENTED)
    }
    return withTimeout(this._inner.fetchTopicOffsets(topic), options.timeout, 'fetchTopicOffsets')
  }

  /** Per partition, the first offset at or after `timestamp` (read_uncommitted). */
  async fetchTopicOffsetsByTimestamp (topic, timestamp, options = {}) {
    only('fetchTopicOffsetsByTimestamp', options, ['timeout', 'isolationLevel'])
    if (options.isolationLevel !== undefined && options.isolationLevel !== IsolationLevel.READ_UNCOMMITTED) {
      throw refusal('fetchTopicOffsetsByTimestamp: isolationLevel READ_COMMITTED is not supported', C.ERR__NOT_IMPLEMENTED)
    }
    return withTimeout(this._inner.fetchTopicOffsetsByTimestamp(topic, timestamp), options.timeout, 'fetchTopicOffsetsByTimestamp')
  }
}

/** Whether an error means the group is rebalancing (the operation may succeed after it). */
const isRebalancing = (e) => Boolean(e) && [C.ERR_REBALANCE_IN_PROGRESS, C.ERR_NOT_COORDINATOR, C.ERR_ILLEGAL_GENERATION].includes(e.code)

/** Whether `e` is one of this package's KafkaJS errors. */
const isKafkaJSError = (e) => e instanceof errors.KafkaJSError

module.exports = {
  Kafka,
  KafkaJSError: errors.KafkaJSError,
  KafkaJSPartialMessageError,
  KafkaJSProtocolError: errors.KafkaJSProtocolError,
  KafkaJSConnectionError: errors.KafkaJSConnectionError,
  KafkaJSRequestTimeoutError: errors.KafkaJSRequestTimeoutError,
  KafkaJSSASLAuthenticationError: errors.KafkaJSSASLAuthenticationError,
  KafkaJSOffsetOutOfRange: errors.KafkaJSOffsetOutOfRange,
  KafkaJSGroupCoordinatorNotFound,
  KafkaJSNotImplemented: errors.KafkaJSNotImplemented,
  KafkaJSTimeout: errors.KafkaJSTimeout,
  KafkaJSCreateTopicError: errors.KafkaJSCreateTopicError,
  KafkaJSDeleteGroupsError: errors.KafkaJSDeleteGroupsError,
  KafkaJSDeleteTopicRecordsError: errors.KafkaJSDeleteTopicRecordsError,
  KafkaJSAggregateError: errors.KafkaJSAggregateError,
  KafkaJSNoBrokerAvailableError,
  isRebalancing,
  isKafkaJSError,
  ErrorCodes,
  logLevel,
  PartitionAssigners,
  PartitionAssignors: PartitionAssigners,
  CompressionTypes,
  ConsumerGroupTypes,
  ConsumerGroupStates,
  AclOperationTypes: constants.AclOperationTypes,
  IsolationLevel
}
