// The service SDK against a real taskflow dev: tasks submitted over HTTP
// reach a TypeScript service over Redis Streams, and its outcomes,
// progress, files, cancellations and timeouts come back through the API.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { ApiError, TaskNotCompletedError, fail, keys, type Task } from '../src/index.js';
import { admin, namespace, redis, service, session, start, until } from './env.js';

describe('Service', () => {
  const k = keys(namespace);
  const rdb = redis();
  let running = 0;
  let peak = 0;
  const seenSignals: string[] = [];
  const svc = service({ name: 'ts-test-service', concurrency: 2 })
    .task<{ text: string }>('ts.echo', {
      description: 'Echoes its text (the SDK tests).',
      params: { type: 'object', properties: { text: { type: 'string', maxLength: 20 } }, required: ['text'], additionalProperties: false },
      notify: 'Echoed {text}',
      handler: async (t) => {
        await t.progress(50, 'halfway', 1);
        return { summary: t.params.text.toUpperCase(), metadata: { attempt: t.attempt, session: t.sessionId } };
      },
    })
    .task<{ ms: number }>('ts.slow', async (t) => {
      running++;
      peak = Math.max(peak, running);
      try {
        await new Promise((r) => setTimeout(r, t.params.ms));
      } finally {
        running--;
      }
      return {};
    })
    .task<{ code: string; retryable?: boolean }>('ts.fail', (t) => {
      if (t.params.code === 'THROW') throw new Error('plain error');
      throw fail(t.params.code, 'failed on purpose', t.params.retryable ?? false, { why: 'test' });
    })
    .task('ts.file', async (t: Task) => {
      const url = await t.putFile(`${t.id}.csv`, 'text/csv', 'a,b\n1,2\n');
      return { file_url: url, summary: 'a file' };
    })
    .task('ts.wait', async (t: Task) => {
      // Runs until its signal aborts: a cancel, or its timeout.
      await new Promise<void>((resolve) => t.signal.addEventListener('abort', () => resolve(), { once: true }));
      seenSignals.push(String((t.signal.reason as Error).name));
      throw t.signal.reason;
    });
  let stop: () => Promise<void>;

  before(async () => {
    ({ stop } = await start(svc));
    // The API reads the published specs at most every 2 s.
    const c = admin();
    await until(10000, async () => {
      const tt = await c.taskTypes();
      return tt.task_types.some((x) => x.name === 'ts.echo' && x.published_by === 'ts-test-service' && x.online === true);
    }, () => 'ts.echo never listed as published by ts-test-service and online');
  });
  after(async () => {
    await stop();
    await rdb.quit();
  });

  test('Registers its types, concurrency and specs', async () => {
    const reg = await rdb.hgetall(k.service('ts-test-service'));
    assert.equal(reg.types, 'ts.echo,ts.fail,ts.file,ts.slow,ts.wait');
    assert.match(reg[`concurrency:${svc.consumer}`] ?? '', /^2 \d{13}$/);
    const spec = JSON.parse((await rdb.hget(k.taskTypes, 'ts.echo')) ?? '{}');
    assert.equal(spec.service, 'ts-test-service');
    assert.equal(spec.notify, 'Echoed {text}');
    assert.deepEqual(spec.params_schema.required, ['text']);
    assert.equal(await rdb.hexists(k.taskTypes, 'ts.slow'), 0, 'a type with nothing to describe publishes no spec');
  });

  test('Completes a task submitted over HTTP, with progress and the notification text', async () => {
    const c = await session();
    const sub = await c.submit('ts.echo', { text: 'hello' });
    assert.equal(sub.state, 'PENDING');
    const t = await c.wait(sub.task_id, { timeoutMs: 15000 });
    assert.equal(t.state, 'COMPLETED');
    assert.equal(t.result?.summary, 'HELLO');
    assert.equal((t.result?.metadata as { attempt: number }).attempt, 1);
    const r = await c.result(sub.task_id);
    assert.equal(r.status, 'completed');
    const page = await c.notificationPage({ after: '0' });
    const n = page.notifications.find((x) => x.task_id === sub.task_id);
    assert.equal(n?.message, 'Echoed hello');
    const progress = await rdb.xrange(k.progress, '-', '+');
    assert.ok(progress.some(([, f]) => f[f.indexOf('data') + 1]?.includes(sub.task_id)), 'a progress event for the task');
  });

  test('The published schema refuses bad params with a 422 naming the field', async () => {
    const c = await session();
    await assert.rejects(c.submit('ts.echo', { text: 'x'.repeat(21) }), (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.status, 422);
      assert.equal(e.field, 'params.text');
      return true;
    });
    await assert.rejects(c.submit('ts.echo', {}), (e: unknown) => e instanceof ApiError && e.field === 'params.text');
  });

  test('Failures carry their code, details and retryability', async () => {
    const c = await session();
    const perm = await c.submit('ts.fail', { code: 'INSUFFICIENT_DATA' });
    await assert.rejects(c.wait(perm.task_id, { timeoutMs: 15000 }), (e: unknown) => {
      assert.ok(e instanceof TaskNotCompletedError);
      assert.equal(e.task.state, 'DLQ');
      assert.equal(e.task.error_type, 'INSUFFICIENT_DATA');
      assert.equal(e.task.retry_count, 0, 'a permanent failure is not retried');
      return true;
    });
    const r = await c.result(perm.task_id);
    assert.deepEqual(r.error?.details, { why: 'test' });

    const thrown = await c.submit('ts.fail', { code: 'THROW' }, { max_retries: 0 });
    await assert.rejects(c.wait(thrown.task_id, { timeoutMs: 15000 }),
      (e: unknown) => e instanceof TaskNotCompletedError && e.task.error_type === 'INTERNAL_ERROR');

    const transient = await c.submit('ts.fail', { code: 'FLAKY', retryable: true }, { max_retries: 1 });
    await assert.rejects(c.wait(transient.task_id, { timeoutMs: 20000 }), (e: unknown) => {
      assert.ok(e instanceof TaskNotCompletedError);
      assert.equal(e.task.retry_count, 1, 'a retryable failure is retried');
      return true;
    });
  });

  test('Result files are served by the API', async () => {
    const c = await session();
    const sub = await c.submit('ts.file', {});
    const t = await c.wait(sub.task_id, { timeoutMs: 15000 });
    const fileUrl = t.result?.file_url as string;
    assert.equal(fileUrl, `/api/v1/results/${sub.task_id}/files/${sub.task_id}.csv`);
    const f = await c.file(fileUrl);
    assert.equal(new TextDecoder().decode(f.data), 'a,b\n1,2\n');
    assert.match(f.contentType, /^text\/csv/);
    const again = await c.file(sub.task_id, `${sub.task_id}.csv`);
    assert.equal(again.sha256, f.sha256);
    await assert.rejects(c.file(sub.task_id, 'nope.csv'), (e: unknown) => e instanceof ApiError && e.status === 404);
  });

  test('A cancel reaches the running handler, which reports CANCELLED', async () => {
    const c = await session();
    const sub = await c.submit('ts.wait', {});
    await until(10000, async () => (await c.get(sub.task_id)).state === 'ACTIVE');
    // ACTIVE means dispatched; wait until the handler holds it.
    await until(10000, async () => (await rdb.xpending(k.create, 'ts-test-service-group', '-', '+', 100) as unknown[]).length > 0);
    const cancelled = await c.cancel(sub.task_id);
    assert.equal(cancelled.task_id, sub.task_id);
    await assert.rejects(c.wait(sub.task_id, { timeoutMs: 15000 }),
      (e: unknown) => e instanceof TaskNotCompletedError && e.task.state === 'CANCELLED');
    assert.ok(seenSignals.includes('TaskCancelled'), `the handler saw the cancel (saw ${seenSignals.join(',')})`);
  });

  test('A task past its timeout is aborted and reported TIMEOUT', async () => {
    const c = await session();
    const sub = await c.submit('ts.wait', {}, { timeout: 0.5, max_retries: 0 });
    await assert.rejects(c.wait(sub.task_id, { timeoutMs: 20000 }), (e: unknown) => {
      assert.ok(e instanceof TaskNotCompletedError, String(e));
      assert.ok(['DLQ', 'CANCELLED'].includes(e.task.state));
      return true;
    });
    await until(5000, () => seenSignals.includes('TaskTimedOut'), () => `saw ${seenSignals.join(',')}`);
    const failed = await rdb.xrange(k.failed, '-', '+');
    const mine = failed.map(([, f]) => JSON.parse(f[f.indexOf('data') + 1]!)).find((d) => d.task_id === sub.task_id);
    assert.equal(mine?.error.code, 'TIMEOUT');
    assert.equal(mine?.error.retryable, true);
  });

  test('Runs at most its concurrency at once, and acknowledges every entry', async () => {
    const c = await session();
    running = 0;
    peak = 0;
    const subs = await Promise.all(Array.from({ length: 6 }, () => c.submit('ts.slow', { ms: 300 })));
    for (const s of subs) assert.equal((await c.wait(s.task_id, { timeoutMs: 20000 })).state, 'COMPLETED');
    assert.equal(peak, 2, 'concurrency 2 ran two at once, never more');
    await until(5000, async () => {
      const p = (await rdb.xpending(k.create, 'ts-test-service-group')) as [number, ...unknown[]];
      return p[0] === 0;
    }, () => 'entries left pending');
  });
});

describe('Service configuration', () => {
  test('Says what is wrong', () => {
    assert.throws(() => service({ name: 'a b' }), /without spaces or braces/);
    assert.throws(() => service({ name: 's', concurrency: 0 }), /concurrency 0 must be an integer ≥ 1/);
    assert.throws(() => service({ name: 's', heartbeatMs: 1000, claimIdleMs: 1500 }), /claimIdleMs 1500 must exceed twice heartbeatMs 1000/);
    assert.throws(() => service({ name: 's' }).task('Bad Type', async () => ({})), /is not a task type name/);
    assert.throws(() => service({ name: 's' }).task('a.b', async () => ({})).task('a.b', async () => ({})), /registered twice/);
  });

  test('A service with no types does not start', async () => {
    await assert.rejects(service({ name: 'ts-empty' }).run(), /no task types registered/);
  });

  test('Fails loudly when Redis does not answer', async () => {
    const { Service } = await import('../src/index.js');
    const s = new Service({ name: 'ts-noredis', redis: 'redis://127.0.0.1:1/0' }).task('ts.echo', async () => ({}));
    await assert.rejects(s.run(), /ECONNREFUSED|connect/);
  });
});
