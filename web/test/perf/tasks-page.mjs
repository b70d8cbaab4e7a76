// The task table on a big deployment (docs/benchmarks.md, "A million
// tasks"): does /ui/tasks page the tasks, or load them?
//
//   TASKS_URL=http://127.0.0.1:8080 [TASKFLOW_TOKEN=...] node test/perf/tasks-page.mjs
//
// 1. API latency: REQUESTS (default 200) sequential requests per listing,
//    after 5 unmeasured ones, over one keep-alive connection; p50/p99/max
//    and the body size, plus what the answer says (total, partial).
// 2. Chromium: LOADS (default 10) cold loads (a new browser context each:
//    no cache) of /ui/tasks, filtered by state and by type, and of a deep
//    page (/ui/tasks?page=400), after one unmeasured load each: the
//    time from navigation start until the table shows rows, the rows
//    shown, the JS heap after a GC (CDP Performance.getMetrics), and the
//    bytes on the wire (CDP encodedDataLength: headers + gzip body) of
//    the page's API calls and of everything else.
// Prints one JSON object (also written to OUT when set) and a Markdown
// summary. Nothing is written to the server.
import { writeFileSync } from 'node:fs'
import { authHeaders, launch, metrics, mib, newPage, num, r1, r2, server, stats } from './lib.mjs'

const { base, token } = server('TASKS_URL')
const REQUESTS = num('REQUESTS', 200)
const LOADS = num('LOADS', 10)

const LIST = '/api/v1/tasks?sort_by=created_at&sort_order=desc&summary=true&page_size=25'
const endpoints = [
  ['all states, page 1', `${LIST}&page=1`],
  ['status=COMPLETED', `${LIST}&page=1&status=COMPLETED`],
  ['status=PENDING', `${LIST}&page=1&status=PENDING`],
  ['task_type=noop', `${LIST}&page=1&task_type=noop`],
  ['deep page (400 × 25)', `${LIST}&page=400`],
  ['queues/status', '/api/v1/queues/status'],
]
// the dashboard's pages loaded in Chromium (PAGES: comma-separated)
const pages = (process.env.PAGES || '/ui/tasks,/ui/tasks?state=COMPLETED,/ui/tasks?type=noop,/ui/tasks?page=400').split(',')

// timeRequests: the latency of the answers that succeeded; the others
// are counted (errors) with the first one's status and message.
async function timeRequests(path) {
  const lat = []
  let bytes = 0
  let info = {}
  let errors = 0
  let firstError
  for (let i = 0; i < REQUESTS + 5; i++) {
    const t0 = performance.now()
    const res = await fetch(base + path, { headers: { Accept: 'application/json', ...authHeaders(token) } })
    const body = await res.text()
    const dt = performance.now() - t0
    if (!res.ok) {
      errors++
      firstError ??= `HTTP ${res.status} after ${Math.round(dt)} ms: ${body.slice(0, 160)}`
      continue
    }
    if (i >= 5) lat.push(dt)
    if (!bytes) {
      bytes = Buffer.byteLength(body)
      const j = JSON.parse(body)
      info = 'total' in j ? { total: j.total, partial: j.partial ?? false, rows: j.tasks.length } : { states: j.states }
    }
  }
  const s = stats(lat)
  return { ok: lat.length, errors, first_error: firstError, p50_ms: r2(s.p50), p99_ms: r2(s.p99), max_ms: r2(s.max), mean_ms: r2(s.mean), body_bytes: bytes, ...info }
}

// loadOnce opens path in a fresh context and measures it.
async function loadOnce(browser, path) {
  const { context, page } = await newPage(browser, token)
  const cdp = await context.newCDPSession(page)
  await cdp.send('Network.enable')
  await cdp.send('Performance.enable')
  const urls = new Map()
  const wire = { api: 0, other: 0 }
  const apiCalls = []
  cdp.on('Network.responseReceived', (e) => urls.set(e.requestId, e.response.url))
  cdp.on('Network.loadingFinished', (e) => {
    const u = urls.get(e.requestId) ?? ''
    if (new URL(u, base).pathname.startsWith('/api/')) {
      wire.api += e.encodedDataLength
      apiCalls.push({ path: new URL(u).pathname + new URL(u).search, wire_bytes: e.encodedDataLength })
    } else {
      wire.other += e.encodedDataLength
    }
  })
  // the first table row, in page time (ms since navigation start)
  await page.addInitScript(() => {
    new MutationObserver((_, obs) => {
      if (document.querySelector('table tbody tr')) {
        window.__rowsAt = performance.now()
        obs.disconnect()
      }
    }).observe(document, { childList: true, subtree: true })
  })
  await page.goto(base + path)
  // rows, or the error the page shows instead
  await page.locator('table tbody tr, [role=alert]').first().waitFor({ timeout: 30_000 })
  const alert = await page.getByRole('alert').first().textContent({ timeout: 100 }).catch(() => null)
  const table = page.getByRole('table')
  const caption = alert ? null : (await table.locator('caption').textContent())?.trim()
  const page_ = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0]
    const api = performance.getEntriesByType('resource').filter((r) => r.name.includes('/api/v1/tasks'))
    return {
      rowsAt: window.__rowsAt,
      domContentLoaded: nav.domContentLoadedEventEnd,
      apiMs: api.map((r) => r.duration),
      rows: document.querySelectorAll('table tbody tr').length,
      domNodes: document.getElementsByTagName('*').length,
    }
  })
  // let the last responses finish, then weigh the heap after a GC
  await page.waitForLoadState('networkidle')
  const before = await metrics(cdp)
  await cdp.send('HeapProfiler.collectGarbage')
  const after = await metrics(cdp)
  await context.close()
  return {
    alert, rows_at_ms: page_.rowsAt ?? NaN, dcl_ms: page_.domContentLoaded, api_ms: page_.apiMs, rows: page_.rows, dom_nodes: page_.domNodes, caption,
    heap_used_bytes: after.JSHeapUsedSize, heap_used_before_gc_bytes: before.JSHeapUsedSize, heap_total_bytes: after.JSHeapTotalSize,
    api_wire_bytes: wire.api, other_wire_bytes: wire.other, api_calls: apiCalls,
  }
}

