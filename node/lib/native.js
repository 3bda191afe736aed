'use strict'
// Loads the native addon built by scripts/build.js (cargo build -p odradek-node).
const path = require('path')
const fs = require('fs')

const ADDON = process.env.ODRADEK_NODE_ADDON || path.join(__dirname, '..', 'odradek.node')

function load () {
  if (!fs.existsSync(ADDON)) {
    throw new Error(
      `odradek: native addon not found at ${ADDON}; build it with \`npm run build\` in the ` +
      'package directory (needs cargo), or reinstall the package on a machine with Rust'
    )
  }
  return require(ADDON)
}

module.exports = load()
