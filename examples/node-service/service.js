// A taskflow external service in Node, written against docs/protocol.md with
// nothing but the `redis` client: it takes text.wordcount tasks from
// agent:stream:task.create through the consumer group wordcount-service-group,
// reports progress, and publishes task.completed or task.failed.
//
//   REDIS_URL=redis://127.0.0.1:6379 TASKFLOW_NAMESPACE=taskflow node service.js
//
// Every Redis command is sent as a raw command, so this file doubles as a
// worked example of the protocol for any other language.
'use strict';

const crypto = require('node:crypto');
const os = require('node:os');
const { createClient } = require('redis');

const NS = process.env.TASKFLOW_NAMESPACE || 'taskflow';
const SERVICE = process.env.SERVICE_NAME || 'wordcount-service';
const TYPES = ['text.wordcount'];
const CONSUMER = process.env.CONSUMER || `${SERVICE}-worker-${os.hostname()}-${process.pid}`;
const GROUP = `${SERVICE}-group`;
// Entries taken per read; they are handled one after the other, and this is
// also the concurrency the service publishes when it registers (the agent
// keeps at most the live instances' total of its tasks in flight).
const CONCURRENCY = 5;
const P = `{${NS}}:`;
const K = {
  create: P + 'agent:stream:task.create',
  completed: P + 'agent:stream:task.completed',
  failed: P + 'agent:stream:task.failed',
  progress: P + 'agent:stream:task.progress',
  services: P + 'agent:services',
  service: P + 'agent:service:' + SERVICE,
  taskTypes: P + 'agent:task-types',
};
// What the service publishes about each of its types when it registers
// (docs/protocol.md, "Publishing a task type"): the API checks a submit's
// params against params_schema (422 naming the field), lists it at
// GET /api/v1/task-types, and the MCP server makes a tool of it.
const SPECS = {
  'text.wordcount': {
    service: SERVICE,
    description: 'Counts the words of a text and lists its most frequent ones (the Node example service).',
    params_schema: {
      type: 'object',
      properties: {
        text: { type: 'string', maxLength: 1 << 20, description: 'the text whose words are counted' },
      },
      required: ['text'],
      additionalProperties: false,
    },
    notify: 'Your word count is ready',
  },
};
const RETENTION_MS = 7 * 24 * 3600 * 1000;
const BLOCK_MS = Number(process.env.BLOCK_MS || 1000);
const HEARTBEAT_MS = Number(process.env.HEARTBEAT_MS || 2000);
const CLAIM_IDLE_MS = Number(process.env.CLAIM_IDLE_MS || 15000);

const now = () => new Date();
// The protocol's timestamp (docs/protocol.md): UTC, milliseconds, Z.
const ts = (d) => d.toISOString();

function log(level, msg, fields) {
  const kv = Object.entries(fields || {}).map(([k, v]) => `${k}=${v}`).join(' ');
  process.stderr.write(`[${level}] ${msg}${kv ? ': ' + kv : ''}\n`);
}

// fields turns a stream entry's flat [f1, v1, f2, v2, ...] into an object.
function fields(flat) {
  const o = {};
  for (let i = 0; i + 1 < flat.length; i += 2) o[flat[i]] = flat[i + 1];
  return o;
}

async function publish(client, stream, type, data) {
  const minId = `${Math.max(0, Date.now() - RETENTION_MS)}-0`;
  const eventId = crypto.randomUUID();
  await client.sendCommand(['XADD', stream, 'MINID', '~', minId, '*',
    'event_id', eventId, 'event_type', type, 'timestamp', ts(now()), 'data', JSON.stringify(data)]);
  return eventId;
}

