// Compiled by test/modules.test.js with `tsc --noEmit`: odradek/testing typed against
// testing.d.ts. Never run.
import { Cluster, LoggedRequest, useCluster, withCluster } from 'odradek/testing'
import { Kafka } from 'odradek'

async function main (): Promise<void> {
  await using cluster = await Cluster.start({ brokers: 3, topics: { orders: 3 }, config: { 'auto.create.topics.enable': false } })
  const kafka = new Kafka({ brokers: cluster.brokers })
  console.log(kafka, cluster.bootstrap, cluster.brokerIds.length)
  cluster.pushRequestErrors('OffsetCommit', ['COORDINATOR_NOT_AVAILABLE', 15], { broker: 1, delaysMs: [0, 100] })
  const id: number = cluster.addRule('Produce', { error: 'NOT_LEADER_OR_FOLLOWER', topic: 'orders', partition: 1, times: 2 })
  cluster.removeRule(id)
  cluster.delayResponses('Fetch', 500, { clientId: 'slow' })
  const epoch: number = cluster.setPartitionLeader('orders', 0, 2)
  const { leader } = cluster.partitionLeader('orders', 0)
  cluster.setCoordinator('group', 'g', 3)
  cluster.setApiVersion('Produce', 3, 7)
  await cluster.setBrokerDown(3)
  await cluster.setBrokerUp(3)
  const closed: number = await cluster.closeConnections({ clientId: 'app' })
  const log: LoggedRequest[] = cluster.requests({ clear: true })
  console.log(epoch, leader, closed, log.filter((r) => r.action === 'error').map((r) => r.error))
  await withCluster({ brokers: 1 }, async (c) => c.bootstrap)
  const handle = useCluster({}, { beforeEach: (fn) => fn(), afterEach: (fn) => fn() })
  console.log(handle.cluster?.running)
}

main().catch(console.error)
