// Issue 26's submit controls through the client: Idempotency-Key,
// unique_key, the batch submit, queue and limit_key.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';

import { ApiError } from '../src/index.js';
import { session } from './env.js';

describe('Submit controls (issue 26)', () => {
  test('The same Idempotency-Key and body answer the first response again', async () => {
    const c = await session();
    const key = randomUUID();
    const first = await c.submit('noop', { n: 1 }, { idempotencyKey: key });
    assert.equal(first.replayed, undefined);
    const again = await c.submit('noop', { n: 1 }, { idempotencyKey: key });
    assert.equal(again.task_id, first.task_id);
    assert.equal(again.replayed, true);
    await assert.rejects(c.submit('noop', { n: 2 }, { idempotencyKey: key }), (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.status, 422);
      assert.equal(e.code, 'idempotency_key_reused');
      assert.equal(e.field, 'Idempotency-Key');
      return true;
    });
  });

  test('A unique_key answers the existing task while it is pending', async () => {
    const c = await session();
    const key = `report-${randomUUID()}`;
    const first = await c.submit('sleep', { duration_ms: 10 }, { unique_key: key, delay: 3600 });
    assert.equal(first.duplicate, undefined);
    const dup = await c.submit('sleep', { duration_ms: 10 }, { unique_key: key });
    assert.equal(dup.duplicate, true);
    assert.equal(dup.task_id, first.task_id);
    assert.equal(dup.state, 'PENDING');
    await c.cancel(first.task_id);
    const after = await c.submit('sleep', { duration_ms: 10 }, { unique_key: key });
    assert.notEqual(after.task_id, first.task_id, 'a finished task no longer holds its key (no unique_for)');
  });

  test('A batch answers one result per item, in order, naming an invalid item\'s field', async () => {
    const c = await session();
    const key = `b-${randomUUID()}`;
    const results = await c.submitBatch([
      { task_type: 'noop', params: {}, unique_key: key },
      { task_type: 'noop', params: {}, unique_key: key },
      { task_type: 'noop', params: {}, priority: 'urgent' as never },
    ], { idempotencyKey: randomUUID() });
    assert.equal(results.length, 3);
    assert.deepEqual(results.map((r) => [r.index, r.status]), [[0, 'created'], [1, 'duplicate'], [2, 'invalid']]);
    const [a, b, bad] = results as [typeof results[0], typeof results[0], typeof results[0]];
    assert.ok(a.status !== 'invalid' && b.status !== 'invalid');
    assert.equal(a.task_id, b.task_id);
    assert.ok(bad.status === 'invalid');
    assert.equal(bad.error.field, 'tasks[2].priority');
    await assert.rejects(c.submitBatch([]), (e: unknown) => e instanceof ApiError && e.status === 422 && e.field === 'tasks');
  });

  test('queue and limit_key are sent and checked', async () => {
    const c = await session();
    const sub = await c.submit('noop', {}, { queue: 'ts-sdk.q1', limit_key: 'tenant-1' });
    assert.equal((await c.wait(sub.task_id, { timeoutMs: 15000 })).state, 'COMPLETED');
    await assert.rejects(c.submit('noop', {}, { queue: 'Bad Queue' }), (e: unknown) => e instanceof ApiError && e.field === 'queue');
  });
});
