// Pure formatting shared by every page: relative times, durations, short
// ids, counts. Kept free of React so vitest covers them directly.

// relative says how far t is from now, in the largest unit that fits:
// "just now", "42 s ago", "3 min ago", "in 2.5 h", "5 d ago".
export function relative(t: number, now: number): string {
  const diff = (t - now) / 1000
  const a = Math.abs(diff)
  if (a < 1.5) return 'just now'
  const one = (v: number) => (v < 10 ? Math.floor(v * 10) / 10 : Math.floor(v))
  let text: string
  if (a < 60) text = `${Math.floor(a)} s`
  else if (a < 3600) text = `${Math.floor(a / 60)} min`
  else if (a < 86400) text = `${one(a / 3600)} h`
  else text = `${one(a / 86400)} d`
  return diff < 0 ? `${text} ago` : `in ${text}`
}

// exact is the time a relative one stands for, as a reader would write it
// (local time with its offset), then in UTC: the hover text.
export function exact(t: number): string {
  const d = new Date(t)
  const pad = (x: number, w = 2) => String(x).padStart(w, '0')
  const off = -d.getTimezoneOffset()
  const tz = off === 0 ? 'UTC' : `UTC${off > 0 ? '+' : '-'}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`
  const local = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)} ${tz}`
  return off === 0 ? local : `${local} (${d.toISOString()})`
}

// span is a duration in ms as a short text: "850 ms", "4.2 s", "3 min 12 s",
// "2 h 5 min", "3 d 4 h".
export function span(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '–'
  if (ms < 1000) return `${Math.round(ms)} ms`
  const s = ms / 1000
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m} min ${Math.floor(s % 60)} s`
  const h = Math.floor(m / 60)
  if (h < 24) return `${h} h ${m % 60} min`
  return `${Math.floor(h / 24)} d ${h % 24} h`
}

// shortId is the part of an id a reader tells tasks apart by. Task ids are
// UUIDv7: their first 12 hex digits are the creation time (tasks created
// together share them), so the short form is the random tail.
export function shortId(id: string): string {
  const hex = id.replace(/-/g, '')
  if (/^[0-9a-f]{32}$/i.test(hex)) return hex.slice(-8)
  return id.length > 12 ? id.slice(0, 10) + '…' : id
}

// count writes an integer with thousands separators.
export function count(n: number | null | undefined): string {
  return n == null ? '–' : Math.round(n).toLocaleString('en-US')
}

// ms writes a latency figure: "35.4 ms", "1,957 ms", "–".
export function ms(v: number | null | undefined): string {
  if (v == null) return '–'
  return v < 100 ? `${Math.round(v * 10) / 10} ms` : `${Math.round(v).toLocaleString('en-US')} ms`
}

// firstLine is an error's first line, at most max characters (the rest is
// behind "more"); long says whether anything was left out.
export function firstLine(text: string, max = 140): { head: string; long: boolean } {
  const t = text.trim()
  const nl = t.indexOf('\n')
  let head = nl >= 0 ? t.slice(0, nl) : t
  let long = nl >= 0
  if (head.length > max) {
    head = head.slice(0, max - 1) + '…'
    long = true
  }
  return { head, long }
}
