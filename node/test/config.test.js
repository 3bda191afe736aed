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
