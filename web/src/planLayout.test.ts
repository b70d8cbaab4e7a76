import { describe, expect, it } from 'vitest'
import { gantt, layoutPlan, shortOp, type PlanGraph } from './planLayout'

const diamond: PlanGraph = {
  name: 'diamond',
  endpoints: ['ep'],
  outputs: ['d'],
  nodes: [
    { id: 'a', op: 'core::viewer', kind: 'IO', deps: [], output: false },
    { id: 'b', op: 'core::follow', kind: 'IO', deps: ['a'], output: false },
    { id: 'c', op: 'core::recommendation', kind: 'IO', deps: ['a'], output: false },
    { id: 'd', op: 'core::concat', kind: 'CPU', deps: ['b', 'c'], output: true },
  ],
}

describe('layoutPlan', () => {
  it('puts every node after the nodes it reads, left to right', () => {
    const l = layoutPlan(diamond)
    const x = Object.fromEntries(l.boxes.map((b) => [b.id, b.x]))
    expect(x.a).toBeLessThan(x.b)
    expect(x.a).toBeLessThan(x.c)
    expect(x.b).toBeLessThan(x.d)
    expect(x.b).toBe(x.c) // one layer
    expect(l.arrows).toHaveLength(4)
    expect(l.arrows.every((a) => a.points.length >= 2)).toBe(true)
    expect(l.width).toBeGreaterThan(3 * 150)
  })
})

describe('gantt', () => {
  it('places bars on the run time axis', () => {
    const bars = gantt(
      [
        { node_id: 'a', op: 'core::viewer', kind: 'IO', place: 'io', start_us: 0, end_us: 50, rows_in: 0, rows_out: 1, redis_round_trips: 1 },
        { node_id: 'd', op: 'core::concat', kind: 'CPU', place: 'inline', start_us: 100, end_us: 100, rows_in: 2, rows_out: 2, redis_round_trips: 0 },
      ],
      200,
    )
    expect(bars[0]).toMatchObject({ node: 'a', left: 0, width: 0.25, us: 50 })
    expect(bars[1].left).toBe(0.5)
    expect(bars[1].width).toBeGreaterThan(0) // a 0 µs node still shows
  })
  it('stretches the axis to a node that ended after the reported elapsed time', () => {
    const bars = gantt([{ node_id: 'a', op: 'x', kind: 'CPU', place: 'pool', start_us: 10, end_us: 400, rows_in: 0, rows_out: 0, redis_round_trips: 0 }], 100)
    expect(bars[0].left + bars[0].width).toBeCloseTo(1)
  })
})

describe('shortOp', () => {
  it('drops the namespace', () => {
    expect(shortOp('core::viewer')).toBe('viewer')
    expect(shortOp('plain')).toBe('plain')
  })
})
