#!/usr/bin/env node
'use strict'
// Compatibility-matrix driver for the KafkaJS-API clients: kafkajs itself and Odradek's Node
// package (which mirrors KafkaJS's API). One code path; `--lib` picks the module.
//
//   node node_driver.js --lib kafkajs|odradek ACTION --bootstrap HOST:PORT [...]
//
// kafkajs and its codec plugins come from NODE_PATH (tests/compat/.cache/node/node_modules);
// odradek from ODRADEK_NODE_PACKAGE (the repository's node/ folder). Driver protocol: see
// tests/compat/README.md ("Drivers"): the last stdout line is one JSON object.
const fs = require('fs')

const CODECS = 'none,gzip,snappy,lz4,zstd'
let step = 'start'

function parseArgs (argv) {
  const out = { _: [] }
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith('--')) out[argv[i].slice(2)] = argv[++i]
    else out._.push(argv[i])
  }
  return out
}

const args = parseArgs(process.argv.slice(2))
const timeout = Number(args.timeout || 60)
const deadline = Date.now() + timeout * 1000
const left = () => deadline - Date.now()

function emit (obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

class Failure extends Error {}

// ---- the shared data set (README "Data set") ----
const recKey = i => (i % 5 === 4 ? null : Buffer.from(`k${i}`))
function recValue (i) {
  if (i % 11 === 10 && i % 5 !== 4) return null
  const n = i % 64
  const v = Buffer.alloc(n)
  for (let j = 0; j < n; j++) v[j] = (i * 31 + j) % 256
  return Buffer.concat([v, Buffer.from(`#${i}`)])
}
const recHeaders = i => (i % 3 === 2 ? [] : [['h', Buffer.from(`x${i}`)], ['h', Buffer.from('dup')], ['empty', Buffer.alloc(0)]])

// KafkaJS headers are an object; repeated keys are arrays (in order).
function headersObject (pairs) {
  const o = {}
  for (const [k, v] of pairs) {
    if (k in o) o[k] = [].concat(o[k], v)
    else o[k] = v
  }
  return o
}
function headerPairs (o) {
  const out = []
  for (const [k, v] of Object.entries(o || {})) {
    for (const x of [].concat(v)) out.push([k, x === undefined || x === null ? null : Buffer.from(x)])
  }
  return out
}
const hex = b => (b === null || b === undefined ? 'null' : Buffer.from(b).toString('hex').slice(0, 40))
const sameBuf = (a, b) => (a === null || a === undefined ? b === null : b !== null && Buffer.compare(Buffer.from(a), b) === 0)

function compare (i, m) {
  const got = headerPairs(m.headers)
  const want = recHeaders(i)
  const same = sameBuf(m.key, recKey(i)) && sameBuf(m.value, recValue(i)) && got.length === want.length &&
    got.every(([k, v], j) => k === want[j][0] && sameBuf(v, want[j][1]))
  if (same) return null
  const show = h => JSON.stringify(h.map(([k, v]) => [k, hex(v)]))
  return `record ${i}: got key=${hex(m.key)} value=${hex(m.value)} headers=${show(got)}, want key=${hex(recKey(i))} value=${hex(recValue(i))} headers=${show(want)}`
}

// ---- the library ----
let lib, libName, version
if (args.lib === 'odradek') {
  lib = require(process.env.ODRADEK_NODE_PACKAGE || '../../../node')
  libName = 'odradek-node'
  version = `odradek (Node) ${require((process.env.ODRADEK_NODE_PACKAGE || '../../../node') + '/package.json').version}`
} else {
  process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
  lib = require('kafkajs')
  libName = 'kafkajs'
  version = `kafkajs ${require('kafkajs/package.json').version}`
  // kafkajs ships gzip only; snappy and lz4 are plugins. No zstd plugin installs on Node 20
  // (@kafkajs/zstd needs cppzst, which does not compile there): zstd stays unavailable.
  lib.CompressionCodecs[lib.CompressionTypes.Snappy] = require('kafkajs-snappy')
  const LZ4 = require('kafkajs-lz4')
  lib.CompressionCodecs[lib.CompressionTypes.LZ4] = new LZ4().codec
}
const { Kafka, CompressionTypes, logLevel, Partitioners } = lib
const CODEC = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD }

// Logs to stderr (stdout carries only the protocol). The quota actions ask the client for its
// debug log, to count "Client side throttling in effect" (KafkaJS logs client-side throttling
// only there), but print no more than the other actions do.
let lastClientError = null
let throttleLogs = 0
const printLevel = process.env.COMPAT_DEBUG ? logLevel.DEBUG : logLevel.ERROR
const logCreator = () => ({ namespace, level, label, log }) => {
  if (/Client side throttling in effect/.test(log.message)) throttleLogs++
  if (level <= logLevel.ERROR) lastClientError = `${namespace}: ${log.message} ${log.error || ''}`.trim()
  if (level <= printLevel) process.stderr.write(`[${label}] ${namespace}: ${log.message} ${log.error || ''}\n`)
}

// --security FILE: key=value lines with librdkafka's property names (README "Drivers"), as the
// KafkaJS options both libraries take: `ssl: { ca, cert, key, passphrase }` and
// `sasl: { mechanism, username, password }`. The values (a password among them) are never printed.
function securityOptions (file) {
  if (!file) return {}
  const p = {}
  for (const line of fs.readFileSync(file, 'utf8').split(/\r?\n/)) {
    if (!line.trim() || line.trim().startsWith('#')) continue
    const eq = line.indexOf('=')
    if (eq < 0) throw new Failure(`--security ${file}: a line without '='`)
    p[line.slice(0, eq).trim()] = line.slice(eq + 1)
  }
  const known = ['security.protocol', 'ssl.ca.location', 'ssl.certificate.location', 'ssl.key.location', 'ssl.key.password',
    'ssl.endpoint.identification.algorithm', 'sasl.mechanism', 'sasl.username', 'sasl.password']
  for (const k of Object.keys(p)) if (!known.includes(k)) throw new Failure(`--security: no ${libName} equivalent for ${k}`)
  const protocol = (p['security.protocol'] || 'PLAINTEXT').toUpperCase()
  const out = { connectionTimeout: 10000 }
  if (protocol === 'SSL' || protocol === 'SASL_SSL') {
    const ssl = {}
    if (p['ssl.ca.location']) ssl.ca = [fs.readFileSync(p['ssl.ca.location'], 'utf8')]
    if (p['ssl.certificate.location']) ssl.cert = fs.readFileSync(p['ssl.certificate.location'], 'utf8')
    if (p['ssl.key.location']) ssl.key = fs.readFileSync(p['ssl.key.location'], 'utf8')
    if (p['ssl.key.password']) ssl.passphrase = p['ssl.key.password']
    // Host name checked by default in both (Node's tls.checkServerIdentity; odradek's `https`).
    if ((p['ssl.endpoint.identification.algorithm'] || 'https').toLowerCase() !== 'https') {
      if (args.lib === 'odradek') out['ssl.endpoint.identification.algorithm'] = 'none'
      else ssl.checkServerIdentity = () => undefined
    }
    out.ssl = ssl
  } else if (protocol !== 'SASL_PLAINTEXT' && protocol !== 'PLAINTEXT') {
    throw new Failure(`--security: security.protocol ${protocol} unknown`)
  }
  if (protocol.startsWith('SASL_')) {
    out.sasl = { mechanism: String(p['sasl.mechanism'] || '').toLowerCase(), username: p['sasl.username'], password: p['sasl.password'] }
  }
  return out
}

let kafka = null
function makeKafka () {
  const quota = String(args._[0] || '').startsWith('quota_')
  return new Kafka({
    clientId: quota ? args['client-id'] : `compat-${libName}`,
    brokers: String(args.bootstrap || '').split(','),
    logLevel: quota ? logLevel.DEBUG : printLevel,
    logCreator,
    retry: { retries: 8 },
    ...securityOptions(args.security)
  })
}

