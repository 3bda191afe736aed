// Compiled by test/modules.test.js with `tsc --noEmit`: code written for
// @confluentinc/kafka-javascript's KafkaJS namespace, typed against odradek's. Never run.
import { KafkaJS } from 'odradek'

const { Kafka, CompressionTypes, PartitionAssigners, ErrorCodes, logLevel, isKafkaJSError } = KafkaJS

async function main (): Promise<void> {
  const kafka = new Kafka({ kafkaJS: { brokers: ['127.0.0.1:9092'], clientId: 'app', logLevel: logLevel.WARN }, 'socket.keepalive.enable': true })
  const admin = kafka.admin()
  await admin.connect()
  const created: boolean = await admin.createTopics({ topics: [{ topic: 't', numPartitions: 3 }], timeout: 5000 })
  const { groups } = await admin.listGroups()
  console.log(created, groups.map(g => g.isSimpleConsumerGroup))

  const producer = kafka.producer({ kafkaJS: { acks: 1, compression: CompressionTypes.GZIP, idempotent: false }, 'linger.ms': 5 })
  await producer.connect()
  const sent: KafkaJS.RecordMetadata[] = await producer.send({ topic: 't', messages: [{ key: 'k', value: 'v', headers: { h: 'x' } }] })
  console.log(sent[0].baseOffset)
  await producer.flush({ timeout: 1000 })

  const consumer: KafkaJS.Consumer = kafka.consumer({
    kafkaJS: { groupId: 'g', fromBeginning: true, autoCommit: false, partitionAssigners: [PartitionAssigners.cooperativeSticky] },
    'js.consumer.max.batch.size': 16
  })
  await consumer.connect()
  await consumer.subscribe({ topics: ['t', /^t-.*/], replace: true })
  await consumer.run({
    eachBatch: async ({ batch, resolveOffset }: KafkaJS.EachBatchPayload) => {
      for (const m of batch.messages) resolveOffset(m.offset)
    }
  })
  await consumer.commitOffsets()
  const committed: KafkaJS.TopicPartitionOffsetAndMetadata[] = await consumer.committed(null, 5000)
  console.log(committed, consumer.assignment(), consumer.rebalanceProtocol())

  const txn = await kafka.producer({ kafkaJS: { transactionalId: 'tx' } }).transaction()
  await txn.sendOffsets({ consumer, topics: [{ topic: 't', partitions: [{ partition: 0, offset: '1' }] }] })
  await txn.commit()

  try {
    await producer.send({ topic: 't', messages: [{ value: null }] })
  } catch (e) {
    if (isKafkaJSError(e) && e.code === ErrorCodes.ERR__QUEUE_FULL && !e.fatal) console.log(e.type)
    if (e instanceof KafkaJS.KafkaJSAggregateError) console.log(e.errors.length)
  }
  await consumer.disconnect()
  await producer.disconnect()
  await admin.disconnect()
}

main().catch(console.error)
