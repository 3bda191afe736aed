'use strict'
// KafkaJS's admin client: topics, metadata, offsets, consumer groups and ACLs; client quotas
// (KafkaJS has none) after the Java client's describeClientQuotas / alterClientQuotas.
const native = require('./native')
const { AclResourceTypes, ResourcePatternTypes, AclOperationTypes, AclPermissionTypes } = require('./constants')
const { resolveBrokers, adminProps, takeShellProperties } = require('./config')
const { Instrumentation, throttleListener, clientErrorListener, attachRequestEvents } = require('./events')
const {
  KafkaJSError, KafkaJSNonRetriableError, KafkaJSCreateTopicError, KafkaJSDeleteTopicError,
  KafkaJSDeleteGroupsError, KafkaJSDeleteTopicRecordsError, KafkaJSAggregateError, KafkaJSTimeout, KafkaJSClientQuotaError, fromNative, parse
} = require('./errors')

const EVENTS = {
  CONNECT: 'admin.connect',
  DISCONNECT: 'admin.disconnect',
  REQUEST: 'admin.network.request',
  REQUEST_TIMEOUT: 'admin.network.request_timeout',
  REQUEST_QUEUE_SIZE: 'admin.network.request_queue_size',
  // odradek's extension (KafkaJS has no throttle event): see lib/events.js.
  REQUEST_THROTTLE: 'admin.network.request_throttle',
  CLIENT_ERROR: 'admin.network.client_error'
}

const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))

/** KafkaJS's admin `timeout` option (ms), checked: the controller's operation timeout. */
function checkedTimeout (timeout) {
  if (!Number.isInteger(timeout) || timeout < 0 || timeout > 2147483647) {
    throw new KafkaJSNonRetriableError(`Invalid timeout ${timeout}: expected a non-negative integer (ms)`)
  }
  return timeout
}

class Admin {
  constructor (kafka, options) {
    this._kafka = kafka
    this._options = options
    adminProps(options) // refuses what it cannot honour now, as KafkaJS's constructor would
    this._native = null
    this._instrumentation = new Instrumentation(EVENTS)
    this.events = EVENTS
  }

  on (type, listener) {
    return this._instrumentation.on(type, listener)
  }

  logger () {
    return this._kafka.logger()
  }

  async connect () {
    const servers = await resolveBrokers(this._kafka._brokers)
    this._kafka._holdCoreLog(this)
    try {
      const props = takeShellProperties({ ...this._kafka._props, 'bootstrap.servers': servers, ...adminProps(this._options) })
      const n = new native.NativeAdmin(props, this._kafka._tokenProvider)
      n.onThrottle(throttleListener(this._instrumentation, EVENTS.REQUEST_THROTTLE, { clientId: props['client.id'], logger: this.logger() }))
      n.onClientError(clientErrorListener(this._instrumentation, EVENTS.CLIENT_ERROR, { clientId: props['client.id'], logger: this.logger() }))
      attachRequestEvents(this._instrumentation, EVENTS, n, props['client.id'])
      await n.connect()
      this._native = n
    } catch (e) {
      this._kafka._releaseCoreLog(this)
      throw fromNative(e)
    }
    this._instrumentation.emit(EVENTS.CONNECT, null)
  }

  async disconnect () {
    if (this._native) this._native.close()
    this._native = null
    this._kafka._releaseCoreLog(this)
    this._instrumentation.emit(EVENTS.DISCONNECT, null)
  }

  _n () {
    if (!this._native) throw new KafkaJSError('The admin client is not connected: call connect() first', { retriable: false })
    return this._native
  }

  async _call (f) {
    const n = this._n()
    try {
      return await f(n)
    } catch (e) {
      throw fromNative(e)
    }
  }

