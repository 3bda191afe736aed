// kafkajs 2.2.4 against a secured broker: SSL, mTLS, SASL_SSL with PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512 and OAUTHBEARER (an unsecured JWT), each a produce + group consume round trip,
// and a wrong password refused.
//   node tests/security/kafkajs_security.js LISTENERS_ENV PKIDIR
// (kafkajs from NODE_PATH, installed by run.sh). Prints one line per case and "OK" at the end.
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

const [, , envFile, pki] = process.argv;
const listeners = Object.fromEntries(
  fs.readFileSync(envFile, 'utf8').split('\n').filter(Boolean).map((l) => l.trim().split('=')),
);
const ca = [fs.readFileSync(`${pki}/ca.pem`, 'utf8')];

function unsecuredJwt(sub) {
  const enc = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  return `${enc({ alg: 'none' })}.${enc({ sub, iat: now, exp: now + 3600 })}.`;
}

function client(listener, sasl, extraSsl = {}) {
  return new Kafka({
    clientId: 'kafkajs-security',
    brokers: [listeners[listener]],
    ssl: { ca, ...extraSsl },
    sasl,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 10000,
    retry: { retries: 3 },
  });
}

async function roundTrip(what, kafka) {
  const topic = `kjs-sec-${Math.random().toString(16).slice(2, 10)}`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: [0, 1, 2, 3, 4].map((i) => ({ key: `k${i}`, value: `v${i}` })) });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: `g-${topic}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: consumed ${got}`)), 30000);
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value.toString());
        if (got.length === 5) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  console.log(`ok ${what}`);
}

(async () => {
  try {
    await roundTrip('SSL', client('SSL', undefined));
    await roundTrip('MTLS', client('MTLS', undefined, {
      cert: fs.readFileSync(`${pki}/client.pem`, 'utf8'),
      key: fs.readFileSync(`${pki}/client.key`, 'utf8'),
    }));
    for (const mechanism of ['plain', 'scram-sha-256', 'scram-sha-512']) {
      await roundTrip(`SASL_SSL ${mechanism}`, client('SASL_SSL', { mechanism, username: 'alice', password: 'alice-secret' }));
    }
    await roundTrip('SASL_SSL oauthbearer', client('SASL_SSL', {
      mechanism: 'oauthbearer',
      oauthBearerProvider: async () => ({ value: unsecuredJwt('alice') }),
    }));
    const bad = client('SASL_SSL', { mechanism: 'scram-sha-256', username: 'alice', password: 'wrong-secret-kjs' });
    const p = bad.producer();
    try {
      await p.connect();
      throw new Error('wrong password accepted');
    } catch (e) {
      if (!/SASL|[Aa]uthentication/.test(e.message)) throw e;
      console.log(`refused wrong password: ${e.message}`);
    }
    console.log('OK');
  } catch (e) {
    console.log(`FAIL ${e.stack || e}`);
    process.exit(1);
  }
})();
