'use strict'
// KafkaJS options become the core's Kafka properties (lib/config.js); none is dropped on the way.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { consumerProps, clientProps } = require('../lib/config')

test('rackId becomes client.rack (follower fetching, KIP-392)', () => {
  assert.equal(consumerProps({ groupId: 'g', rackId: 'rack-2' }, false)['client.rack'], 'rack-2')
  assert.equal(consumerProps({ groupId: 'g' }, false)['client.rack'], undefined)
})

test('recovery and backoff settings pass through under their Kafka names', () => {
  const props = clientProps({
    brokers: ['127.0.0.1:9092'],
    retry: { initialRetryTime: 50, maxRetryTime: 2000 },
    'metadata.recovery.strategy': 'none',
    'reconnect.backoff.max.ms': 5000
  })
  assert.equal(props['retry.backoff.ms'], '50')
  assert.equal(props['retry.backoff.max.ms'], '2000')
  assert.equal(props['metadata.recovery.strategy'], 'none')
  assert.equal(props['reconnect.backoff.max.ms'], '5000')
})

test('retry: retries is the producer\'s Kafka retries; factor 0.2 and multiplier 2 are taken, others refused by name', () => {
  const { producerProps, adminProps } = require('../lib/config')
  assert.equal(producerProps({ retry: { retries: 3 } }).retries, '3')
  assert.equal(producerProps({}, { retries: 7 }).retries, '7', 'the client\'s retry reaches its producers')
  assert.equal(producerProps({ retry: { retries: 2 } }, { retries: 7 }).retries, '2', 'the producer\'s own wins')
  assert.equal(producerProps({}).retries, undefined)
  assert.throws(() => producerProps({ retry: { retries: -1 } }), /retry\.retries/)
  assert.throws(() => producerProps({}, { retries: 1.5 }), /retry\.retries/)

  const defaults = { initialRetryTime: 100, maxRetryTime: 1000, factor: 0.2, multiplier: 2 }
  assert.equal(clientProps({ brokers: ['b:9092'], retry: defaults })['retry.backoff.ms'], '100')
  assert.equal(consumerProps({ groupId: 'g', retry: defaults }, false)['retry.backoff.max.ms'], '1000')
  assert.equal(adminProps({ retry: defaults })['retry.backoff.ms'], '100')
  for (const [bad, key] of [[{ factor: 0.5 }, /retry\.factor/], [{ multiplier: 3 }, /retry\.multiplier/]]) {
    assert.throws(() => clientProps({ brokers: ['b:9092'], retry: bad }), key)
    assert.throws(() => producerProps({ retry: bad }), key)
    assert.throws(() => consumerProps({ groupId: 'g', retry: bad }, false), key)
    assert.throws(() => adminProps({ retry: bad }), key)
  }
})

test('retry.restartOnFailure must be a function, refused by name otherwise', () => {
  const { producerProps } = require('../lib/config')
  assert.doesNotThrow(() => consumerProps({ groupId: 'g', retry: { restartOnFailure: async () => true } }, false))
  assert.doesNotThrow(() => clientProps({ brokers: ['b:9092'], retry: { restartOnFailure: async () => false } }))
  for (const bad of [true, 'yes', {}]) {
    assert.throws(() => consumerProps({ groupId: 'g', retry: { restartOnFailure: bad } }, false), /retry\.restartOnFailure/)
    assert.throws(() => clientProps({ brokers: ['b:9092'], retry: { restartOnFailure: bad } }), /retry\.restartOnFailure/)
    assert.throws(() => producerProps({ retry: { restartOnFailure: bad } }), /retry\.restartOnFailure/)
  }
})

test('partitionAssigners: KafkaJS round-robin (the default) keeps its protocol name; a custom assigner is refused by name', () => {
  const { PartitionAssigners } = require('..')
  assert.equal(consumerProps({ groupId: 'g', partitionAssigners: [PartitionAssigners.roundRobin] }, false)['partition.assignment.strategy'], 'RoundRobinAssigner')
  assert.equal(consumerProps({ groupId: 'g' }, false)['partition.assignment.strategy'], 'RoundRobinAssigner')
  // Kafka's assignors stay available as a property; KIP-848 members get no assignor at all.
  assert.equal(consumerProps({ groupId: 'g', 'partition.assignment.strategy': 'range' }, false)['partition.assignment.strategy'], 'range')
  assert.equal(consumerProps({ groupId: 'g', 'group.protocol': 'consumer' }, false)['partition.assignment.strategy'], undefined)
  const custom = () => ({ name: 'MyAssigner', version: 1, assign: async () => [], protocol: () => ({}) })
  assert.throws(() => consumerProps({ groupId: 'g', partitionAssigners: [custom] }, false), /partition\.assignment\.strategy/)
  assert.throws(() => consumerProps({ groupId: 'g', partitionAssigners: [] }, false), /non-empty/)
})
