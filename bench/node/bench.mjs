// Produce and consume throughput of odradek vs kafkajs vs @platformatic/kafka vs
// @confluentinc/kafka-javascript, in one run, against one broker, 100-byte values. Not a test:
// prints a table and the ratios to kafkajs.
//
//   bench/node/run.sh                        builds (release) and runs with the defaults
//   node bench/node/bench.mjs [options]      options: --messages N (200000) --rounds R (3)
//        --batch B (messages per send call, 1000) --inflight C (send calls in flight, 8)
//        --partitions P (3) --value-size S (100)
//        --clients odradek,kafkajs,platformatic,confluent
//        --json FILE (also write the raw rounds and medians there)
//
// Environment: ODRADEK_BENCH_BOOTSTRAP=host:port uses that broker instead of starting
// target/release/odradek-broker; ODRADEK_NODE_ADDON picks the addon (run.sh points it at the
// release build); ODRADEK_CONFLUENT_JS_DIR names the directory where
// @confluentinc/kafka-javascript is installed (run.sh builds it there with
// bench/node/install_confluent_js.sh: no prebuilt binary is reachable from here).
//
// Every client gets the same work: N records in send calls of B records with C calls in
// flight, acks=all, no compression, no idempotence; then one group consumer reads the N
// records back (eachBatch for the KafkaJS API, the message stream for platformatic, batch
// consume for confluent). Clients run interleaved, each round on fresh topics; the table shows
// the median round.
//
// Every run checks its work, and any failed check fails the whole run: a rejected send call or
// a send result with a non-zero errorCode (KafkaJS API, platformatic), a failed delivery report
// (confluent); after the clock stops, a separate kafkajs admin reads the topic's watermarks:
// they must hold exactly N records, offsets 0..end of every partition (checkProduced). Every
// consumer must see each offset of every partition exactly once, in order, N records in all,
// each VALUE long (per batch where the API hands out batches, per record for the streams).
//
// The peers run in their fastest documented configuration, written to the results JSON as
// peer_settings: kafkajs (KAFKAJS below) sends arrays of B records per send() (kafkajs batches
// per call, it has no linger) and consumes with eachBatch (no per-record handler call or
// offset resolution); its fetch sizes stay at their defaults (maxBytesPerPartition 1 MB,
// maxBytes 10 MB): the consume clock starts at the first delivery and its records are not
// counted (timeConsume), so a larger first fetch would only move decoding out of the measured
// interval. A client that hands out records one at a time (platformatic's stream) still has the
// rest of its first fetch counted inside the clock: at most 10 MB, under a tenth of the
// 1,000,000 records bench/run measures. odradek runs the same KafkaJS-API code with its
// defaults. @platformatic/kafka (PLATFORMATIC below) sends arrays of B records per
// send() and reads its message stream with its defaults, which its README's "Performance"
// section documents as tuned for throughput (highWaterMark 1024, maxBytes 10 MB per fetch and
// per partition).
//
// @confluentinc/kafka-javascript runs in its fastest documented configuration (CONFLUENT below,
// also written to the results JSON): its Standard (node-rdkafka) API, which its INTRODUCTION.md
// calls "more performant, particularly when handling high volumes of messages" than its KafkaJS
// API; produce() per record with delivery reports (dr_cb) polled on librdkafka's background
// thread (setPollInBackground, "more efficient for high-throughput producers"), a send call
// resolving once its records' delivery reports are in; librdkafka's throughput settings; and
// batch consume, consume(n, cb) in a loop. Every run checks its work: any failed delivery
// report fails the run, and the consumer must read offsets 0..end of every partition exactly
// once, N records in all, each VALUE long.
import { createRequire } from 'node:module'
import { parseArgs } from 'node:util'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '..', '..')
const nodePkg = path.join(root, 'node')
const require = createRequire(path.join(nodePkg, 'package.json'))

