#!/usr/bin/env node
// The tests' global setup: builds `taskflow` from this checkout (or takes
// TASKFLOW_BIN), checks that the Redis the tests use answers (failing
// loudly when it does not), starts one `taskflow dev` on a free loopback
// port in a namespace of its own, runs the compiled tests (build/test/*.test.js)
// with node's test runner against it, stops it and deletes the namespace's keys.
//
//   node scripts/run-tests.mjs [test files...]   default: every *.test.js
//
// The tests read TASKFLOW_TEST_URL, TASKFLOW_TEST_ADMIN_KEY, TASKFLOW_TEST_REDIS_URL
// and TASKFLOW_TEST_NAMESPACE.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(here, '..');
const root = resolve(pkg, '../..');
const redisUrl = process.env.TASKFLOW_TEST_REDIS_URL || 'redis://127.0.0.1:6379/0';

function die(msg) {
  process.stderr.write(`sdk/typescript tests: ${msg}\n`);
  process.exit(1);
}

// Redis first: without it nothing below can pass, so say so plainly.
const probe = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
probe.on('error', () => {});
try {
  await probe.connect();
  await probe.ping();
} catch (e) {
  die(`no Redis answers at ${redisUrl} (${e.message}): start one, or set TASKFLOW_TEST_REDIS_URL`);
}

const work = mkdtempSync(join(tmpdir(), 'taskflow-sdk-ts-'));
let bin = process.env.TASKFLOW_BIN;
if (!bin) {
  bin = join(work, 'taskflow');
  const b = spawnSync('go', ['build', '-o', bin, './cmd/taskflow'], { cwd: root, stdio: 'inherit' });
  if (b.status !== 0) die('go build ./cmd/taskflow failed');
}

const port = await new Promise((res, rej) => {
  const s = createServer();
  s.on('error', rej);
  s.listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => res(port));
  });
});
const ns = `tsdk-${randomBytes(6).toString('hex')}`;
const adminKey = randomBytes(16).toString('hex');
const url = `http://127.0.0.1:${port}`;
// The external types the tests' services take (besides the example ones).
const externalTypes = [
  'data.analyze', 'data.export', 'document.process', 'report.generate', 'text.wordcount',
  'ts.echo', 'ts.slow', 'ts.fail', 'ts.file', 'ts.wait', 'ts.packed', 'greet',
].join(',');
const logFile = join(work, 'taskflow-dev.log');
const log = [];
const server = spawn(bin, ['dev', '--addr', `127.0.0.1:${port}`], {
  env: {
    ...process.env, REDIS_URL: redisUrl, TASKFLOW_NAMESPACE: ns, TASKFLOW_ADMIN_KEY: adminKey,
    TASKFLOW_EXTERNAL_TYPES: externalTypes, TASKFLOW_OUTPUT_DIR: join(work, 'output'),
    // a worker serves only the queues it is given: test/controls.test.ts submits to this one
    TASKFLOW_QUEUES: 'default,ts-sdk.q1',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
server.stdout.on('data', (b) => log.push(b));
server.stderr.on('data', (b) => log.push(b));
let exited = false;
server.on('exit', () => (exited = true));

async function cleanup() {
  if (!exited) {
    server.kill('SIGTERM');
    await new Promise((r) => {
      const t = setTimeout(() => { server.kill('SIGKILL'); r(); }, 10000);
      server.on('exit', () => { clearTimeout(t); r(); });
      if (exited) { clearTimeout(t); r(); }
    });
  }
  writeFileSync(logFile, Buffer.concat(log));
  // The namespace's keys only (never a flush: the server is shared).
  let cursor = '0';
  do {
    const [next, ks] = await probe.scan(cursor, 'MATCH', `{${ns}}*`, 'COUNT', 1000);
    cursor = next;
    if (ks.length > 0) await probe.unlink(...ks);
  } while (cursor !== '0');
  await probe.quit();
}

let ready = false;
for (let i = 0; i < 300 && !exited; i++) {
  try {
    const r = await fetch(`${url}/ready`);
    if (r.ok) { ready = true; break; }
  } catch { /* not listening yet */ }
  await new Promise((r) => setTimeout(r, 100));
}
if (!ready) {
  await cleanup();
  process.stderr.write(readFileSync(logFile, 'utf8'));
  die(`taskflow dev did not become ready on ${url}`);
}

const testDir = join(pkg, 'build', 'test');
let files = process.argv.slice(2);
if (files.length === 0) {
  files = readdirSync(testDir).filter((f) => f.endsWith('.test.js'))
    .map((f) => join(testDir, f));
}
const run = spawn(process.execPath, ['--test', '--test-concurrency=2', '--enable-source-maps', ...files], {
  cwd: pkg, stdio: 'inherit',
  env: {
    ...process.env, TASKFLOW_TEST_URL: url, TASKFLOW_TEST_ADMIN_KEY: adminKey,
    TASKFLOW_TEST_REDIS_URL: redisUrl, TASKFLOW_TEST_NAMESPACE: ns, TASKFLOW_TEST_BIN: bin,
  },
});
const code = await new Promise((r) => run.on('exit', (c, sig) => r(c ?? (sig ? 1 : 0))));
await cleanup();
if (code !== 0) process.stderr.write(`taskflow dev's log: ${logFile}\n`);
else rmSync(work, { recursive: true, force: true });
process.exit(code);
