'use strict'
// KafkaJS's consumer: connect, subscribe, run({ eachMessage | eachBatch }), commitOffsets,
// seek, pause, resume, stop, disconnect, events.
//
// The run loop polls the native consumer for a batch (at most `max.poll.records` records,
// packed; see src/pack.rs and lib/messages.js), hands it to the handler partition by partition
// and, with autoCommit, commits the offsets of messages whose handler finished. Group
// membership, heartbeats and fetching run in the core on the shared runtime, so a slow handler
// delays only this loop. A failing handler rewinds its partition to the failed message, which
// is then delivered again after a backoff.
//
// Failures (of a handler, or of a poll) follow KafkaJS's retrier and crash handling: a
// retriable one is retried `retry.retries` times (5 by default) with backoff; then, or at once
// for an unrecoverable one, the consumer crashes: it stops and disconnects (leaving the group;
// STOP and DISCONNECT), KafkaJS's `retry.restartOnFailure(error)` decides whether a crash past
// the retries restarts it, CRASH is emitted with that `restart`, and a restart runs the
// consumer again (a new member, from the committed offsets) after the retry time.
const native = require('./native')
const { consumerProps, resolveBrokers, takeShellProperties } = require('./config')
const { Instrumentation, throttleListener, clientErrorListener, attachRequestEvents, takeStatisticsInterval, startStatistics } = require('./events')
const { decode, partitionCount } = require('./messages')
const { KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded, fromNative } = require('./errors')

const EVENTS = {
  HEARTBEAT: 'consumer.heartbeat',
  COMMIT_OFFSETS: 'consumer.commit_offsets',
  GROUP_JOIN: 'consumer.group_join',
  FETCH_START: 'consumer.fetch_start',
  FETCH: 'consumer.fetch',
  START_BATCH_PROCESS: 'consumer.start_batch_process',
  END_BATCH_PROCESS: 'consumer.end_batch_process',
  CONNECT: 'consumer.connect',
  DISCONNECT: 'consumer.disconnect',
  STOP: 'consumer.stop',
  CRASH: 'consumer.crash',
  REBALANCING: 'consumer.rebalancing',
  RECEIVED_UNSUBSCRIBED_TOPICS: 'consumer.received_unsubscribed_topics',
  REQUEST: 'consumer.network.request',
  REQUEST_TIMEOUT: 'consumer.network.request_timeout',
  REQUEST_QUEUE_SIZE: 'consumer.network.request_queue_size',
  // odradek's extension (KafkaJS has no throttle event): see lib/events.js.
  REQUEST_THROTTLE: 'consumer.network.request_throttle',
  CLIENT_ERROR: 'consumer.network.client_error',
  // odradek's extension: librdkafka's statistics JSON every `statistics.interval.ms`.
  STATS: 'consumer.stats'
}

const key = (topic, partition) => `${partition}:${topic}`
// auto.offset.reset's names for "the end" (librdkafka's aliases).
const LATEST_NAMES = new Set(['latest', 'largest', 'end'])
// Kafka's API keys of the group heartbeats (HEARTBEAT events).
const HEARTBEAT_API = 12
const CONSUMER_GROUP_HEARTBEAT_API = 68

// KafkaJS's retrier: errors of these classes are never retried.
const UNRECOVERABLE = ['RangeError', 'ReferenceError', 'SyntaxError', 'TypeError']
/** KafkaJS's `isErrorRetriable`: anything not marked `retriable: false`, but programming errors. */
const isRetriable = (e) => e === null || typeof e !== 'object' || (e.retriable !== false && !UNRECOVERABLE.includes(e.name))
/** The error at the end of an error's `cause` chain. */
const originalCause = (e) => (e && e.cause ? originalCause(e.cause) : e)
const escapeRegex = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** A JavaScript RegExp as the core's pattern syntax (its `i` flag kept). */
const regexSource = (r) => (r.flags.includes('i') ? `(?i:${r.source})` : `(?:${r.source})`)

