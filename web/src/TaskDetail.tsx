import { useEffect, useState, type ReactNode } from 'react'
import { READ_ONLY, useCanChange } from './me'
import { api, type Notification, type NotificationPage } from './api'
import type { components } from './api/schema'
import { Link } from './Link'
import { navigate } from './route'
import { duration, spans } from './timeline'
import { CopyButton, Duration, ErrorText, Glyph, Notice, TaskId, TaskState, Time } from './ui'

type Task = components['schemas']['Task']
type Result = components['schemas']['Result']

const FINAL = new Set(['COMPLETED', 'DLQ', 'CANCELLED'])

// TaskDetail: everything about one task, read again every second while it
// can still change (its state, progress reported by an external service,
// the notifications its session got), with the actions its state allows.
export function TaskDetail({ id }: { id: string }) {
  const may = useCanChange()
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
    // the same delivery: its queue and limit key (not a unique key, which
    // would answer the task itself while it is unfinished)
    if (t.queue) body.queue = t.queue
    if (t.limit_key) body.limit_key = t.limit_key
    api<{ task_id: string }>('/api/v1/tasks', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
      .then((r) => navigate(`/ui/tasks/${r.task_id}`))
      .catch((e: Error) => setMsg(`Submit again failed: ${e.message}`))
  }

  const st = task?.state ?? ''
  return (
    <section aria-labelledby="task-h">
      <p className="crumbs">
        <Link href="/ui/tasks">← Back to the task list</Link>
      </p>
      <div className="page-head">
        <div>
          <h2 id="task-h" className="title-id">
            <span>Task</span>
            <code title={id}>{id}</code>
            <CopyButton text={id} label={`Copy id ${id}`} />
          </h2>
          {task && (
            <p className="page-sub title-id">
              <span data-testid="task-state" data-state={task.state}>
                <TaskState task={task} />
              </span>
              <span className="tag">{task.task_type}</span>
              <span className={`prio-${task.priority}`}>{task.priority} priority</span>
              {res?.message && !task.waiting_for && <span>{res.message}</span>}
            </p>
          )}
        </div>
        {task && !may && (
          <div className="page-actions">
            <span className="tag" title={READ_ONLY} data-testid="read-only">
              read-only
            </span>
          </div>
        )}
        {task && may && (
          <div className="page-actions">
            {(st === 'FAILED' || st === 'DLQ') && (
              <button type="button" className="primary" onClick={() => act('Retry', base + '/retry')}>
                Retry
              </button>
            )}
            {(st === 'PENDING' || st === 'ACTIVE' || st === 'TIMEOUT') && (
              <button type="button" className="danger" onClick={() => act('Cancel', base + '/cancel')}>
                Cancel
              </button>
            )}
            <button type="button" onClick={() => again(task)}>
              Submit again
            </button>
            {st !== 'ACTIVE' && (
              <button type="button" className="danger" onClick={() => confirm('Delete this task?') && act('Delete', base, 'DELETE')}>
                Delete
              </button>
            )}
          </div>
        )}
      </div>
      {error && <Notice kind="error">{error}</Notice>}
      {msg && <Notice kind={msg.includes('failed') ? 'error' : 'ok'}>{msg}</Notice>}
      {task && (
        <>
          {task.waiting_for && <Notice kind="info">Waiting for a service: {task.waiting_for.message}</Notice>}
          {res?.progress && (
            <div className="progress panel panel-body">
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
          <div className="panel">
            <h3 className="panel-title">Task</h3>
            <dl className="facts">
              <Fact name="State">
                <TaskState task={task} />
              </Fact>
              <Fact name="Attempts">
                {task.retry_count} retried of {task.max_retries} allowed
              </Fact>
              <Fact name="Duration">
                <Duration task={task} />
              </Fact>
              <Fact name="Session">
                {task.session_id ? (
                  <span className="id">
                    <Link href={`/ui/tasks?session=${encodeURIComponent(task.session_id)}`} className="mono" title={task.session_id}>
                      {task.session_id}
                    </Link>
                  </span>
                ) : (
                  '–'
                )}
              </Fact>
              {task.queue && task.queue !== 'default' && (
                <Fact name="Queue">
                  <span className="tag" data-testid="task-queue">
                    {task.queue}
                  </span>
                </Fact>
              )}
              {task.limit_key && (
                <Fact name="Limit key">
                  <code data-testid="task-limit-key">{task.limit_key}</code>
                </Fact>
              )}
              <Fact name="Worker">{task.worker ? <code>{task.worker}</code> : '–'}</Fact>
              <Fact name="Timeout">{task.timeout != null ? `${task.timeout} s` : '–'}</Fact>
              <Fact name="Created">
                <Time iso={task.created_at} />
              </Fact>
              <Fact name="Started">
                <Time iso={task.started_at} />
              </Fact>
              <Fact name="Completed">
                <Time iso={task.completed_at} />
              </Fact>
              {task.retry_after && (
                <Fact name="Next retry">
                  <Time iso={task.retry_after} />
                </Fact>
              )}
              {task.waiting_on && task.waiting_on.length > 0 && (
                <Fact name="Waits on">
                  {task.waiting_on.map((d) => (
                    <div key={d}>
                      <TaskId id={d} />
                    </div>
                  ))}
                </Fact>
              )}
              {task.last_error && (
                <Fact name="Last error" wide>
                  <ErrorText text={task.last_error} />
                </Fact>
              )}
            </dl>
          </div>
          <History task={task} />
          {task.error_history && task.error_history.length > 0 && (
            <div className="panel table-wrap">
              <table>
                <caption>Errors</caption>
                <thead>
                  <tr>
                    <th scope="col">At</th>
                    <th scope="col" className="num">
                      Attempt
                    </th>
                    <th scope="col">Type</th>
                    <th scope="col">Message</th>
                    <th scope="col">Worker</th>
                  </tr>
                </thead>
                <tbody>
                  {task.error_history.map((e, i) => (
                    <tr key={i}>
                      <td>
                        <Time iso={e.at} />
                      </td>
                      <td className="num">{e.attempt}</td>
                      <td>
                        <span className="tag">{e.error_type}</span>
                      </td>
                      <td>
                        <ErrorText text={e.message} />
                      </td>
                      <td>{e.worker ? <code>{e.worker}</code> : '–'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {notes && (
            <div className="panel table-wrap">
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
                      <td colSpan={3} className="empty">
                        none yet
                      </td>
                    </tr>
                  )}
                  {notes.map((n) => (
                    <tr key={n.notification_id}>
                      <td>
                        <Time iso={new Date(n.timestamp).toISOString()} />
                      </td>
                      <td>
                        <span className="tag">{n.type}</span>
                      </td>
                      <td>{n.message}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <div className="cols-2">
            <div className="panel">
              <h3 className="panel-title">Result</h3>
              <Json value={task.result ?? res?.result ?? null} label="Result" />
            </div>
            {task.params && Object.keys(task.params).length > 0 && (
              <div className="panel">
                <h3 className="panel-title">Params</h3>
                <Json value={task.params} label="Params" />
              </div>
            )}
          </div>
          {task.content && (
            <div className="panel">
              <h3 className="panel-title">Content</h3>
              <div className="panel-body">
                <pre aria-label="Content">{task.content}</pre>
              </div>
            </div>
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

function Fact({ name, children, wide }: { name: string; children: ReactNode; wide?: boolean }) {
  return (
    <div className={wide ? 'fact-wide' : undefined}>
      <dt>{name}</dt>
      <dd>{children}</dd>
    </div>
  )
}

// History: the state history as a strip of spans (width by time, each
// labelled with its state) and as a table with times and durations.
function History({ task }: { task: Task }) {
  const ss = spans(task.state_history ?? [], Date.now())
  if (ss.length === 0) return null
  const total = ss.reduce((a, s) => a + s.ms, 0) || 1
  return (
    <div className="panel">
      <h3 className="panel-title">State history</h3>
      <ol className="strip" aria-hidden="true">
        {ss.map((s, i) => (
          <li
            key={i}
            className={`strip-${s.state.toLowerCase()}${s.current ? ' strip-now' : ''}`}
            style={{ flexGrow: Math.max(s.ms / total, 0.04) }}
            title={`${s.state} ${duration(s.ms)}${s.current ? ' so far' : ''}`}
          >
            <Glyph state={s.state} />
            {s.state}
          </li>
        ))}
      </ol>
      <div className="table-wrap">
        <table>
          <caption className="visually-hidden">Each change</caption>
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
                <td>
                  <Time iso={new Date(s.at).toISOString()} />
                </td>
                <td>
                  {s.from ? `${s.from} → ` : ''}
                  {s.state}
                </td>
                <td className="nowrap">{s.current ? `${duration(s.ms)} so far` : duration(s.ms)}</td>
                <td>{s.cause ? <span className="tag">{s.cause}</span> : '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
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
