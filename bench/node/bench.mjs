// Produce and consume throughput of odradek vs kafkajs vs @platformatic/kafka, in one run,
// against one broker, 100-byte values. Not a test: prints a table and the ratios to kafkajs.
//
//   bench/node/run.sh                        builds (release) and runs with the defaults
//   node bench/node/bench.mjs [options]      options: --messages N (200000) --rounds R (3)
//        --batch B (messages per send call, 1000) --inflight C (send calls in flight, 8)
//        --partitions P (3) --value-size S (100) --clients odradek,kafkajs,platformatic
//        --json FILE (also write the raw rounds and medians there)
//
// Environment: ODRADEK_BENCH_BOOTSTRAP=host:port uses that broker instead of starting
// target/release/odradek-broker; ODRADEK_NODE_ADDON picks the addon (run.sh points it at the
// release build).
//
// Every client gets the same work: N records in send calls of B records with C calls in
// flight, acks=all, no compression, no idempotence; then one group consumer reads the N
// records back (eachMessage for the KafkaJS API, the message stream for platformatic). Clients
// run interleaved, each round on fresh topics; the table shows the median round.
import { createRequire } from 'node:module'
import { parseArgs } from 'node:util'
import { writeFileSync } from 'node:fs'
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
    clients: { type: 'string', default: 'odradek,kafkajs,platformatic' },
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

/** Waits until `count()` reaches N; returns seconds from the first record to the last. */
function timeConsume (onStart) {
  return new Promise((resolve, reject) => {
    let seen = 0
    let first = null
    const timer = setTimeout(() => reject(new Error(`consumed only ${seen} of ${N} in 300 s`)), 300000)
    onStart(() => {
      if (seen === 0) first = process.hrtime.bigint()
      seen++
      if (seen === N) {
        clearTimeout(timer)
        resolve(Number(process.hrtime.bigint() - first) / 1e9)
      }
    })
  })
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
      const producer = kafka.producer({ idempotent: false })
      await producer.connect()
      const secs = await driveProduce((messages) => producer.send({ topic, acks: -1, messages }))
      await producer.disconnect()
      return secs
    },
    async consume (topic) {
      const consumer = kafka.consumer({ groupId: `${topic}-g` })
      await consumer.connect()
      await consumer.subscribe({ topics: [topic], fromBeginning: true })
      const secs = await timeConsume((tick) => consumer.run({ eachMessage: async () => { tick() } }))
      await consumer.disconnect()
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
      const secs = await driveProduce((messages) => producer.send({ messages: messages.map(m => ({ topic, value: m.value })) }))
      await producer.close()
      return secs
    },
    async consume (topic) {
      const consumer = new Consumer({ groupId: `${topic}-g`, clientId: 'bench-platformatic', bootstrapBrokers: brokers })
      const stream = await consumer.consume({ topics: [topic], mode: MessagesStreamModes.EARLIEST, autocommit: true })
      const secs = await timeConsume((tick) => stream.on('data', tick))
      await stream.close()
      await consumer.close()
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
      await apis[c].consume(topic)
    }
    N = MESSAGES
    for (let r = 0; r < ROUNDS; r++) {
      for (const c of CLIENTS) {
        const topic = topicName(c)
        await apis[c].createTopic(topic)
        const p = await apis[c].produce(topic)
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
      writeFileSync(opts.json, JSON.stringify(doc, null, 1) + '\n')
    }
  } finally {
    await broker.stop()
  }
}

main().catch((e) => { console.error(e); process.exit(1) })