class Consumer {
  constructor (kafka, options) {
    if (!options || typeof options.groupId !== 'string' || options.groupId === '') {
      throw new KafkaJSNonRetriableError('Consumer groupId must be a non-empty string.')
    }
    this._kafka = kafka
    this._options = options
    this._groupId = options.groupId
    this._names = new Set()
    this._patterns = []
    // KafkaJS's per-subscription fromBeginning: topic name -> boolean, and [RegExp, boolean].
    this._nameResets = new Map()
    this._patternResets = []
    this._servers = null
    this._native = null
    this._running = false
    this._loop = null
    this._paused = new Map()
    this._pendingSeeks = new Map()
    this._abandon = new Set()
    this._resolved = new Map()
    this._commitInFlight = null
    this._seq = 0
    this._rewoundAt = new Map()
    // A restart scheduled after a crash: its timer, and the token stop/run clear to cancel it.
    this._restartTimer = null
    this._restartToken = null
    this._instrumentation = new Instrumentation(EVENTS)
    this.events = EVENTS
  }

  on (type, listener) {
    return this._instrumentation.on(type, listener)
  }

  logger () {
    return this._kafka.logger()
  }

  _props () {
    return { ...this._kafka._props, 'bootstrap.servers': this._servers, ...consumerProps(this._options) }
  }

  async connect () {
    this._servers = await resolveBrokers(this._kafka._brokers)
    this._kafka._holdCoreLog(this)
    let probe = null
    try {
      // The consumer's own properties (security settings may be among them) reach the probe too.
      const props = takeShellProperties(this._props())
      takeStatisticsInterval(props)
      probe = new native.NativeAdmin(props, this._kafka._tokenProvider)
      await probe.connect()
    } catch (e) {
      this._kafka._releaseCoreLog(this)
      throw fromNative(e)
    } finally {
      if (probe) probe.close()
    }
    this._instrumentation.emit(EVENTS.CONNECT, null)
  }

  async subscribe ({ topic, topics, fromBeginning = false } = {}) {
    if (this._running) throw new KafkaJSNonRetriableError('Cannot subscribe to topic while consumer is running')
    const list = topics || (topic !== undefined ? [topic] : [])
    if (list.length === 0) throw new KafkaJSNonRetriableError('Missing required argument "topics"')
    for (const t of list) {
      if (t instanceof RegExp) {
        this._patterns.push(t)
        this._patternResets.push([t, Boolean(fromBeginning)])
      } else if (typeof t === 'string' && t) {
        this._names.add(t)
        this._nameResets.set(t, Boolean(fromBeginning))
      } else throw new KafkaJSNonRetriableError(`Invalid topic ${t} (${typeof t}), the topic name has to be a String or a RegExp`)
    }
  }

  /**
   * The core's per-topic `auto.offset.reset` rules from the subscriptions' `fromBeginning`
   * (names first, then patterns in subscription order, as KafkaJS resolves a topic).
   */
  _resetRules () {
    const rules = [...this._nameResets].map(([topic, fromBeginning]) => ({ topic, fromBeginning }))
    for (const [re, fromBeginning] of this._patternResets) rules.push({ pattern: regexSource(re), fromBeginning })
    return rules
  }

