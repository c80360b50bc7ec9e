#!/usr/bin/node
'use strict'
/*
 * Transactional producers of kafkajs against a broker, for varve-tests' NativeTransactionalClientsTest.
 * The same modes and the same records as ../python/confluent_kafka_transactions.py:
 *
 *   transactions --bootstrap B --topic T --partitions P --transactional-id ID --transactions N
 *                --records R --abort 1,4,7
 *       N transactions of R records each (sent in two halves, so a partition gets several batches
 *       per transaction); record r of transaction t goes to partition (7t + r) % P; the transactions
 *       in --abort are aborted after their records were acknowledged, the others committed.
 *   fencing      --bootstrap B --topic T --partitions P --transactional-id ID --then produce|commit
 *       Producer A opens a transaction and writes records; producer B initialises with the same id
 *       (fencing A) and commits its own records; A then sends more and tries to commit
 *       (--then produce), or tries to commit at once (--then commit).
 *   ctp          --bootstrap B --input I --output O --group G --transactional-id ID --expected N
 *       Consume-transform-produce with kafkajs' group consumer (read_committed, no auto commit):
 *       each batch is written transformed to O (same partition) with its offsets committed through
 *       transaction.sendOffsets. The first transaction is aborted on purpose and the consumer seeks
 *       back to where the batch began, as an application does after an abort. Runs until every
 *       record was processed and the group's offsets, committed in transactions (the last ones may
 *       hold offsets alone: positions that moved past transaction markers), reach the input's end.
 *
 * Results go to stdout as JSON lines (a "type" field each); kafkajs' own log goes to stderr.
 * Exits 0 when the mode ran to its end, whatever the broker answered (the test judges the answers).
 */
const { Kafka, logLevel } = require('kafkajs')

const OP_TIMEOUT_MS = 30000
const RUN_DEADLINE_MS = 60000

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

function log(msg) {
  process.stderr.write(`kafkajs_transactions: ${msg}\n`)
}

function parseArgs(argv) {
  const args = { mode: argv[0] }
  for (let i = 1; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) {
      throw new Error(`bad argument ${argv[i]}`)
    }
    args[argv[i].slice(2)] = argv[i + 1]
  }
  return args
}

function recordKey(prefix, t, r) {
  return Buffer.from(`${prefix}-k-${t}-${r}`, 'ascii')
}

/** Text, a separator and r % 23 bytes of every value (0x00 and 0xff included), so bytes are compared. */
function recordValue(prefix, t, r) {
  const text = Buffer.from(`${prefix}-t${String(t).padStart(2, '0')}-r${String(r).padStart(2, '0')}|`, 'ascii')
  const tail = Buffer.alloc(r % 23)
  for (let i = 0; i < tail.length; i++) {
    tail[i] = (t * 31 + r * 7 + i) % 256
  }
  return Buffer.concat([text, tail])
}

function errorInfo(e) {
  return {
    name: e.name,
    type: e.type === undefined ? null : e.type,
    code: e.code === undefined ? null : e.code,
    retriable: e.retriable === undefined ? null : e.retriable,
    message: e.message,
    cause: e.originalError ? errorInfo(e.originalError) : e.cause ? errorInfo(e.cause) : null,
  }
}

/** Fails after ms: every broker wait is bounded, so a broker that stops answering fails the run. */
function within(ms, what, promise) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

function client(args, clientId) {
  const toStderr = () => ({ namespace, level, label, log: entry }) => {
    const { message, ...extra } = entry
    process.stderr.write(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
  }
  return new Kafka({
    clientId,
    brokers: [args.bootstrap],
    logLevel: logLevel.WARN,
    logCreator: toStderr,
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2000 },
  })
}

function transactionalProducer(kafka, transactionalId) {
  return kafka.producer({
    transactionalId,
    idempotent: true,
    maxInFlightRequests: 1,
    transactionTimeout: 60000,
    // Unlimited, as kafkajs wants for an idempotent producer; every call is bounded by within() instead.
    retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 100, maxRetryTime: 1000 },
  })
}

/** Records as [{partition, key, value}], and the (partition, offset) each landed at from the send results. */
async function sendTracked(txn, topic, records, prefix, t) {
  const results = await within(OP_TIMEOUT_MS, 'send', txn.send({ topic, acks: -1, messages: records.map(x => x.message) }))
  // One batch per partition per send, in the order given: record i of partition p is at baseOffset + i.
  const base = new Map()
  for (const res of results) {
    if (res.errorCode !== 0) {
      throw new Error(`send to ${res.topicName}[${res.partition}] answered error ${res.errorCode}`)
    }
    base.set(res.partition, Number(res.baseOffset))
  }
  const seen = new Map()
  for (const x of records) {
    const p = x.message.partition
    const i = seen.get(p) || 0
    seen.set(p, i + 1)
    emit({ type: 'delivered', prefix, t, r: x.r, partition: p, offset: base.get(p) + i })
  }
}

