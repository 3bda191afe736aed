'use strict'
// Turns a native poll (src/pack.rs: topics, per-record numbers, per-header numbers, one data
// Buffer) into KafkaJS message objects, grouped in per-partition batches in delivery order.
// Keys, values and headers are `subarray`s of the poll's one Buffer: no copies.

const RECORD_FIELDS = 11
const HEADER_FIELDS = 4

function slice (data, start, len) {
  return len < 0 ? null : data.subarray(start, start + len)
}

/** `[{ topic, partition, messages }]`, one entry per partition, in order of first record. */
function decode ({ topics, records, headers, data }) {
  const batches = []
  const byPartition = new Map()
  let current = null
  let h = 0
  for (let i = 0; i < records.length; i += RECORD_FIELDS) {
    const topic = topics[records[i]]
    const partition = records[i + 1]
    const headerCount = records[i + 9]
    let hdrs = {}
    for (let j = 0; j < headerCount; j++, h += HEADER_FIELDS) {
      const key = data.toString('utf8', headers[h], headers[h] + headers[h + 1])
      const value = slice(data, headers[h + 2], headers[h + 3])
      const prev = hdrs[key]
      hdrs[key] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value]
    }
    if (headerCount === 0) hdrs = {}
    const message = {
      magicByte: 2,
      attributes: 0,
      timestamp: String(records[i + 3]),
      offset: String(records[i + 2]),
      key: slice(data, records[i + 5], records[i + 6]),
      value: slice(data, records[i + 7], records[i + 8]),
      headers: hdrs,
      isControlRecord: false,
      batchContext: undefined,
      size: 0
    }
    if (!current || current.topic !== topic || current.partition !== partition) {
      const key = `${partition}:${topic}`
      current = byPartition.get(key)
      if (!current) {
        current = { topic, partition, messages: [] }
        byPartition.set(key, current)
        batches.push(current)
      }
    }
    current.messages.push(message)
  }
  return batches
}

/** How many distinct partitions a packed poll result holds (KafkaJS's `numberOfBatches`). */
function partitionCount ({ records }) {
  const seen = new Set()
  for (let i = 0; i < records.length; i += RECORD_FIELDS) seen.add(`${records[i]}:${records[i + 1]}`)
  return seen.size
}

module.exports = { decode, partitionCount }