  async run (config = {}) {
    const {
      eachMessage,
      eachBatch,
      autoCommit = true,
      autoCommitInterval = null,
      autoCommitThreshold = null,
      eachBatchAutoResolve = true,
      partitionsConsumedConcurrently = 1
    } = config
    if (!Number.isInteger(partitionsConsumedConcurrently) || partitionsConsumedConcurrently < 1) {
      throw new KafkaJSNonRetriableError(`partitionsConsumedConcurrently must be a positive integer, got ${partitionsConsumedConcurrently}`)
    }
    this._cancelRestart()
    if (this._running) {
      this.logger().warn('consumer#run was called, but the consumer is already running', { groupId: this._groupId })
      return
    }
    if (!eachMessage && !eachBatch) throw new KafkaJSNonRetriableError('Consumer.run requires eachMessage or eachBatch')
    if (this._servers === null) throw new KafkaJSNonRetriableError('The consumer is not connected: call connect() first')
    if (this._names.size === 0 && this._patterns.length === 0) {
      throw new KafkaJSNonRetriableError('The consumer is not subscribed to any topic: call subscribe() first')
    }
    if (!this._native) {
      try {
        const props = takeShellProperties(this._props())
        const statsMs = takeStatisticsInterval(props)
        this._native = new native.NativeConsumer(props, this._kafka._tokenProvider)
        if (statsMs > 0) this._statsTimer = startStatistics(this._native, statsMs, this._instrumentation, EVENTS.STATS, props['client.id'])
        this._native.onThrottle(throttleListener(this._instrumentation, EVENTS.REQUEST_THROTTLE, { clientId: props['client.id'], logger: this.logger() }))
        this._native.onClientError(clientErrorListener(this._instrumentation, EVENTS.CLIENT_ERROR, { clientId: props['client.id'], logger: this.logger() }))
        attachRequestEvents(this._instrumentation, EVENTS, this._native, props['client.id'], {
          alsoFor: [EVENTS.HEARTBEAT],
          onAnswered: (e) => this._heartbeatAnswered(e)
        })
        // Unless the application set auto.offset.reset itself, each subscription's
        // fromBeginning decides where its topics' new partitions start.
        if (!('auto.offset.reset' in props) || LATEST_NAMES.has(String(props['auto.offset.reset']).trim())) {
          this._native.setTopicResets(this._resetRules())
        }
        if (this._patterns.length > 0) {
          const parts = [...this._names].map(n => `^${escapeRegex(n)}$`)
            .concat(this._patterns.map(regexSource))
          this._native.subscribe([], parts.join('|'))
        } else {
          this._native.subscribe([...this._names], null)
        }
      } catch (e) {
        this._native = null
        throw fromNative(e)
      }
    }
    this._running = true
    this._runConfig = config
    this._run = { eachMessage, eachBatch, autoCommit, autoCommitInterval, autoCommitThreshold, eachBatchAutoResolve, partitionsConsumedConcurrently }
    this._lastCommit = Date.now()
    this._uncommitted = 0
    // The loop ends when stopped (null) or with the error the consumer crashed on.
    const loop = this._runLoop().catch((e) => {
      this.logger().error('consumer loop failed', { groupId: this._groupId, error: e.message })
      return null
    })
    this._loop = loop
    loop.then((crash) => crash && this._crashed(crash))
  }

  /** The consumer's retry options as KafkaJS merges them: its own (`{ retries: 5 }` when not given) over the client's. */
  _retryOptions () {
    return { ...(this._kafka._retry || {}), ...(this._options.retry || { retries: 5 }) }
  }

  /**
   * KafkaJS's retrier on the run loop's `failures`-th consecutive failure: null to retry it
   * after the backoff, or the error the consumer crashes on (retries used up, or an
   * unrecoverable error).
   */
  _crashError (e, failures) {
    if (!isRetriable(e)) {
      const crash = new KafkaJSNonRetriableError(e, { cause: e })
      crash.retriable = false
      return crash
    }
    const { retries } = this._retryOptions()
    if (failures <= (retries === undefined || retries === null ? 5 : retries)) return null
    return new KafkaJSNumberOfRetriesExceeded(e, { retryCount: failures - 1, retryTime: this._backoffMs(failures) })
  }

  /**
   * A crash, as KafkaJS's consumer handles one: stop and disconnect, then, for an error past
   * its retries (or whose original cause is retriable), ask `retry.restartOnFailure` (restart
   * when absent, or when it throws), emit CRASH with the answer and, to restart, run again
   * after the retry time unless `stop`, `disconnect` or `run` came first.
   */
  async _crashed (error) {
    try {
      this.logger().error(`Crash: ${error.name}: ${error.message}`, { groupId: this._groupId, retryCount: error.retryCount, stack: error.stack })
      // Cancelled by the application's stop, disconnect or run from here on.
      const token = {}
      this._restartToken = token
      await this._disconnect()
      const retry = this._retryOptions()
      let restart = error.name === 'KafkaJSNumberOfRetriesExceeded' || Boolean(originalCause(error) && originalCause(error).retriable === true)
      if (restart && typeof retry.restartOnFailure === 'function') {
        restart = Boolean(await Promise.resolve()
          .then(() => retry.restartOnFailure(error))
          .catch((e) => {
            this.logger().error('Caught error when invoking user-provided "restartOnFailure" callback. Defaulting to restarting.', {
              error: (e && e.message) || e,
              cause: error.message,
              groupId: this._groupId
            })
            return true
          }))
      }
      this._instrumentation.emit(EVENTS.CRASH, { error, groupId: this._groupId, restart })
      if (!restart || this._restartToken !== token) return
      const retryTime = error.retryTime || retry.initialRetryTime || 300
      this.logger().error(`Restarting the consumer in ${retryTime}ms`, { retryCount: error.retryCount, retryTime, groupId: this._groupId })
      this._restartTimer = setTimeout(() => {
        this._restartTimer = null
        if (this._restartToken !== token) return
        this._restartToken = null
        this.run(this._runConfig).catch((e) => this._crashed(fromNative(e)))
      }, retryTime)
    } catch (e) {
      this.logger().error('Failed to handle the consumer crash', { groupId: this._groupId, error: e && e.message })
    }
  }

