// The REST client against a real taskflow dev, on its in-process types
// (noop, sleep): submit, get, wait, list, cancel, retry, errors naming the
// field, the notification feed, the plan endpoints.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { ApiError, Client, TaskNotCompletedError, sse } from '../src/index.js';
import { admin, session, url } from './env.js';

describe('Client', () => {
  test('Submits, gets, waits and lists', async () => {
    const c = await session();
    const sub = await c.submit('noop', {}, { priority: 'high' });
    assert.equal(sub.state, 'PENDING');
    assert.equal(sub.duplicate, undefined);
    const done = await c.wait(sub.task_id, { timeoutMs: 15000 });
    assert.equal(done.state, 'COMPLETED');
    assert.equal(done.priority, 'high');
    const got = await c.get(sub.task_id);
    assert.equal(got.task_id, sub.task_id);
    const list = await c.list({ task_type: 'noop', status: 'COMPLETED' });
    assert.ok(list.tasks.some((t) => 'task_id' in t && t.task_id === sub.task_id));
    assert.equal(list.total, 1, "a session lists only its own tasks");
    const results = await c.results({ status_filter: 'completed' });
    assert.deepEqual(results.tasks.map((t) => t.task_id), [sub.task_id]);
  });

  test('Errors are ApiError values naming the field', async () => {
    const c = await session();
    await assert.rejects(c.submit('noop', {}, { priority: 'urgent' as never }), (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.status, 422);
      assert.equal(e.field, 'priority');
      assert.ok(e.code.length > 0);
      return true;
    });
    await assert.rejects(c.submit('no.such.type', {}), (e: unknown) => e instanceof ApiError && e.field === 'task_type');
    await assert.rejects(c.get('no-such-task'), (e: unknown) => e instanceof ApiError && e.status === 404 && e.code === 'task_not_found');
    await assert.rejects(new Client({ baseUrl: url, token: 'wrong' }).list(), (e: unknown) => e instanceof ApiError && e.status === 401);
  });

  test('Cancels a waiting task and retries it', async () => {
    const c = await session();
    const sub = await c.submit('sleep', { duration_ms: 10 }, { delay: 3600 });
    const cancelled = await c.cancel(sub.task_id);
    assert.equal(cancelled.outcome, 'cancelled');
    assert.equal(cancelled.state, 'CANCELLED');
    await assert.rejects(c.wait(sub.task_id, { timeoutMs: 5000 }), (e: unknown) => {
      assert.ok(e instanceof TaskNotCompletedError);
      assert.equal(e.task.state, 'CANCELLED');
      return true;
    });
    await assert.rejects(c.retry(sub.task_id), (e: unknown) => e instanceof ApiError && e.status === 409 && e.code === 'task_not_retryable');
    await c.delete(sub.task_id);
    await assert.rejects(c.get(sub.task_id), (e: unknown) => e instanceof ApiError && e.status === 404);

    const failed = await c.submit('sleep', { duration_ms: 1, fail: 'permanent' }, { max_retries: 0 });
    await assert.rejects(c.wait(failed.task_id, { timeoutMs: 15000 }), (e: unknown) => e instanceof TaskNotCompletedError && e.task.state === 'DLQ');
    const again = await c.retry(failed.task_id);
    assert.equal(again.task_id, failed.task_id);
    await assert.rejects(c.wait(failed.task_id, { timeoutMs: 15000 }), (e: unknown) => {
      assert.ok(e instanceof TaskNotCompletedError);
      assert.equal(e.task.state, 'DLQ');
      assert.ok(e.task.error_history.length >= 2, 'the retry ran again');
      return true;
    });
  });

  test('wait gives up when its time is up', async () => {
    const c = await session();
    const sub = await c.submit('sleep', { duration_ms: 10 }, { delay: 3600 });
    await assert.rejects(c.wait(sub.task_id, { timeoutMs: 100 }), (e: unknown) => (e as Error).name === 'TimeoutError');
    await c.cancel(sub.task_id);
  });

  test('The notification feed is an async iterator', async () => {
    const c = await session();
    const ctl = new AbortController();
    const seen: string[] = [];
    const feed = (async () => {
      for await (const n of c.notifications({ after: '0', signal: ctl.signal })) {
        seen.push(n.task_id);
        if (seen.length === 2) break;
      }
    })();
    const a = await c.submit('noop', {});
    const b = await c.submit('sleep', { duration_ms: 1, fail: 'permanent' }, { max_retries: 0 });
    const timer = setTimeout(() => ctl.abort(), 15000);
    await feed;
    clearTimeout(timer);
    assert.deepEqual(seen.sort(), [a.task_id, b.task_id].sort());
  });

  test('The admin reads a session\'s feed by its id', async () => {
    const { client, session: s } = await Client.openSession({ baseUrl: url });
    const sub = await client.submit('noop', {});
    await client.wait(sub.task_id, { timeoutMs: 15000 });
    for await (const n of admin().notifications({ after: '0', sessionId: s.session_id })) {
      assert.equal(n.task_id, sub.task_id);
      assert.equal(n.type, 'task_completed');
      break;
    }
    await assert.rejects(async () => {
      for await (const _ of admin().notifications({ after: '0' })) break;
    }, (e: unknown) => e instanceof ApiError && e.status === 400 && e.field === 'session_id');
  });

  test('Lists the plans and refuses a bad plan name', async () => {
    const c = admin();
    const plans = await c.plans();
    assert.ok(Array.isArray(plans.plans));
    await assert.rejects(c.plan('no_such_plan'), (e: unknown) => e instanceof ApiError && e.status === 404);
    await assert.rejects(c.executePlan('bad name!', { user_id: 1 }), (e: unknown) => e instanceof ApiError && e.status === 400);
  });
});

describe('sse', () => {
  const stream = (chunks: string[]) => new ReadableStream<Uint8Array>({
    start(ctl) {
      for (const c of chunks) ctl.enqueue(new TextEncoder().encode(c));
      ctl.close();
    },
  });
  const all = async (chunks: string[]) => {
    const out = [];
    for await (const e of sse(stream(chunks))) out.push(e);
    return out;
  };

  test('Parses events split anywhere, skipping comments', async () => {
    const evs = await all([': hi\n\nid: 1-0\nev', 'ent: notification\ndata: {"a":', '1}\n\n', 'data: x\ndata: y\r\n\r\n']);
    assert.deepEqual(evs, [
      { id: '1-0', event: 'notification', data: '{"a":1}' },
      { id: '1-0', event: 'message', data: 'x\ny' },
    ]);
  });

  test('Ignores an unterminated last event and fields without data', async () => {
    assert.deepEqual(await all(['event: a\n\n', 'data: cut']), []);
  });
});
