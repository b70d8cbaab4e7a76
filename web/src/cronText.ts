// describeCron reads a cron expression (5 fields, UTC, or a @macro) the way
// a person says it, so that a schedule can be checked before it is saved.
// It returns '' for a form it does not know how to say (the API still
// checks the expression itself).

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']

const two = (n: number) => String(n).padStart(2, '0')

function isNum(s: string): boolean {
  return /^\d+$/.test(s)
}

// list reads a field's list, ranges and names: "1-5" → "Monday–Friday".
function list(field: string, names: string[] | null, offset: number): string | null {
  const parts = field.split(',')
  const out: string[] = []
  for (const p of parts) {
    const name = (n: string) => {
      if (!isNum(n)) return null
      const i = Number(n) - offset
      if (names) return names[i % names.length] ?? null // 7 is Sunday too
      return n
    }
    const r = p.split('-')
    if (r.length === 2) {
      const a = name(r[0])
      const b = name(r[1])
      if (a === null || b === null) return null
      out.push(`${a}–${b}`)
    } else if (r.length === 1) {
      const a = name(p)
      if (a === null) return null
      out.push(a)
    } else return null
  }
  return out.length > 1 ? out.slice(0, -1).join(', ') + ' and ' + out[out.length - 1] : out[0]
}

export function describeCron(expr: string): string {
  const e = expr.trim()
  const macros: Record<string, string> = {
    '@yearly': 'every year on January 1 at 00:00 UTC',
    '@annually': 'every year on January 1 at 00:00 UTC',
    '@monthly': 'on the 1st of every month at 00:00 UTC',
    '@weekly': 'every Sunday at 00:00 UTC',
    '@daily': 'every day at 00:00 UTC',
    '@midnight': 'every day at 00:00 UTC',
    '@hourly': 'every hour, on the hour',
  }
  if (macros[e]) return macros[e]
  const every = /^@every\s+(\S+)$/.exec(e)
  if (every) return `every ${every[1]}`
  const f = e.split(/\s+/)
  if (f.length !== 5) return ''
  const [min, hour, dom, mon, dow] = f
  let when: string
  const step = (s: string) => /^\*\/(\d+)$/.exec(s)?.[1]
  if (min === '*' && hour === '*') when = 'every minute'
  else if (step(min) && hour === '*') when = `every ${step(min)} minutes`
  else if (isNum(min) && hour === '*') when = `every hour at minute ${Number(min)}`
  else if (isNum(min) && step(hour)) when = `every ${step(hour)} hours at minute ${Number(min)}`
  else if (isNum(min) && isNum(hour)) when = `at ${two(Number(hour))}:${two(Number(min))} UTC`
  else if (isNum(min) && /^[\d,-]+$/.test(hour)) {
    const hs = list(hour, null, 0)
    if (!hs) return ''
    when = `at minute ${Number(min)} of hours ${hs} UTC`
  } else return ''
  const days: string[] = []
  if (dom !== '*') {
    const d = list(dom, null, 0)
    if (!d) return ''
    days.push(`on day ${d} of the month`)
  }
  if (mon !== '*') {
    const m = list(mon, MONTHS, 1)
    if (!m) return ''
    days.push(`in ${m}`)
  }
  if (dow !== '*') {
    const d = list(dow, DAYS, 0)
    if (!d) return ''
    days.push(`on ${d}`)
  }
  return [when, ...days].join(', ')
}
