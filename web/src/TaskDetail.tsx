import { useEffect, useState, type ReactNode } from 'react'
import { api, type Notification, type NotificationPage } from './api'
import type { components } from './api/schema'
import { Link } from './Link'
import { navigate } from './route'
import { duration, spans } from './timeline'

type Task = components['schemas']['Task']
type Result = components['schemas']['Result']

const FINAL = new Set(['COMPLETED', 'DLQ', 'CANCELLED'])

// TaskDetail: everything about one task, read again every second while it
// can still change (its state, progress reported by an external service,
// the notifications its session got), with the actions its state allows.
export function TaskDetail({ id }: { id: string }) {
  const [task, setTask] = useState<Task | null>(null)
  const [res, setRes] = useState<Result | null>(null)
  const [notes, setNotes] = useState<Notification[] | null>(null)
  const [error, setError] = useState('')
  const [msg, setMsg] = useState('')
  const [tick, setTick] = useState(0)
  const base = `/api/v1/tasks/${encodeURIComponent(id)}`

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined
    let stop = false
    Promise.all([
      api<Task>(base),
      api<Result>(`/api/v1/results/${encodeURIComponent(id)}`).catch(() => null),
    ])
      .then(async ([t, r]) => {
        if (stop) return
        setTask(t)
        setRes(r)
        setError('')
        if (t.session_id) {
          const q = new URLSearchParams({ session_id: t.session_id, after: '0', limit: '1000', mark_read: 'false' })
          const page = await api<NotificationPage>('/api/v1/notifications?' + q.toString()).catch(() => null)
          if (!stop) setNotes(page ? page.notifications.filter((n) => n.task_id === id) : null)
        }
        if (!stop && !FINAL.has(t.state)) timer = setTimeout(() => setTick((n) => n + 1), 1000)
      })
      .catch((e: Error) => !stop && setError(e.message))
    return () => {
      stop = true
      clearTimeout(timer)
    }
  }, [id, tick, base])

  const act = (label: string, path: string, method = 'POST') =>
    api<unknown>(path, { method })
      .then(() => {
        setMsg(`${label}: done`)
        if (method === 'DELETE') navigate('/ui/tasks')
        else setTick((n) => n + 1)
      })
      .catch((e: Error) => setMsg(`${label} failed: ${e.message}`))

  const again = (t: Task) => {
    const body: Record<string, unknown> = { task_type: t.task_type, priority: t.priority }
    if (t.params && Object.keys(t.params).length) body.params = t.params
    if (t.content) body.content = t.content
    api<{ task_id: string }>('/api/v1/tasks', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
      .then((r) => navigate(`/ui/tasks/${r.task_id}`))
      .catch((e: Error) => setMsg(`Submit again failed: ${e.message}`))
  }

  const st = task?.state ?? ''
  return (
    <section aria-labelledby="task-h">
      <h2 id="task-h">Task {id}</h2>
      <p>
        <Link href="/ui/tasks">Back to the task list</Link>
      </p>
      {error && <p role="alert">{error}</p>}
      {task && (
        <>
          <p>
            State: <strong data-testid="task-state">{task.state}</strong> · type {task.task_type}
            {res?.message && <> · {res.message}</>}
          </p>
          <div className="actions">
            {(st === 'FAILED' || st === 'DLQ') && (
              <button type="button" onClick={() => act('Retry', base + '/retry')}>
                Retry
              </button>
            )}
            {(st === 'PENDING' || st === 'ACTIVE' || st === 'TIMEOUT') && (
              <button type="button" onClick={() => act('Cancel', base + '/cancel')}>
                Cancel
              </button>
            )}
            <button type="button" onClick={() => again(task)}>
              Submit again
            </button>
            {st !== 'ACTIVE' && (
              <button type="button" onClick={() => confirm('Delete this task?') && act('Delete', base, 'DELETE')}>
                Delete
              </button>
            )}
          </div>
          {msg && <p role="status">{msg}</p>}
          {res?.progress && (
            <div className="progress">
              <label htmlFor="task-progress">
                Progress{res.progress.message ? `: ${res.progress.message}` : ''}
                {res.progress.eta_seconds != null ? ` (about ${duration(res.progress.eta_seconds * 1000)} left)` : ''}
              </label>
              <progress id="task-progress" max={100} value={res.progress.percent ?? undefined}>
                {res.progress.percent ?? 0}%
              </progress>{' '}
              {res.progress.percent != null && <span>{res.progress.percent}%</span>}
            </div>
          )}
          <div className="grid">
            <table>
              <caption>Task</caption>
              <tbody>
                <Row name="Priority">{task.priority}</Row>
                <Row name="Session">
                  {task.session_id ? <Link href={`/ui/tasks?session=${encodeURIComponent(task.session_id)}`}>{task.session_id}</Link> : '–'}
                </Row>
                <Row name="Attempts">
                  {task.retry_count} retried of {task.max_retries} allowed
                </Row>
                <Row name="Worker">{task.worker || '–'}</Row>
                <Row name="Timeout">{task.timeout != null ? `${task.timeout} s` : '–'}</Row>
                <Row name="Created">{task.created_at}</Row>
                <Row name="Started">{task.started_at ?? '–'}</Row>
                <Row name="Completed">{task.completed_at ?? '–'}</Row>
                {task.retry_after && <Row name="Next retry">{task.retry_after}</Row>}
                {task.waiting_on && task.waiting_on.length > 0 && (
                  <Row name="Waits on">
                    {task.waiting_on.map((d, i) => (
                      <span key={d}>
                        {i > 0 && ', '}
                        <Link href={`/ui/tasks/${d}`}>{d}</Link>
                      </span>
                    ))}
                  </Row>
                )}
                {task.waiting_for && <Row name="Waiting for">{task.waiting_for.message}</Row>}
              </tbody>
            </table>
          </div>
          <History task={task} />
          {task.error_history && task.error_history.length > 0 && (
            <table>
              <caption>Errors</caption>
              <thead>
                <tr>
                  <th scope="col">At</th>
                  <th scope="col">Attempt</th>
                  <th scope="col">Type</th>
                  <th scope="col">Message</th>
                  <th scope="col">Worker</th>
                </tr>
              </thead>
              <tbody>
                {task.error_history.map((e, i) => (
                  <tr key={i}>
                    <td>{e.at}</td>
                    <td>{e.attempt}</td>
                    <td>{e.error_type}</td>
                    <td>{e.message}</td>
                    <td>{e.worker ?? '–'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {notes && (
            <table>
              <caption>Notifications sent to its session ({notes.length})</caption>
              <thead>
                <tr>
                  <th scope="col">At</th>
                  <th scope="col">Type</th>
                  <th scope="col">Message</th>
                </tr>
              </thead>
              <tbody>
                {notes.length === 0 && (
                  <tr>
                    <td colSpan={3}>none yet</td>
                  </tr>
                )}
                {notes.map((n) => (
                  <tr key={n.notification_id}>
                    <td>{new Date(n.timestamp).toISOString()}</td>
                    <td>{n.type}</td>
                    <td>{n.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h3>Result</h3>
          <Json value={task.result ?? res?.result ?? null} label="Result" />
          {task.params && Object.keys(task.params).length > 0 && (
            <>
              <h3>Params</h3>
              <Json value={task.params} label="Params" />
            </>
          )}
          {task.content && (
            <>
              <h3>Content</h3>
              <pre aria-label="Content">{task.content}</pre>
            </>
          )}
          <details>
            <summary>Raw task JSON</summary>
            <pre aria-label="Task JSON">{JSON.stringify(task, null, 2)}</pre>
          </details>
        </>
      )}
    </section>
  )
}

function Row({ name, children }: { name: string; children: ReactNode }) {
  return (
    <tr>
      <th scope="row">{name}</th>
      <td>{children}</td>
    </tr>
  )
}

// History: the state history as a strip of spans (width by time, each
// labelled with its state) and as a table with times and durations.
function History({ task }: { task: Task }) {
  const ss = spans(task.state_history ?? [], Date.now())
  if (ss.length === 0) return null
  const total = ss.reduce((a, s) => a + (s.current ? 0 : s.ms), 0) || 1
  return (
    <>
      <h3>State history</h3>
      <ol className="strip" aria-hidden="true">
        {ss
          .filter((s) => !s.current)
          .map((s, i) => (
            <li key={i} className={`strip-${s.state.toLowerCase()}`} style={{ flexGrow: Math.max(s.ms / total, 0.02) }} title={`${s.state} ${duration(s.ms)}`}>
              {s.state}
            </li>
          ))}
      </ol>
      <table>
        <caption>Each change</caption>
        <thead>
          <tr>
            <th scope="col">At</th>
            <th scope="col">Change</th>
            <th scope="col">Time in state</th>
            <th scope="col">Cause</th>
          </tr>
        </thead>
        <tbody>
          {ss.map((s, i) => (
            <tr key={i}>
              <td>{new Date(s.at).toISOString()}</td>
              <td>
                {s.from ? `${s.from} → ` : ''}
                {s.state}
              </td>
              <td>{s.current ? `${duration(s.ms)} so far` : duration(s.ms)}</td>
              <td>{s.cause || '–'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  )
}

// Json shows a value as a tree: objects and arrays fold (<details>), the
// first two levels open.
export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <div className="json" role="group" aria-label={label}>
      <JsonNode value={value} depth={0} />
    </div>
  )
}

function JsonNode({ value, depth, name }: { value: unknown; depth: number; name?: string }) {
  const key = name !== undefined ? <span className="json-key">{name}: </span> : null
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value as Record<string, unknown>)
    const open = Array.isArray(value) ? '[' : '{'
    return (
      <details open={depth < 2}>
        <summary>
          {key}
          {open} {entries.length} {Array.isArray(value) ? 'items' : 'keys'}
        </summary>
        <div className="json-children">
          {entries.map(([k, v]) => (
            <JsonNode key={k} name={k} value={v} depth={depth + 1} />
          ))}
        </div>
      </details>
    )
  }
  return (
    <div>
      {key}
      <span className={`json-${value === null ? 'null' : typeof value}`}>{typeof value === 'string' ? JSON.stringify(value) : String(value)}</span>
    </div>
  )
}
