'use strict'
// Per-test cost of odradek/testing from Node.js: start + stop of an empty cluster, and start +
// one produce/consume round trip + stop, with odradek's client and kafkajs, for 1 and 3 brokers.
// Prints one JSON object per measurement (milliseconds).
//
//   NODE_PATH=<dir with odradek and kafkajs> node bench/test_cluster/bench.js [rounds]
const { Cluster } = require('odradek/testing')

const now = () => Number(process.hrtime.bigint()) / 1e6

async function roundTrip (Kafka, logLevel, brokers) {
  const kafka = new Kafka({ clientId: 'bench', brokers, logLevel: logLevel.NOTHING })
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic: 't', messages: [{ value: 'hello', partition: 0 }] })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `bench-${Math.random()}`, maxWaitTimeInMs: 50 })
  await consumer.connect()
  await consumer.subscribe({ topics: ['t'], fromBeginning: true })
  let got
  const received = new Promise((resolve) => { got = resolve })
  await consumer.run({ eachMessage: async () => got() })
  await received
  await consumer.disconnect()
}

async function main () {
  const rounds = Number(process.argv[2] || 20)
  const clients = []
  for (const name of ['odradek', 'kafkajs']) {
    try { clients.push([name, require(name)]) } catch (e) {}
  }
  for (const brokers of [1, 3]) {
    await (await Cluster.start({ brokers })).stop()
    for (let i = 0; i < rounds; i++) {
      const t0 = now()
      const c = await Cluster.start({ brokers })
      const t1 = now()
      await c.stop()
      const t2 = now()
      console.log(JSON.stringify({ lang: 'node', client: 'none', scenario: 'empty', brokers, start_ms: t1 - t0, stop_ms: t2 - t1, total_ms: t2 - t0 }))
    }
    for (const [name, mod] of clients) {
      for (let i = 0; i < rounds; i++) {
        const t0 = now()
        const c = await Cluster.start({ brokers, topics: { t: 1 } })
        const t1 = now()
        await roundTrip(mod.Kafka, mod.logLevel, c.brokers)
        const t2 = now()
        await c.stop()
        const t3 = now()
        console.log(JSON.stringify({ lang: 'node', client: name, scenario: 'round_trip', brokers, start_ms: t1 - t0, round_trip_ms: t2 - t1, stop_ms: t3 - t2, total_ms: t3 - t0 }))
      }
    }
  }
}

main().catch((e) => { console.error(e); process.exit(1) })