const { values: opts } = parseArgs({
  options: {
    messages: { type: 'string', default: '200000' },
    rounds: { type: 'string', default: '3' },
    batch: { type: 'string', default: '1000' },
    inflight: { type: 'string', default: '8' },
    partitions: { type: 'string', default: '3' },
    'value-size': { type: 'string', default: '100' },
    clients: { type: 'string', default: 'odradek,kafkajs,platformatic,confluent' },
    json: { type: 'string' }
  }
})
const MESSAGES = Number(opts.messages)
/** Records per run: a tenth of MESSAGES during the warm-up round, MESSAGES after it. */
let N = MESSAGES
const ROUNDS = Number(opts.rounds)
const BATCH = Number(opts.batch)
const INFLIGHT = Number(opts.inflight)
const PARTITIONS = Number(opts.partitions)
const VALUE = Buffer.alloc(Number(opts['value-size']), 'x')
const CLIENTS = opts.clients.split(',')

const { startBroker } = require('./test/helpers/broker.js')

let seq = 0
const topicName = (client) => `bench-${client}-${process.pid}-${seq++}`

/** Runs `total` records through `sendBatch(messages)` with INFLIGHT calls in flight. */
async function driveProduce (sendBatch) {
  const batches = Math.ceil(N / BATCH)
  let next = 0
  const worker = async () => {
    while (next < batches) {
      const i = next++
      const count = Math.min(BATCH, N - i * BATCH)
      const messages = new Array(count)
      for (let j = 0; j < count; j++) messages[j] = { value: VALUE }
      await sendBatch(messages)
    }
  }
  const started = process.hrtime.bigint()
  await Promise.all(Array.from({ length: INFLIGHT }, worker))
  return Number(process.hrtime.bigint() - started) / 1e9
}

/**
 * Waits until `tick(k)` has counted N records (k = 1 unless given, the records of one
 * delivery); returns the seconds N records take at the rate measured from the first delivery
 * to the N-th record: the first delivery's records arrived before the clock started and are not
 * counted (a client handing out a whole fetch as its first batch is not credited with it).
 */
function timeConsume (onStart) {
  return new Promise((resolve, reject) => {
    let seen = 0
    let first = null
    let uncounted = 0
    const timer = setTimeout(() => reject(new Error(`consumed only ${seen} of ${N} in 300 s`)), 300000)
    onStart((k = 1) => {
      if (seen === 0) {
        first = process.hrtime.bigint()
        uncounted = k
      }
      const before = seen
      seen += k
      if (before < N && seen >= N) {
        clearTimeout(timer)
        const secs = Number(process.hrtime.bigint() - first) / 1e9
        resolve(secs * N / Math.max(1, N - uncounted))
      }
    })
  })
}

/**
 * Per-partition offset tracking for the consumers: each batch (or record) must start at the
 * partition's next offset; `done` checks N records and N bytes' worth of values in all.
 */
function offsetCheck (name) {
  const next = []
  let seen = 0
  let bytes = 0
  let bad = null
  return {
    batch (partition, first, last, count, size) {
      const expected = next[partition] ?? 0
      if (first !== expected || last !== first + count - 1) {
        bad ??= `partition ${partition}: ${count} records at offsets ${first}..${last}, expected them from ${expected}`
      }
      next[partition] = last + 1
      seen += count
      bytes += size
    },
    done () {
      const total = next.reduce((a, b) => a + (b ?? 0), 0)
      if (bad) throw new Error(`${name}: unexpected records: ${bad}`)
      if (seen !== N || total !== N || bytes !== N * VALUE.length) {
        throw new Error(`${name}: consumed ${seen} records (${bytes} B), offsets cover ${total}, expected ${N} (${N * VALUE.length} B)`)
      }
    }
  }
}

/**
 * After the clock: the topic holds exactly N records, offsets 0..end of each partition, read
 * by a separate kafkajs admin (every client alike; for confluent, on top of its delivery
 * reports). Fewer means a lost record, more a duplicate.
 */
