import { useEffect, useState, useSyncExternalStore, type ReactNode } from 'react'
import { exact, firstLine, relative, shortId, span } from './format'
import { Link } from './Link'

// The dashboard's shared pieces: state pills (a glyph and a word beside
// the colour, never colour alone), relative times with the exact one on
// hover, short ids with a copy button, errors cut to their first line
// with the rest a click away, KPI tiles, panels.

// ---- a clock every relative time shares (one timer for the page)
let nowMs = Date.now()
const listeners = new Set<() => void>()
let timer: ReturnType<typeof setInterval> | undefined
function subscribe(f: () => void) {
  listeners.add(f)
  if (!timer) {
    timer = setInterval(() => {
      nowMs = Date.now()
      listeners.forEach((l) => l())
    }, 5000)
  }
  return () => {
    listeners.delete(f)
    if (listeners.size === 0 && timer) {
      clearInterval(timer)
      timer = undefined
    }
  }
}
// useNow is the time, advanced every 5 s while some component shows a
// relative time.
export function useNow(): number {
  return useSyncExternalStore(subscribe, () => nowMs)
}

// ---- states
export type State = 'PENDING' | 'ACTIVE' | 'COMPLETED' | 'FAILED' | 'DLQ' | 'TIMEOUT' | 'CANCELLED' | 'WAITING'

const LABEL: Record<State, string> = {
  PENDING: 'PENDING',
  ACTIVE: 'ACTIVE',
  COMPLETED: 'COMPLETED',
  FAILED: 'FAILED',
  DLQ: 'DLQ',
  TIMEOUT: 'TIMEOUT',
  CANCELLED: 'CANCELLED',
  WAITING: 'WAITING FOR SERVICE',
}

// Glyph draws a state's shape: a hollow circle (pending), a triangle
// (active), a tick (completed), a bang (failed), a clock (timeout), a cross
// (dead letter), a slashed circle (cancelled), two bars (waiting).
export function Glyph({ state }: { state: string }) {
  const common = { width: 12, height: 12, viewBox: '0 0 12 12', 'aria-hidden': true, className: 'glyph', focusable: false } as const
  switch (state.toUpperCase()) {
    case 'PENDING':
    case 'IDLE':
      return (
        <svg {...common}>
          <circle cx="6" cy="6" r="4.2" fill="none" stroke="currentColor" strokeWidth="1.6" strokeDasharray="2.2 1.6" />
        </svg>
      )
    case 'ACTIVE':
      return (
        <svg {...common}>
          <path d="M3 1.8 L10.2 6 L3 10.2 Z" fill="currentColor" />
        </svg>
      )
    case 'COMPLETED':
    case 'CLOSED':
    case 'ONLINE':
    case 'OK':
      return (
        <svg {...common}>
          <path d="M1.8 6.4 L4.7 9.2 L10.2 2.8" fill="none" stroke="currentColor" strokeWidth="2" strokeLinecap="round" strokeLinejoin="round" />
        </svg>
      )
    case 'FAILED':
    case 'HALF_OPEN':
    case 'BEHIND':
      return (
        <svg {...common}>
          <path d="M6 1.5 V7.2" stroke="currentColor" strokeWidth="2" strokeLinecap="round" />
          <circle cx="6" cy="10" r="1.2" fill="currentColor" />
        </svg>
      )
    case 'TIMEOUT':
      return (
        <svg {...common}>
          <circle cx="6" cy="6" r="4.6" fill="none" stroke="currentColor" strokeWidth="1.5" />
          <path d="M6 3.2 V6 L8 7.4" fill="none" stroke="currentColor" strokeWidth="1.5" strokeLinecap="round" />
        </svg>
      )
    case 'DLQ':
    case 'OPEN':
    case 'OFFLINE':
    case 'STUCK':
      return (
        <svg {...common}>
          <path d="M2.5 2.5 L9.5 9.5 M9.5 2.5 L2.5 9.5" stroke="currentColor" strokeWidth="2" strokeLinecap="round" />
        </svg>
      )
    case 'CANCELLED':
      return (
        <svg {...common}>
          <circle cx="6" cy="6" r="4.4" fill="none" stroke="currentColor" strokeWidth="1.5" />
          <path d="M3 9 L9 3" stroke="currentColor" strokeWidth="1.5" />
        </svg>
      )
    case 'WAITING':
      return (
        <svg {...common}>
          <path d="M4 2.5 V9.5 M8 2.5 V9.5" stroke="currentColor" strokeWidth="2" strokeLinecap="round" />
        </svg>
      )
    default:
      return (
        <svg {...common}>
          <circle cx="6" cy="6" r="2.5" fill="currentColor" />
        </svg>
      )
  }
}