  /** Cancels a restart scheduled by a crash (the application stopped or ran the consumer). */
  _cancelRestart () {
    this._restartToken = null
    if (this._restartTimer) clearTimeout(this._restartTimer)
    this._restartTimer = null
  }

  async _runLoop () {
    const maxWait = this._options.maxWaitTimeInMs === undefined ? 5000 : this._options.maxWaitTimeInMs
    const pollMs = Math.max(1, Math.min(maxWait, 500))
    let failures = 0
    let crash = null
    // The next poll is issued before the current batch is handed to the application, so the
    // core fetches and decodes while JavaScript processes. Records of a partition rewound
    // (seek, pause, failed handler) after a poll was issued are dropped from its result.
    let pending = null
    // KafkaJS's FETCH_START / FETCH events: one per poll of the core (which fetches
    // continuously in the background), with the partition batches it returned.
    const issue = () => {
      const issuedAt = ++this._seq
      const started = Date.now()
      this._instrumentation.emit(EVENTS.FETCH_START, {})
      return this._native.poll(pollMs).then((polled) => {
        if (this._instrumentation.has(EVENTS.FETCH)) {
          this._instrumentation.emit(EVENTS.FETCH, { numberOfBatches: partitionCount(polled), duration: Date.now() - started })
        }
        return { polled, issuedAt }
      }, (error) => ({ error, issuedAt }))
    }
    while (this._running) {
      await this._takeEvents()
      this._applySeeks()
      const { polled, error, issuedAt } = await (pending || issue())
      pending = null
      if (error) {
        const e = fromNative(error)
        this.logger().error('Error polling the consumer', { groupId: this._groupId, error: e.message })
        crash = this._crashError(e, ++failures)
        if (crash) break
        await this._backoff(failures)
        continue
      }
      if (!this._running) break
      if (polled.records.length === 0) {
        await this._maybeCommit(true)
        continue
      }
      const batches = decode(polled)
      // A poll issued before a rewind may have returned records from either side of it, and
      // moved the core's position past them: drop them and rewind again, before the next poll.
      const stale = new Set()
      for (const { topic, partition } of batches) {
        const k = key(topic, partition)
        const r = this._rewoundAt.get(k)
        if (r && r.seq > issuedAt) {
          stale.add(k)
          this._rewind(topic, partition, r.offset)
        }
      }
      pending = issue()
      this._abandon.clear()
      const assigned = new Set(this._native.assignment().map(tp => key(tp.topic, tp.partition)))
      try {
        // Only a handler that ran and returned ends a run of failures: a poll whose records
        // were all dropped (stale after a rewind, revoked, paused) retried nothing.
        const runnable = batches.filter(b => {
          const k = key(b.topic, b.partition)
          return assigned.has(k) && !stale.has(k)
        })
        const handled = await this._processConcurrently(runnable, this._run.partitionsConsumedConcurrently)
        if (handled) failures = 0
      } catch (e) {
        this.logger().error(`Error when calling ${this._run.eachBatch ? 'eachBatch' : 'eachMessage'}`, { groupId: this._groupId, error: e && e.message })
        await this._maybeCommit(true)
        crash = this._crashError(e, ++failures)
        if (crash) break
        await this._backoff(failures)
        continue
      }
      await this._maybeCommit(false)
    }
    // A poll still in flight only moved the core's positions; nothing of it was delivered.
    if (pending) await pending
    return crash
  }

  /**
   * KafkaJS's `partitionsConsumedConcurrently`: the batches of one poll handled by up to
   * `limit` handlers at once, a partition's batches in order by one of them. The
   * next poll's batches wait until these are done. A handler's failure is raised once every
   * started one has finished (their partitions rewind independently). Resolves to whether any
   * handler ran.
   */
  async _processConcurrently (batches, limit) {
    // One lane per partition: a poll may hold several batches of one partition, which must
    // run one after the other.
    const lanes = new Map()
    for (const b of batches) {
      const k = key(b.topic, b.partition)
      if (!lanes.has(k)) lanes.set(k, [])
      lanes.get(k).push(b)
    }
    const queue = [...lanes.values()]
    let next = 0
    let handled = false
    let failure = null
    const worker = async () => {
      while (next < queue.length && this._running && failure === null) {
        const lane = queue[next++]
        for (const batch of lane) {
          if (!this._running) return
          try {
            if (await this._process(batch)) handled = true
          } catch (e) {
            if (failure === null) failure = e
            break
          }
        }
      }
    }
    const n = Math.max(1, Math.min(limit, queue.length))
    await Promise.all(Array.from({ length: n }, worker))
    if (failure !== null) throw failure
    return handled
  }

