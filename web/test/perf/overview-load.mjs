// The Overview under a steady stream of task events (docs/benchmarks.md,
// "Overview under 100 events/s"): is /ui/ still smooth?
//
//   OVERVIEW_URL=http://127.0.0.1:8080 [RATE=40] [DURATION=30] node test/perf/overview-load.mjs
//
// Against a `taskflow dev` (its workers run the noop tasks; open mode, or
// TASKFLOW_TOKEN) on a namespace of its own: the script submits RATE noop
// tasks a second, open loop (each at its slot, not when the last answered),
// from before the page opens until the end. Each noop task makes about
// three events on the status stream (PENDING, ACTIVE, COMPLETED), so 40/s
// is ≈ 120 events/s. RATE=0 submits nothing (a baseline, or load from
// `taskflow-bench loadgen`). After WARMUP seconds (default 5) with the
// Overview open, it measures for DURATION seconds (default 30):
//   - the SSE messages the page's own EventSource received, by event name
//     (CDP Network.eventSourceMessageReceived: nothing extra in the page);
//   - frame intervals: the deltas of a requestAnimationFrame loop
//     (p50/p99/max, frames over 50 ms);
//   - long tasks (PerformanceObserver 'longtask'): count, total and
//     longest, and how many reached 200 ms;
//   - React commits (a stand-in DevTools hook counts onCommitFiberRoot)
//     and the main thread's time in tasks, scripts, layout and style
//     (CDP Performance.getMetrics deltas);
//   - with PROFILE=1 (default), a CPU profile of the page (CDP Profiler)
//     summed by function and by script: where the main thread's time goes.
// Prints one JSON object (also written to OUT when set) and a Markdown
// summary. "Smooth" here: p99 frame interval ≤ 50 ms and no long task of
// 200 ms or more.
import { writeFileSync } from 'node:fs'
import { authHeaders, launch, metrics, mib, newPage, num, r1, r2, server, stats } from './lib.mjs'

const { base, token } = server('OVERVIEW_URL')
const RATE = num('RATE', 40)
const DURATION = num('DURATION', 30)
const WARMUP = num('WARMUP', 5)
const PROFILE = num('PROFILE', 1) === 1
const TASK_TYPE = process.env.TASK_TYPE || 'noop'

// submitter: open loop at RATE/s until stop()
function submitter() {
  const res = { sent: 0, ok: 0, errors: 0, firstError: undefined, lat: [] }
  let stopped = false
  let measuring = false
  const inflight = new Set()
  const start = performance.now()
  const body = JSON.stringify({ task_type: TASK_TYPE })
  const one = async (slot) => {
    res.sent++
    try {
      const r = await fetch(base + '/api/v1/tasks', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...authHeaders(token) },
        body,
      })
      await r.text()
      if (r.status !== 201) throw new Error(`HTTP ${r.status}`)
      res.ok++
      if (measuring) res.lat.push(performance.now() - slot)
    } catch (e) {
      res.errors++
      res.firstError ??= String(e)
    }
  }
  const loop = async () => {
    if (RATE <= 0) return
    for (let k = 0; !stopped; k++) {
      const slot = start + (k * 1000) / RATE
      const wait = slot - performance.now()
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      if (stopped) break
      const p = one(slot)
      inflight.add(p)
      p.finally(() => inflight.delete(p))
    }
  }
  const done = loop()
  return {
    res,
    measure(on) {
      measuring = on
    },
    async stop() {
      stopped = true
      await done
      await Promise.all([...inflight])
    },
  }
}

async function completedCount() {
  const r = await fetch(base + '/api/v1/queues/status', { headers: { Accept: 'application/json', ...authHeaders(token) } })
  if (!r.ok) return NaN
  return (await r.json()).states?.COMPLETED ?? NaN
}

// summarize a CDP profile: self time by function and by script
function summarizeProfile(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map()
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000)
  }
  const byFn = new Map()
  const byScript = new Map()
  let total = 0
  for (const [id, ms] of self) {
    const cf = byId.get(id).callFrame
    total += ms
    const script = cf.url ? new URL(cf.url).pathname.split('/').pop() || cf.url : cf.functionName || '(native)'
    const fn = `${cf.functionName || '(anonymous)'} ${script}${cf.url ? ':' + (cf.lineNumber + 1) + ':' + (cf.columnNumber + 1) : ''}`
    byFn.set(fn, (byFn.get(fn) ?? 0) + ms)
    byScript.set(script, (byScript.get(script) ?? 0) + ms)
  }
  const top = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => ({ what: k, ms: r1(v), share: r2(v / total) }))
  return { sampled_ms: r1(total), by_script: top(byScript, 8), top_functions: top(byFn, 15) }
}

