'use strict'
// The package loads from CommonJS and ESM with the same exports, and index.d.ts type-checks
// KafkaJS-style TypeScript.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('path')
const fs = require('fs')
const { runNode } = require('./helpers/run')

const PKG = path.resolve(__dirname, '..')

test('CommonJS and ESM entries export the same objects', async () => {
  const cjs = require('..')
  for (const name of ['Kafka', 'CompressionTypes', 'logLevel', 'KafkaJSError', 'KafkaJSProtocolError', 'Partitioners']) {
    assert.ok(cjs[name], `CommonJS export ${name}`)
  }
  const script = `import { Kafka, CompressionTypes, KafkaJSError } from ${JSON.stringify(path.join(PKG, 'index.mjs'))};
import def from ${JSON.stringify(path.join(PKG, 'index.mjs'))};
const k = new Kafka({ brokers: ['127.0.0.1:1'] });
console.log(JSON.stringify({ kafka: typeof k.producer, gzip: CompressionTypes.GZIP, err: new KafkaJSError('x').name, same: def.Kafka === Kafka }));`
  const r = await runNode(['--input-type=module', '-e', script])
  assert.equal(r.code, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), { kafka: 'function', gzip: 1, err: 'KafkaJSError', same: true })
  const pkg = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8'))
  assert.equal(pkg.exports['.'].import, './index.mjs')
  assert.equal(pkg.exports['.'].require, './index.js')
})

test('index.d.ts type-checks KafkaJS-style TypeScript', async () => {
  const tsc = path.join(PKG, 'node_modules', 'typescript', 'bin', 'tsc')
  const r = await runNode([tsc, '-p', path.join(__dirname, 'types', 'tsconfig.json')], { timeoutMs: 180000 })
  assert.equal(r.code, 0, r.stdout + r.stderr)
})

test('native.d.ts describes every class the native addon exports', () => {
  const dts = fs.readFileSync(path.join(PKG, 'native.d.ts'), 'utf8')
  const native = require('../lib/native')
  for (const name of Object.keys(native)) {
    assert.match(dts, new RegExp(`export declare class ${name}\\b`), `native.d.ts lacks ${name}`)
    for (const method of Object.getOwnPropertyNames(native[name].prototype)) {
      if (method === 'constructor') continue
      assert.match(dts, new RegExp(`\\b${method}\\(`), `native.d.ts lacks ${name}.${method}`)
    }
  }
})