async function checkProduced (name, brokers, topic) {
  const { Kafka, logLevel } = require('kafkajs')
  const admin = new Kafka({ clientId: 'bench-check', brokers, logLevel: logLevel.NOTHING }).admin()
  await admin.connect()
  try {
    const offsets = await admin.fetchTopicOffsets(topic)
    const total = offsets.reduce((a, o) => a + Number(o.high) - Number(o.low), 0)
    if (offsets.length !== PARTITIONS || offsets.some(o => Number(o.low) !== 0) || total !== N) {
      throw new Error(`${name}: ${topic} holds ${total} records (${JSON.stringify(offsets)}), expected ${N} in ${PARTITIONS} partitions`)
    }
  } finally {
    await admin.disconnect()
  }
}

/**
 * kafkajs's configuration (its docs' Producer and Consuming Messages pages), written to the
 * results JSON as peer_settings.kafkajs. odradek's KafkaJS API runs the same code with its
 * defaults (no consumer options).
 */
const KAFKAJS = {
  producer: { idempotent: false },
  send: 'producer.send({ topic, acks: -1, messages }) with --batch records per call, --inflight calls in flight',
  consumer: {}, // defaults: maxBytesPerPartition 1 MB, maxBytes 10 MB, minBytes 1, maxWaitTimeInMs 5000
  run: 'consumer.run({ eachBatch }) (eachBatchAutoResolve and autoCommit as default)'
}

/** @platformatic/kafka's configuration, written to the results JSON as peer_settings.platformatic. */
const PLATFORMATIC = {
  producer: { acks: 'ProduceAcks.ALL', idempotent: false },
  send: 'producer.send({ messages }) with --batch records per call, --inflight calls in flight',
  consumer: { highWaterMark: 1024, maxBytes: 10485760, minBytes: 1, maxWaitTime: 5000 },
  consume: "consumer.consume({ topics, mode: EARLIEST, autocommit: true }), stream.on('data')"
}

function kafkajsApi (name, mod, brokers) {
  const { Kafka, logLevel } = mod
  const kafka = new Kafka({ clientId: `bench-${name}`, brokers, logLevel: logLevel.NOTHING })
  return {
    async createTopic (topic) {
      const admin = kafka.admin()
      await admin.connect()
      await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }] })
      await admin.disconnect()
    },
    async produce (topic) {
      const producer = kafka.producer(KAFKAJS.producer)
      await producer.connect()
      // A failed send rejects (and fails the run); a partition's non-zero errorCode is counted.
      let failed = null
      const secs = await driveProduce(async (messages) => {
        const meta = await producer.send({ topic, acks: -1, messages })
        for (const m of meta) if (m.errorCode) failed ??= m
      })
      await producer.disconnect()
      if (failed) throw new Error(`${name}: send failed: ${JSON.stringify(failed)}`)
      return secs
    },
    async consume (topic) {
      const consumer = kafka.consumer({ groupId: `${topic}-g`, ...(name === 'kafkajs' ? KAFKAJS.consumer : {}) })
      await consumer.connect()
      await consumer.subscribe({ topics: [topic], fromBeginning: true })
      const check = offsetCheck(name)
      let crash
      const crashed = new Promise((resolve, reject) => { crash = reject })
      consumer.on(consumer.events.CRASH, (e) => crash(e.payload.error))
      const secs = await Promise.race([crashed, timeConsume((tick) => consumer.run({
        eachBatch: async ({ batch }) => {
          const messages = batch.messages
          if (messages.length === 0) return
          let size = 0
          for (const m of messages) size += m.value.length
          check.batch(batch.partition, Number(messages[0].offset),
            Number(messages[messages.length - 1].offset), messages.length, size)
          tick(messages.length)
        }
      }))])
      await consumer.disconnect()
      check.done()
      return secs
    }
  }
}

