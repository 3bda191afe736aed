'use strict'
// KafkaJS's error classes, and the one mapping from native errors to them.
//
// Native calls reject with an Error whose message starts with `[odradek CODE TYPE R]`
// (src/error.rs): CODE is Kafka's error code, or a negative client-side code; TYPE its name
// (Apache Kafka's protocol name, e.g. TOPIC_ALREADY_EXISTS, or _MSG_TIMED_OUT style); R is 1
// when retrying may help.

class KafkaJSError extends Error {
  constructor (e, { retriable = true, cause } = {}) {
    super(e instanceof Error ? e.message : e, cause ? { cause } : undefined)
    this.name = 'KafkaJSError'
    this.retriable = retriable
    this.helpUrl = undefined
    if (e instanceof Error) {
      for (const k of ['code', 'type', 'retriable']) if (e[k] !== undefined) this[k] = e[k]
    }
  }
}

class KafkaJSNonRetriableError extends KafkaJSError {
  constructor (e, opts = {}) {
    super(e, { ...opts, retriable: false })
    this.name = 'KafkaJSNonRetriableError'
  }
}

/**
 * A consumer's crash after its run loop retried a failure `retry.retries` times (KafkaJS's
 * class): `cause` is the last failure, `retryCount` and `retryTime` (ms) its retry's.
 */
class KafkaJSNumberOfRetriesExceeded extends KafkaJSNonRetriableError {
  constructor (e, { retryCount, retryTime } = {}) {
    super(e, { cause: e })
    this.name = 'KafkaJSNumberOfRetriesExceeded'
    // Not the cause's flag (KafkaJSError copies it): retrying is over.
    this.retriable = false
    this.retryCount = retryCount
    this.retryTime = retryTime
  }
}

class KafkaJSProtocolError extends KafkaJSError {
  constructor (e, { retriable, code, type, cause } = {}) {
    super(e, { retriable: retriable !== undefined ? retriable : false, cause })
    this.name = 'KafkaJSProtocolError'
    if (type !== undefined) this.type = type
    if (code !== undefined) this.code = code
  }
}

class KafkaJSOffsetOutOfRange extends KafkaJSProtocolError {
  constructor (e, { topic, partition, ...rest } = {}) {
    super(e, rest)
    this.name = 'KafkaJSOffsetOutOfRange'
    this.topic = topic
    this.partition = partition
  }
}

class KafkaJSCreateTopicError extends KafkaJSProtocolError {
  constructor (e, topicName) {
    super(e, { retriable: e.retriable, code: e.code, type: e.type })
    this.name = 'KafkaJSCreateTopicError'
    this.topic = topicName
  }
}

class KafkaJSDeleteTopicError extends KafkaJSProtocolError {
  constructor (e, topicName) {
    super(e, { retriable: e.retriable, code: e.code, type: e.type })
    this.name = 'KafkaJSDeleteTopicError'
    this.topic = topicName
  }
}

/** deleteGroups: `groups` lists every group with its `errorCode` and `error`. */
class KafkaJSDeleteGroupsError extends KafkaJSError {
  constructor (e, groups = []) {
    super(e)
    this.name = 'KafkaJSDeleteGroupsError'
    this.groups = groups
  }
}

/** deleteTopicRecords: `partitions` lists the failed partitions with their `error`. */
class KafkaJSDeleteTopicRecordsError extends KafkaJSError {
  constructor ({ partitions }) {
    const first = partitions[0] && partitions[0].error
    super(first || 'deleteTopicRecords failed', { retriable: !!(first && first.retriable) })
    this.name = 'KafkaJSDeleteTopicRecordsError'
    this.partitions = partitions
  }
}

/** odradek's: an alterClientQuotas entry the broker refused (KafkaJS has no quota calls). */
class KafkaJSClientQuotaError extends KafkaJSProtocolError {
  constructor (e, entity) {
    super(e, { retriable: e.retriable, code: e.code, type: e.type })
    this.name = 'KafkaJSClientQuotaError'
    this.entity = entity
  }
}

class KafkaJSConnectionError extends KafkaJSError {
  constructor (e, { broker, code, type } = {}) {
    super(e, { retriable: true })
    this.name = 'KafkaJSConnectionError'
    this.broker = broker
    if (code !== undefined) this.code = code
    if (type !== undefined) this.type = type
  }
}

