'use strict'
// The examples in examples/node/ run as written against a real broker.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { startBroker, uniqueName, ROOT } = require('./helpers/broker')
const { runNode } = require('./helpers/run')

const EXAMPLES = path.join(ROOT, 'examples', 'node')
let broker, modules

before(async () => {
  broker = await startBroker()
  // The examples `require('odradek')` as an application would; resolve it to this package.
  modules = fs.mkdtempSync(path.join(os.tmpdir(), 'odradek-examples-'))
  fs.symlinkSync(path.resolve(__dirname, '..'), path.join(modules, 'odradek'), 'dir')
})

after(async () => {
  await broker.stop()
  fs.rmSync(modules, { recursive: true, force: true })
})

const example = (name, ...args) =>
  runNode([path.join(EXAMPLES, name), broker.bootstrap, ...args], { env: { NODE_PATH: modules } })

test('producer.js then consumer.js round-trip three messages', async () => {
  const topic = uniqueName('example')
  const produced = await example('producer.js', topic)
  assert.equal(produced.code, 0, produced.stderr)
  assert.match(produced.stdout, new RegExp(`produced to ${topic}-\\d+ from offset 0`))
  const consumed = await example('consumer.js', topic, uniqueName('example-group'), '3')
  assert.equal(consumed.code, 0, consumed.stderr)
  const lines = consumed.stdout.trim().split('\n')
  assert.equal(lines.length, 3)
  assert.ok(lines.some(l => l.includes('user-1 = {"action":"login"}')), consumed.stdout)
  assert.ok(lines.some(l => l.includes('user-2 = {"action":"view"}')), consumed.stdout)
})

test('admin.js creates, describes and deletes a topic', async () => {
  const topic = uniqueName('example-admin')
  const r = await example('admin.js', topic)
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, new RegExp(`created ${topic}`))
  assert.match(r.stdout, /partition 2: leader \d+/)
  assert.match(r.stdout, /partition 0: offsets 0\.\.0/)
  assert.match(r.stdout, new RegExp(`deleted ${topic}`))
})