async function modeTransactions(args) {
  const partitions = Number(args.partitions)
  const records = Number(args.records)
  const aborted = new Set((args.abort || '').split(',').filter(x => x).map(Number))
  const kafka = client(args, 'kafkajs-transactions')
  const producer = transactionalProducer(kafka, args['transactional-id'])
  await within(OP_TIMEOUT_MS, 'connect', producer.connect())
  for (let t = 0; t < Number(args.transactions); t++) {
    const all = []
    for (let r = 0; r < records; r++) {
      all.push({ r, message: { partition: (7 * t + r) % partitions, key: recordKey('txn', t, r), value: recordValue('txn', t, r) } })
    }
    const txn = await within(OP_TIMEOUT_MS, 'transaction', producer.transaction())
    const half = Math.floor(records / 2)
    await sendTracked(txn, args.topic, all.slice(0, half), 'txn', t)
    await sendTracked(txn, args.topic, all.slice(half), 'txn', t)
    if (aborted.has(t)) {
      await within(OP_TIMEOUT_MS, 'abort', txn.abort())
      emit({ type: 'transaction', t, outcome: 'aborted' })
    } else {
      await within(OP_TIMEOUT_MS, 'commit', txn.commit())
      emit({ type: 'transaction', t, outcome: 'committed' })
    }
  }
  await producer.disconnect()
  emit({ type: 'done', errors: [] })
}

async function modeFencing(args) {
  const partitions = Number(args.partitions)
  const kafka = client(args, 'kafkajs-fencing')
  const batch = prefix => {
    const out = []
    for (let r = 0; r < partitions; r++) {
      out.push({ r, message: { partition: r, key: recordKey(prefix, 0, r), value: recordValue(prefix, 0, r) } })
    }
    return out
  }
  const a = transactionalProducer(kafka, args['transactional-id'])
  await within(OP_TIMEOUT_MS, 'connect a', a.connect())
  const txnA = await a.transaction()
  await sendTracked(txnA, args.topic, batch('a-open'), 'a-open', 0)
  emit({ type: 'step', step: 'a-open-flushed' })

  // B takes over the transactional id: the coordinator bumps the epoch and aborts A's transaction.
  const b = transactionalProducer(kafka, args['transactional-id'])
  await within(OP_TIMEOUT_MS, 'connect b', b.connect())
  const txnB = await b.transaction()
  await sendTracked(txnB, args.topic, batch('b'), 'b', 0)
  await within(OP_TIMEOUT_MS, 'commit b', txnB.commit())
  emit({ type: 'step', step: 'b-committed' })

  // A, fenced, goes on with its transaction (--then produce: more records, then the commit;
  // --then commit: the commit alone): whatever it sends must fail.
  let produceError = null
  let commitError = null
  if (args.then !== 'commit') {
    try {
      await sendTracked(txnA, args.topic, batch('a-late'), 'a-late', 0)
    } catch (e) {
      produceError = errorInfo(e)
    }
  }
  try {
    await within(OP_TIMEOUT_MS, 'commit a', txnA.commit())
  } catch (e) {
    commitError = errorInfo(e)
  }
  emit({ type: 'fenced', produce_error: produceError, commit_error: commitError })
  await a.disconnect().catch(e => log(`disconnect a: ${e}`))
  await b.disconnect()
  emit({ type: 'done', errors: [] })
}

