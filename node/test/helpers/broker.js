'use strict'
// A real odradek-broker for the tests: a free port, a fresh data directory, stopped at exit.
// With ODRADEK_TEST_BOOTSTRAP=host:port the tests use that broker instead (the compatibility
// tier points it at Apache Kafka).
const { spawn } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')
const readline = require('readline')

const ROOT = path.resolve(__dirname, '..', '..', '..')

function brokerBinary (release) {
  if (process.env.ODRADEK_BROKER_BIN) return process.env.ODRADEK_BROKER_BIN
  const target = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target')
  return path.join(target, release ? 'release' : 'debug', 'odradek-broker')
}

/**
 * Starts a broker; resolves `{ bootstrap, stop() }`. `release` picks the release build (the
 * benchmarks); ODRADEK_TEST_BOOTSTRAP / ODRADEK_BENCH_BOOTSTRAP name an external broker.
 */
async function startBroker ({ overrides = {}, timeoutMs = 30000, release = false } = {}) {
  const external = release ? process.env.ODRADEK_BENCH_BOOTSTRAP : process.env.ODRADEK_TEST_BOOTSTRAP
  if (external) {
    return { bootstrap: external, external: true, stop: async () => {} }
  }
  const bin = brokerBinary(release)
  if (!fs.existsSync(bin)) {
    throw new Error(`broker binary ${bin} not found: cargo build -p odradek-broker, or set ODRADEK_BROKER_BIN`)
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'odradek-node-test-'))
  const settings = { 'num.partitions': '3', 'group.initial.rebalance.delay.ms': '0', ...overrides }
  const args = ['--override', 'listeners=PLAINTEXT://127.0.0.1:0', '--override', `log.dirs=${path.join(dir, 'data')}`]
  for (const [k, v] of Object.entries(settings)) args.push('--override', `${k}=${v}`)
  const stderr = fs.openSync(path.join(dir, 'broker.stderr.log'), 'a')
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', stderr], env: { ...process.env, NO_COLOR: '1' } })
  fs.closeSync(stderr)
  const bootstrap = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`broker did not start within ${timeoutMs} ms`)) }, timeoutMs)
    const lines = readline.createInterface({ input: child.stdout })
    lines.once('line', (line) => {
      clearTimeout(timer)
      const m = /^odradek-broker listening on (\S+)\s*$/.exec(line)
      if (m) resolve(m[1])
      else reject(new Error(`unexpected broker output: ${line}`))
      child.stdout.resume()
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`broker exited with ${code}: ${fs.readFileSync(path.join(dir, 'broker.stderr.log'), 'utf8').slice(-4000)}`))
    })
  })
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise(resolve => child.once('exit', resolve))
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 20000)
      await exited
      clearTimeout(timer)
    }
    fs.rmSync(dir, { recursive: true, force: true })
  }
  process.once('exit', () => { try { child.kill('SIGKILL') } catch (e) {} })
  return { bootstrap, external: false, stop, dir }
}

let counter = 0
/** A topic name unique to this process and call. */
function uniqueName (prefix) {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter++}`
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes. */
async function waitFor (check, { timeoutMs = 30000, intervalMs = 20, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await check()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, intervalMs))
  }
}

module.exports = { startBroker, uniqueName, waitFor, ROOT }
