'use strict'
// odradek/schema-registry and @kafkajs/confluent-schema-registry against our registry
// (odradek-schema-registry over the test broker): one scenario table run by both libraries,
// and values crossing between their encoders in both directions, also through Kafka.
const { test, before, after } = require('node:test')
const assert = require('node:assert')
const { spawn } = require('child_process')
const fs = require('fs')
const path = require('path')
const readline = require('readline')
const { Kafka } = require('..')
const ours = require('../lib/schema_registry')
const { startBroker, uniqueName, waitFor } = require('./helpers/broker')

const ROOT = path.resolve(__dirname, '..', '..')
let theirs = null
try { theirs = require('@kafkajs/confluent-schema-registry') } catch (_) {}

let broker, registry, url

function registryBinary () {
  if (process.env.ODRADEK_SCHEMA_REGISTRY_BIN) return process.env.ODRADEK_SCHEMA_REGISTRY_BIN
  return path.join(process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target'), 'debug', 'odradek-schema-registry')
}

before(async () => {
  broker = await startBroker()
  const topic = broker.external ? uniqueName('_schemas-node') : '_schemas'
  if (!fs.existsSync(registryBinary())) {
    throw new Error(`${registryBinary()} is missing: build it with \`cargo build -p odradek-schema-registry\` (or set ODRADEK_SCHEMA_REGISTRY_BIN)`)
  }
  registry = spawn(registryBinary(), ['--bootstrap', broker.bootstrap, '--listen', '127.0.0.1:0', '--topic', topic],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ODRADEK_LOG: process.env.ODRADEK_LOG || 'warn' } })
  url = await new Promise((resolve, reject) => {
    readline.createInterface({ input: registry.stdout }).once('line', (line) => {
      const m = /listening on (\S+)/.exec(line)
      if (m) resolve(m[1]); else reject(new Error(line))
    })
    registry.once('exit', (code) => reject(new Error(`registry exited with ${code}`)))
    registry.once('error', reject)
  })
})

after(async () => {
  if (registry && registry.exitCode === null && registry.signalCode === null) {
    const exited = new Promise((resolve) => registry.once('exit', resolve))
    registry.kill('SIGTERM')
    await exited
  }
  if (broker) await broker.stop()
})

const avro = (name, fields) => JSON.stringify({ type: 'record', name, namespace: 'node.t', fields })
const V1 = avro('User', [{ name: 'id', type: 'int' }])
const V2 = avro('User', [{ name: 'id', type: 'int' }, { name: 'name', type: 'string', default: '' }])
const BAD = avro('User', [{ name: 'id', type: 'string' }])

for (const [label, lib] of [['odradek', ours], ['@kafkajs/confluent-schema-registry', theirs]]) {
  test(`scenario table: ${label}`, { skip: lib ? false : 'not installed' }, async () => {
    const reg = new lib.SchemaRegistry({ host: url })
    const subject = uniqueName('node-s')
    const { id: id1 } = await reg.register({ type: lib.SchemaType.AVRO, schema: V1 }, { subject })
    const { id: again } = await reg.register({ type: lib.SchemaType.AVRO, schema: V1 }, { subject })
    assert.strictEqual(again, id1)
    const { id: id2 } = await reg.register({ type: lib.SchemaType.AVRO, schema: V2 }, { subject })
    assert.notStrictEqual(id2, id1)
    await assert.rejects(reg.register({ type: lib.SchemaType.AVRO, schema: BAD }, { subject }), (e) => {
      assert.strictEqual(e.status, 409)
      return true
    })
    assert.strictEqual(await reg.getLatestSchemaId(subject), id2)
    assert.strictEqual(await reg.getRegistryId(subject, 1), id1)
    assert.strictEqual(await reg.getRegistryIdBySchema(subject, { type: lib.SchemaType.AVRO, schema: V1 }), id1)
    const enc = await reg.encode(id2, { id: 7, name: 'seven' })
    assert.deepStrictEqual(enc.subarray(0, 5), Buffer.from([0, 0, 0, 0, id2]))
    assert.deepEqual(await reg.decode(enc), { id: 7, name: 'seven' })
    // references: a record using a type registered under another subject
    const addrSubject = uniqueName('node-addr')
    await reg.register({ type: lib.SchemaType.AVRO, schema: avro('Address', [{ name: 'city', type: 'string' }]) }, { subject: addrSubject })
    const { id: pid } = await reg.register({
      type: lib.SchemaType.AVRO,
      schema: avro('Person', [{ name: 'home', type: 'node.t.Address' }]),
      references: [{ name: 'node.t.Address', subject: addrSubject, version: 1 }]
    }, { subject: uniqueName('node-person') })
    const p = await reg.encode(pid, { home: { city: 'Prague' } })
    assert.deepEqual(await reg.decode(p), { home: { city: 'Prague' } })
    // JSON Schema
    const js = JSON.stringify({ type: 'object', properties: { a: { type: 'string' } } })
    const { id: jid } = await reg.register({ type: lib.SchemaType.JSON, schema: js }, { subject: uniqueName('node-json') })
    assert.deepEqual(await reg.decode(await reg.encode(jid, { a: 'x' })), { a: 'x' })
  })
}

