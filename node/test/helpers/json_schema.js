'use strict'
// The subset of JSON Schema (2020-12) that docs/statistics.schema.json uses: type, enum, const,
// required, properties, additionalProperties, $ref to #/$defs, allOf, if/then. Returns the list
// of violations (empty: valid), each with the JSON path where it was found.

function typeOk (type, v) {
  switch (type) {
    case 'object': return v !== null && typeof v === 'object' && !Array.isArray(v)
    case 'integer': return Number.isInteger(v)
    case 'string': return typeof v === 'string'
    case 'boolean': return typeof v === 'boolean'
    default: throw new Error(`schema type ${type} is not supported by this validator`)
  }
}

/** Validates `value` against `schema` (whose `$defs` `$ref`s resolve against `root`). */
function validate (value, schema, root = schema, path = '$', out = []) {
  if (schema.$ref) {
    const name = schema.$ref.replace('#/$defs/', '')
    return validate(value, root.$defs[name], root, path, out)
  }
  if (schema.type && !typeOk(schema.type, value)) {
    out.push(`${path}: expected ${schema.type}, got ${JSON.stringify(value)}`)
    return out
  }
  if (schema.enum && !schema.enum.includes(value)) out.push(`${path}: ${JSON.stringify(value)} not in ${schema.enum}`)
  if ('const' in schema && value !== schema.const) out.push(`${path}: expected ${schema.const}`)
  for (const key of schema.required || []) {
    if (!(key in value)) out.push(`${path}: missing ${key}`)
  }
  if (typeOk('object', value)) {
    for (const [key, v] of Object.entries(value)) {
      if (schema.properties && key in schema.properties) validate(v, schema.properties[key], root, `${path}.${key}`, out)
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        validate(v, schema.additionalProperties, root, `${path}.${key}`, out)
      }
    }
  }
  for (const sub of schema.allOf || []) validate(value, sub, root, path, out)
  if (schema.if && validate(value, schema.if, root, path, []).length === 0 && schema.then) {
    validate(value, schema.then, root, path, out)
  }
  return out
}

module.exports = { validate }
