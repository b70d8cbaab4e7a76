import { useEffect, useState } from 'react'
import { api, ApiError } from './api'
import type { components } from './api/schema'
import { Link } from './Link'
import { navigate } from './route'
import { FieldError, fieldsOf, paramsOf } from './schemaForm'

type Task = components['schemas']['Task']
const STATES = ['', 'PENDING', 'ACTIVE', 'COMPLETED', 'FAILED', 'DLQ', 'TIMEOUT', 'CANCELLED']

interface Page {
  tasks: Task[]
  total: number
  page: number
  page_size: number
}

export function Tasks({ url }: { url: URL }) {
  const q = url.searchParams
  const state = q.get('state') ?? ''
  const page = Math.max(1, Number(q.get('page') ?? '1') || 1)
  const [data, setData] = useState<Page | null>(null)
  const [error, setError] = useState('')
  useEffect(() => {
    const p = new URLSearchParams({ page: String(page), page_size: '25', sort_by: 'created_at', sort_order: 'desc' })
    if (state) p.set('status', state)
    api<Page>('/api/v1/tasks/?' + p.toString())
      .then((d) => {
        setData(d)
        setError('')
      })
      .catch((e: Error) => setError(e.message))
  }, [state, page])
  const go = (s: string, pg: number) => {
    const p = new URLSearchParams()
    if (s) p.set('state', s)
    if (pg > 1) p.set('page', String(pg))
    navigate('/ui/tasks' + (p.size ? '?' + p.toString() : ''))
  }
  const pages = data ? Math.max(1, Math.ceil(data.total / data.page_size)) : 1
  return (
    <section aria-labelledby="tasks-h">
      <h2 id="tasks-h">Tasks</h2>
      <label htmlFor="state-filter">State</label>{' '}
      <select id="state-filter" value={state} onChange={(e) => go(e.target.value, 1)}>
        {STATES.map((s) => (
          <option key={s} value={s}>
            {s || 'any'}
          </option>
        ))}
      </select>
      {error && <p role="alert">{error}</p>}
      {data && (
        <>
          <table>
            <caption>
              {data.total} tasks, page {page} of {pages}
            </caption>
            <thead>
              <tr>
                <th scope="col">Task</th>
                <th scope="col">Type</th>
                <th scope="col">State</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {data.tasks.map((t) => (
                <tr key={t.task_id}>
                  <td>
                    <Link href={`/ui/tasks/${t.task_id}`}>{t.task_id}</Link>
                  </td>
                  <td>{t.task_type}</td>
                  <td>{t.state}</td>
                  <td>{t.created_at}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <nav aria-label="Pages">
            <button type="button" disabled={page <= 1} onClick={() => go(state, page - 1)}>
              Previous page
            </button>{' '}
            <button type="button" disabled={page >= pages} onClick={() => go(state, page + 1)}>
              Next page
            </button>
          </nav>
        </>
      )}
    </section>
  )
}

const FINAL = new Set(['COMPLETED', 'FAILED', 'DLQ', 'TIMEOUT', 'CANCELLED'])

export function TaskDetail({ id }: { id: string }) {
  const [task, setTask] = useState<Task | null>(null)
  const [error, setError] = useState('')
  const [msg, setMsg] = useState('')
  const [tick, setTick] = useState(0)
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined
    let stop = false
    api<Task>(`/api/v1/tasks/${encodeURIComponent(id)}`)
      .then((t) => {
        if (stop) return
        setTask(t)
        setError('')
        // Follow the task until it ends.
        if (!FINAL.has(t.state)) timer = setTimeout(() => setTick((n) => n + 1), 500)
      })
      .catch((e: Error) => !stop && setError(e.message))
    return () => {
      stop = true
      clearTimeout(timer)
    }
  }, [id, tick])
  const act = (label: string, path: string, method = 'POST') =>
    api<unknown>(path, { method })
      .then(() => {
        setMsg(`${label}: done`)
        if (method === 'DELETE') navigate('/ui/tasks')
        else setTick((n) => n + 1)
      })
      .catch((e: Error) => setMsg(`${label} failed: ${e.message}`))
  const base = `/api/v1/tasks/${encodeURIComponent(id)}`
  return (
    <section aria-labelledby="task-h">
      <h2 id="task-h">Task {id}</h2>
      {error && <p role="alert">{error}</p>}
      {task && (
        <>
          <p>
            State: <strong data-testid="task-state">{task.state}</strong> · type {task.task_type}
          </p>
          <div className="actions">
            <button type="button" onClick={() => act('Retry', base + '/retry')}>
              Retry
            </button>
            <button type="button" onClick={() => act('Cancel', base + '/cancel')}>
              Cancel
            </button>
            <button type="button" onClick={() => confirm('Delete this task?') && act('Delete', base, 'DELETE')}>
              Delete
            </button>
          </div>
          {msg && <p role="status">{msg}</p>}
          <h3>Result</h3>
          <pre aria-label="Result">{JSON.stringify(task.result ?? null, null, 2)}</pre>
          <h3>Task</h3>
          <pre aria-label="Task JSON">{JSON.stringify(task, null, 2)}</pre>
        </>
      )}
    </section>
  )
}

type TaskTypeInfo = components['schemas']['TaskTypes']['task_types'][number]

// Submit: a form for every task type the deployment accepts, its params
// generated from the type's JSON schema; summarize (the default) takes its
// text as the task's content. After the submit the page follows the task.
export function Submit() {
  const [types, setTypes] = useState<TaskTypeInfo[]>([])
  const [typ, setTyp] = useState('summarize')
  const [content, setContent] = useState('')
  const [values, setValues] = useState<Record<string, string | boolean>>({})
  const [priority, setPriority] = useState('')
  const [error, setError] = useState('')
  const [badField, setBadField] = useState('')
  useEffect(() => {
    api<{ task_types: TaskTypeInfo[] }>('/api/v1/task-types')
      .then((r) => setTypes(r.task_types))
      .catch((err: Error) => setError(err.message))
  }, [])
  const info = types.find((t) => t.name === typ)
  const fields = typ === 'summarize' ? [] : fieldsOf(info?.params_schema)
  const set = (name: string, v: string | boolean) => {
    setValues((old) => ({ ...old, [name]: v }))
    if (badField === 'params.' + name) {
      setBadField('') // edited: the refusal was about the old value
      setError('')
    }
  }
  return (
    // noValidate: the API's answer (422 naming the field) is the one rule,
    // shown next to the field, rather than the browser's own bubbles
    <form
      className="card"
      noValidate
      onSubmit={(e) => {
        e.preventDefault()
        setError('')
        setBadField('')
        let body: Record<string, unknown>
        try {
          body =
            typ === 'summarize'
              ? { task_type: typ, content }
              : { task_type: typ, params: paramsOf(fields, values) }
        } catch (err) {
          if (err instanceof FieldError) setBadField('params.' + err.field)
          setError((err as Error).message)
          return
        }
        if (priority) body.priority = priority
        api<{ task_id: string }>('/api/v1/tasks', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        })
          .then((r) => navigate(`/ui/tasks/${r.task_id}`))
          .catch((err: Error) => {
            if (err instanceof ApiError) setBadField(err.field)
            setError(err.message)
          })
      }}
    >
      <h2>Submit a task</h2>
      <label htmlFor="task-type">Task type</label>
      <select
        id="task-type"
        value={typ}
        onChange={(e) => {
          setTyp(e.target.value)
          setValues({})
          setError('')
          setBadField('')
        }}
      >
        {(types.length ? types.map((t) => t.name) : ['summarize']).map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
      {info?.description && <p className="hint">{info.description}</p>}
      {info?.handled_by === 'service' && info.online === false && (
        <p className="hint">No service for {typ} is running: the task waits until one starts.</p>
      )}
      {typ === 'summarize' && (
        <>
          <label htmlFor="content">Text to summarize</label>
          <textarea id="content" rows={8} value={content} onChange={(e) => setContent(e.target.value)} />
        </>
      )}
      {fields.map((f) => {
        const id = 'param-' + f.name
        const invalid = badField === 'params.' + f.name ? true : undefined
        const label = f.name + (f.required ? ' (required)' : '')
        const v = values[f.name]
        return (
          <div key={f.name} className="field">
            {f.kind === 'checkbox' ? (
              <label>
                <input id={id} type="checkbox" checked={v === true} onChange={(e) => set(f.name, e.target.checked)} /> {label}
              </label>
            ) : (
              <label htmlFor={id}>{label}</label>
            )}
            {f.kind === 'select' && (
              <select id={id} aria-invalid={invalid} value={typeof v === 'string' ? v : ''} onChange={(e) => set(f.name, e.target.value)}>
                <option value="">{f.required ? 'choose…' : '(default)'}</option>
                {f.options.map((o) => (
                  <option key={o} value={o}>
                    {o}
                  </option>
                ))}
              </select>
            )}
            {(f.kind === 'textarea' || f.kind === 'json') && (
              <textarea
                id={id}
                aria-invalid={invalid}
                rows={f.kind === 'json' ? 3 : 6}
                placeholder={f.kind === 'json' ? 'JSON' : undefined}
                value={typeof v === 'string' ? v : ''}
                onChange={(e) => set(f.name, e.target.value)}
              />
            )}
            {(f.kind === 'text' || f.kind === 'number' || f.kind === 'integer') && (
              <input
                id={id}
                aria-invalid={invalid}
                type={f.kind === 'text' ? 'text' : 'number'}
                min={f.min}
                max={f.max}
                step={f.kind === 'integer' ? 1 : 'any'}
                value={typeof v === 'string' ? v : ''}
                onChange={(e) => set(f.name, e.target.value)}
              />
            )}
            {f.description && <small>{f.description}</small>}
          </div>
        )
      })}
      <label htmlFor="priority">Priority</label>
      <select id="priority" value={priority} onChange={(e) => setPriority(e.target.value)}>
        <option value="">normal (default)</option>
        <option value="high">high</option>
        <option value="low">low</option>
      </select>
      <button type="submit">Submit</button>
      {error && <p role="alert">{error}</p>}
    </form>
  )
}