// Pill is a state as a pill: glyph, word, colour. title explains it.
export function Pill({ state, title, children }: { state: string; title?: string; children?: ReactNode }) {
  const s = state as State
  return (
    <span className={`pill pill-${state.toLowerCase()}`} title={title}>
      <Glyph state={state} />
      <span>{children ?? LABEL[s] ?? state}</span>
    </span>
  )
}

// TaskState is a task's pill: WAITING FOR SERVICE when the API says the
// task waits for a service that is not running (waiting_for), else its
// state.
export function TaskState({ task }: { task: { state: string; waiting_for?: { message: string } | null } }) {
  if (task.waiting_for) return <Pill state="WAITING" title={`${task.state}: ${task.waiting_for.message}`} />
  return <Pill state={task.state} />
}

// ---- times
// Time shows how long ago (or ahead) iso is, the exact time in its title.
export function Time({ iso, empty = '–' }: { iso: string | null | undefined; empty?: string }) {
  const now = useNow()
  if (!iso) return <span className="muted">{empty}</span>
  const t = Date.parse(iso)
  if (Number.isNaN(t)) return <span>{iso}</span>
  return (
    <time className="reltime" dateTime={iso} title={exact(t)}>
      {relative(t, Math.max(now, Date.now()))}
    </time>
  )
}

// Duration of a task's last attempt: started → completed/last change, or
// started → now while it runs ("so far").
export function Duration({ task }: { task: { state: string; started_at?: string | null; completed_at?: string | null; updated_at: string } }) {
  const now = useNow()
  if (!task.started_at) return <span className="muted">–</span>
  const start = Date.parse(task.started_at)
  if (task.state === 'ACTIVE') {
    return <span title="running, so far">{span(Math.max(0, Math.max(now, Date.now()) - start))}…</span>
  }
  if (task.state === 'PENDING') return <span className="muted">–</span>
  const end = Date.parse(task.completed_at ?? task.updated_at)
  return <span>{span(Math.max(0, end - start))}</span>
}

// ---- ids
// CopyButton copies text to the clipboard and says so.
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState(false)
  useEffect(() => {
    if (!done) return
    const t = setTimeout(() => setDone(false), 1500)
    return () => clearTimeout(t)
  }, [done])
  return (
    <button
      type="button"
      className="btn-icon copy"
      aria-label={label}
      title={done ? 'Copied' : label}
      data-copy={text}
      data-copied={done ? 'true' : undefined}
      onClick={(e) => {
        e.preventDefault()
        e.stopPropagation()
        void copyText(text).then(() => setDone(true))
      }}
    >
      {done ? (
        <svg width="14" height="14" viewBox="0 0 14 14" aria-hidden="true">
          <path d="M2.5 7.5 L5.5 10.5 L11.5 3.5" fill="none" stroke="currentColor" strokeWidth="1.8" strokeLinecap="round" strokeLinejoin="round" />
        </svg>
      ) : (
        <svg width="14" height="14" viewBox="0 0 14 14" aria-hidden="true">
          <rect x="4.5" y="4.5" width="7.5" height="8" rx="1.5" fill="none" stroke="currentColor" strokeWidth="1.4" />
          <path d="M9.5 2.5 V2.2 A1.2 1.2 0 0 0 8.3 1 H3.2 A1.2 1.2 0 0 0 2 2.2 V9 A1.2 1.2 0 0 0 3.2 10.2 H4.5" fill="none" stroke="currentColor" strokeWidth="1.4" />
        </svg>
      )}
      <span className="sr-live" aria-live="polite">
        {done ? 'Copied' : ''}
      </span>
    </button>
  )
}

async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text)
    return
  } catch {
    // not a secure context, or no permission: the old way
  }
  const ta = document.createElement('textarea')
  ta.value = text
  ta.setAttribute('readonly', '')
  ta.style.position = 'fixed'
  ta.style.opacity = '0'
  document.body.appendChild(ta)
  ta.select()
  document.execCommand('copy')
  ta.remove()
}