// ---- the quotas scenario (README "Scenarios": quotas) ----
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// How the client's throttling is seen: KafkaJS's debug log line; odradek-node also emits
// `*.network.request_throttle` instrumentation events (its extension), counted when it has them.
function watchThrottle (client) {
  const ev = client.events && client.events.REQUEST_THROTTLE
  const seen = { events: 0 }
  if (ev) client.on(ev, e => { if (e.payload && e.payload.throttleTime > 0) seen.events++ })
  return () => {
    const report = `debug log "Client side throttling in effect": ${throttleLogs}` +
      (ev ? `; ${ev} events: ${seen.events}` : '; no request_throttle event')
    return { throttled: throttleLogs > 0 || seen.events > 0, throttle_report: report }
  }
}

// kafkajs's own round-robin assigner is named "RoundRobinAssigner", a name no other client
// offers; this wraps it under the standard protocol name "roundrobin" (Java's RoundRobinAssignor,
// librdkafka's "roundrobin") so a mixed group agrees on a protocol. The leader's assignor decides.
function javaNamedRoundRobin (config) {
  const rr = lib.PartitionAssigners.roundRobin(config)
  return {
    name: 'roundrobin',
    version: rr.version,
    assign: (x) => rr.assign(x),
    protocol: (x) => ({ ...rr.protocol(x), name: 'roundrobin' })
  }
}

// ---- helpers ----
async function withProducer (opts, fn) {
  const p = kafka.producer({ allowAutoTopicCreation: true, ...opts })
  await p.connect()
  try {
    return await fn(p)
  } finally {
    await p.disconnect().catch(() => {})
  }
}

async function readPartition (topic, count, readUncommitted) {
  step = `reading ${topic}-0 (${readUncommitted ? 'read_uncommitted' : 'read_committed'})`
  const c = kafka.consumer({ groupId: `compat-reader-${process.pid}-${Date.now()}`, readUncommitted, sessionTimeout: 10000, heartbeatInterval: 500 })
  await c.connect()
  const out = []
  try {
    await c.subscribe({ topics: [topic], fromBeginning: true })
    let done
    const finished = new Promise(resolve => { done = resolve })
    // The records are already written: once the reader has joined, STALL_MS without a record
    // means it is stuck (reported with the client's last error) rather than slow.
    const STALL_MS = 10000
    let lastProgress = null
    c.on(c.events.GROUP_JOIN, () => { lastProgress = Date.now() })
    await c.run({
      eachMessage: async ({ partition, message }) => {
        lastProgress = Date.now()
        if (partition === 0 && out.length < count) out.push(message)
        if (out.length >= count) done()
      }
    })
    let stalled = false
    while (out.length < count && left() > 0) {
      await Promise.race([finished, new Promise(resolve => setTimeout(resolve, 200))])
      if (lastProgress !== null && Date.now() - lastProgress > STALL_MS) { stalled = true; break }
    }
    if (out.length < count) {
      const why = stalled ? `no record for ${STALL_MS / 1000} s after joining` : 'before the deadline'
      throw new Failure(`read ${topic}-0: ${out.length} of ${count} records, ${why}` +
        (lastClientError ? ` (last client error: ${lastClientError})` : ''))
    }
  } finally {
    await c.disconnect().catch(() => {})
  }
  return out
}

async function perCodec (fn) {
  const detail = {}
  const errors = []
  for (const codec of (args.codecs || CODECS).split(',')) {
    try {
      await fn(codec)
      detail[codec] = 'ok'
    } catch (e) {
      detail[codec] = String(e && e.message ? `${e.name}: ${e.message}` : e)
      // With --security, the client's last logged error names a refused handshake or login.
      if (args.security && lastClientError && !detail[codec].includes('last client error')) detail[codec] += ` (last client error: ${lastClientError})`
      errors.push(`${codec}: ${detail[codec]}`)
    }
  }
  return { ok: errors.length === 0, error: errors.length ? errors.join('; ') : null, detail }
}