class KafkaJSRequestTimeoutError extends KafkaJSError {
  constructor (e, { code, type } = {}) {
    super(e, { retriable: true })
    this.name = 'KafkaJSRequestTimeoutError'
    if (code !== undefined) this.code = code
    if (type !== undefined) this.type = type
  }
}

class KafkaJSTimeout extends KafkaJSError {
  constructor (e, { code, type } = {}) {
    super(e, { retriable: true })
    this.name = 'KafkaJSTimeout'
    if (code !== undefined) this.code = code
    if (type !== undefined) this.type = type
  }
}

class KafkaJSNotImplemented extends KafkaJSNonRetriableError {
  constructor (e, opts) {
    super(e, opts)
    this.name = 'KafkaJSNotImplemented'
    this.type = '_NOT_IMPLEMENTED'
    this.code = -170
  }
}

class KafkaJSSASLAuthenticationError extends KafkaJSNonRetriableError {
  constructor (e, opts) {
    super(e, opts)
    this.name = 'KafkaJSSASLAuthenticationError'
  }
}

class KafkaJSAggregateError extends Error {
  constructor (message, errors) {
    super(message)
    this.name = 'KafkaJSAggregateError'
    this.errors = errors
    this.retriable = errors.every(e => e.retriable)
  }
}

const NATIVE = /^\[odradek (-?\d+) (\S+) ([01])\] ([\s\S]*)$/

/** Parses a native error message; null when it is not one of ours. */
function parse (message) {
  const m = NATIVE.exec(message || '')
  if (!m) return null
  return { code: Number(m[1]), type: m[2], retriable: m[3] === '1', message: m[4] }
}

/** Maps an error from a native call (or an encoded item error string) to a KafkaJS error. */
function fromNative (err, context = {}) {
  if (err instanceof KafkaJSError) return err
  const parsed = parse(typeof err === 'string' ? err : err && err.message)
  if (!parsed) {
    return err instanceof Error ? new KafkaJSError(err, { retriable: false, cause: err }) : new KafkaJSError(String(err))
  }
  const { code, type, retriable, message } = parsed
  const opts = { code, type, retriable }
  let e
  if (code > 0) {
    e = type === 'OFFSET_OUT_OF_RANGE'
      ? new KafkaJSOffsetOutOfRange(message, { ...opts, ...context })
      : type === 'SASL_AUTHENTICATION_FAILED'
        ? new KafkaJSSASLAuthenticationError(message, opts)
        : new KafkaJSProtocolError(message, opts)
  } else {
    switch (type) {
      case '_UNKNOWN_TOPIC':
      case '_UNKNOWN_PARTITION':
        e = new KafkaJSProtocolError(message, { code: 3, type: 'UNKNOWN_TOPIC_OR_PARTITION', retriable: true })
        break
      case '_AUTHENTICATION':
        e = new KafkaJSSASLAuthenticationError(message, opts)
        break
      case '_SSL':
      case '_TRANSPORT':
      case '_ALL_BROKERS_DOWN':
      case '_RESOLVE':
        e = new KafkaJSConnectionError(message, opts)
        break
      case '_TIMED_OUT':
        e = new KafkaJSRequestTimeoutError(message, opts)
        break
      case '_MSG_TIMED_OUT':
        e = new KafkaJSTimeout(message, opts)
        break
      case '_NOT_IMPLEMENTED':
        e = new KafkaJSNotImplemented(message)
        break
      case '_LOG_TRUNCATION':
        // KIP-320 truncation with no reset policy: Java's LogTruncationException is an
        // OffsetOutOfRangeException, and KafkaJS reports a lost position as this class.
        e = new KafkaJSOffsetOutOfRange(message, { ...opts, ...context })
        break
      default:
        e = retriable ? new KafkaJSError(message, { retriable }) : new KafkaJSNonRetriableError(message)
        e.code = code
        e.type = type
    }
  }
  return e
}

module.exports = {
  KafkaJSError,
  KafkaJSNonRetriableError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
  KafkaJSOffsetOutOfRange,
  KafkaJSCreateTopicError,
  KafkaJSDeleteTopicError,
  KafkaJSDeleteGroupsError,
  KafkaJSDeleteTopicRecordsError,
  KafkaJSClientQuotaError,
  KafkaJSConnectionError,
  KafkaJSRequestTimeoutError,
  KafkaJSTimeout,
  KafkaJSNotImplemented,
  KafkaJSSASLAuthenticationError,
  KafkaJSAggregateError,
  fromNative,
  parse
}
