import dagre from '@dagrejs/dagre'
import type { components } from './api/schema'

export type PlanGraph = components['schemas']['PlanGraph']
export type TraceLine = components['schemas']['PlanTraceLine']

export interface Box {
  id: string
  op: string
  kind: 'IO' | 'CPU'
  output: boolean
  x: number // centre
  y: number
  w: number
  h: number
}

export interface Arrow {
  from: string
  to: string
  points: { x: number; y: number }[]
}

export interface Layout {
  width: number
  height: number
  boxes: Box[]
  arrows: Arrow[]
}

export const NODE_W = 150
export const NODE_H = 46

// layoutPlan places a plan's nodes in layers, left to right, each after
// the nodes it reads (dagre's layered layout).
export function layoutPlan(p: PlanGraph): Layout {
  const g = new dagre.graphlib.Graph()
  g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 46, marginx: 8, marginy: 8 })
  g.setDefaultEdgeLabel(() => ({}))
  for (const n of p.nodes) g.setNode(n.id, { width: NODE_W, height: NODE_H })
  for (const n of p.nodes) for (const d of n.deps) g.setEdge(d, n.id)
  dagre.layout(g)
  const boxes = p.nodes.map((n) => {
    const v = g.node(n.id)
    return { id: n.id, op: n.op, kind: n.kind, output: n.output, x: v.x, y: v.y, w: NODE_W, h: NODE_H }
  })
  const arrows = g.edges().map((e) => ({ from: e.v, to: e.w, points: g.edge(e).points ?? [] }))
  const gl = g.graph()
  return { width: Math.ceil(gl.width ?? 0), height: Math.ceil(gl.height ?? 0), boxes, arrows }
}

export interface Bar {
  node: string
  op: string
  kind: 'IO' | 'CPU'
  place: string
  left: number // share of the run, 0..1
  width: number // share of the run, at least a sliver so a 0 µs node shows
  us: number // its duration
  error?: string
}

// gantt turns a traced run into bars on one time axis (0 = the run's
// start, 1 = its end).
export function gantt(trace: TraceLine[], elapsedUs: number): Bar[] {
  const span = Math.max(1, elapsedUs, ...trace.map((t) => t.end_us))
  return trace.map((t) => ({
    node: t.node_id,
    op: t.op,
    kind: t.kind,
    place: t.place,
    left: t.start_us / span,
    width: Math.max((t.end_us - t.start_us) / span, 0.004),
    us: t.end_us - t.start_us,
    error: t.error,
  }))
}

// shortOp drops the namespace of an op name: core::viewer → viewer.
export function shortOp(op: string): string {
  const i = op.lastIndexOf('::')
  return i < 0 ? op : op.slice(i + 2)
}
