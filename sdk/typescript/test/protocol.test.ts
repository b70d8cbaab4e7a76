// The service SDK's side of docs/protocol.md, driven through Redis
// directly (no agent involved): entries written by hand into task.create,
// what the service leaves in the streams and the group checked.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';

import { keys, sse, type Service } from '../src/index.js';
import { namespace, redis, service, start, until } from './env.js';

const k = keys(namespace);
const rdb = redis();
after(() => rdb.quit());

/** create writes a task.create entry as the agent does, answering its id. */
async function create(data: Record<string, unknown>, raw?: Record<string, string>): Promise<string> {
  const fields = raw ?? {
    event_id: randomUUID(), event_type: 'task.create', timestamp: new Date().toISOString(),
    data: JSON.stringify({ session_id: 's', timeout: 30, priority: 'normal', created_by: 'agent', attempt: 1, ...data }),
  };
  return (await rdb.xadd(k.create, '*', ...Object.entries(fields).flat()))!;
}

/** outcome finds the task's event in task.completed or task.failed. */
async function outcome(taskId: string): Promise<{ stream: 'completed' | 'failed'; data: Record<string, any> } | undefined> {
  for (const stream of ['completed', 'failed'] as const) {
    for (const [, f] of await rdb.xrange(k[stream], '-', '+')) {
      const d = JSON.parse(f[f.indexOf('data') + 1]!);
      if (d.task_id === taskId) return { stream, data: d };
    }
  }
  return undefined;
}

/** fresh answers a service name and a task type no other test uses: a new group starts at 0 and reads every earlier entry. */
function fresh(): { name: string; type: string } {
  const tag = randomUUID().slice(0, 8);
  return { name: `ts-proto-${tag}`, type: `ts.p${tag}` };
}

async function pending(group: string): Promise<number> {
  return ((await rdb.xpending(k.create, group)) as [number])[0];
}