async function browserLoads(browser, path) {
  await loadOnce(browser, path) // unmeasured: the server's first answers
  const all = []
  for (let i = 0; i < LOADS; i++) all.push(await loadOnce(browser, path))
  // statistics of the loads that showed rows; the others are counted
  const runs = all.filter((r) => !r.alert)
  const failed = all.filter((r) => r.alert)
  if (runs.length === 0) return { path, loads: LOADS, failed: failed.length, first_alert: failed[0]?.alert }
  const s = (f) => stats(runs.map(f))
  const rowsAt = s((r) => r.rows_at_ms)
  const heap = s((r) => r.heap_used_bytes)
  return {
    path, loads: LOADS, failed: failed.length, first_alert: failed[0]?.alert,
    rows_shown_p50_ms: r1(rowsAt.p50), rows_shown_max_ms: r1(rowsAt.max),
    dcl_p50_ms: r1(s((r) => r.dcl_ms).p50),
    api_call_p50_ms: r1(s((r) => r.api_ms[0] ?? NaN).p50),
    rows: runs[0].rows, dom_nodes: runs[0].dom_nodes, caption: runs[0].caption,
    heap_used_p50_mib: mib(heap.p50), heap_used_max_mib: mib(heap.max),
    heap_before_gc_p50_mib: mib(s((r) => r.heap_used_before_gc_bytes).p50),
    api_wire_bytes: runs[0].api_wire_bytes, other_wire_bytes: runs[0].other_wire_bytes, api_calls: runs[0].api_calls,
  }
}

const out = { base, date: new Date().toISOString(), requests: REQUESTS, api: {}, browser: [] }
for (const [name, path] of endpoints) {
  out.api[name] = { path, ...(await timeRequests(path)) }
  process.stderr.write(`api ${name}: ${JSON.stringify(out.api[name])}\n`)
}
const browser = await launch()
try {
  for (const path of pages) {
    const r = await browserLoads(browser, path)
    out.browser.push(r)
    process.stderr.write(`browser ${path}: ${JSON.stringify(r)}\n`)
  }
} finally {
  await browser.close()
}
const json = JSON.stringify(out, null, 2)
if (process.env.OUT) writeFileSync(process.env.OUT, json + '\n')
console.log(json)
console.log('\n| request | p50 | p99 | max | errors | body | total (partial) |\n|---|---|---|---|---|---|---|')
for (const [name, r] of Object.entries(out.api)) {
  const tot = r.total !== undefined ? `${r.total}${r.partial ? ' (partial)' : ''}` : '–'
  console.log(`| ${name} | ${r.p50_ms} ms | ${r.p99_ms} ms | ${r.max_ms} ms | ${r.errors}/${REQUESTS + 5} | ${r.body_bytes} B | ${tot} |`)
}
console.log('\n| page | rows shown (p50 / max) | failed loads | rows | JS heap after GC (p50) | API bytes on the wire | other bytes |\n|---|---|---|---|---|---|---|')
for (const b of out.browser) {
  if (b.rows === undefined) {
    console.log(`| ${b.path} | – | ${b.failed}/${b.loads}: ${b.first_alert} | | | | |`)
    continue
  }
  console.log(`| ${b.path} | ${b.rows_shown_p50_ms} / ${b.rows_shown_max_ms} ms | ${b.failed}/${b.loads} | ${b.rows} | ${b.heap_used_p50_mib} MiB | ${b.api_wire_bytes} B (${b.api_calls.length} calls) | ${b.other_wire_bytes} B |`)
}
