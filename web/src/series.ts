import type { components } from './api/schema'

export type Series = components['schemas']['Series']

// Columns ready for a chart: x in unix seconds, then one array per line
// (null where there is no value, so the line has a gap).
export type Columns = [number[], ...(number | null)[][]]

export interface ChartData {
  throughput: Columns // completed/s, failed/s, enqueued/s
  depth: Columns // one line per queue, in depthQueues order
  depthQueues: string[]
  latency: Columns // start p50, p99 (ms)
}

const QUEUE_ORDER = ['primary', 'retry', 'scheduled', 'dlq']

// toCharts turns the API's per-step counts into per-second rates. The
// newest step is still filling: its rate is taken over the part of the
// step that has passed (now - its start), so the line does not dip at the
// right edge.
export function toCharts(s: Series, nowSec: number): ChartData {
  const n = s.at.length
  const step = s.step_seconds
  const span = (i: number) => (i === n - 1 ? Math.min(step, Math.max(1, nowSec - s.at[i])) : step)
  const rate = (col: number[]) => col.map((v, i) => Math.round((v / span(i)) * 100) / 100)
  const depthQueues = Object.keys(s.depth).sort((a, b) => {
    const ia = QUEUE_ORDER.indexOf(a)
    const ib = QUEUE_ORDER.indexOf(b)
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b)
  })
  return {
    throughput: [s.at, rate(s.completed), rate(s.failed), rate(s.enqueued)],
    depth: [s.at, ...depthQueues.map((q) => s.depth[q].map((v) => v ?? null))],
    depthQueues,
    latency: [s.at, s.start_p50_ms.map((v) => v ?? null), s.start_p99_ms.map((v) => v ?? null)],
  }
}

// lastValue is the newest non-null value of a line.
export function lastValue(col: (number | null)[]): number | null {
  for (let i = col.length - 1; i >= 0; i--) if (col[i] != null) return col[i]
  return null
}

export interface Kpis {
  throughput: number // completed per second over the last minute
  failureRate: number | null // failed attempts / (completed + failed) over the window
  startP50: number | null // the window's, as the API computed them
  startP99: number | null
  starts: number
}

// kpis reads the overview's tiles from the series: the last minute's
// completions per second (the newest step counted over the part that has
// passed), and the window's failure rate and start percentiles — the
// API's window figures, the same the caption and the table show.
export function kpis(s: Series, nowSec: number): Kpis {
  const n = s.at.length
  const steps = Math.max(1, Math.round(60 / s.step_seconds))
  let done = 0
  for (let i = Math.max(0, n - steps); i < n; i++) done += s.completed[i]
  const from = s.at[Math.max(0, n - steps)]
  const secs = Math.max(1, Math.min(60, nowSec - from))
  const w = s.window
  const ended = w.completed + w.failed
  return {
    throughput: Math.round((done / secs) * 100) / 100,
    failureRate: ended ? w.failed / ended : null,
    startP50: w.start_p50_ms,
    startP99: w.start_p99_ms,
    starts: w.starts,
  }
}