// TaskId is a task's id in short, linking to its page (the link's name is
// the whole id), with a button that copies the whole id.
export function TaskId({ id, link = true }: { id: string; link?: boolean }) {
  return (
    <span className="id">
      {link ? (
        <Link href={`/ui/tasks/${id}`} aria-label={id} title={id} className="mono">
          {shortId(id)}
        </Link>
      ) : (
        <code className="mono" title={id}>
          {shortId(id)}
        </code>
      )}
      <CopyButton text={id} label={`Copy id ${id}`} />
    </span>
  )
}

// ---- errors
// ErrorText is an error cut to its first line; a click shows all of it.
export function ErrorText({ text, max = 140 }: { text: string | null | undefined; max?: number }) {
  const [open, setOpen] = useState(false)
  if (!text) return <span className="muted">–</span>
  const { head, long } = firstLine(text, max)
  if (!long) return <span className="err-text">{head}</span>
  return (
    <div className={`err${open ? ' err-open' : ''}`}>
      <button type="button" className="err-toggle" aria-expanded={open} onClick={() => setOpen((o) => !o)} title={open ? 'Show less' : 'Show the whole error'}>
        <span className="err-head">{head}</span>
        <span className="err-more">{open ? 'less' : 'more'}</span>
      </button>
      {open && <pre className="err-full">{text}</pre>}
    </div>
  )
}

// ---- layout
export function PageHead({ title, id, sub, children }: { title: ReactNode; id: string; sub?: ReactNode; children?: ReactNode }) {
  return (
    <div className="page-head">
      <div>
        <h2 id={id}>{title}</h2>
        {sub && <p className="page-sub">{sub}</p>}
      </div>
      {children && <div className="page-actions">{children}</div>}
    </div>
  )
}

export function Kpi({ label, value, sub, tone, testid }: { label: string; value: ReactNode; sub?: ReactNode; tone?: 'ok' | 'warn' | 'bad'; testid?: string }) {
  return (
    <div className={`kpi${tone ? ' kpi-' + tone : ''}`} data-testid={testid}>
      <div className="kpi-label">{label}</div>
      <div className="kpi-value">{value}</div>
      {sub && <div className="kpi-sub">{sub}</div>}
    </div>
  )
}

// Notice is a message in a box: role=alert for errors, status otherwise.
export function Notice({ kind, children }: { kind: 'error' | 'ok' | 'info'; children: ReactNode }) {
  return (
    <p className={`notice notice-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </p>
  )
}

// RolePill is a key's role as a pill: admin, operator, viewer.
const ROLE_TITLE: Record<string, string> = {
  admin: 'admin: may do anything, keys included',
  operator: 'operator: acts on tasks, queues, schedules and breakers; not keys',
  viewer: 'viewer: reads only',
}
export function RolePill({ role }: { role: string }) {
  return (
    <span className={`pill pill-role pill-role-${role}`} title={ROLE_TITLE[role]}>
      <RoleGlyph role={role} />
      <span>{role}</span>
    </span>
  )
}

// RoleGlyph: a key for the admin, a wrench-like bolt for the operator, an
// eye for the viewer, so the role never rests on colour alone.
function RoleGlyph({ role }: { role: string }) {
  const common = { width: 12, height: 12, viewBox: '0 0 12 12', 'aria-hidden': true, className: 'glyph', focusable: false } as const
  switch (role) {
    case 'admin':
      return (
        <svg {...common}>
          <circle cx="4" cy="6" r="2.4" fill="none" stroke="currentColor" strokeWidth="1.5" />
          <path d="M6.4 6 H11 M9.4 6 V8.2" stroke="currentColor" strokeWidth="1.5" strokeLinecap="round" />
        </svg>
      )
    case 'operator':
      return (
        <svg {...common}>
          <path d="M6.8 1 L2.6 6.8 H5.6 L5 11 L9.4 5 H6.4 Z" fill="currentColor" />
        </svg>
      )
    default:
      return (
        <svg {...common}>
          <path d="M1 6 C2.6 3 9.4 3 11 6 C9.4 9 2.6 9 1 6 Z" fill="none" stroke="currentColor" strokeWidth="1.3" />
          <circle cx="6" cy="6" r="1.6" fill="currentColor" />
        </svg>
      )
  }
}
