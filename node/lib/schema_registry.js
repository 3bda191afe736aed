'use strict'
// `odradek/schema-registry`: the API of @kafkajs/confluent-schema-registry (SchemaRegistry,
// register, encode, decode, getLatestSchemaId, ...) against any Confluent-compatible registry,
// with Avro encoded and decoded by the Rust core. Values are plain objects: records and maps
// are objects, unions are the branch's value, enums strings, bytes and fixed Buffers, logical
// types their underlying value (avsc's defaults); longs must be safe JavaScript integers.
// JSON Schema values are JSON documents (not validated here); Protobuf schemas can be
// registered and looked up, but encode/decode of Protobuf values is refused.
const native = require('./native')

const SchemaType = Object.freeze({ AVRO: 'AVRO', JSON: 'JSON', PROTOBUF: 'PROTOBUF', UNKNOWN: 'UNKNOWN' })
const COMPATIBILITY = Object.freeze({
  NONE: 'NONE',
  FULL: 'FULL',
  BACKWARD: 'BACKWARD',
  FORWARD: 'FORWARD',
  BACKWARD_TRANSITIVE: 'BACKWARD_TRANSITIVE',
  FORWARD_TRANSITIVE: 'FORWARD_TRANSITIVE',
  FULL_TRANSITIVE: 'FULL_TRANSITIVE'
})
const DEFAULT_OPTS = { compatibility: COMPATIBILITY.BACKWARD, separator: '.', updateConfig: true }
const MAGIC_BYTE = Buffer.alloc(1)
const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json'

class ConfluentSchemaRegistryError extends Error {
  constructor (error) {
    super(error && error.message ? error.message : String(error))
    this.name = this.constructor.name
  }
}
class ConfluentSchemaRegistryArgumentError extends ConfluentSchemaRegistryError {}
class ConfluentSchemaRegistryCompatibilityError extends ConfluentSchemaRegistryError {}
class ConfluentSchemaRegistryInvalidSchemaError extends ConfluentSchemaRegistryError {}
class ConfluentSchemaRegistryValidationError extends ConfluentSchemaRegistryError {}

/** An error answered by the registry: HTTP `status`, Confluent's `code` (e.g. 409, 42201). */
class ResponseError extends ConfluentSchemaRegistryError {
  constructor (clientName, status, code, message, url) {
    super({ message: `${clientName} - ${message}` })
    this.status = status
    this.code = code
    this.url = url
    this.unauthorized = status === 401
  }
}

function replacer (key, value) {
  const original = this[key]
  if (original instanceof Uint8Array) return { $bytes: Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('base64') }
  if (typeof value === 'bigint') {
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) throw new ConfluentSchemaRegistryArgumentError('long out of the safe integer range')
    return Number(value)
  }
  return value
}

function reviver (key, value) {
  if (value !== null && typeof value === 'object' && typeof value.$bytes === 'string') {
    const keys = Object.keys(value)
    if (keys.length === 1) return Buffer.from(value.$bytes, 'base64')
  }
  return value
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

class Api {
  constructor ({ host, auth, clientId, retry = {}, timeout = 10000 }) {
    if (!host) throw new ConfluentSchemaRegistryArgumentError('host is required')
    this.hosts = String(host).split(',').map((h) => h.trim().replace(/\/+$/, ''))
    this.clientId = clientId || 'Confluent_Schema_Registry'
    this.retry = { retries: 3, initialRetryTimeInMs: 100, maxRetryTimeInMs: 5000, factor: 0.2, multiplier: 2, ...retry }
    this.timeout = timeout
    this.headers = { Accept: `${CONTENT_TYPE}, application/json`, 'User-Agent': this.clientId }
    if (auth && auth.username !== undefined) {
      this.headers.Authorization = 'Basic ' + Buffer.from(`${auth.username}:${auth.password || ''}`).toString('base64')
    }
  }

  async request (method, path, body) {
    const { retries, initialRetryTimeInMs, maxRetryTimeInMs, factor, multiplier } = this.retry
    let wait = initialRetryTimeInMs
    for (let attempt = 0; ; attempt++) {
      const url = this.hosts[attempt % this.hosts.length] + path
      let res
      try {
        res = await fetch(url, {
          method,
          headers: body === undefined ? this.headers : { ...this.headers, 'Content-Type': CONTENT_TYPE },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.timeout)
        })
      } catch (e) {
        if (attempt >= retries) throw new ResponseError(this.clientId, 0, -1, `${method} ${url}: ${e.message}`, url)
        await sleep(wait * (1 - factor + Math.random() * 2 * factor))
        wait = Math.min(wait * multiplier, maxRetryTimeInMs)
        continue
      }
      const text = await res.text()
      let data
      try { data = text ? JSON.parse(text) : null } catch (_) { data = text }
      if (res.ok) return data
      const retriable = res.status >= 500 || res.status === 429 || res.status === 408
      if (!retriable || attempt >= retries) {
        const code = data && typeof data === 'object' && data.error_code !== undefined ? data.error_code : -1
        const message = data && typeof data === 'object' && data.message ? data.message : `HTTP ${res.status}`
        throw new ResponseError(this.clientId, res.status, code, `Error, status ${res.status}: ${message}`, url)
      }
      await sleep(wait * (1 - factor + Math.random() * 2 * factor))
      wait = Math.min(wait * multiplier, maxRetryTimeInMs)
    }
  }
}

