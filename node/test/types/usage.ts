// Compiled by test/modules.test.js with `tsc --noEmit`: KafkaJS-style code typed against
// index.d.ts. Never run.
import {
  Kafka, CompressionTypes, logLevel, KafkaJSError, EachMessagePayload, RecordMetadata,
  AclResourceTypes, ResourcePatternTypes, AclOperationTypes, AclPermissionTypes, RequestThrottleEvent,
  KafkaJSClientQuotaError, KafkaJSNumberOfRetriesExceeded, ConsumerCrashEvent
} from 'odradek'

async function main (): Promise<void> {
  const kafka = new Kafka({ clientId: 'app', brokers: ['127.0.0.1:9092'], logLevel: logLevel.ERROR, 'socket.connection.setup.timeout.ms': 5000 })
  const producer = kafka.producer({ idempotent: true, 'linger.ms': 5 })
  await producer.connect()
  const sent: RecordMetadata[] = await producer.send({ topic: 't', compression: CompressionTypes.ZSTD, messages: [{ key: 'k', value: Buffer.from('v'), headers: { h: 'x' } }] })
  console.log(sent[0].baseOffset)
  const txn = await kafka.producer({ transactionalId: 'tx' }).transaction()
  await txn.sendOffsets({ consumerGroupId: 'g', topics: [{ topic: 't', partitions: [{ partition: 0, offset: '1' }] }] })
  await txn.commit()
  const consumer = kafka.consumer({
    groupId: 'g',
    sessionTimeout: 10000,
    retry: { retries: 3, restartOnFailure: async (e: Error) => !(e instanceof KafkaJSNumberOfRetriesExceeded && e.retryCount > 3) }
  })
  consumer.on(consumer.events.CRASH, (e: ConsumerCrashEvent) => console.log(e.payload.error.message, e.payload.restart))
  await consumer.subscribe({ topics: ['t', /t-.*/], fromBeginning: true })
  consumer.on(consumer.events.GROUP_JOIN, (e) => console.log(e.payload))
  await consumer.run({
    eachMessage: async ({ topic, partition, message }: EachMessagePayload) => {
      console.log(topic, partition, message.offset, message.value?.toString())
    }
  })
  consumer.seek({ topic: 't', partition: 0, offset: '0' })
  consumer.pause([{ topic: 't' }])
  await consumer.commitOffsets([{ topic: 't', partition: 0, offset: '5' }])
  const admin = kafka.admin()
  const created: boolean = await admin.createTopics({ topics: [{ topic: 't', numPartitions: 3 }] })
  const { groups } = await admin.listGroups()
  const described = await admin.describeGroups(groups.map(g => g.groupId))
  console.log(created, described.groups[0].state, await admin.fetchOffsets({ groupId: 'g', topics: ['t'] }))
  const acl = {
    resourceType: AclResourceTypes.TOPIC, resourceName: 't', resourcePatternType: ResourcePatternTypes.LITERAL,
    principal: 'User:alice', host: '*', operation: AclOperationTypes.WRITE, permissionType: AclPermissionTypes.DENY
  }
  const made: boolean = await admin.createAcls({ acl: [acl] })
  const { resources } = await admin.describeAcls({ ...acl, resourcePatternType: ResourcePatternTypes.ANY })
  const { filterResponses } = await admin.deleteAcls({ filters: [acl] })
  console.log(made, resources[0].acls[0].operation, filterResponses[0].matchingAcls.length)
  await admin.alterClientQuotas([{ entity: [{ entityType: 'client-id', entityName: 'app' }, { entityType: 'user', entityName: null }], ops: [{ key: 'producer_byte_rate', value: 65536 }, { key: 'request_percentage', remove: true }] }], { validateOnly: true })
  const quotas = await admin.describeClientQuotas({ components: [{ entityType: 'client-id', matchType: 'EXACT', match: 'app' }, { entityType: 'user', matchType: 'ANY' }], strict: true })
  console.log(quotas.entries.map(e => [e.entity[0].entityName, e.values[0].value]))
  const removeThrottle = producer.on(producer.events.REQUEST_THROTTLE, (e: RequestThrottleEvent) => console.log(e.payload.broker, e.payload.throttleTime, e.payload.throttledUntil))
  removeThrottle()
  try {
    await admin.deleteTopics({ topics: ['t'] })
  } catch (e) {
    if (e instanceof KafkaJSClientQuotaError) console.log(e.entity[0].entityType)
    if (e instanceof KafkaJSError) console.log(e.code, e.type, e.retriable)
  }
}

main().catch(console.error)