  /** The wait before the run loop's `attempt`-th retry. */
  _backoffMs (attempt) {
    const retry = this._retryOptions()
    const initial = retry.initialRetryTime === undefined ? 300 : retry.initialRetryTime
    const max = retry.maxRetryTime === undefined ? 30000 : retry.maxRetryTime
    return Math.min(max, initial * 2 ** Math.min(attempt - 1, 16))
  }

  _backoff (attempt) {
    const ms = this._backoffMs(attempt)
    return new Promise(resolve => {
      const t = setTimeout(resolve, ms)
      this._wake = () => { clearTimeout(t); resolve() }
    })
  }

  /**
   * KafkaJS's HEARTBEAT event for each heartbeat the core's group membership had answered
   * (classic Heartbeat or KIP-848's ConsumerGroupHeartbeat), with the member's id and
   * generation (the member epoch under KIP-848).
   */
  _heartbeatAnswered (e) {
    if ((e.apiKey !== HEARTBEAT_API && e.apiKey !== CONSUMER_GROUP_HEARTBEAT_API) || !this._instrumentation.has(EVENTS.HEARTBEAT)) return
    const n = this._native
    if (!n) return
    n.groupMember().then((m) => {
      this._instrumentation.emit(EVENTS.HEARTBEAT, {
        groupId: this._groupId,
        memberId: m ? m.memberId : '',
        groupGenerationId: m ? m.generationId : -1
      })
    }, () => {})
  }

  /** Rebalances: GROUP_JOIN events, pauses re-applied to newly assigned partitions. */
  async _takeEvents () {
    const events = this._native.takeEvents()
    if (events.length === 0) return
    for (const ev of events) {
      if (ev.kind === 'assigned') {
        this._applyPauses()
        this._ignoreUnsubscribed()
        if (this._instrumentation.has(EVENTS.GROUP_JOIN)) {
          const join = this._native.joinInfo()
          const memberAssignment = {}
          for (const { topic, partition } of this._native.assignment()) {
            (memberAssignment[topic] = memberAssignment[topic] || []).push(partition)
          }
          this._instrumentation.emit(EVENTS.GROUP_JOIN, {
            groupId: this._groupId,
            memberId: join ? join.memberId : '',
            leaderId: join ? join.leaderId : '',
            isLeader: join ? join.isLeader : false,
            memberAssignment,
            groupProtocol: join ? join.groupProtocol : '',
            duration: join ? join.duration : 0
          })
        }
      } else {
        this._instrumentation.emit(EVENTS.REBALANCING, { groupId: this._groupId, memberId: '' })
      }
    }
  }

  /**
   * KafkaJS's handling of partitions of topics this member did not subscribe to (a leader's
   * assignor may hand them out: KafkaJS's round robin ignores subscriptions): a warning and a
   * RECEIVED_UNSUBSCRIBED_TOPICS event, and the partitions are left alone (not fetched, never
   * delivered).
   */
  _ignoreUnsubscribed () {
    const assignment = this._native.assignment()
    const subscribed = (topic) => this._names.has(topic) || this._patterns.some(re => new RegExp(re.source, re.flags.replace('g', '')).test(topic))
    const stray = assignment.filter(tp => !subscribed(tp.topic))
    this._unsubscribed = new Set(stray.map(tp => tp.topic))
    if (stray.length === 0) return
    this._native.pause(stray)
    const assignedTopics = [...new Set(assignment.map(tp => tp.topic))]
    const topicsNotSubscribed = [...this._unsubscribed]
    const join = this._native.joinInfo()
    const payload = {
      groupId: this._groupId,
      generationId: join ? join.generationId : -1,
      memberId: join ? join.memberId : '',
      assignedTopics,
      topicsSubscribed: [...this._names, ...this._patterns.map(String)],
      topicsNotSubscribed
    }
    this.logger().warn('Consumer group received unsubscribed topics', payload)
    this._instrumentation.emit(EVENTS.RECEIVED_UNSUBSCRIBED_TOPICS, payload)
  }

