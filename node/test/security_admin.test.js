'use strict'
// ACL administration through KafkaJS's admin API (createAcls, describeAcls, deleteAcls and the
// AclResourceTypes / ResourcePatternTypes / AclOperationTypes / AclPermissionTypes enums)
// against the secured broker of tests/security/client.sh (skipped without it). Every scenario
// runs with odradek and with kafkajs itself, so the two behave alike: a super user denies a
// fresh principal writes to a topic, the principal's produce fails with
// TOPIC_AUTHORIZATION_FAILED, and succeeds again once the ACLs are deleted.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const LISTENERS = process.env.ODRADEK_SECURITY_LISTENERS
const PKI = process.env.ODRADEK_SECURITY_PKI
const skip = !(LISTENERS && PKI) && 'no secured broker (tests/security/client.sh sets one up)'

function listener (name) {
  const line = fs.readFileSync(LISTENERS, 'utf8').split('\n').find(l => l.startsWith(`${name}=`))
  assert.ok(line, `no ${name} listener`)
  return line.slice(name.length + 1).trim()
}
const ca = () => fs.readFileSync(path.join(PKI, 'ca.pem'), 'utf8')
const unique = (tag) => `node-acl-${tag}-${process.pid}-${Date.now()}`

function unsecuredJwt (sub) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url')
  const now = Math.floor(Date.now() / 1000)
  return `${b64({ alg: 'none' })}.${b64({ sub, iat: now, exp: now + 600 })}.`
}

const superUser = () => ({
  brokers: [listener('SASL_SSL')],
  ssl: { ca: [ca()] },
  sasl: { mechanism: 'scram-sha-512', username: 'admin', password: 'admin-secret' }
})
const asPrincipal = (name) => ({
  brokers: [listener('SASL_SSL')],
  ssl: { ca: [ca()] },
  sasl: { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: unsecuredJwt(name) }) }
})

async function produce (lib, config, topic) {
  const kafka = new lib.Kafka({ clientId: 'acl-test', logLevel: 0, retry: { retries: 0 }, ...config })
  const producer = kafka.producer({ retry: { retries: 0 } })
  await producer.connect()
  try {
    await producer.send({ topic, acks: -1, messages: [{ value: 'v', partition: 0 }] })
    return null
  } catch (e) {
    return e
  } finally {
    await producer.disconnect()
  }
}

async function until (check, what, ms = 20000) {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value) return value
    assert.ok(Date.now() < deadline, what)
    await new Promise(resolve => setTimeout(resolve, 200))
  }
}

const byName = (a, b) => (a.operation - b.operation) || (a.permissionType - b.permissionType)

for (const name of ['odradek', 'kafkajs']) {
  const lib = require(name === 'odradek' ? '..' : 'kafkajs')
  const { AclResourceTypes: R, ResourcePatternTypes: P, AclOperationTypes: O, AclPermissionTypes: M } = lib

  test(`${name}: ACLs are created, described, enforced and deleted`, { skip }, async () => {
    const admin = new lib.Kafka({ clientId: 'acl-admin', logLevel: 0, ...superUser() }).admin()
    await admin.connect()
    const topic = unique('t')
    await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] })
    const user = unique('u')
    const principal = `User:${user}`
    assert.equal(await produce(lib, asPrincipal(user), topic), null)

    const entry = (operation, permissionType) => ({
      resourceType: R.TOPIC, resourceName: topic, resourcePatternType: P.LITERAL, principal, host: '*', operation, permissionType
    })
    const wanted = [entry(O.DESCRIBE, M.ALLOW), entry(O.WRITE, M.DENY)]
    assert.equal(await admin.createAcls({ acl: wanted }), true)

    const mine = { resourceType: R.ANY, resourcePatternType: P.ANY, principal, operation: O.ANY, permissionType: M.ANY }
    // Kafka answers createAcls/deleteAcls before every broker's authorizer has applied the change
    // from its metadata log: a describe right after may still see the old set, so ask until it settles.
    const described = await until(async () => {
      const found = await admin.describeAcls(mine)
      return found.resources.length === 1 && found.resources[0].acls.length === 2 && found
    }, 'the created ACLs are never described')
    assert.equal(described.resources.length, 1)
    const [resource] = described.resources
    assert.deepEqual(
      { resourceType: resource.resourceType, resourceName: resource.resourceName, resourcePatternType: resource.resourcePatternType },
      { resourceType: R.TOPIC, resourceName: topic, resourcePatternType: P.LITERAL })
    assert.deepEqual(resource.acls.sort(byName), [
      { principal, host: '*', operation: O.DESCRIBE, permissionType: M.ALLOW },
      { principal, host: '*', operation: O.WRITE, permissionType: M.DENY }
    ].sort(byName))

    const err = await until(() => produce(lib, asPrincipal(user), topic), 'the DENY was not enforced')
    assert.equal(err.type, 'TOPIC_AUTHORIZATION_FAILED', String(err))
    assert.equal(await produce(lib, superUser(), topic), null)

    const deleted = await admin.deleteAcls({ filters: [mine] })
    assert.equal(deleted.filterResponses.length, 1)
    assert.equal(deleted.filterResponses[0].errorCode, 0)
    const matched = deleted.filterResponses[0].matchingAcls.map(({ errorCode, errorMessage, ...acl }) => {
      assert.equal(errorCode, 0)
      return acl
    })
    assert.deepEqual(matched.sort(byName), [...wanted].sort(byName))
    await until(async () => (await admin.describeAcls(mine)).resources.length === 0, 'the deleted ACLs are still described')
    await until(async () => (await produce(lib, asPrincipal(user), topic)) === null, 'still denied after the ACLs were deleted')
    await admin.deleteTopics({ topics: [topic] })
    await admin.disconnect()
  })

  test(`${name}: ACL input is checked before anything is sent`, { skip }, async () => {
    const admin = new lib.Kafka({ clientId: 'acl-admin', logLevel: 0, ...superUser() }).admin()
    await admin.connect()
    const ok = { resourceType: R.TOPIC, resourceName: 't', resourcePatternType: P.LITERAL, principal: 'User:a', host: '*', operation: O.READ, permissionType: M.ALLOW }
    await assert.rejects(admin.createAcls({ acl: [] }), { name: 'KafkaJSNonRetriableError', message: 'Empty ACL array' })
    await assert.rejects(admin.createAcls({ acl: [{ ...ok, operation: 99 }] }), { name: 'KafkaJSNonRetriableError', message: /Invalid operation type 99/ })
    await assert.rejects(admin.createAcls({ acl: [{ ...ok, principal: 7 }] }), { name: 'KafkaJSNonRetriableError', message: /principals have to be a valid string/ })
    await assert.rejects(admin.describeAcls({ ...ok, resourcePatternType: 9 }), { name: 'KafkaJSNonRetriableError', message: /Invalid resource pattern/ })
    await assert.rejects(admin.deleteAcls({ filters: 'x' }), { name: 'KafkaJSNonRetriableError', message: /Invalid ACL Filter array/ })
    // A principal that is not Type:name is refused for that ACL.
    await assert.rejects(admin.createAcls({ acl: [{ ...ok, principal: 'nobody' }] }), (e) => e.type === 'INVALID_REQUEST')
    await admin.disconnect()
  })
}