async function platformaticApi (brokers) {
  const { Producer, Consumer, Admin, MessagesStreamModes, ProduceAcks } = await import(require.resolve('@platformatic/kafka'))
  return {
    async createTopic (topic) {
      const admin = new Admin({ clientId: 'bench-platformatic', bootstrapBrokers: brokers })
      await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 })
      await admin.close()
    },
    async produce (topic) {
      const producer = new Producer({ clientId: 'bench-platformatic', bootstrapBrokers: brokers, acks: ProduceAcks.ALL, idempotent: false })
      // A failed send rejects and fails the run.
      const secs = await driveProduce((messages) => producer.send({ messages: messages.map(m => ({ topic, value: m.value })) }))
      await producer.close()
      return secs
    },
    async consume (topic) {
      const consumer = new Consumer({ groupId: `${topic}-g`, clientId: 'bench-platformatic', bootstrapBrokers: brokers, ...PLATFORMATIC.consumer })
      const stream = await consumer.consume({ topics: [topic], mode: MessagesStreamModes.EARLIEST, autocommit: true })
      const check = offsetCheck('platformatic')
      let fail
      const failed = new Promise((resolve, reject) => { fail = reject })
      stream.on('error', (e) => fail(e))
      // The stream hands out records one by one: each is checked (as confluent's).
      const secs = await Promise.race([failed, timeConsume((tick) => stream.on('data', (m) => {
        const offset = Number(m.offset)
        check.batch(m.partition, offset, offset, 1, m.value.length)
        tick()
      }))])
      await stream.close()
      await consumer.close()
      check.done()
      return secs
    }
  }
}

/**
 * @confluentinc/kafka-javascript's configuration (librdkafka properties; CONFIGURATION.md of the
 * librdkafka it bundles). Written to the results JSON as peer_settings.confluent.
 */
const CONFLUENT = {
  producer: {
    acks: -1, // as every client here: acks=all, no idempotence, no compression
    'enable.idempotence': false,
    'compression.codec': 'none',
    dr_cb: true, // a delivery report per record, each checked
    'linger.ms': 5, // = queue.buffering.max.ms
    'batch.num.messages': 1000000, // the ceiling: batches bounded by batch.size (1 MB) only
    'queue.buffering.max.messages': 1000000, // never full: at most BATCH * INFLIGHT queued
    'socket.nagle.disable': true
  },
  poll: 'setPollInBackground(true)',
  consumer: {
    'enable.auto.commit': true, // as the other consumers: periodic auto-commit
    'auto.offset.reset': 'earliest',
    // librdkafka (>= 2.4) stops fetching a partition for fetch.queue.backoff.ms (1000) once
    // queued.min.messages (100000) are prefetched; at 100 B records that idles the consumer.
    'fetch.queue.backoff.ms': 1,
    'queued.min.messages': 1000000
  },
  consumeBatch: 1000
}
CONFLUENT.consume = `consume(${CONFLUENT.consumeBatch}, cb) in a loop; setDefaultConsumeTimeout(100), ` +
  'setDefaultIsTimeoutOnlyForFirstMessage(true) (as its KafkaJS layer does)'