const OK = { ok: true, error: null, detail: {} }

// ---- actions ----
const actions = {
  async write () {
    const n = Number(args.count || 100)
    return perCodec(async codec => {
      step = `write ${codec}`
      if (CODEC[codec] === undefined) throw new Failure(`no ${codec} codec`)
      await withProducer({}, async p => {
        const messages = []
        for (let i = 0; i < n; i++) messages.push({ key: recKey(i), value: recValue(i), headers: headersObject(recHeaders(i)), partition: 0 })
        await p.send({ topic: `${args.topic}-${codec}`, compression: CODEC[codec], acks: -1, messages })
      })
    })
  },
  async verify () {
    const n = Number(args.count || 100)
    return perCodec(async codec => {
      const got = await readPartition(`${args.topic}-${codec}`, n, true)
      got.forEach((m, i) => {
        const why = compare(i, m)
        if (why) throw new Failure(why)
      })
    })
  },
  async keyed () {
    const createPartitioner = args.partitioner === 'murmur2' ? Partitioners.JavaCompatiblePartitioner : Partitioners.DefaultPartitioner
    const parts = []
    await withProducer({ createPartitioner }, async p => {
      for (let i = 0; i < Number(args.count || 64); i++) {
        step = `keyed send ${i}`
        const md = await p.send({ topic: args.topic, acks: -1, messages: [{ key: Buffer.from(`k${i}`), value: Buffer.from('v') }] })
        parts.push(md[0].partition)
      }
    })
    return { ok: true, error: null, detail: { partitions: parts } }
  },
  async fill () {
    const parts = Number(args.partitions || 4)
    await withProducer({}, async p => {
      const messages = []
      for (let i = 0; i < Number(args.count || 100); i++) messages.push({ key: Buffer.from(`k${i}`), value: Buffer.from(`g${i}`), partition: i % parts })
      step = 'fill'
      await p.send({ topic: args.topic, acks: -1, messages })
    })
    return OK
  },
  async member () {
    const kip848 = (args.protocol || 'classic') === 'consumer'
    if (kip848 && libName === 'kafkajs') throw new Failure('KafkaJS has no consumer group protocol (KIP-848)')
    const c = kafka.consumer(kip848
      // odradek-node passes dotted keys to the core: KIP-848, the broker assigns.
      ? { groupId: args.group, 'group.protocol': 'consumer' }
      : {
          groupId: args.group,
          sessionTimeout: 10000,
          heartbeatInterval: 500,
          // kafkajs runs its own assigner under the standard name; odradek-node refuses custom
          // assigner functions and takes Kafka's assignor as a property passed to the core.
          ...(libName === 'kafkajs'
            ? { partitionAssigners: [javaNamedRoundRobin] }
            : { 'partition.assignment.strategy': 'roundrobin' })
        })
    c.on(c.events.GROUP_JOIN, e => {
      const a = e.payload.memberAssignment || {}
      emit({ event: 'assignment', partitions: (a[args.topic] || []).slice().sort((x, y) => x - y) })
    })
    await c.connect()
    try {
      await c.subscribe({ topics: [args.topic], fromBeginning: true })
      await c.run({
        eachMessage: async ({ partition, message }) => {
          emit({ event: 'record', partition, offset: Number(message.offset) })
        }
      })
      step = 'member: waiting for the stop signal'
      while (!fs.existsSync(args.stop)) {
        if (left() <= 0) throw new Failure('member: no stop signal before the deadline')
        await new Promise(resolve => setTimeout(resolve, 100))
      }
    } finally {
      await c.disconnect().catch(() => {})
    }
    return OK
  },
  async idempotence () {
    const n = Number(args.count || 1000)
    await withProducer({ idempotent: true, maxInFlightRequests: 1 }, async p => {
      let expect = null
      for (let start = 0; start < n; start += 100) {
        step = `idempotent send ${start}`
        const messages = []
        for (let i = start; i < Math.min(n, start + 100); i++) messages.push({ value: Buffer.from(`i${i}`), partition: 0 })
        const md = await p.send({ topic: args.topic, acks: -1, messages })
        const base = Number(md[0].baseOffset)
        if (expect !== null && base !== expect) throw new Failure(`delivery offsets not contiguous: batch at ${start} got base ${base}, want ${expect}`)
        expect = base + messages.length
      }
    })
    const got = await readPartition(args.topic, n, true)
    got.forEach((m, i) => {
      if (String(m.value) !== `i${i}`) throw new Failure(`read back: record ${i} is ${m.value}, want i${i}`)
    })
    return OK
  },
  async transactions () {
    const n = 10
    const p = kafka.producer({ transactionalId: `compat-${args.topic}`, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: true })
    try {
      step = 'connect'
      await p.connect()
      for (const [tag, commit] of [['c1', true], ['ab', false], ['c2', true]]) {
        step = `begin_transaction (${tag})${tag === 'c1' ? ' / init_transactions' : ''}`
        const t = await p.transaction()
        const messages = []
        for (let i = 0; i < n; i++) messages.push({ value: Buffer.from(`${tag}-${i}`), partition: 0 })
        step = `send (${tag})`
        await t.send({ topic: args.topic, acks: -1, messages })
        step = `${commit ? 'commit' : 'abort'}_transaction (${tag})`
        if (commit) await t.commit()
        else await t.abort()
      }
    } catch (e) {
      throw new Failure(`${step}: ${e.name}: ${e.message}`)
    } finally {
      await p.disconnect().catch(() => {})
    }
    const want = [...Array(n).keys()].map(i => `c1-${i}`).concat([...Array(n).keys()].map(i => `c2-${i}`))
    const got = (await readPartition(args.topic, 2 * n, false)).map(m => String(m.value))
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Failure(`read_committed read ${JSON.stringify(got)}, want c1-0..9 then c2-0..9`)
    const wantRaw = want.slice(0, n).concat([...Array(n).keys()].map(i => `ab-${i}`), want.slice(n))
    const raw = (await readPartition(args.topic, 3 * n, true)).map(m => String(m.value))
    if (JSON.stringify(raw) !== JSON.stringify(wantRaw)) throw new Failure(`read_uncommitted read ${JSON.stringify(raw)}, want c1, ab (aborted), c2`)
    return OK
  },
  async admin () {
    const a = kafka.admin()
    await a.connect()
    try {
      step = 'createTopics'
      const created = await a.createTopics({ topics: [{ topic: args.topic, numPartitions: 3, replicationFactor: Number(args.replication || 1) }], waitForLeaders: true })
      if (created !== true) throw new Failure(`createTopics returned ${created}, want true`)
      step = 'listTopics'
      while (!(await a.listTopics()).includes(args.topic)) {
        if (left() <= 0) throw new Failure('created topic not listed before the deadline')
        await new Promise(resolve => setTimeout(resolve, 100))
      }
      step = 'fetchTopicMetadata'
      const md = await a.fetchTopicMetadata({ topics: [args.topic] })
      const n = md.topics[0].partitions.length
      if (n !== 3) throw new Failure(`fetchTopicMetadata: ${n} partitions, want 3`)
      // KafkaJS reports TOPIC_ALREADY_EXISTS as `false` from createTopics, not as an error.
      step = 'createTopics again'
      const again = await a.createTopics({ topics: [{ topic: args.topic, numPartitions: 3, replicationFactor: Number(args.replication || 1) }] })
      if (again !== false) throw new Failure(`second createTopics returned ${again}, want false (TOPIC_ALREADY_EXISTS)`)
      step = 'deleteTopics'
      await a.deleteTopics({ topics: [args.topic] })
      while ((await a.listTopics()).includes(args.topic)) {
        if (left() <= 0) throw new Failure('deleted topic still listed at the deadline')
        await new Promise(resolve => setTimeout(resolve, 100))
      }
    } finally {
      await a.disconnect().catch(() => {})
    }
    return OK
  },
  // --size-byte values to partition 0 as fast as the client is let (up to 4 sends of 3 records
  // in flight: KafkaJS has no batch.size, one send is one request), for --seconds; the payload
  // acknowledged in [--warmup, --seconds).
  async quota_produce () {
    const size = Number(args.size || 8192)
    const run = Number(args.seconds || 23) * 1000
    const warm = Number(args.warmup || 3) * 1000
    const p = kafka.producer({ allowAutoTopicCreation: false })
    const throttle = watchThrottle(p)
    step = 'connect'
    await p.connect()
    const value = Buffer.alloc(size, 'q')
    const messages = [0, 1, 2].map(() => ({ value, partition: 0 }))
    let bytes = 0
    let records = 0
    let failed = null
    const inflight = new Set()
    step = 'producing'
    const t0 = Date.now()
    while (Date.now() - t0 < run && !failed) {
      const sent = p.send({ topic: args.topic, acks: -1, messages }).then(() => {
        const at = Date.now() - t0
        if (at >= warm && at < run) { bytes += size * messages.length; records += messages.length }
      }, e => { failed = failed || e })
      inflight.add(sent)
      sent.finally(() => inflight.delete(sent))
      while (inflight.size >= 4 && Date.now() - t0 < run) await Promise.race([...inflight, sleep(100)])
    }
    if (failed) throw new Failure(`a delivery failed: ${failed.name}: ${failed.message}`)
    return { ok: true, error: null, detail: { bytes, records, window: (run - warm) / 1000, ...throttle() } }
  },
  // Partition 0 of --topic from the beginning (a group of its own: KafkaJS has no assign) with
  // both fetch limits at --fetch-bytes; from the first record on, the value bytes received in
  // [--warmup, --seconds).
  async quota_consume () {
    const run = Number(args.seconds || 23) * 1000
    const warm = Number(args.warmup || 3) * 1000
    const count = Number(args.count)
    const fetchBytes = Number(args['fetch-bytes'])
    const c = kafka.consumer({ groupId: `${args['client-id']}-g`, maxBytesPerPartition: fetchBytes, maxBytes: fetchBytes, minBytes: 1 })
    const throttle = watchThrottle(c)
    step = 'connect'
    await c.connect()
    await c.subscribe({ topics: [args.topic], fromBeginning: true })
    let t0 = null
    let total = 0
    let bytes = 0
    let records = 0
    let exhausted = false
    step = 'consuming'
    await c.run({
      eachMessage: async ({ message }) => {
        const now = Date.now()
        if (t0 === null) t0 = now
        total++
        if (now - t0 >= warm && now - t0 < run) { bytes += message.value ? message.value.length : 0; records++ }
      }
    })
    while (t0 === null || Date.now() - t0 < run) {
      if (left() <= 0) throw new Failure(`${total} records read before the deadline` + (lastClientError ? ` (last client error: ${lastClientError})` : ''))
      if (total >= count && t0 !== null && Date.now() - t0 < run) { exhausted = true; break }
      await sleep(50)
    }
    return { ok: true, error: null, detail: { bytes, records, window: (run - warm) / 1000, exhausted, ...throttle() } }
  },
  async info () {
    return { ok: true, error: null, detail: { version } }
  }
}

async function main () {
  const watchdog = setTimeout(() => {
    const why = args.security && lastClientError ? ` (last client error: ${lastClientError})` : ''
    emit({ ok: false, error: `timeout (driver deadline ${timeout} s) during: ${step}${why}`, detail: {} })
    process.exit(3)
  }, timeout * 1000 + 5000)
  watchdog.unref()
  const action = actions[args._[0]]
  let out
  try {
    if (!action) throw new Failure(`unknown action ${args._[0]}`)
    kafka = makeKafka()
    out = await action()
  } catch (e) {
    if (!(e instanceof Failure)) process.stderr.write(`${e && e.stack}\n`)
    out = { ok: false, error: e instanceof Failure ? e.message : `${step}: ${e && e.name}: ${e && e.message}`, detail: {} }
  }
  emit(out)
  process.exit(0)
}

main()
