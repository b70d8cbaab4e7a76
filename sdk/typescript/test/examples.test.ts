// The spec-003 example services ported to the SDK (examples/report.ts,
// examples/export.ts) serve their types for a real taskflow dev: the
// files they store come back through the API.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

// The examples import the package by its name (its build, dist/), as a user does: so do their services here.
import { Service } from '@taskflow/sdk';

import { ApiError, TaskNotCompletedError } from '../src/index.js';
import { exporter } from '../examples/export.js';
import { report } from '../examples/report.js';
import { admin, namespace, redisUrl, session, start, until } from './env.js';

describe('Example services', () => {
  const services = [
    new Service({ name: 'report-service', redis: redisUrl, namespace, blockMs: 100 }).task('report.generate', report),
    new Service({ name: 'export-service', redis: redisUrl, namespace, blockMs: 100 }).task('data.export', exporter),
  ];
  const stops: (() => Promise<void>)[] = [];
  before(async () => {
    for (const s of services) stops.push((await start(s)).stop);
    await until(10000, async () => {
      const tt = (await admin().taskTypes()).task_types;
      // online, and the spec each published read by the API (it reads them at most every 2 s)
      return [['report.generate', 'report-service'], ['data.export', 'export-service']]
        .every(([n, by]) => tt.some((x) => x.name === n && x.online === true && x.published_by === by));
    }, () => 'the example types never came online');
  });
  after(async () => {
    await Promise.all(stops.map((s) => s()));
  });

  test('report.generate stores the report and links it', async () => {
    const c = await session();
    const sub = await c.submit('report.generate', { quarter: 'q4', year: 2024, format: 'md', data: { revenue: [120, 135, 150], cost: [100, 90, 80] } });
    const t = await c.wait(sub.task_id, { timeoutMs: 15000 });
    assert.equal(t.result?.summary, 'Q4 2024 report: 2 metrics');
    const f = await c.file(t.result?.file_url as string);
    const md = new TextDecoder().decode(f.data);
    assert.match(md, /^# Q4 2024 report\n/);
    assert.match(md, /\| cost \| 3 \| 270\.00 \| 90\.00 \| 80\.00 \| 100\.00 \| -20\.00 \|\n\| revenue \| 3 \| 405\.00 \| 135\.00 \| 120\.00 \| 150\.00 \| 25\.00 \|\n$/);
    const pdf = await c.submit('report.generate', { quarter: 'Q1', year: 2025, format: 'pdf', data: { users: [1, 2] } });
    const p = await c.file((await c.wait(pdf.task_id, { timeoutMs: 15000 })).result?.file_url as string);
    assert.equal(p.contentType, 'application/pdf');
    assert.match(new TextDecoder().decode(p.data), /^%PDF-1\.4\n[\s\S]*\(users \| 2 \| 3\.00[\s\S]*%%EOF\n$/);
  });

  test('report.generate without data fails for good (INSUFFICIENT_DATA)', async () => {
    const c = await session();
    const sub = await c.submit('report.generate', { quarter: 'Q2', year: 2024, data: {} });
    await assert.rejects(c.wait(sub.task_id, { timeoutMs: 15000 }),
      (e: unknown) => e instanceof TaskNotCompletedError && e.task.error_type === 'INSUFFICIENT_DATA');
    await assert.rejects(c.submit('report.generate', { quarter: 'Q5', year: 2024, data: {} }),
      (e: unknown) => e instanceof ApiError && e.status === 422 && e.field === 'params.quarter');
  });

  test('data.export writes CSV, JSON and JSON Lines', async () => {
    const c = await session();
    const rows = [{ id: 1, name: 'Ada, Countess' }, { id: 2, name: 'Grace', tags: ['navy'] }];
    const want: Record<string, string> = {
      csv: 'id,name,tags\n1,"Ada, Countess",\n2,Grace,"[""navy""]"\n',
      json: JSON.stringify(rows, null, 2) + '\n',
      jsonl: rows.map((r) => JSON.stringify(r)).join('\n') + '\n',
    };
    for (const format of ['csv', 'json', 'jsonl']) {
      const sub = await c.submit('data.export', { rows, format });
      const t = await c.wait(sub.task_id, { timeoutMs: 15000 });
      assert.equal(t.result?.summary, `exported 2 rows as ${format}`);
      const f = await c.file(t.result?.file_url as string);
      assert.equal(new TextDecoder().decode(f.data), want[format], format);
    }
  });
});