function confluentApi (dir, brokers) {
  if (!dir) throw new Error('client confluent: set ODRADEK_CONFLUENT_JS_DIR to the output of bench/node/install_confluent_js.sh')
  const pkg = createRequire(path.join(dir, 'package.json'))
  const { Producer, KafkaConsumer, AdminClient } = pkg('@confluentinc/kafka-javascript')
  const base = { 'bootstrap.servers': brokers.join(','), 'client.id': 'bench-confluent' }
  const connect = (client) => new Promise((resolve, reject) =>
    client.connect({}, (err) => err ? reject(err) : resolve()))
  const disconnect = (client) => new Promise((resolve, reject) =>
    client.disconnect((err) => err ? reject(err) : resolve()))
  return {
    async createTopic (topic) {
      const admin = AdminClient.create(base)
      try {
        await new Promise((resolve, reject) => admin.createTopic(
          { topic, num_partitions: PARTITIONS, replication_factor: 1 }, 30000,
          (err) => err ? reject(err) : resolve()))
      } finally {
        admin.disconnect()
      }
    },
    async produce (topic) {
      const producer = new Producer({ ...base, ...CONFLUENT.producer })
      await connect(producer)
      // A send call resolves once as many delivery reports as records produced up to and
      // including it have arrived (reports come per partition in order, the partitions
      // interleaved): at most BATCH * INFLIGHT records in flight, as for the other clients.
      let produced = 0
      let delivered = 0
      let failed = 0
      let firstError = null
      const waiting = []
      producer.on('delivery-report', (err) => {
        delivered++
        if (err) {
          failed++
          firstError ??= err
        }
        while (waiting.length && waiting[0].upTo <= delivered) waiting.shift().resolve()
      })
      producer.setPollInBackground(true)
      const secs = await driveProduce((messages) => new Promise((resolve) => {
        for (const m of messages) producer.produce(topic, null, m.value)
        produced += messages.length
        waiting.push({ upTo: produced, resolve })
      }))
      await disconnect(producer)
      if (failed) throw new Error(`confluent: ${failed} of ${delivered} delivery reports failed, first: ${firstError}`)
      if (delivered !== N || produced !== N) throw new Error(`confluent: ${produced} produced, ${delivered} delivery reports, expected ${N}`)
      return secs
    },
    async consume (topic) {
      const { 'auto.offset.reset': reset, ...global } = CONFLUENT.consumer
      const consumer = new KafkaConsumer({ ...base, 'group.id': `${topic}-g`, ...global },
        { 'auto.offset.reset': reset })
      await connect(consumer)
      consumer.setDefaultConsumeTimeout(100)
      consumer.setDefaultIsTimeoutOnlyForFirstMessage(true)
      consumer.subscribe([topic])
      // The next offset expected per partition: every record exactly once, in order.
      const next = []
      let seen = 0
      let bad = null
      let fail
      const failed = new Promise((resolve, reject) => { fail = reject })
      const secs = await Promise.race([failed, timeConsume((tick) => {
        const loop = () => consumer.consume(CONFLUENT.consumeBatch, (err, messages) => {
          if (err) return fail(err)
          for (const m of messages) {
            const expected = next[m.partition] ?? 0
            if (m.offset !== expected || m.topic !== topic || m.value.length !== VALUE.length) {
              bad ??= `partition ${m.partition} offset ${m.offset} (expected ${expected}), topic ${m.topic}, ${m.value.length} B`
            }
            next[m.partition] = m.offset + 1
            seen++
            tick()
          }
          if (seen < N) loop()
        })
        loop()
      })])
      await disconnect(consumer)
      const total = next.reduce((a, b) => a + (b ?? 0), 0)
      if (bad) throw new Error(`confluent: unexpected record: ${bad}`)
      if (seen !== N || total !== N) throw new Error(`confluent: consumed ${seen} records, offsets cover ${total}, expected ${N}`)
      return secs
    }
  }
}

function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