  /** Resolves true when every topic was created, false when some already existed. */
  async createTopics ({ topics, validateOnly = false, waitForLeaders = true, timeout = 5000 } = {}) {
    if (!Array.isArray(topics) || topics.length === 0) throw new KafkaJSNonRetriableError(`Invalid topics array ${topics}`)
    const names = new Set()
    for (const t of topics) {
      if (!t || typeof t.topic !== 'string' || !t.topic) throw new KafkaJSNonRetriableError(`Invalid topics array, the topic names have to be a valid string`)
      if (names.has(t.topic)) throw new KafkaJSNonRetriableError('Invalid topics array, it cannot have multiple entries for the same topic')
      names.add(t.topic)
    }
    const specs = topics.map(t => ({
      topic: t.topic,
      numPartitions: t.numPartitions,
      replicationFactor: t.replicationFactor,
      configEntries: (t.configEntries || []).map(({ name, value }) => ({ name, value: String(value) }))
    }))
    const operationTimeout = checkedTimeout(timeout)
    const results = await this._call(n => n.createTopics(specs, validateOnly, operationTimeout))
    let allCreated = true
    const failures = []
    for (const r of results) {
      if (!r.error) continue
      const parsed = parse(r.error)
      if (parsed && parsed.type === 'TOPIC_ALREADY_EXISTS') {
        allCreated = false
        continue
      }
      failures.push(new KafkaJSCreateTopicError(fromNative(r.error), r.name))
    }
    if (failures.length === 1) throw failures[0]
    if (failures.length > 1) throw new KafkaJSAggregateError('Topic creation errors', failures)
    if (waitForLeaders && !validateOnly) await this._waitForLeaders(topics.map(t => t.topic), timeout)
    return allCreated
  }

  async _waitForLeaders (topics, timeout) {
    const deadline = Date.now() + Math.max(timeout, 1000)
    for (;;) {
      const meta = await this._call(n => n.describeTopics(topics))
      const ready = meta.every(t => !t.error && t.partitions.length > 0 && t.partitions.every(p => p.leader >= 0))
      if (ready) return
      if (Date.now() > deadline) throw new KafkaJSTimeout(`Topics ${topics.join(', ')} have no leaders after ${timeout} ms`)
      await sleep(50)
    }
  }

  async deleteTopics ({ topics, timeout = 5000 } = {}) {
    if (!Array.isArray(topics)) throw new KafkaJSNonRetriableError(`Invalid topics array ${topics}`)
    const operationTimeout = checkedTimeout(timeout)
    const results = await this._call(n => n.deleteTopics(topics, operationTimeout))
    const failures = results.filter(r => r.error).map(r => new KafkaJSDeleteTopicError(fromNative(r.error), r.name))
    if (failures.length === 1) throw failures[0]
    if (failures.length > 1) throw new KafkaJSAggregateError('Topic deletion errors', failures)
  }

  async listTopics () {
    return this._call(n => n.listTopics())
  }

  async fetchTopicMetadata ({ topics } = {}) {
    const meta = await this._call(n => n.describeTopics(topics && topics.length ? topics : null))
    const failed = meta.find(t => t.error)
    if (failed) throw fromNative(failed.error)
    return {
      topics: meta.map(t => ({
        name: t.name,
        partitions: t.partitions.map(p => ({
          partitionErrorCode: p.partitionErrorCode,
          partitionId: p.partitionId,
          leader: p.leader,
          replicas: p.replicas,
          isr: p.isr,
          offlineReplicas: p.offlineReplicas
        }))
      }))
    }
  }

  async fetchTopicOffsets (topic) {
    const found = await this._call(n => n.topicOffsets(topic))
    return found.map(({ partition, low, high }) => ({ partition, offset: high, high, low }))
  }

  async fetchTopicOffsetsByTimestamp (topic, timestamp) {
    const found = await this._call(n => n.offsetsByTimestamp(topic, Number(timestamp === undefined ? Date.now() : timestamp)))
    return found.map(({ partition, offset }) => ({ partition, offset }))
  }

  async fetchOffsets ({ groupId, topics, resolveOffsets = false } = {}) {
    if (!groupId) throw new KafkaJSNonRetriableError(`Invalid groupId ${groupId}`)
    if (topics !== undefined && !Array.isArray(topics)) throw new KafkaJSNonRetriableError('Expected topics array to be set')
    const found = await this._call(n => n.fetchOffsets(groupId, topics === undefined || topics.length === 0 ? null : topics))
    const out = found.map(({ topic, partitions }) => ({
      topic,
      partitions: partitions.map(({ partition, offset, metadata }) => ({ partition, offset, metadata: metadata === undefined ? null : metadata }))
    }))
    if (resolveOffsets) {
      for (const t of out) {
        if (!t.partitions.some(p => p.offset === '-1')) continue
        const ends = await this.fetchTopicOffsets(t.topic)
        for (const p of t.partitions) {
          if (p.offset !== '-1') continue
          const end = ends.find(e => e.partition === p.partition)
          if (end) p.offset = end.high
        }
      }
    }
    return out
  }