test('values cross between @kafkajs/confluent-schema-registry and odradek', { skip: theirs ? false : 'not installed' }, async () => {
  const a = new ours.SchemaRegistry({ host: url })
  const b = new theirs.SchemaRegistry({ host: url })
  const schema = avro('Event', [
    { name: 'id', type: 'long' },
    { name: 'kind', type: { type: 'enum', name: 'Kind', symbols: ['A', 'B'] } },
    { name: 'note', type: ['null', 'string'], default: null },
    { name: 'blob', type: 'bytes' },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'props', type: { type: 'map', values: 'double' } }
  ])
  const { id } = await b.register({ type: theirs.SchemaType.AVRO, schema }, { subject: uniqueName('node-cross') })
  const value = { id: 12345678901, kind: 'B', note: 'hi', blob: Buffer.from([0, 1, 255]), tags: ['x', 'y'], props: { p: 1.5 } }
  const fromThem = await b.encode(id, value)
  const fromUs = await a.encode(id, value)
  assert.deepStrictEqual(fromUs, fromThem, 'byte-identical encodings')
  assert.deepEqual(await a.decode(fromThem), value)
  assert.deepEqual({ ...(await b.decode(fromUs)) }, value)

  // through Kafka: encoded by them, produced and consumed with odradek, decoded by us
  const kafka = new Kafka({ clientId: 'sr-test', brokers: [broker.bootstrap], logLevel: 0 })
  const topic = uniqueName('node-sr')
  const producer = kafka.producer()
  await producer.connect()
  const values = []
  for (let i = 0; i < 5; i++) values.push({ ...value, id: i })
  await producer.send({ topic, messages: await Promise.all(values.map(async (v) => ({ value: await b.encode(id, v) }))) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: uniqueName('g') })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await consumer.run({ eachMessage: async ({ message }) => { got.push(await a.decode(message.value)) } })
  await waitFor(() => got.length >= 5, { what: '5 records' })
  await consumer.disconnect()
  assert.deepEqual(got.sort((x, y) => x.id - y.id), values)
})

test('errors: bad schemas, unknown ids, bad framing', async () => {
  const reg = new ours.SchemaRegistry({ host: url })
  await assert.rejects(reg.register({ type: ours.SchemaType.AVRO, schema: '{"type": "record"' }, { subject: 'x' }))
  await assert.rejects(reg.register({ type: 'XML', schema: '"string"' }, { subject: 'x' }), (e) => e.code === 42201)
  await assert.rejects(reg.getSchema(987654), (e) => e.status === 404 && e.code === 40403)
  await assert.rejects(reg.decode(Buffer.from([1, 0, 0, 0, 1])), ours.ConfluentSchemaRegistryArgumentError)
  const { id } = await reg.register({ type: ours.SchemaType.AVRO, schema: V1 }, { subject: uniqueName('node-err') })
  await assert.rejects(reg.encode(id, { id: 'not an int' }), ours.ConfluentSchemaRegistryValidationError)
  assert.ok(fs.existsSync(registryBinary()))
})