  _isPaused (topic, partition) {
    const p = this._paused.get(topic)
    return p !== undefined && (p === null || p.has(partition))
  }

  _applyPauses () {
    if (!this._native) return
    const toPause = this._native.assignment().filter(tp => this._isPaused(tp.topic, tp.partition))
    if (toPause.length) this._native.pause(toPause)
  }

  _applySeeks () {
    if (this._pendingSeeks.size === 0) return
    const assigned = new Set(this._native.assignment().map(tp => key(tp.topic, tp.partition)))
    for (const [k, { topic, partition, offset }] of this._pendingSeeks) {
      if (!assigned.has(k)) continue
      try {
        this._rewoundAt.set(k, { seq: ++this._seq, offset })
        this._native.seek(topic, partition, offset)
        this._pendingSeeks.delete(k)
        this._resolved.delete(k)
      } catch (e) {
        this.logger().error('seek failed', { topic, partition, offset, error: e.message })
        this._pendingSeeks.delete(k)
      }
    }
  }

  /** Stops processing a partition's batch here: its records from `offset` on are fetched again. */
  _rewind (topic, partition, offset) {
    this._rewoundAt.set(key(topic, partition), { seq: ++this._seq, offset: String(offset) })
    try {
      this._native.seek(topic, partition, String(offset))
    } catch (e) {
      // The partition was revoked meanwhile: its new owner starts from the committed offset.
    }
  }

  _resolve (topic, partition, offset) {
    const k = key(topic, partition)
    const next = String(BigInt(offset) + 1n)
    this._resolved.set(k, { topic, partition, offset: next })
    this._uncommitted++
  }

  /** Hands one partition's records to eachMessage / eachBatch; true when the handler ran and returned. */
  async _process ({ topic, partition, messages }) {
    if (this._unsubscribed && this._unsubscribed.has(topic)) return false
    const k = key(topic, partition)
    const run = this._run
    if (this._isPaused(topic, partition)) {
      this._rewind(topic, partition, messages[0].offset)
      return false
    }
    const firstOffset = messages[0].offset
    const lastOffset = messages[messages.length - 1].offset
    // KafkaJS's lag fields: from the high watermark the latest fetch reported.
    const highWatermark = this._native ? this._native.highWatermark(topic, partition) : '-1'
    const lagFrom = (offset) => {
      if (highWatermark === '-1') return '0'
      const lag = BigInt(highWatermark) - 1n - BigInt(offset)
      return String(lag < 0n ? 0n : lag)
    }
    const offsetLag = lagFrom(lastOffset)
    const offsetLagLow = lagFrom(firstOffset)
    const emitBatch = this._instrumentation.has(EVENTS.START_BATCH_PROCESS) || this._instrumentation.has(EVENTS.END_BATCH_PROCESS)
    const started = Date.now()
    if (emitBatch) {
      this._instrumentation.emit(EVENTS.START_BATCH_PROCESS, { topic, partition, highWatermark, offsetLag, offsetLagLow, batchSize: messages.length, firstOffset, lastOffset })
    }
    const pause = () => {
      this.pause([{ topic, partitions: [partition] }])
      return () => this.resume([{ topic, partitions: [partition] }])
    }
    const heartbeat = async () => {}
    let handled = false
    if (run.eachMessage) {
      for (const message of messages) {
        if (!this._running || this._abandon.has(k)) return handled
        if (this._isPaused(topic, partition)) {
          this._rewind(topic, partition, message.offset)
          return handled
        }
        try {
          await run.eachMessage({ topic, partition, message, heartbeat, pause })
        } catch (e) {
          this._rewind(topic, partition, message.offset)
          throw e
        }
        handled = true
        if (this._abandon.has(k)) return handled
        this._resolve(topic, partition, message.offset)
      }
    } else {
      let resolvedUpTo = null
      const consumer = this
      const batch = {
        topic,
        partition,
        highWatermark,
        messages,
        isEmpty: () => messages.length === 0,
        firstOffset: () => firstOffset,
        lastOffset: () => lastOffset,
        offsetLag: () => offsetLag,
        offsetLagLow: () => offsetLagLow
      }
      const resolveOffset = (offset) => {
        resolvedUpTo = offset
        consumer._resolve(topic, partition, offset)
      }
      try {
        await run.eachBatch({
          batch,
          resolveOffset,
          heartbeat,
          pause,
          commitOffsetsIfNecessary: async (offsets) => (offsets ? this.commitOffsets(offsets) : this._flushCommits()),
          uncommittedOffsets: () => ({ topics: this._uncommittedTopics() }),
          isRunning: () => this._running,
          isStale: () => this._abandon.has(k)
        })
      } catch (e) {
        const from = resolvedUpTo === null ? firstOffset : String(BigInt(resolvedUpTo) + 1n)
        this._rewind(topic, partition, from)
        throw e
      }
      handled = true
      if (!this._abandon.has(k)) {
        if (run.eachBatchAutoResolve) {
          this._resolve(topic, partition, lastOffset)
        } else if (resolvedUpTo === null || BigInt(resolvedUpTo) < BigInt(lastOffset)) {
          // What the handler did not resolve is delivered again.
          this._rewind(topic, partition, resolvedUpTo === null ? firstOffset : String(BigInt(resolvedUpTo) + 1n))
        }
      }
    }
    if (emitBatch) {
      this._instrumentation.emit(EVENTS.END_BATCH_PROCESS, { topic, partition, highWatermark, offsetLag, offsetLagLow, batchSize: messages.length, firstOffset, lastOffset, duration: Date.now() - started })
    }
    return handled
  }