  /** Raises partition counts (KafkaJS's `createPartitions`); resolves true. */
  async createPartitions ({ validateOnly = false, timeout, topicPartitions } = {}) {
    if (!Array.isArray(topicPartitions)) throw new KafkaJSNonRetriableError(`Invalid topic partitions array ${topicPartitions}`)
    if (topicPartitions.length === 0) throw new KafkaJSNonRetriableError('Empty topic partitions array')
    for (const tp of topicPartitions) {
      if (!tp || typeof tp.topic !== 'string' || !tp.topic) throw new KafkaJSNonRetriableError('Invalid topic partitions array, the topic names have to be a valid string')
      if (!Number.isInteger(tp.count)) throw new KafkaJSNonRetriableError(`Invalid partition count ${tp.count} for topic ${tp.topic}`)
      if (tp.assignments !== undefined) throw new KafkaJSNonRetriableError('createPartitions: explicit replica assignments are not supported by this client; leave `assignments` out to let the cluster place the new partitions')
    }
    const results = await this._call(n => n.createPartitions(topicPartitions.map(({ topic, count }) => ({ topic, count })), validateOnly))
    const failures = results.filter(r => r.error).map(r => fromNative(r.error))
    if (failures.length === 1) throw failures[0]
    if (failures.length > 1) throw new KafkaJSAggregateError('Partition creation errors', failures)
    return true
  }

  /** KafkaJS's `describeConfigs` (configSynonyms are not fetched: `includeSynonyms` is refused). */
  async describeConfigs ({ resources, includeSynonyms = false } = {}) {
    checkResources(resources)
    if (includeSynonyms) throw new KafkaJSNonRetriableError('describeConfigs: includeSynonyms is not supported by this client')
    const results = await this._call(n => n.describeConfigs(
      resources.map(r => ({ resourceType: r.type, resourceName: String(r.name) })),
      resources.map(r => (r.configNames || []).map(String))))
    const failed = results.find(r => r.error)
    if (failed) throw fromNative(failed.error)
    return {
      throttleTime: 0,
      resources: results.map(r => ({
        errorCode: 0,
        errorMessage: null,
        resourceType: r.resourceType,
        resourceName: r.resourceName,
        configEntries: r.configEntries.map(e => ({
          configName: e.configName,
          configValue: e.configValue === undefined ? null : e.configValue,
          readOnly: e.readOnly,
          isDefault: e.isDefault,
          configSource: e.configSource,
          isSensitive: e.isSensitive,
          configSynonyms: []
        }))
      }))
    }
  }

  /** KafkaJS's `alterConfigs` (Kafka's AlterConfigs: each resource's entries replace its set). */
  async alterConfigs ({ validateOnly = false, resources } = {}) {
    checkResources(resources)
    for (const r of resources) {
      if (!Array.isArray(r.configEntries)) throw new KafkaJSNonRetriableError(`Invalid configEntries for resource ${r.name}`)
    }
    const results = await this._call(n => n.alterConfigs(resources.map(r => ({
      resourceType: r.type,
      resourceName: String(r.name),
      configEntries: r.configEntries.map(({ name, value }) => ({ name, value: String(value) }))
    })), validateOnly))
    const failed = results.find(r => r.error)
    if (failed) throw fromNative(failed.error)
    return {
      throttleTime: 0,
      resources: results.map(r => ({ errorCode: 0, errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName }))
    }
  }

  /** Deletes empty groups; resolves `[{ groupId, errorCode }]`, rejects with a KafkaJSDeleteGroupsError listing every group when one failed. */
  async deleteGroups (groupIds) {
    if (!Array.isArray(groupIds)) throw new KafkaJSNonRetriableError(`Invalid groupIds array ${groupIds}`)
    if (groupIds.length === 0) return []
    const results = await this._call(n => n.deleteGroups(groupIds))
    const groups = results.map(r => {
      const error = r.error ? fromNative(r.error) : null
      return error ? { groupId: r.name, errorCode: error.code, error } : { groupId: r.name, errorCode: 0 }
    })
    if (groups.some(g => g.error)) {
      throw new KafkaJSDeleteGroupsError(groups.length === 1 ? groups[0].error : 'Error in DeleteGroups', groups)
    }
    return groups
  }

