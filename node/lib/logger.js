'use strict'
// KafkaJS-style logger: `logCreator(level) => ({ namespace, level, label, log }) => void`.
const { logLevel } = require('./constants')

const LABELS = { [logLevel.ERROR]: 'ERROR', [logLevel.WARN]: 'WARN', [logLevel.INFO]: 'INFO', [logLevel.DEBUG]: 'DEBUG' }

function defaultLogCreator () {
  return ({ namespace, label, log }) => {
    const { message, ...extra } = log
    console.error(JSON.stringify({ level: label, timestamp: log.timestamp, logger: 'odradek', message, namespace, ...extra }))
  }
}

function createLogger ({ level = logLevel.INFO, logCreator = defaultLogCreator } = {}) {
  const logFn = logCreator(level)
  const make = (namespace) => {
    const at = (l) => (message, extra = {}) => {
      if (l > level || level === logLevel.NOTHING) return
      logFn({ namespace, level: l, label: LABELS[l], log: { timestamp: new Date().toISOString(), message, ...extra } })
    }
    return {
      info: at(logLevel.INFO),
      error: at(logLevel.ERROR),
      warn: at(logLevel.WARN),
      debug: at(logLevel.DEBUG),
      namespace: (ns) => make(namespace ? `${namespace}:${ns}` : ns),
      setLogLevel: (l) => { level = l }
    }
  }
  return make('')
}

module.exports = { createLogger }
