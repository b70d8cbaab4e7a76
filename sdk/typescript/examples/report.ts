// report.generate on the TypeScript SDK: the report service of spec 003,
// ported from the Go example (extsvc/tools/report.go). It builds a
// quarterly report from metric values as Markdown, HTML, CSV or a one-page
// PDF, stores it as the task's result file, and links it in the result.
import { fail, type Task, type TaskTypeOptions } from '@taskflow/sdk';

export interface ReportParams {
  quarter: string;
  year: number;
  format?: 'md' | 'html' | 'csv' | 'pdf';
  title?: string;
  /** metric name → its values in the quarter, e.g. {"revenue": [120, 135, 150]} */
  data: Record<string, number[]>;
}

interface Row { name: string; n: number; total: number; mean: number; min: number; max: number; change: number }

const contentTypes = { md: 'text/markdown; charset=utf-8', html: 'text/html; charset=utf-8', csv: 'text/csv; charset=utf-8', pdf: 'application/pdf' };

export const report: TaskTypeOptions<ReportParams> = {
  description: 'Builds a quarterly report (md, html, csv or pdf) from metric values; the result links the file.',
  params: {
    type: 'object',
    properties: {
      quarter: { type: 'string', enum: ['Q1', 'Q2', 'Q3', 'Q4'], 'x-fold-case': true, description: 'the quarter reported on' },
      year: { type: 'integer', minimum: 1900, maximum: 2200, description: 'the year of the quarter' },
      format: { type: 'string', enum: ['md', 'html', 'csv', 'pdf'], 'x-fold-case': true, description: 'output format; default md' },
      title: { type: 'string', maxLength: 200, description: 'default "<quarter> <year> report"' },
      data: { type: 'object', description: 'metric name → its values in the quarter, e.g. {"revenue": [120, 135, 150]}; {} fails the task (INSUFFICIENT_DATA)' },
    },
    required: ['quarter', 'year', 'data'],
    additionalProperties: false,
  },
  notify: 'Your {quarter} {year} report is ready',
  handler: async (task: Task<ReportParams>) => {
    const p = task.params;
    const quarter = String(p.quarter ?? '').trim().toUpperCase();
    if (!['Q1', 'Q2', 'Q3', 'Q4'].includes(quarter)) throw fail('INVALID_PARAMS', `quarter ${JSON.stringify(p.quarter)}: want Q1, Q2, Q3 or Q4`);
    if (!Number.isInteger(p.year) || p.year < 1900 || p.year > 2200) throw fail('INVALID_PARAMS', `year ${p.year}: want 1900–2200`);
    const format = (p.format ?? 'md').toLowerCase() as keyof typeof contentTypes;
    if (!(format in contentTypes)) throw fail('INVALID_PARAMS', `format ${JSON.stringify(p.format)}: want md, html, csv or pdf`);
    const title = p.title || `${quarter} ${p.year} report`;
    const rows: Row[] = Object.entries(p.data ?? {})
      .filter(([, v]) => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number'))
      .map(([name, v]) => {
        const total = v.reduce((a, b) => a + b, 0);
        return { name, n: v.length, total, mean: total / v.length, min: Math.min(...v), max: Math.max(...v),
          change: v[0] !== 0 ? ((v[v.length - 1]! - v[0]!) / Math.abs(v[0]!)) * 100 : 0 };
      })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (rows.length === 0) throw fail('INSUFFICIENT_DATA', `Not enough data for ${quarter} ${p.year}`);
    await task.progress(50, 'metrics computed');
    const generated = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const body = render[format](title, `${quarter} ${p.year}`, rows, generated);
    const fileUrl = await task.putFile(`${task.id}.${format}`, contentTypes[format], body);
    return {
      file_url: fileUrl,
      summary: `${title}: ${rows.length} ${rows.length === 1 ? 'metric' : 'metrics'}`,
      metadata: { format, bytes: Buffer.byteLength(body), metrics: rows.length },
    };
  },
};

const f2 = (v: number) => v.toFixed(2);
const cells = (r: Row) => [String(r.n), f2(r.total), f2(r.mean), f2(r.min), f2(r.max), f2(r.change)];
const header = ['metric', 'values', 'total', 'mean', 'min', 'max', 'change %'];

const render: Record<keyof typeof contentTypes, (title: string, period: string, rows: Row[], generated: string) => string> = {
  md: (title, period, rows, generated) =>
    `# ${title}\n\nPeriod: ${period} · generated ${generated}\n\n| ${header.join(' | ')} |\n|${'---|'.repeat(header.length)}\n` +
    rows.map((r) => `| ${r.name.replaceAll('|', '\\|')} | ${cells(r).join(' | ')} |\n`).join(''),
  html: (title, period, rows, generated) => {
    const e = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    return `<!doctype html>\n<html><head><meta charset="utf-8"><title>${e(title)}</title></head><body>\n<h1>${e(title)}</h1>\n` +
      `<p>Period: ${period} · generated ${generated}</p>\n<table>\n<tr>${header.map((h) => `<th>${h}</th>`).join('')}</tr>\n` +
      rows.map((r) => `<tr><td>${e(r.name)}</td>${cells(r).map((c) => `<td>${c}</td>`).join('')}</tr>\n`).join('') + '</table>\n</body></html>\n';
  },
  csv: (_t, _p, rows) => {
    const q = (s: string) => (/[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s);
    return 'metric,values,total,mean,min,max,change_percent\n' + rows.map((r) => `${q(r.name)},${cells(r).join(',')}\n`).join('');
  },
  pdf: (title, period, rows, generated) => pdf([title, `Period: ${period} - generated ${generated}`, '', header.join(' | '),
    ...rows.map((r) => [r.name, ...cells(r)].join(' | '))]),
};

/** pdf writes a one-page PDF 1.4 of text lines in Helvetica (every reader has it); non-ASCII becomes '?'. */
function pdf(lines: string[]): string {
  if (lines.length > 48) lines = [...lines.slice(0, 47), `... ${lines.length - 47} more metrics`];
  const esc = (s: string) => s.replace(/[^\x20-\x7e]/g, '?').replace(/[()\\]/g, (c) => `\\${c}`);
  const content = `BT /F1 11 Tf 50 790 Td 14 TL\n${lines.map((l) => `(${esc(l)}) Tj T*\n`).join('')}ET\n`;
  const objs = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${content.length} >>\nstream\n${content}endstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets = objs.map((o, i) => {
    const at = out.length;
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
    return at;
  });
  const xref = out.length;
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  return out + `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
}