const enc = encodeURIComponent

class SchemaRegistry {
  constructor ({ auth, clientId, host, retry, agent, timeout } = {}, options = {}) {
    this.api = new Api({ host, auth, clientId, retry, timeout })
    this.options = options
    this.latestIds = new Map()
    this.schemas = new Map() // id -> { type, handle, schema }
  }

  _confluentSchema (schema) {
    if (schema && typeof schema.schema === 'string') {
      return { type: schema.type || SchemaType.AVRO, schema: schema.schema, references: schema.references }
    }
    if (schema && typeof schema === 'object' && schema.type && schema.name) {
      return { type: SchemaType.AVRO, schema: JSON.stringify(schema) }
    }
    throw new ConfluentSchemaRegistryArgumentError('Invalid schema: expected { type, schema } or an Avro schema object')
  }

  async _named (references) {
    const out = []
    for (const ref of references || []) {
      const v = await this.api.request('GET', `/subjects/${enc(ref.subject)}/versions/${ref.version}`)
      out.push(...await this._named(v.references))
      out.push(v.schema)
    }
    return out
  }

  async _compile (type, text, references) {
    if (type === SchemaType.AVRO) return new native.NativeAvroSchema(text, await this._named(references))
    if (type === SchemaType.JSON) return { json: JSON.parse(text) }
    return null
  }

  _subjectOf (cs) {
    if (cs.type !== SchemaType.AVRO) throw new ConfluentSchemaRegistryArgumentError('a subject is required for JSON and PROTOBUF schemas')
    const s = JSON.parse(cs.schema)
    if (!s.name) throw new ConfluentSchemaRegistryArgumentError('Invalid name: the Avro schema has no name')
    return s.namespace ? `${s.namespace}${this._separator}${s.name}` : s.name
  }

  /** Registers a schema; resolves `{ id }`. */
  async register (schema, userOpts = {}) {
    const { compatibility, separator, updateConfig } = { ...DEFAULT_OPTS, ...userOpts }
    const cs = this._confluentSchema(schema)
    this._separator = separator
    const subject = userOpts.subject || this._subjectOf(cs)
    const handle = await this._compile(cs.type, cs.schema, cs.references)
    let firstTime = false
    try {
      const { compatibilityLevel } = await this.api.request('GET', `/config/${enc(subject)}`)
      if (compatibility && compatibilityLevel.toUpperCase() !== compatibility) {
        throw new ConfluentSchemaRegistryCompatibilityError(`Compatibility does not match the configuration (${compatibility} != ${compatibilityLevel.toUpperCase()})`)
      }
    } catch (e) {
      if (!(e instanceof ResponseError) || e.status !== 404) throw e
      firstTime = true
    }
    const res = await this.api.request('POST', `/subjects/${enc(subject)}/versions`, {
      schemaType: cs.type === SchemaType.AVRO ? undefined : cs.type,
      schema: cs.schema,
      references: cs.references
    })
    if (compatibility && firstTime && updateConfig) {
      await this.api.request('PUT', `/config/${enc(subject)}`, { compatibility })
    }
    this.latestIds.set(subject, res.id)
    this.schemas.set(res.id, { type: cs.type, handle, schema: cs.schema })
    return { id: res.id }
  }

