// data.export on the TypeScript SDK: the export service of spec 003,
// ported from the Go example (extsvc/tools/export.go). It writes rows
// (JSON objects) as CSV, JSON or JSON Lines into the task's result file.
import { fail, type Task, type TaskTypeOptions } from '@taskflow/sdk';

export interface ExportParams {
  rows: Record<string, unknown>[];
  format?: 'csv' | 'json' | 'jsonl';
  /** CSV columns in order; default every key seen, sorted */
  columns?: string[];
}

export const MAX_EXPORT_ROWS = 100_000;
const contentTypes = { csv: 'text/csv; charset=utf-8', json: 'application/json', jsonl: 'application/x-ndjson' };

export const exporter: TaskTypeOptions<ExportParams> = {
  description: 'Writes rows (JSON objects) as CSV, JSON or JSON Lines; the result links the file.',
  params: {
    type: 'object',
    properties: {
      rows: { type: 'array', items: { type: 'object' }, maxItems: MAX_EXPORT_ROWS, description: 'the rows, JSON objects' },
      format: { type: 'string', enum: ['csv', 'json', 'jsonl'], description: 'default csv' },
      columns: { type: 'array', items: { type: 'string' }, description: 'CSV columns in order; default every key, sorted' },
    },
    required: ['rows'],
    additionalProperties: false,
  },
  notify: 'Your {format} export is ready',
  handler: async (task: Task<ExportParams>) => {
    const { rows, format = 'csv' } = task.params;
    if (!Array.isArray(rows) || rows.length === 0) throw fail('INVALID_PARAMS', 'rows: required (a list of objects)');
    if (rows.length > MAX_EXPORT_ROWS) throw fail('INVALID_PARAMS', `rows: ${rows.length} exceeds ${MAX_EXPORT_ROWS}`);
    let body: string;
    switch (format) {
      case 'csv': {
        const cols = task.params.columns?.length ? task.params.columns : [...new Set(rows.flatMap((r) => Object.keys(r)))].sort();
        const cell = (v: unknown) => {
          const s = v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
          return /[",\n\r]/.test(s) || s.startsWith(' ') ? `"${s.replaceAll('"', '""')}"` : s;
        };
        body = [cols, ...rows.map((r) => cols.map((c) => r[c]))].map((rec) => rec.map(cell).join(',') + '\n').join('');
        break;
      }
      case 'json':
        body = JSON.stringify(rows, null, 2) + '\n';
        break;
      case 'jsonl':
        body = rows.map((r) => JSON.stringify(r) + '\n').join('');
        break;
      default:
        throw fail('INVALID_PARAMS', `format ${JSON.stringify(format)}: want csv, json or jsonl`);
    }
    const fileUrl = await task.putFile(`${task.id}.${format}`, contentTypes[format], body);
    return { file_url: fileUrl, summary: `exported ${rows.length} rows as ${format}`, metadata: { rows: rows.length, format, bytes: Buffer.byteLength(body) } };
  },
};