  /** Deletes the records before each offset (`-1`: the high watermark) of the partitions of a topic. */
  async deleteTopicRecords ({ topic, partitions } = {}) {
    if (!topic || typeof topic !== 'string') throw new KafkaJSNonRetriableError(`Invalid topic "${topic}"`)
    if (!Array.isArray(partitions) || partitions.length === 0) throw new KafkaJSNonRetriableError('Invalid partitions')
    const results = await this._call(n => n.deleteRecords(topic, partitions.map(p => ({ partition: p.partition, offset: String(p.offset) }))))
    const failed = results.filter(r => r.error).map(r => ({
      partition: r.partition,
      offset: String((partitions.find(p => p.partition === r.partition) || {}).offset),
      error: fromNative(r.error)
    }))
    if (failed.length) throw new KafkaJSDeleteTopicRecordsError({ partitions: failed })
  }

  /** Sets a group's committed offsets of a topic's partitions (the group must have no members). */
  async setOffsets ({ groupId, topic, partitions } = {}) {
    if (!groupId) throw new KafkaJSNonRetriableError(`Invalid groupId ${groupId}`)
    if (!topic) throw new KafkaJSNonRetriableError(`Invalid topic ${topic}`)
    if (!Array.isArray(partitions) || partitions.length === 0) throw new KafkaJSNonRetriableError('Invalid partitions')
    const results = await this._call(n => n.setGroupOffsets(groupId, topic, partitions.map(p => ({ partition: p.partition, offset: String(p.offset) }))))
    const failures = results.filter(r => r.error).map(r => fromNative(r.error))
    if (failures.length === 1) throw failures[0]
    if (failures.length > 1) throw new KafkaJSAggregateError('Offset commit errors', failures)
  }

  /** Moves a group's offsets of a topic to its log end, or its start with `earliest`. */
  async resetOffsets ({ groupId, topic, earliest = false } = {}) {
    if (!groupId) throw new KafkaJSNonRetriableError(`Invalid groupId ${groupId}`)
    if (!topic) throw new KafkaJSNonRetriableError(`Invalid topic ${topic}`)
    const ends = await this.fetchTopicOffsets(topic)
    await this.setOffsets({ groupId, topic, partitions: ends.map(e => ({ partition: e.partition, offset: earliest ? e.low : e.high })) })
  }

  /** The brokers, the controller's id and the cluster id. */
  async describeCluster () {
    const d = await this._call(n => n.describeCluster())
    return {
      brokers: d.brokers.map(({ nodeId, host, port }) => ({ nodeId, host, port })),
      controller: d.controller === undefined ? null : d.controller,
      clusterId: d.clusterId
    }
  }

  async listGroups () {
    const groups = await this._call(n => n.listGroups())
    return { groups: groups.map(({ groupId, protocolType }) => ({ groupId, protocolType })) }
  }

  async describeGroups (groupIds) {
    if (!Array.isArray(groupIds)) throw new KafkaJSNonRetriableError(`Invalid groupIds array ${groupIds}`)
    const groups = await this._call(n => n.describeGroups(groupIds))
    return { groups }
  }

  /** Creates ACLs; resolves true, or rejects with the first ACL's error (as KafkaJS). */
  async createAcls ({ acl } = {}) {
    checkAcls(acl, 'ACL', false)
    const errors = await this._call(n => n.createAcls(acl.map(wireAcl)))
    const failed = errors.find(e => e)
    if (failed) throw fromNative(failed)
    return true
  }

  /** The ACLs a filter selects, grouped by resource as KafkaJS returns them. */
  async describeAcls (filter = {}) {
    checkAcls([filter], 'ACL filter', true, true)
    const acls = await this._call(n => n.describeAcls(wireAcl(filter)))
    const resources = new Map()
    for (const a of acls) {
      const key = `${a.resourceType}\u0000${a.resourcePatternType}\u0000${a.resourceName}`
      if (!resources.has(key)) {
        resources.set(key, {
          resourceType: a.resourceType,
          resourceName: a.resourceName,
          resourcePatternType: a.resourcePatternType,
          acls: []
        })
      }
      resources.get(key).acls.push({ principal: a.principal, host: a.host, operation: a.operation, permissionType: a.permissionType })
    }
    return { throttleTime: 0, errorCode: 0, errorMessage: null, resources: [...resources.values()] }
  }