async function modeCtp(args) {
  const expected = Number(args.expected)
  const kafka = client(args, 'kafkajs-ctp')
  const producer = transactionalProducer(kafka, args['transactional-id'])
  const consumer = kafka.consumer({
    groupId: args.group,
    readUncommitted: false,
    sessionTimeout: 6000,
    heartbeatInterval: 1000,
    maxWaitTimeInMs: 200,
  })
  const admin = kafka.admin()
  await within(OP_TIMEOUT_MS, 'connect producer', producer.connect())
  await within(OP_TIMEOUT_MS, 'connect consumer', consumer.connect())
  await within(OP_TIMEOUT_MS, 'connect admin', admin.connect())
  await consumer.subscribe({ topic: args.input, fromBeginning: true })

  let processed = 0
  let transactions = 0
  let abortedOnPurpose = false
  let failure = null
  const positions = {} // partition -> next offset to read, as far as processed (or skipped) records go
  const committed = {} // partition -> offset committed in a transaction
  // One transaction at a time: eachBatch and the offsets-only commits below share the producer.
  let chain = Promise.resolve()
  const serial = fn => {
    const next = chain.then(fn)
    chain = next.catch(() => {})
    return next
  }

  // A fetch that held only transaction markers (or aborted records) never reaches eachBatch: kafkajs
  // moves past it itself. Its end still counts as consumed, and the group must commit it.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.batchSize === 0 && payload.lastOffset !== null) {
      positions[payload.partition] = Math.max(positions[payload.partition] || 0, Number(payload.lastOffset) + 1)
    }
  })

  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => serial(async () => {
      if (!isRunning() || isStale() || batch.messages.length === 0 || failure !== null) {
        return
      }
      try {
        const next = Number(batch.lastOffset()) + 1
        const txn = await producer.transaction()
        await within(OP_TIMEOUT_MS, 'send', txn.send({
          topic: args.output,
          messages: batch.messages.map(m => ({ partition: batch.partition, key: m.key, value: Buffer.concat([Buffer.from('out:'), m.value]) })),
        }))
        await within(OP_TIMEOUT_MS, 'sendOffsets', txn.sendOffsets({
          consumerGroupId: args.group,
          topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: String(next) }] }],
        }))
        if (!abortedOnPurpose) {
          // Neither this output nor these offsets may count: abort, then read the batch again.
          abortedOnPurpose = true
          await within(OP_TIMEOUT_MS, 'abort', txn.abort())
          emit({ type: 'transaction', outcome: 'aborted', records: batch.messages.length, offsets: { [batch.partition]: next } })
          consumer.seek({ topic: batch.topic, partition: batch.partition, offset: batch.firstOffset() })
          return
        }
        await within(OP_TIMEOUT_MS, 'commit', txn.commit())
        transactions += 1
        processed += batch.messages.length
        positions[batch.partition] = Math.max(positions[batch.partition] || 0, next)
        committed[batch.partition] = next
        resolveOffset(batch.lastOffset())
        emit({ type: 'transaction', outcome: 'committed', records: batch.messages.length, offsets: { [batch.partition]: next } })
        await heartbeat()
      } catch (e) {
        failure = failure || e
      }
    }),
  })

  // Until every record is processed and the group's offsets reach the input's end: positions that
  // moved past markers after the last record are committed in transactions of offsets alone.
  const deadline = Date.now() + RUN_DEADLINE_MS
  for (;;) {
    if (failure !== null) {
      throw failure
    }
    if (Date.now() > deadline) {
      throw new Error(`${processed} of ${expected} records processed, offsets ${JSON.stringify(committed)} committed within ${RUN_DEADLINE_MS} ms`)
    }
    if (processed >= expected) {
      const ends = await within(OP_TIMEOUT_MS, 'fetchTopicOffsets', admin.fetchTopicOffsets(args.input))
      if (ends.every(e => committed[e.partition] === Number(e.high))) {
        break
      }
      await serial(async () => {
        const moved = Object.keys(positions).map(Number).filter(p => positions[p] !== committed[p])
        if (moved.length === 0) {
          return
        }
        const txn = await producer.transaction()
        await within(OP_TIMEOUT_MS, 'sendOffsets', txn.sendOffsets({
          consumerGroupId: args.group,
          topics: [{ topic: args.input, partitions: moved.map(p => ({ partition: p, offset: String(positions[p]) })) }],
        }))
        await within(OP_TIMEOUT_MS, 'commit', txn.commit())
        transactions += 1
        const offsets = {}
        moved.forEach(p => { committed[p] = positions[p]; offsets[p] = positions[p] })
        emit({ type: 'transaction', outcome: 'committed', records: 0, offsets })
      })
    }
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  await consumer.disconnect()
  await producer.disconnect()
  await admin.disconnect()
  emit({ type: 'done', processed, transactions, errors: [] })
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  emit({ type: 'client', client: 'kafkajs', version: require('kafkajs/package.json').version })
  const modes = { transactions: modeTransactions, fencing: modeFencing, ctp: modeCtp }
  if (!modes[args.mode]) {
    throw new Error(`unknown mode ${args.mode}`)
  }
  await modes[args.mode](args)
}

main().then(() => process.exit(0), e => {
  log(`failed: ${e && e.stack ? e.stack : e}`)
  emit({ type: 'failed', error: errorInfo(e) })
  process.exit(1)
})
