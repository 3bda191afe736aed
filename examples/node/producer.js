// Produces a few keyed messages and prints where each batch went.
//   node examples/node/producer.js [bootstrap] [topic]
const { Kafka, CompressionTypes } = require('odradek')

const brokers = [process.argv[2] || process.env.KAFKA_BOOTSTRAP || '127.0.0.1:9092']
const topic = process.argv[3] || 'odradek-example'

async function main () {
  const kafka = new Kafka({ clientId: 'example-producer', brokers })
  const producer = kafka.producer({ idempotent: true, 'linger.ms': 5 })
  await producer.connect()
  const result = await producer.send({
    topic,
    compression: CompressionTypes.LZ4,
    messages: [
      { key: 'user-1', value: JSON.stringify({ action: 'login' }), headers: { source: 'example' } },
      { key: 'user-2', value: JSON.stringify({ action: 'view' }) },
      { key: 'user-1', value: JSON.stringify({ action: 'logout' }) }
    ]
  })
  for (const r of result) console.log(`produced to ${r.topicName}-${r.partition} from offset ${r.baseOffset}`)
  await producer.disconnect()
}

main().catch((e) => { console.error(`${e.name}: ${e.message}`); process.exit(1) })
