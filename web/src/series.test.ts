import { describe, expect, it } from 'vitest'
import { kpis, lastValue, toCharts, type Series } from './series'

const base: Series = {
  step_seconds: 5,
  at: [100, 105, 110],
  enqueued: [10, 0, 4],
  completed: [5, 5, 2],
  failed: [0, 1, 0],
  dead_lettered: [0, 0, 0],
  start_p50_ms: [1.2, null, 3],
  start_p99_ms: [9, null, 12],
  depth: { dlq: [1, 1, null], primary: [null, 4, 2], custom: [0, 0, 0] },
  window: { enqueued: 14, completed: 12, failed: 1, dead_lettered: 0, starts: 12, start_p50_ms: 1.5, start_p99_ms: 12 },
}

describe('toCharts', () => {
  it('turns counts per step into rates per second', () => {
    const c = toCharts(base, 200)
    expect(c.throughput[0]).toEqual([100, 105, 110])
    expect(c.throughput[1]).toEqual([1, 1, 0.4]) // completed
    expect(c.throughput[2]).toEqual([0, 0.2, 0]) // failed
    expect(c.throughput[3]).toEqual([2, 0, 0.8]) // enqueued
  })
  it('rates the step still filling over the time that has passed', () => {
    const c = toCharts(base, 112) // 2 s into the newest step
    expect(c.throughput[1][2]).toBe(1) // 2 completed in 2 s
  })
  it('orders queues as the engine does, others after, and keeps gaps', () => {
    const c = toCharts(base, 200)
    expect(c.depthQueues).toEqual(['primary', 'dlq', 'custom'])
    expect(c.depth[1]).toEqual([null, 4, 2])
    expect(c.depth[2]).toEqual([1, 1, null])
    expect(c.latency[2]).toEqual([9, null, 12])
  })
})

describe('lastValue', () => {
  it('skip the gaps', () => {
    expect(lastValue([1, 2, null])).toBe(2)
    expect(lastValue([null, null])).toBeNull()
  })
})

describe('kpis', () => {
  it("rates the last minute's completions and takes the window's figures from the API", () => {
    // 12 steps of 5 s: a minute; the newest started 2 s ago
    const n = 14
    const s: Series = {
      ...base,
      at: Array.from({ length: n }, (_, i) => 1000 + 5 * i),
      completed: Array.from({ length: n }, (_, i) => (i < 2 ? 100 : 6)),
      failed: Array(n).fill(0),
      enqueued: Array(n).fill(0),
      dead_lettered: Array(n).fill(0),
      start_p50_ms: Array(n).fill(null),
      start_p99_ms: Array(n).fill(null),
      depth: {},
      window: { enqueued: 0, completed: 272, failed: 28, dead_lettered: 3, starts: 300, start_p50_ms: 35.44, start_p99_ms: 1956.51 },
    }
    const k = kpis(s, 1000 + 5 * (n - 1) + 2)
    // the last 12 steps hold 72 completions over 57 s
    expect(k.throughput).toBe(Math.round((72 / 57) * 100) / 100)
    expect(k.failureRate).toBeCloseTo(28 / 300)
    expect(k.startP50).toBe(35.44) // the window's, never a mean of the steps
    expect(k.startP99).toBe(1956.51)
    expect(k.starts).toBe(300)
  })
  it('has no failure rate before anything ended', () => {
    expect(kpis({ ...base, window: { ...base.window, completed: 0, failed: 0 } }, 112).failureRate).toBeNull()
  })
})