  /** Deletes the ACLs each filter selects; rejects with the first error (as KafkaJS). */
  async deleteAcls ({ filters } = {}) {
    checkAcls(filters, 'ACL Filter', true)
    const results = await this._call(n => n.deleteAcls(filters.map(wireAcl)))
    const filterResponses = []
    for (const r of results) {
      if (r.error) throw fromNative(r.error)
      const matchingAcls = []
      for (const m of r.matchingAcls) {
        if (m.error) throw fromNative(m.error)
        matchingAcls.push({ errorCode: 0, errorMessage: null, ...wireAcl(m.acl) })
      }
      filterResponses.push({ errorCode: 0, errorMessage: null, matchingAcls })
    }
    return { throttleTime: 0, filterResponses }
  }

  /**
   * The client quotas of the entities a filter selects (the Java client's
   * `describeClientQuotas`): every component must match (`matchType` `EXACT` with `match`, the
   * type's `DEFAULT` entity, or `ANY` entity of the type, also spelled `SPECIFIED`); with
   * `strict`, entities with components beyond those named are left out. No component: every
   * entity.
   */
  async describeClientQuotas ({ components = [], strict = false } = {}) {
    if (!Array.isArray(components)) throw new KafkaJSNonRetriableError(`Invalid quota filter components array ${components}`)
    const wire = components.map((c) => {
      if (!c || typeof c.entityType !== 'string' || !c.entityType) {
        throw new KafkaJSNonRetriableError(`Invalid quota filter component ${JSON.stringify(c)}, the entityType has to be a valid string`)
      }
      const matchType = MATCH_TYPES[typeof c.matchType === 'string' ? c.matchType.toUpperCase() : c.matchType]
      if (matchType === undefined) {
        throw new KafkaJSNonRetriableError(`Invalid quota filter match type ${c.matchType} for entity type ${c.entityType}: expected EXACT, DEFAULT or ANY`)
      }
      if (matchType === 0 && typeof c.match !== 'string') {
        throw new KafkaJSNonRetriableError(`Invalid quota filter component for entity type ${c.entityType}, an EXACT match has to be a valid string`)
      }
      return matchType === 0 ? { entityType: c.entityType, matchType, name: c.match } : { entityType: c.entityType, matchType }
    })
    const found = await this._call(n => n.describeClientQuotas(wire, Boolean(strict)))
    return {
      throttleTime: 0,
      errorCode: 0,
      errorMessage: null,
      entries: found.map(({ entity, values }) => ({
        entity: entity.map(({ entityType, entityName }) => ({ entityType, entityName: entityName === undefined ? null : entityName })),
        values: values.map(({ key, value }) => ({ key, value }))
      }))
    }
  }

  /**
   * Sets or removes client quotas (the Java client's `alterClientQuotas`): per entry, an entity
   * (`[{ entityType, entityName }]`, `entityName: null` for the type's default entity) and ops
   * (`{ key, value }` sets, `{ key, remove: true }` removes). Resolves with one entry per
   * alteration; an alteration the broker refuses rejects with a `KafkaJSClientQuotaError` naming
   * its entity (several: a `KafkaJSAggregateError` of them), the others being applied.
   */
  async alterClientQuotas (entries, { validateOnly = false } = {}) {
    if (!Array.isArray(entries)) throw new KafkaJSNonRetriableError(`Invalid client quota alterations array ${entries}`)
    const checked = entries.map(checkQuotaAlteration)
    if (checked.length === 0) return { throttleTime: 0, entries: [] }
    const errors = await this._call(n => n.alterClientQuotas(checked.map(c => c.wire), Boolean(validateOnly)))
    const failures = []
    errors.forEach((err, i) => {
      if (err) failures.push(new KafkaJSClientQuotaError(fromNative(err), checked[i].entity))
    })
    if (failures.length === 1) throw failures[0]
    if (failures.length > 1) throw new KafkaJSAggregateError('Client quota alteration errors', failures)
    return {
      throttleTime: 0,
      entries: checked.map(({ entity }) => ({ errorCode: 0, errorMessage: null, entity }))
    }
  }
}

/** describeClientQuotas' match types: Kafka's wire values (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED). */
const MATCH_TYPES = { EXACT: 0, DEFAULT: 1, ANY: 2, SPECIFIED: 2, 0: 0, 1: 1, 2: 2 }

