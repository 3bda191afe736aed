'use strict'
// Native errors become KafkaJS error classes (lib/errors.js): the mapping the run loop and the
// admin client rely on, checked without a broker.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { fromNative, KafkaJSOffsetOutOfRange, KafkaJSConnectionError } = require('../lib/errors')

test('a detected log truncation (KIP-320, auto.offset.reset none) is an offset out of range', () => {
  const e = fromNative(new Error('[odradek -139 _LOG_TRUNCATION 0] log truncation detected for t-0 at offset 200'))
  assert.ok(e instanceof KafkaJSOffsetOutOfRange, e.name)
  assert.equal(e.type, '_LOG_TRUNCATION')
  assert.equal(e.code, -139)
  assert.equal(e.retriable, false)
  assert.match(e.message, /t-0 at offset 200/)
})

test('OFFSET_OUT_OF_RANGE and transport errors keep their classes', () => {
  assert.ok(fromNative('[odradek 1 OFFSET_OUT_OF_RANGE 0] out of range') instanceof KafkaJSOffsetOutOfRange)
  assert.ok(fromNative('[odradek -195 _TRANSPORT 1] reset') instanceof KafkaJSConnectionError)
})