// wordcount is the work: statistics of params.text.
function wordcount(params) {
  if (!params || typeof params.text !== 'string' || params.text.trim() === '') {
    const err = new Error('params.text: required (a non-empty string)');
    err.code = 'INVALID_PARAMS';
    err.retryable = false;
    throw err;
  }
  const words = params.text.toLowerCase().match(/[\p{L}\p{N}']+/gu) || [];
  const counts = new Map();
  for (const w of words) counts.set(w, (counts.get(w) || 0) + 1);
  const top = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 5);
  return {
    file_url: '',
    summary: `${words.length} words, ${counts.size} distinct`,
    metadata: {
      words: words.length,
      distinct: counts.size,
      lines: params.text.split('\n').length,
      top_words: top.map(([word, count]) => ({ word, count })),
    },
  };
}

// handle runs one task.create entry and publishes its outcome; it returns
// the entry's id once it may be acknowledged (main acknowledges the entries
// of a read together, after every outcome of them is written).
async function handle(client, entryId, flat) {
  if (flat === null) return entryId; // deleted while pending
  const ev = fields(flat);
  let data;
  try {
    data = JSON.parse(ev.data);
  } catch (e) {
    log('WARN', 'malformed task.create skipped', { entry: entryId });
    return entryId;
  }
  if (ev.event_type !== 'task.create' || !TYPES.includes(data.task_type)) {
    return entryId; // not ours
  }
  const started = Date.now();
  // Tracing without an OpenTelemetry dependency (docs/protocol.md#tracing):
  // log the task's trace id, echo its traceparent in the outcome so the
  // agent's apply joins the task's trace. A service with an OTel SDK would
  // instead extract it and run the work in a child span.
  const tp = /^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(data.traceparent || '');
  const traceparent = tp ? data.traceparent : undefined; // undefined: left out of the JSON
  const trace = tp ? { trace_id: tp[1] } : {};
  log('INFO', 'Task processing', { task_id: data.task_id, service: SERVICE, ...trace });
  await publish(client, K.progress, 'task.progress',
    { task_id: data.task_id, percent: 0, message: 'counting', reported_by: SERVICE, token: data.token || '' });
  try {
    const result = wordcount(data.params);
    await publish(client, K.completed, 'task.completed', {
      task_id: data.task_id, status: 'success', result, duration_ms: Date.now() - started,
      completed_by: SERVICE, token: data.token || '', traceparent,
    });
    log('INFO', 'Task completed', { task_id: data.task_id, duration: Date.now() - started, ...trace });
  } catch (e) {
    await publish(client, K.failed, 'task.failed', {
      task_id: data.task_id, status: 'failed',
      error: { code: e.code || 'INTERNAL_ERROR', message: String(e.message), details: {}, retryable: !!e.retryable },
      duration_ms: Date.now() - started, failed_by: SERVICE, token: data.token || '', traceparent,
    });
    log('ERROR', 'Task failed', { task_id: data.task_id, error: e.code || 'INTERNAL_ERROR', ...trace });
  }
  return entryId; // its outcome is published: it may be acknowledged
}

async function register(client) {
  for (const [type, spec] of Object.entries(SPECS)) {
    await client.sendCommand(['HSET', K.taskTypes, type, JSON.stringify(spec)]);
  }
  await client.sendCommand(['SADD', K.services, SERVICE]);
  const now = Date.now();
  await client.sendCommand(['HSET', K.service, 'types', TYPES.join(','), 'consumer', CONSUMER,
    'heartbeat_ms', String(now), `concurrency:${CONSUMER}`, `${CONCURRENCY} ${now + 3 * HEARTBEAT_MS}`]);
  await client.sendCommand(['PEXPIRE', K.service, String(3 * HEARTBEAT_MS)]);
}

async function main() {
  const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const client = createClient({ url });
  client.on('error', (e) => log('ERROR', 'redis', { err: e.message }));
  await client.connect();
  const reader = client.duplicate(); // blocking reads get their own connection
  await reader.connect();

  try {
    await client.sendCommand(['XGROUP', 'CREATE', K.create, GROUP, '0', 'MKSTREAM']);
  } catch (e) {
    if (!String(e.message).startsWith('BUSYGROUP')) throw e;
  }
  await register(client);
  const hb = setInterval(() => register(client).catch((e) => log('WARN', 'heartbeat', { err: e.message })), HEARTBEAT_MS);

  let stopping = false;
  const stop = () => { stopping = true; };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  log('INFO', 'service started', { service: SERVICE, consumer: CONSUMER, types: TYPES.join(',') });
  process.stdout.write(`ready ${CONSUMER}\n`);

  while (!stopping) {
    // First take over entries a dead consumer left pending, then read new ones.
    const claimed = await client.sendCommand(['XAUTOCLAIM', K.create, GROUP, CONSUMER, String(CLAIM_IDLE_MS), '0-0', 'COUNT', String(CONCURRENCY)]);
    let entries = (claimed && claimed[1]) || [];
    if (entries.length === 0) {
      const res = await reader.sendCommand(['XREADGROUP', 'GROUP', GROUP, CONSUMER, 'COUNT', String(CONCURRENCY), 'BLOCK', String(BLOCK_MS),
        'STREAMS', K.create, '>']);
      entries = res ? res[0][1] : [];
    }
    // The read's tasks together (node-redis sends the commands of one tick
    // as one pipeline), then one XACK for all of them: an entry is
    // acknowledged only after its outcome is written (docs/protocol.md,
    // step 7, in bulk). A failed publish throws before any acknowledgement.
    const done = await Promise.all(entries.map(([id, flat]) => handle(client, id, flat)));
    if (done.length > 0) await client.sendCommand(['XACK', K.create, GROUP, ...done]);
  }
  clearInterval(hb);
  log('INFO', 'service stopped', { service: SERVICE });
  await reader.quit();
  await client.quit();
}

main().catch((e) => {
  log('ERROR', 'fatal', { err: e.stack || e.message });
  process.exit(1);
});