const load = submitter()
const browser = await launch()
const out = { base, date: new Date().toISOString(), rate: RATE, duration_s: DURATION, warmup_s: WARMUP, task_type: TASK_TYPE }
try {
  const { context, page } = await newPage(browser, token)
  const problems = []
  page.on('pageerror', (e) => problems.push('page error: ' + e.message))
  page.on('console', (m) => m.type() === 'error' && problems.push('console: ' + m.text()))
  await page.addInitScript(() => {
    const perf = { on: false, frames: [], longtasks: [], commits: 0 }
    window.__perf = perf
    const loop = (t) => {
      if (perf.on) perf.frames.push(t)
      requestAnimationFrame(loop)
    }
    requestAnimationFrame(loop)
    new PerformanceObserver((list) => {
      if (!perf.on) return
      for (const e of list.getEntries()) perf.longtasks.push({ start: e.startTime, ms: e.duration })
    }).observe({ type: 'longtask' })
    // React calls a DevTools hook on every commit, production build too
    window.__REACT_DEVTOOLS_GLOBAL_HOOK__ = {
      supportsFiber: true,
      renderers: new Map(),
      inject: () => 1,
      checkDCE() {},
      onScheduleFiberRoot() {},
      onCommitFiberRoot() {
        if (perf.on) perf.commits++
      },
      onPostCommitFiberRoot() {},
      onCommitFiberUnmount() {},
    }
  })
  const cdp = await context.newCDPSession(page)
  await cdp.send('Network.enable')
  await cdp.send('Performance.enable')
  const sse = { on: false, byName: {}, bytes: 0 }
  cdp.on('Network.eventSourceMessageReceived', (e) => {
    if (!sse.on) return
    sse.byName[e.eventName] = (sse.byName[e.eventName] ?? 0) + 1
    sse.bytes += e.data.length
  })
  await page.goto(base + '/ui/')
  await page.getByText('Stream: live').waitFor({ timeout: 30_000 })
  await page.waitForTimeout(WARMUP * 1000)

  // the measured window
  if (PROFILE) {
    await cdp.send('Profiler.enable')
    await cdp.send('Profiler.setSamplingInterval', { interval: 500 })
    await cdp.send('Profiler.start')
  }
  const m0 = await metrics(cdp)
  const c0 = await completedCount()
  await page.evaluate(() => {
    window.__perf.on = true
  })
  sse.on = true
  load.measure(true)
  const t0 = performance.now()
  await page.waitForTimeout(DURATION * 1000)
  const got = await page.evaluate(() => {
    const p = window.__perf
    p.on = false
    return { frames: p.frames, longtasks: p.longtasks, commits: p.commits }
  })
  sse.on = false
  load.measure(false)
  const secs = (performance.now() - t0) / 1000
  const m1 = await metrics(cdp)
  const c1 = await completedCount()
  const profile = PROFILE ? (await cdp.send('Profiler.stop')).profile : null
  const stillLive = await page.getByText('Stream: live').isVisible()
  await context.close()

  const deltas = got.frames.slice(1).map((t, i) => t - got.frames[i])
  const fs = stats(deltas)
  const lt = got.longtasks.map((l) => l.ms)
  const sseTotal = Object.values(sse.byName).reduce((a, b) => a + b, 0)
  const d = (k) => m1[k] - m0[k]
  out.window_s = r2(secs)
  out.server_completed_per_s = r1((c1 - c0) / secs)
  out.sse = { messages: sseTotal, per_s: r1(sseTotal / secs), by_event: sse.byName, task_per_s: r1((sse.byName.task ?? 0) / secs), bytes_per_s: Math.round(sse.bytes / secs) }
  out.frames = { count: deltas.length, fps: r1(deltas.length / secs), p50_ms: r2(fs.p50), p90_ms: r2(fs.p90), p99_ms: r2(fs.p99), max_ms: r2(fs.max), over_50ms: deltas.filter((x) => x > 50).length }
  out.long_tasks = { count: lt.length, total_ms: r1(lt.reduce((a, b) => a + b, 0)), max_ms: r1(Math.max(0, ...lt)), at_least_200ms: lt.filter((x) => x >= 200).length }
  out.react = { commits: got.commits, commits_per_s: r1(got.commits / secs) }
  out.main_thread = {
    busy_share: r2(d('TaskDuration') / secs),
    task_ms_per_s: r1((d('TaskDuration') * 1000) / secs),
    script_ms_per_s: r1((d('ScriptDuration') * 1000) / secs),
    layout_ms_per_s: r1((d('LayoutDuration') * 1000) / secs),
    style_ms_per_s: r1((d('RecalcStyleDuration') * 1000) / secs),
    layouts: d('LayoutCount'),
    js_heap_used_mib: mib(m1.JSHeapUsedSize),
    dom_nodes: m1.Nodes,
  }
  out.stream_still_live = stillLive
  out.page_problems = problems
  if (profile) out.profile = summarizeProfile(profile)
} finally {
  await load.stop()
  await browser.close()
}
const l = stats(load.res.lat)
out.submits = { sent: load.res.sent, ok: load.res.ok, errors: load.res.errors, first_error: load.res.firstError, p50_ms: r2(l.p50), p99_ms: r2(l.p99) }
out.smooth = out.frames.p99_ms <= 50 && out.long_tasks.at_least_200ms === 0

const json = JSON.stringify(out, null, 2)
if (process.env.OUT) writeFileSync(process.env.OUT, json + '\n')
console.log(json)
console.log(`
| submits/s | SSE msgs/s (task / queues) | frames/s | frame p50 / p99 / max | frames > 50 ms | long tasks (≥ 200 ms) | long-task ms | React commits/s | main thread busy | smooth |
|---|---|---|---|---|---|---|---|---|---|
| ${RATE} | ${out.sse.per_s} (${out.sse.task_per_s} / ${r1((out.sse.by_event.queues ?? 0) / out.window_s)}) | ${out.frames.fps} | ${out.frames.p50_ms} / ${out.frames.p99_ms} / ${out.frames.max_ms} ms | ${out.frames.over_50ms} | ${out.long_tasks.count} (${out.long_tasks.at_least_200ms}) | ${out.long_tasks.total_ms} | ${out.react.commits_per_s} | ${Math.round(out.main_thread.busy_share * 100)} % | ${out.smooth ? 'yes' : 'NO'} |`)