  _uncommittedTopics () {
    const topics = new Map()
    for (const { topic, partition, offset } of this._resolved.values()) {
      if (!topics.has(topic)) topics.set(topic, [])
      topics.get(topic).push({ partition, offset })
    }
    return [...topics].map(([topic, partitions]) => ({ topic, partitions }))
  }

  /**
   * Commits resolved offsets when autoCommit says so (`force`: whatever is pending). The commit
   * runs while the loop goes on with the next batch; offsets resolved meanwhile wait for the
   * next round, so at most one commit is in flight and its round trip is not added to every
   * batch. `stop` and `disconnect` commit what is left and wait for it.
   */
  async _maybeCommit (force) {
    const run = this._run
    if (!run || !run.autoCommit || this._resolved.size === 0 || this._commitInFlight) return
    if (!force) {
      const byInterval = run.autoCommitInterval !== null && Date.now() - this._lastCommit >= run.autoCommitInterval
      const byThreshold = run.autoCommitThreshold !== null && this._uncommitted >= run.autoCommitThreshold
      const eachRound = run.autoCommitInterval === null && run.autoCommitThreshold === null
      if (!(eachRound || byInterval || byThreshold)) return
    }
    this._startCommit()
  }

  _startCommit () {
    // Offsets of partitions revoked meanwhile belong to their new owner now.
    const assigned = new Set(this._native.assignment().map(tp => key(tp.topic, tp.partition)))
    const offsets = []
    for (const [k, o] of this._resolved) if (assigned.has(k)) offsets.push(o)
    this._resolved.clear()
    this._uncommitted = 0
    this._lastCommit = Date.now()
    if (offsets.length === 0) return
    const n = this._native
    this._commitInFlight = (async () => {
      try {
        await n.commit(offsets)
        this._emitCommit(offsets)
      } catch (e) {
        const error = fromNative(e)
        this.logger().warn('Failed to commit offsets', { groupId: this._groupId, error: error.message, type: error.type })
        // Not lost: the next round commits them again (as KafkaJS does), unless a later
        // offset of the same partition was resolved meanwhile.
        for (const o of offsets) {
          const k = key(o.topic, o.partition)
          if (!this._resolved.has(k)) this._resolved.set(k, o)
        }
      } finally {
        this._commitInFlight = null
      }
    })()
  }

  /** Waits for the commit in flight, then (with autoCommit) commits what is still pending. */
  async _flushCommits () {
    if (this._commitInFlight) await this._commitInFlight
    if (this._run && this._run.autoCommit && this._resolved.size > 0) {
      this._startCommit()
      if (this._commitInFlight) await this._commitInFlight
    }
  }

  _emitCommit (offsets) {
    if (!this._instrumentation.has(EVENTS.COMMIT_OFFSETS)) return
    const topics = new Map()
    for (const { topic, partition, offset } of offsets) {
      if (!topics.has(topic)) topics.set(topic, [])
      topics.get(topic).push({ partition: String(partition), offset })
    }
    this._instrumentation.emit(EVENTS.COMMIT_OFFSETS, {
      groupId: this._groupId,
      memberId: '',
      groupGenerationId: -1,
      topics: [...topics].map(([topic, partitions]) => ({ topic, partitions }))
    })
  }