describe('Protocol', () => {
  test('Malformed entries and other types are acknowledged and skipped; the service keeps serving', async () => {
    // Its group starts at 0: create the entries first, so they are read together.
    const { name, type } = fresh();
    await create({}, { event_id: 'x', event_type: 'task.create', timestamp: 'now', data: '{not json' });
    await create({}, { event_id: 'x', event_type: 'task.create', timestamp: 'now', data: '[1,2]' });
    await create({}, { event_id: 'x', event_type: 'task.create', timestamp: 'now', data: `{"task_type":"${type}"}` });
    await create({ task_id: 'other-1', task_type: 'someone.else' });
    await create({}, { event_id: 'x', event_type: 'task.progress', timestamp: 'now', data: '{"task_id":"p"}' });
    const good = `good-${randomUUID()}`;
    await create({ task_id: good, task_type: type, params: { n: 2 }, token: 'tok-1', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
    const seen: unknown[] = [];
    const svc = service({ name }).task(type, (t) => {
      seen.push(t.params);
      return { summary: 'ok' };
    });
    const { stop } = await start(svc);
    try {
      await until(10000, async () => (await outcome(good)) !== undefined);
      const o = (await outcome(good))!;
      assert.equal(o.stream, 'completed');
      assert.equal(o.data.token, 'tok-1', 'the fencing token is echoed');
      assert.equal(o.data.completed_by, name);
      assert.equal(o.data.traceparent, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
      assert.deepEqual(seen, [{ n: 2 }]);
      await until(5000, async () => (await pending(`${name}-group`)) === 0, () => 'entries left pending');
    } finally {
      await stop();
    }
  });

  test('Claims the entries a dead consumer left pending', async () => {
    const { name, type } = fresh();
    const group = `${name}-group`;
    await rdb.xgroup('CREATE', k.create, group, '$', 'MKSTREAM');
    const id = `claimed-${randomUUID()}`;
    await create({ task_id: id, task_type: type });
    // A consumer that reads the entry and dies.
    const read = await rdb.xreadgroup('GROUP', group, 'dead-consumer', 'COUNT', 10, 'STREAMS', k.create, '>') as [string, unknown[]][];
    assert.equal(read[0]![1].length, 1);
    const svc = service({ name, claimIdleMs: 1100, heartbeatMs: 500 }).task(type, () => ({ summary: 'claimed' }));
    const { stop } = await start(svc);
    try {
      await until(10000, async () => (await outcome(id)) !== undefined, () => 'the dead consumer\'s entry was never claimed');
      await until(5000, async () => (await pending(group)) === 0);
    } finally {
      await stop();
    }
  });

  test('A cancel that comes before the task.create fails it CANCELLED without running it', async () => {
    const { name, type } = fresh();
    let ran = 0;
    const svc = service({ name }).task(type, () => {
      ran++;
      return {};
    });
    const { stop } = await start(svc);
    try {
      const id = `cancelled-${randomUUID()}`;
      await rdb.xadd(k.cancel, '*', 'event_id', randomUUID(), 'event_type', 'task.cancel', 'timestamp', new Date().toISOString(),
        'data', JSON.stringify({ task_id: id, reason: 'cancelled' }));
      await new Promise((r) => setTimeout(r, 300)); // the cancel reader has it
      await create({ task_id: id, task_type: type, token: 't' });
      await until(10000, async () => (await outcome(id)) !== undefined);
      const o = (await outcome(id))!;
      assert.equal(o.stream, 'failed');
      assert.equal(o.data.error.code, 'CANCELLED');
      assert.equal(o.data.error.retryable, false);
      assert.equal(ran, 0);
    } finally {
      await stop();
    }
  });

  test('A stop past its grace leaves the running task pending for another worker, with no outcome', async () => {
    const { name, type } = fresh();
    let started!: () => void;
    const isRunning = new Promise<void>((r) => (started = r));
    const svc: Service = service({ name, graceMs: 200 }).task(type, async (t) => {
      started();
      await new Promise((r) => setTimeout(r, 10_000));
      return { late: true, aborted: t.signal.aborted };
    });
    const { stop } = await start(svc);
    const id = `stopped-${randomUUID()}`;
    await create({ task_id: id, task_type: type });
    await isRunning;
    const t0 = Date.now();
    await stop();
    assert.ok(Date.now() - t0 < 3000, `stop took ${Date.now() - t0} ms (grace 200 ms)`);
    assert.equal(await outcome(id), undefined);
    assert.equal(await pending(`${name}-group`), 1, 'the entry stays pending: another worker claims it');
    const reg = await rdb.hgetall(k.service(name));
    assert.equal(reg.types, type, 'the registration is left to expire (other instances may run)');
  });

  test('Heartbeats keep a long task\'s entry from being claimed', async () => {
    const { name, type } = fresh();
    const runs: string[] = [];
    const mk = (consumer: string) => service({ name, consumer, claimIdleMs: 1100, heartbeatMs: 300 }).task(type, async () => {
      runs.push(consumer);
      await new Promise((r) => setTimeout(r, 2500));
      return {};
    });
    const a = await start(mk('a'));
    const id = `long-${randomUUID()}`;
    await create({ task_id: id, task_type: type });
    await until(5000, () => runs.length === 1);
    const b = await start(mk('b')); // would claim the entry were it idle past 1.1 s
    try {
      await until(10000, async () => (await outcome(id)) !== undefined);
      assert.deepEqual(runs, ['a'], 'run once, by the consumer that holds it');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});

describe('sse', () => {
  test('Gives the same events however the stream is split', async () => {
    const text = ': hello\n\nid: 1-0\nevent: notification\ndata: {"a":1}\n\nid: 2-0\nevent: notification\ndata: {"b":\r\ndata: 2}\r\n\r\nevent: shutdown\r\ndata: bye\n\n';
    const want = [
      { id: '1-0', event: 'notification', data: '{"a":1}' },
      { id: '2-0', event: 'notification', data: '{"b":\n2}' },
      { id: '2-0', event: 'shutdown', data: 'bye' },
    ];
    const bytes = new TextEncoder().encode(text);
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 200; round++) {
      const cuts = [...new Set(Array.from({ length: rand(8) }, () => rand(bytes.length)))].sort((x, y) => x - y);
      const parts: Uint8Array[] = [];
      let at = 0;
      for (const c of [...cuts, bytes.length]) {
        parts.push(bytes.slice(at, c));
        at = c;
      }
      const body = new ReadableStream<Uint8Array>({
        start(ctl) {
          for (const p of parts) ctl.enqueue(p);
          ctl.close();
        },
      });
      const got = [];
      for await (const e of sse(body)) got.push(e);
      assert.deepEqual(got, want, `split at ${cuts.join(',')}`);
    }
  });
});
