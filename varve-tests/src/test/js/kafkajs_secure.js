#!/usr/bin/node
'use strict'
/*
 * A secured round trip of kafkajs, for varve-tests' NativeSecureClientsTest; the same records as
 * ../python/confluent_kafka_secure.py:
 *
 *   --bootstrap B --topic T --records N [--sasl mechanism:user:password] [--ca F] [--cert F --key F]
 *       Produces N records (value "secure-<i>-" followed by i % 200 bytes of "x") to partition 0 of T
 *       (acks=all), then reads partition 0 from the beginning until N records came back. --ca turns
 *       TLS on (trusting that PEM file); --cert/--key present a client certificate (mutual TLS).
 *
 * Prints JSON lines {"type": "produced", ...} and {"type": "consumed", "values": [...]}; exits 0 when
 * it ran to its end (the test judges), 2 when a step failed, with the error in a {"type": "error"} line.
 */
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

const DEADLINE_MS = 45000

function arg (name) {
  const i = process.argv.indexOf('--' + name)
  return i < 0 ? undefined : process.argv[i + 1]
}

async function main () {
  console.log(JSON.stringify({ type: 'client', client: 'kafkajs', version: require('kafkajs/package.json').version }))
  const records = parseInt(arg('records'), 10)
  const topic = arg('topic')
  const config = { clientId: 'secure-js', brokers: [arg('bootstrap')], logLevel: logLevel.ERROR, connectionTimeout: 10000 }
  if (arg('ca')) {
    config.ssl = { ca: [fs.readFileSync(arg('ca'), 'utf-8')], rejectUnauthorized: true }
    if (arg('cert')) {
      config.ssl.cert = fs.readFileSync(arg('cert'), 'utf-8')
      config.ssl.key = fs.readFileSync(arg('key'), 'utf-8')
    }
  }
  if (arg('sasl')) {
    const [mechanism, username, password] = arg('sasl').split(':')
    config.sasl = { mechanism, username, password }
  }
  const kafka = new Kafka(config)
  const producer = kafka.producer()
  await producer.connect()
  const messages = []
  for (let i = 0; i < records; i++) {
    messages.push({ value: 'secure-' + i + '-' + 'x'.repeat(i % 200), partition: 0 })
  }
  let delivered = 0
  for (let i = 0; i < messages.length; i += 100) {
    const acks = await producer.send({ topic, acks: -1, messages: messages.slice(i, i + 100) })
    delivered += Math.min(100, messages.length - i)
    void acks
  }
  await producer.disconnect()
  console.log(JSON.stringify({ type: 'produced', delivered }))

  const consumer = kafka.consumer({ groupId: 'secure-js' })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const values = []
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, DEADLINE_MS)
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        if (partition === 0) {
          values.push(message.value.toString())
        }
        if (values.length >= records) {
          clearTimeout(timer)
          resolve()
        }
      }
    })
  })
  await consumer.disconnect()
  console.log(JSON.stringify({ type: 'consumed', values }))
  console.log(JSON.stringify({ type: 'done' }))
}

main().then(() => process.exit(0), (e) => {
  console.log(JSON.stringify({ type: 'error', error: String(e && e.message ? e.message : e) }))
  process.exit(2)
})
