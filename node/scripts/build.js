#!/usr/bin/env node
'use strict'
// Builds the native addon from source with cargo and installs it as ../odradek.node.
// Runs on `npm install` (the package's install script) and `npm run build`.
//
//   ODRADEK_NODE_PROFILE=debug|release   cargo profile (default: release)
//   ODRADEK_NODE_SKIP_BUILD=1            do nothing (an addon is provided another way)
//   CARGO_TARGET_DIR                     honoured, as by cargo
const { spawnSync } = require('child_process')
const fs = require('fs')
const path = require('path')

const pkgDir = path.resolve(__dirname, '..')
const manifest = path.join(pkgDir, 'Cargo.toml')
const dest = path.join(pkgDir, 'odradek.node')

function fail (message) {
  console.error(`odradek: ${message}`)
  process.exit(1)
}

if (process.env.ODRADEK_NODE_SKIP_BUILD) process.exit(0)

const profile = process.env.ODRADEK_NODE_PROFILE || 'release'
if (!['debug', 'release'].includes(profile)) fail(`ODRADEK_NODE_PROFILE must be debug or release, not ${profile}`)
const cargo = process.env.CARGO || 'cargo'

const meta = spawnSync(cargo, ['metadata', '--format-version', '1', '--no-deps', '--manifest-path', manifest], { encoding: 'utf8', maxBuffer: 64 << 20 })
if (meta.error) fail(`cannot run cargo (${meta.error.message}): building odradek needs Rust, see https://rustup.rs`)
if (meta.status !== 0) fail(`cargo metadata failed:\n${meta.stderr}`)
const targetDir = JSON.parse(meta.stdout).target_directory

const args = ['build', '--manifest-path', manifest, '-p', 'odradek-node']
if (profile === 'release') args.push('--release')
console.error(`odradek: ${cargo} ${args.join(' ')}`)
const build = spawnSync(cargo, args, { stdio: ['ignore', 'inherit', 'inherit'] })
if (build.error) fail(`cannot run cargo: ${build.error.message}`)
if (build.status !== 0) fail(`cargo build failed (exit ${build.status})`)

const file = { darwin: 'libodradek_node.dylib', win32: 'odradek_node.dll' }[process.platform] || 'libodradek_node.so'
const built = path.join(targetDir, profile, file)
if (!fs.existsSync(built)) fail(`cargo did not produce ${built}`)
// Copy then rename: a process that has the old addon loaded keeps its mapping intact.
const tmp = `${dest}.${process.pid}.tmp`
fs.copyFileSync(built, tmp)
fs.renameSync(tmp, dest)
console.error(`odradek: installed ${path.relative(process.cwd(), dest) || dest} (${profile})`)
