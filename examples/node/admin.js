// Creates a topic, shows its partitions and offsets, lists consumer groups, deletes the topic.
//   node examples/node/admin.js [bootstrap] [topic]
const { Kafka } = require('odradek')

const brokers = [process.argv[2] || process.env.KAFKA_BOOTSTRAP || '127.0.0.1:9092']
const topic = process.argv[3] || 'odradek-admin-example'

async function main () {
  const kafka = new Kafka({ clientId: 'example-admin', brokers })
  const admin = kafka.admin()
  await admin.connect()
  const created = await admin.createTopics({ topics: [{ topic, numPartitions: 3, configEntries: [{ name: 'cleanup.policy', value: 'delete' }] }] })
  console.log(created ? `created ${topic}` : `${topic} already exists`)
  const { topics } = await admin.fetchTopicMetadata({ topics: [topic] })
  for (const p of topics[0].partitions) console.log(`partition ${p.partitionId}: leader ${p.leader}, replicas ${p.replicas.join(',')}`)
  for (const o of await admin.fetchTopicOffsets(topic)) console.log(`partition ${o.partition}: offsets ${o.low}..${o.high}`)
  const { groups } = await admin.listGroups()
  console.log(`${groups.length} consumer group(s)`)
  await admin.deleteTopics({ topics: [topic] })
  console.log(`deleted ${topic}`)
  await admin.disconnect()
}

main().catch((e) => { console.error(`${e.name}: ${e.message}`); process.exit(1) })