/** An alterClientQuotas entry checked (`entity`) and in the addon's shape (`wire`); a value must be a number. */
function checkQuotaAlteration (entry) {
  if (!entry || !Array.isArray(entry.entity)) throw new KafkaJSNonRetriableError(`Invalid client quota alteration ${JSON.stringify(entry)}, the entity has to be an array`)
  const seen = new Set()
  const entity = entry.entity.map((c) => {
    if (!c || typeof c.entityType !== 'string' || !c.entityType) {
      throw new KafkaJSNonRetriableError(`Invalid quota entity ${JSON.stringify(entry.entity)}, the entityType has to be a valid string`)
    }
    if (c.entityName !== null && typeof c.entityName !== 'string') {
      throw new KafkaJSNonRetriableError(`Invalid quota entity ${JSON.stringify(entry.entity)}, the entityName of ${c.entityType} has to be a string, or null for the default entity`)
    }
    if (seen.has(c.entityType)) throw new KafkaJSNonRetriableError(`Invalid quota entity ${JSON.stringify(entry.entity)}, entity type ${c.entityType} appears more than once`)
    seen.add(c.entityType)
    return { entityType: c.entityType, entityName: c.entityName }
  })
  const wireEntity = entity.map(c => c.entityName === null ? { entityType: c.entityType } : c)
  if (!Array.isArray(entry.ops)) throw new KafkaJSNonRetriableError(`Invalid client quota alteration ops array ${entry.ops}`)
  const ops = entry.ops.map((op) => {
    if (!op || typeof op.key !== 'string' || !op.key) throw new KafkaJSNonRetriableError(`Invalid client quota op ${JSON.stringify(op)}, the key has to be a valid string`)
    // The addon takes an absent value (not null) as a removal, and an absent name as the default entity.
    if (op.remove) return { key: op.key }
    if (typeof op.value !== 'number' || !Number.isFinite(op.value)) {
      throw new KafkaJSNonRetriableError(`Invalid value ${typeof op.value === 'string' ? JSON.stringify(op.value) : String(op.value)} for client quota ${op.key}: expected a number (or remove: true)`)
    }
    return { key: op.key, value: op.value }
  })
  return { entity, wire: { entity: wireEntity, ops } }
}

const ACL_FIELDS = [
  ['operation', AclOperationTypes, 'operation type'],
  ['resourcePatternType', ResourcePatternTypes, 'resource pattern type'],
  ['permissionType', AclPermissionTypes, 'permission type'],
  ['resourceType', AclResourceTypes, 'resource type']
]

/** KafkaJS's checks of ACL entries (`filter`: names may be absent) and filters. */
function checkAcls (list, what, filter, single = false) {
  if (!single) {
    if (!list || !Array.isArray(list)) throw new KafkaJSNonRetriableError(`Invalid ${what} array ${list}`)
    if (list.length === 0) throw new KafkaJSNonRetriableError(`Empty ${what} array`)
  }
  const prefix = single ? 'Invalid' : `Invalid ${what} array, the`
  for (const [field, label] of [['principal', 'principals'], ['host', 'hosts'], ['resourceName', 'resourceNames']]) {
    const bad = list.some(a => !a || (typeof a[field] !== 'string' && !(filter && a[field] === undefined)))
    if (bad) {
      throw new KafkaJSNonRetriableError(single
        ? `Invalid ${field}, the ${field} have to be a valid string`
        : `${prefix} ${label} have to be a valid string`)
    }
  }
  for (const [field, values, label] of ACL_FIELDS) {
    const valid = Object.values(values)
    const bad = list.find(a => !valid.includes(a[field]))
    if (bad) throw new KafkaJSNonRetriableError(`Invalid ${label} ${bad[field]}${single ? '' : `: ${JSON.stringify(bad)}`}`)
  }
}

function wireAcl (a) {
  return {
    resourceType: a.resourceType,
    resourceName: a.resourceName,
    resourcePatternType: a.resourcePatternType,
    principal: a.principal,
    host: a.host,
    operation: a.operation,
    permissionType: a.permissionType
  }
}

/** Checks describeConfigs / alterConfigs resources as KafkaJS does. */
function checkResources (resources) {
  if (!Array.isArray(resources)) throw new KafkaJSNonRetriableError(`Invalid resources array ${resources}`)
  if (resources.length === 0) throw new KafkaJSNonRetriableError('Resources array cannot be empty')
  for (const r of resources) {
    if (!r || (r.type !== 2 && r.type !== 4)) throw new KafkaJSNonRetriableError(`Invalid resource type ${r && r.type}: TOPIC (2) and BROKER (4) are supported`)
    if (r.name === undefined || r.name === null || r.name === '') throw new KafkaJSNonRetriableError(`Invalid resource name ${r.name}`)
  }
}

module.exports = { Admin, EVENTS }