  async _byId (registryId) {
    let s = this.schemas.get(registryId)
    if (!s) {
      const r = await this.api.request('GET', `/schemas/ids/${registryId}`)
      const type = r.schemaType || SchemaType.AVRO
      s = { type, handle: await this._compile(type, r.schema, r.references), schema: r.schema }
      this.schemas.set(registryId, s)
    }
    return s
  }

  /** The schema an id names: the parsed Avro or JSON schema, or the Protobuf text. */
  async getSchema (registryId) {
    const s = await this._byId(registryId)
    return s.type === SchemaType.PROTOBUF ? s.schema : JSON.parse(s.schema)
  }

  /** Confluent's framing of `payload` under schema `registryId`. */
  async encode (registryId, payload) {
    if (!registryId) throw new ConfluentSchemaRegistryArgumentError(`Invalid registryId: ${JSON.stringify(registryId)}`)
    const s = await this._byId(registryId)
    if (s.type === SchemaType.AVRO) {
      try {
        return s.handle.encode(registryId, JSON.stringify(payload, replacer))
      } catch (e) {
        throw new ConfluentSchemaRegistryValidationError(e)
      }
    }
    if (s.type === SchemaType.JSON) {
      const head = Buffer.alloc(5)
      head.writeInt32BE(registryId, 1)
      return Buffer.concat([head, Buffer.from(JSON.stringify(payload))])
    }
    throw new ConfluentSchemaRegistryError(`encoding ${s.type} values is not supported by odradek`)
  }

  /** The payload of a framed buffer. */
  async decode (buffer, options) {
    if (!Buffer.isBuffer(buffer) || buffer.length < 5 || buffer[0] !== MAGIC_BYTE[0]) {
      throw new ConfluentSchemaRegistryArgumentError('Message encoded with magic byte ' + (buffer && buffer.length ? buffer[0] : 'none') + ', expected 0')
    }
    const registryId = buffer.readInt32BE(1)
    const s = await this._byId(registryId)
    if (s.type === SchemaType.AVRO) {
      try {
        return JSON.parse(s.handle.decode(buffer), reviver)
      } catch (e) {
        throw new ConfluentSchemaRegistryError(e)
      }
    }
    if (s.type === SchemaType.JSON) return JSON.parse(buffer.subarray(5).toString('utf8'))
    throw new ConfluentSchemaRegistryError(`decoding ${s.type} values is not supported by odradek`)
  }

  async getRegistryId (subject, version) {
    return (await this.api.request('GET', `/subjects/${enc(subject)}/versions/${version}`)).id
  }

  async getRegistryIdBySchema (subject, schema) {
    const cs = this._confluentSchema(schema)
    const r = await this.api.request('POST', `/subjects/${enc(subject)}`, {
      schemaType: cs.type === SchemaType.AVRO ? undefined : cs.type,
      schema: cs.schema,
      references: cs.references
    })
    return r.id
  }

  async getLatestSchemaId (subject) {
    const id = (await this.api.request('GET', `/subjects/${enc(subject)}/versions/latest`)).id
    this.latestIds.set(subject, id)
    return id
  }
}

/** Reads an .avsc file into a schema object. */
function readAVSC (path) {
  return JSON.parse(require('fs').readFileSync(path, 'utf8'))
}

module.exports = {
  SchemaRegistry,
  SchemaType,
  COMPATIBILITY,
  readAVSC,
  ResponseError,
  ConfluentSchemaRegistryError,
  ConfluentSchemaRegistryArgumentError,
  ConfluentSchemaRegistryCompatibilityError,
  ConfluentSchemaRegistryInvalidSchemaError,
  ConfluentSchemaRegistryValidationError
}