async function main () {
  const broker = await startBroker({ release: true })
  const brokers = [broker.bootstrap]
  try {
    const apis = {}
    for (const c of CLIENTS) {
      if (c === 'odradek') apis[c] = kafkajsApi(c, require(nodePkg), brokers)
      else if (c === 'kafkajs') apis[c] = kafkajsApi(c, require('kafkajs'), brokers)
      else if (c === 'platformatic') apis[c] = await platformaticApi(brokers)
      else if (c === 'confluent') apis[c] = confluentApi(process.env.ODRADEK_CONFLUENT_JS_DIR, brokers)
      else throw new Error(`unknown client ${c}`)
    }
    const results = Object.fromEntries(CLIENTS.map(c => [c, { produce: [], consume: [] }]))
    // Warm-up round, not recorded: every client once with a tenth of the records (JIT, broker
    // allocations, connections).
    N = Math.max(1000, Math.floor(MESSAGES / 10))
    for (const c of CLIENTS) {
      const topic = topicName(c)
      await apis[c].createTopic(topic)
      await apis[c].produce(topic)
      await checkProduced(c, brokers, topic)
      await apis[c].consume(topic)
    }
    N = MESSAGES
    for (let r = 0; r < ROUNDS; r++) {
      for (const c of CLIENTS) {
        const topic = topicName(c)
        await apis[c].createTopic(topic)
        const p = await apis[c].produce(topic)
        await checkProduced(c, brokers, topic)
        const q = await apis[c].consume(topic)
        results[c].produce.push(N / p)
        results[c].consume.push(N / q)
        console.error(`round ${r + 1} ${c}: produce ${(N / p).toFixed(0)} msgs/s, consume ${(N / q).toFixed(0)} msgs/s`)
      }
    }
    const base = results.kafkajs
    console.log(`\n${N} messages x ${VALUE.length} B, ${PARTITIONS} partitions, send calls of ${BATCH} with ${INFLIGHT} in flight, acks=all; median of ${ROUNDS} rounds; broker ${broker.external ? broker.bootstrap : 'odradek-broker (release)'}`)
    console.log('| client | produce msgs/s | vs kafkajs | consume msgs/s | vs kafkajs |')
    console.log('|---|---:|---:|---:|---:|')
    for (const c of CLIENTS) {
      const p = median(results[c].produce)
      const q = median(results[c].consume)
      const rp = base ? (p / median(base.produce)).toFixed(2) + 'x' : '-'
      const rq = base ? (q / median(base.consume)).toFixed(2) + 'x' : '-'
      console.log(`| ${c} | ${p.toFixed(0)} | ${rp} | ${q.toFixed(0)} | ${rq} |`)
    }
    if (opts.json) {
      const stats = (xs) => ({ msgs_per_s: median(xs), msgs_per_s_min: Math.min(...xs), msgs_per_s_max: Math.max(...xs), rounds: xs.length })
      const summary = {}
      for (const kind of ['produce', 'consume']) {
        summary[kind] = Object.fromEntries(CLIENTS.map(c => [c, stats(results[c][kind])]))
      }
      const doc = { date: new Date().toISOString().slice(0, 10), messages: N, value_size: VALUE.length, partitions: PARTITIONS, batch: BATCH, inflight: INFLIGHT, rounds: ROUNDS, node: process.version, broker: broker.external ? broker.bootstrap : 'odradek-broker (release)', runs: results, summary }
      const versionOf = (name) => JSON.parse(readFileSync(path.join(nodePkg, 'node_modules', name, 'package.json'), 'utf8')).version
      doc.peer_settings = {}
      if (CLIENTS.includes('kafkajs')) doc.peer_settings.kafkajs = { version: versionOf('kafkajs'), ...KAFKAJS }
      if (CLIENTS.includes('platformatic')) doc.peer_settings.platformatic = { version: versionOf('@platformatic/kafka'), ...PLATFORMATIC }
      if (CLIENTS.includes('confluent')) {
        const dir = process.env.ODRADEK_CONFLUENT_JS_DIR
        const pkg = createRequire(path.join(dir, 'package.json'))
        const { librdkafkaVersion } = pkg('@confluentinc/kafka-javascript')
        const { version } = pkg('@confluentinc/kafka-javascript/package.json')
        doc.peer_settings.confluent = { version, librdkafka: librdkafkaVersion, ...CONFLUENT }
      }
      writeFileSync(opts.json, JSON.stringify(doc, null, 1) + '\n')
    }
  } finally {
    await broker.stop()
  }
}

main().catch((e) => { console.error(e); process.exit(1) })
