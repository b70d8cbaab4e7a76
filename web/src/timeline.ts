// A task's state history as spans: each state it entered, when, what
// caused it, and how long it stayed (until the next change, or until now
// while it is still there).
export interface Change {
  at?: string
  from?: string
  to?: string
  cause?: string
}

export interface Span {
  state: string
  from: string
  at: number // unix ms
  ms: number // time in the state
  cause: string
  current: boolean
}

export function spans(history: Change[], nowMs: number): Span[] {
  const hs = history.filter((h) => h.at && h.to).map((h) => ({ ...h, t: Date.parse(h.at!) }))
  hs.sort((a, b) => a.t - b.t)
  return hs.map((h, i) => {
    const next = hs[i + 1]
    const end = next ? next.t : nowMs
    return { state: h.to!, from: h.from ?? '', at: h.t, ms: Math.max(0, end - h.t), cause: h.cause ?? '', current: !next }
  })
}

// duration says ms the way a person reads it: 850 ms, 4.2 s, 3 min 5 s,
// 2 h 10 min.
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  const s = ms / 1000
  if (s < 60) return `${Math.round(s * 10) / 10} s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m} min ${Math.round(s - m * 60)} s`
  const h = Math.floor(m / 60)
  if (h < 48) return `${h} h ${m - h * 60} min`
  return `${Math.floor(h / 24)} d ${h % 24} h`
}
