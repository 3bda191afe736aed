'use strict'
// TLS and SASL through the KafkaJS API (`ssl`, `sasl`, `oauthBearerProvider`) against a broker
// with secured listeners: tests/security/client.sh starts Apache Kafka with them and sets
// ODRADEK_SECURITY_LISTENERS / ODRADEK_SECURITY_PKI; without those the tests are skipped.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { Kafka } = require('..')

const LISTENERS = process.env.ODRADEK_SECURITY_LISTENERS
const PKI = process.env.ODRADEK_SECURITY_PKI
const skip = !(LISTENERS && PKI) && 'no secured broker (tests/security/client.sh sets one up)'

function listener (name) {
  const lines = fs.readFileSync(LISTENERS, 'utf8').split('\n')
  const line = lines.find(l => l.startsWith(`${name}=`))
  assert.ok(line, `no ${name} listener`)
  return line.slice(name.length + 1).trim()
}
const pki = (name) => fs.readFileSync(path.join(PKI, name), 'utf8')
const unique = (tag) => `node-sec-${tag}-${process.pid}-${Date.now()}`

function unsecuredJwt (sub) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url')
  const now = Math.floor(Date.now() / 1000)
  return `${b64({ alg: 'none' })}.${b64({ sub, iat: now, exp: now + 600 })}.`
}

async function roundTrip (config, tag) {
  const kafka = new Kafka({ clientId: tag, logLevel: 0, ...config })
  const topic = unique(tag)
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: Array.from({ length: 5 }, (_, i) => ({ value: `${tag}-${i}`, partition: 0 })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: unique(`${tag}-g`) })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await consumer.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()) } })
  const deadline = Date.now() + 60000
  while (got.length < 5 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 100))
  await consumer.disconnect()
  assert.deepEqual(got, Array.from({ length: 5 }, (_, i) => `${tag}-${i}`), tag)
}

test('round trips over SSL, mTLS and SASL (PLAIN, SCRAM, OAUTHBEARER)', { skip }, async () => {
  const ca = pki('ca.pem')
  await roundTrip({ brokers: [listener('SSL')], ssl: { ca: [ca] } }, 'ssl')
  await roundTrip({
    brokers: [listener('MTLS')],
    ssl: { ca, cert: pki('client.pem'), key: pki('client-encrypted.key'), passphrase: pki('client-key-password.txt').trim() }
  }, 'mtls')
  for (const mechanism of ['plain', 'scram-sha-256', 'scram-sha-512']) {
    await roundTrip({ brokers: [listener('SASL_SSL')], ssl: { ca }, sasl: { mechanism, username: 'alice', password: 'alice-secret' } }, mechanism)
  }
  let calls = 0
  await roundTrip({
    brokers: [listener('SASL_SSL')],
    ssl: { ca },
    sasl: { mechanism: 'oauthbearer', oauthBearerProvider: async () => { calls++; return { value: unsecuredJwt('node-user') } } }
  }, 'oauthbearer')
  assert.ok(calls >= 1)
  await roundTrip({ brokers: [listener('SASL_PLAINTEXT')], sasl: { mechanism: 'scram-sha-512', username: 'alice', password: 'alice-secret' } }, 'sasl-plaintext')
})

test('a wrong password is a KafkaJSSASLAuthenticationError without the secret', { skip }, async () => {
  const kafka = new Kafka({
    brokers: [listener('SASL_SSL')],
    logLevel: 0,
    ssl: { ca: pki('ca.pem') },
    sasl: { mechanism: 'scram-sha-512', username: 'alice', password: 'Mn4-not-hers' }
  })
  const producer = kafka.producer()
  const started = Date.now()
  await assert.rejects(producer.connect(), (e) => {
    assert.equal(e.name, 'KafkaJSSASLAuthenticationError')
    assert.equal(e.retriable, false)
    assert.ok(!e.message.includes('Mn4-not-hers'), e.message)
    return true
  })
  assert.ok(Date.now() - started < 10000)
})

test('TLS options odradek cannot honour are refused by name', () => {
  assert.throws(() => new Kafka({ brokers: ['127.0.0.1:1'], ssl: { rejectUnauthorized: false } }), /rejectUnauthorized/)
  assert.throws(() => new Kafka({ brokers: ['127.0.0.1:1'], sasl: { mechanism: 'aws' } }), /aws/)
  assert.throws(() => new Kafka({ brokers: ['127.0.0.1:1'], sasl: { mechanism: 'oauthbearer' } }), /oauthBearerProvider/)
})

test('a cloud-style SASL_SSL configuration in librdkafka-property form (require(\'odradek\').KafkaJS)', { skip }, async () => {
  const { KafkaJS } = require('..')
  const kafka = new KafkaJS.Kafka({
    kafkaJS: { brokers: [listener('SASL_SSL')], logLevel: KafkaJS.logLevel.NOTHING },
    'security.protocol': 'SASL_SSL',
    'sasl.mechanisms': 'PLAIN',
    'sasl.username': 'alice',
    'sasl.password': 'alice-secret',
    'ssl.ca.location': path.join(PKI, 'ca.pem'),
    'ssl.endpoint.identification.algorithm': 'https',
    'socket.keepalive.enable': true,
    'client.id': 'ccloud-node-client'
  })
  const topic = unique('cloud')
  const producer = kafka.producer({ 'enable.idempotence': true, 'linger.ms': 5, 'compression.type': 'zstd', acks: -1 })
  await producer.connect()
  await producer.send({ topic, messages: Array.from({ length: 5 }, (_, i) => ({ value: `cloud-${i}`, partition: 0 })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ kafkaJS: { groupId: unique('cloud-g'), fromBeginning: true }, 'session.timeout.ms': 45000 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic] })
  const got = []
  await consumer.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()) } })
  const deadline = Date.now() + 60000
  while (got.length < 5 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 100))
  await consumer.disconnect()
  assert.deepEqual(got, Array.from({ length: 5 }, (_, i) => `cloud-${i}`))
})
