// Consumes a topic in a consumer group and prints each message; stops after `count` messages.
//   node examples/node/consumer.js [bootstrap] [topic] [group] [count]
const { Kafka } = require('odradek')

const brokers = [process.argv[2] || process.env.KAFKA_BOOTSTRAP || '127.0.0.1:9092']
const topic = process.argv[3] || 'odradek-example'
const groupId = process.argv[4] || 'odradek-example-group'
const count = Number(process.argv[5] || 3)

async function main () {
  const kafka = new Kafka({ clientId: 'example-consumer', brokers })
  const consumer = kafka.consumer({ groupId })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  let seen = 0
  await new Promise((resolve, reject) => {
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        console.log(`${topic}-${partition}@${message.offset} ${message.key} = ${message.value}`)
        if (++seen === count) resolve()
      }
    }).catch(reject)
  })
  await consumer.disconnect()
}

main().catch((e) => { console.error(`${e.name}: ${e.message}`); process.exit(1) })