  /** Commits the given offsets (the next offset to consume, as KafkaJS expects). */
  async commitOffsets (offsets = []) {
    if (!this._native) throw new KafkaJSNonRetriableError('Consumer group was not initialized, consumer#run must be called first')
    const list = offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset: String(offset) }))
    for (const o of list) this._resolved.delete(key(o.topic, o.partition))
    if (this._commitInFlight) await this._commitInFlight
    try {
      await this._native.commit(list)
    } catch (e) {
      throw fromNative(e)
    }
    this._emitCommit(list)
  }

  seek ({ topic, partition, offset } = {}) {
    if (!topic) throw new KafkaJSNonRetriableError(`Invalid topic ${topic}`)
    if (Number.isNaN(Number(partition))) throw new KafkaJSNonRetriableError(`Invalid partition, expected a number received ${partition}`)
    let o
    try {
      o = BigInt(offset)
    } catch (e) {
      throw new KafkaJSNonRetriableError(`Invalid offset, expected a long received ${offset}`)
    }
    if (o < -2n) throw new KafkaJSNonRetriableError(`Invalid offset, expected a long received ${offset}`)
    if (!this._native) throw new KafkaJSNonRetriableError('Consumer group was not initialized, consumer#run must be called first')
    const k = key(topic, partition)
    this._pendingSeeks.set(k, { topic, partition: Number(partition), offset: String(o) })
    this._abandon.add(k)
    this._applySeeks()
  }

  pause (topicPartitions = []) {
    for (const { topic, partitions } of topicPartitions) {
      if (!topic || typeof topic !== 'string') throw new KafkaJSNonRetriableError(`Invalid topic ${topic}`)
      if (partitions === undefined) {
        this._paused.set(topic, null)
      } else {
        const cur = this._paused.get(topic)
        if (cur === null) continue
        const set = cur || new Set()
        for (const p of partitions) set.add(p)
        this._paused.set(topic, set)
      }
    }
    this._applyPauses()
  }

  resume (topicPartitions = []) {
    const toResume = []
    for (const { topic, partitions } of topicPartitions) {
      const cur = this._paused.get(topic)
      if (partitions === undefined || cur === null) {
        this._paused.delete(topic)
      } else if (cur) {
        for (const p of partitions) cur.delete(p)
        if (cur.size === 0) this._paused.delete(topic)
      }
      if (this._native) {
        for (const tp of this._native.assignment()) {
          if (tp.topic === topic && !this._isPaused(tp.topic, tp.partition)) toResume.push(tp)
        }
      }
    }
    if (this._native && toResume.length) this._native.resume(toResume)
  }

  paused () {
    const out = []
    for (const [topic, parts] of this._paused) {
      if (parts === null) {
        const assigned = this._native ? this._native.assignment().filter(tp => tp.topic === topic).map(tp => tp.partition) : []
        out.push({ topic, partitions: assigned })
      } else {
        out.push({ topic, partitions: [...parts] })
      }
    }
    return out
  }

  async describeGroup () {
    const admin = new native.NativeAdmin({ ...this._kafka._props, 'bootstrap.servers': this._servers }, this._kafka._tokenProvider)
    try {
      const [g] = await admin.describeGroups([this._groupId])
      return g
    } catch (e) {
      throw fromNative(e)
    } finally {
      admin.close()
    }
  }

  async stop () {
    this._cancelRestart()
    await this._stop()
  }

  async _stop () {
    if (!this._running) return
    this._running = false
    if (this._wake) this._wake()
    await this._loop
    await this._flushCommits()
    this._instrumentation.emit(EVENTS.STOP, null)
  }

  async disconnect () {
    this._cancelRestart()
    await this._disconnect()
    this._kafka._releaseCoreLog(this)
  }

  /** Stops, then closes the native consumer (leaving the group); a scheduled restart stays. */
  async _disconnect () {
    await this._stop()
    if (this._statsTimer) clearInterval(this._statsTimer)
    this._statsTimer = null
    const n = this._native
    this._native = null
    if (n) await n.close().catch(() => {})
    this._instrumentation.emit(EVENTS.DISCONNECT, null)
  }
}

module.exports = { Consumer, EVENTS }
