import { useEffect, useRef, useState } from 'react'
import { api, ApiError, apiResponse, type QueueStatus } from './api'
import type { components } from './api/schema'
import { count } from './format'
import { Link } from './Link'
import { navigate } from './route'
import { FieldError, fieldsOf, paramsOf } from './schemaForm'
import { ReadOnly, useCanChange, useMe } from './me'
import { controlsBody, NO_CONTROLS, SubmitKey, type Controls } from './submitControls'
import { Duration, ErrorText, Glyph, Notice, PageHead, Pill, TaskId, TaskState, Time } from './ui'
export { TaskDetail } from './TaskDetail'

type Summary = components['schemas']['TaskSummary']
const STATES = ['', 'PENDING', 'ACTIVE', 'COMPLETED', 'FAILED', 'TIMEOUT', 'DLQ', 'CANCELLED']

interface Page {
  tasks: Summary[]
  total: number
  page: number
  page_size: number
  partial?: boolean
}

const PAGE_SIZE = 25
const MAX_WINDOW = 10000
const DEEP_STATES = new Set(['COMPLETED', 'FAILED', 'DLQ', 'TIMEOUT', 'CANCELLED'])

// Tasks: one server page at a time (the API merges and orders; the page
// never loads the deployment), filtered by state, type, session and
// priority, sorted by creation or last change; every filter is in the URL.
export function Tasks({ url, role = 'admin' }: { url: URL; role?: 'admin' | 'session' }) {
  const q = url.searchParams
  const f = {
    state: q.get('state') ?? '',
    type: q.get('type') ?? '',
    session: q.get('session') ?? '',
    priority: q.get('priority') ?? '',
    sort: q.get('sort') === 'updated' ? 'updated' : 'created',
    order: q.get('order') === 'asc' ? 'asc' : 'desc',
  }
  const page = Math.max(1, Number(q.get('page') ?? '1') || 1)
  const [data, setData] = useState<Page | null>(null)
  const [types, setTypes] = useState<string[]>([])
  const [error, setError] = useState('')
  const [find, setFind] = useState('')
  const [sessionText, setSessionText] = useState(f.session)
  const counts = useStateCounts(role, url.search)
  useEffect(() => {
    api<{ task_types: { name: string }[] }>('/api/v1/task-types')
      .then((r) => setTypes(r.task_types.map((t) => t.name)))
      .catch(() => setTypes([]))
  }, [])
  const key = url.search
  useEffect(() => {
    const p = new URLSearchParams({ page: String(page), page_size: String(PAGE_SIZE), sort_by: f.sort + '_at', sort_order: f.order, summary: 'true' })
    if (f.state) p.set('status', f.state)
    if (f.type) p.set('task_type', f.type)
    if (f.session) p.set('session_id', f.session)
    if (f.priority) p.set('priority', f.priority)
    let stop = false
    api<Page>('/api/v1/tasks?' + p.toString())
      .then((d) => {
        if (stop) return
        setData(d)
        setError('')
      })
      .catch((e: Error) => !stop && setError(e.message))
    return () => {
      stop = true
    }
    // the URL's query string is the whole input
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key])
  const href = (change: Partial<typeof f>, pg = 1) => {
    const next = { ...f, ...change }
    const p = new URLSearchParams()
    for (const [k, v] of Object.entries(next)) {
      if (v && !(k === 'sort' && v === 'created') && !(k === 'order' && v === 'desc')) p.set(k, v)
    }
    if (pg > 1) p.set('page', String(pg))
    return '/ui/tasks' + (p.size ? '?' + p.toString() : '')
  }
  const go = (change: Partial<typeof f>, pg = 1) => navigate(href(change, pg))
  const all = data ? Math.max(1, Math.ceil(data.total / data.page_size)) : 1
  // The API merges and orders at most 10,000 entries deep, except a final
  // state sorted by last change, which it cuts straight from that state's
  // index: past that the pager stops and says how to go further.
  const deepOK = f.sort === 'updated' && DEEP_STATES.has(f.state) && !f.type && !f.priority && !f.session
  const pages = deepOK ? all : Math.min(all, Math.floor(MAX_WINDOW / PAGE_SIZE))
  const total = counts ? Object.values(counts).reduce((a, b) => a + b, 0) : undefined
  return (
    <section aria-labelledby="tasks-h">
      <PageHead id="tasks-h" title="Tasks" sub={role === 'session' ? 'The tasks of your session.' : 'Every task, one server page at a time.'}>
        <form
          className="field-inline"
          aria-label="Find a task by id"
          onSubmit={(e) => {
            e.preventDefault()
            if (find.trim()) navigate(`/ui/tasks/${encodeURIComponent(find.trim())}`)
          }}
        >
          <label htmlFor="find-id">Task id</label>
          <input id="find-id" value={find} onChange={(e) => setFind(e.target.value)} placeholder="paste a task id" size={24} />
          <button type="submit">Open task</button>
        </form>
      </PageHead>
      <div className="panel">
        <nav className="tabs" aria-label="States" data-testid="state-tabs">
          {STATES.map((st) => {
            const n = st ? counts?.[st] : total
            return (
              <Link
                key={st || 'all'}
                href={href({ state: st })}
                aria-current={f.state === st ? 'page' : undefined}
                className={st ? `tab-${st.toLowerCase()}` : undefined}
                data-state={st || 'ALL'}
              >
                {st ? <Glyph state={st} /> : null}
                {st || 'All'}
                {n !== undefined && (
                  <span className="count" data-testid={`count-${st || 'ALL'}`} title={`${n} ${st ? st + ' ' : ''}tasks${role === 'admin' ? ', every type' : ''}`}>
                    {count(n)}
                  </span>
                )}
              </Link>
            )
          })}
        </nav>
        <div className="toolbar" role="group" aria-label="Filters">
          <span className="field-inline">
            <label htmlFor="type-filter">Type</label>
            <select id="type-filter" value={f.type} onChange={(e) => go({ type: e.target.value })}>
              <option value="">any</option>
              {types.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </span>
          <span className="field-inline">
            <label htmlFor="priority-filter">Priority</label>
            <select id="priority-filter" value={f.priority} onChange={(e) => go({ priority: e.target.value })}>
              <option value="">any</option>
              <option value="high">high</option>
              <option value="normal">normal</option>
              <option value="low">low</option>
            </select>
          </span>
          <span className="field-inline">
            <label htmlFor="sort-by">Sort by</label>
            <select
              id="sort-by"
              value={f.sort + ' ' + f.order}
              onChange={(e) => {
                const [sort, order] = e.target.value.split(' ')
                go({ sort, order })
              }}
            >
              <option value="created desc">newest created</option>
              <option value="created asc">oldest created</option>
              <option value="updated desc">last changed</option>
              <option value="updated asc">least recently changed</option>
            </select>
          </span>
          {role === 'admin' && (
            <form
              className="field-inline"
              aria-label="Session filter"
              onSubmit={(e) => {
                e.preventDefault()
                go({ session: sessionText.trim() })
              }}
            >
              <label htmlFor="session-filter">Session</label>
              <input id="session-filter" value={sessionText} onChange={(e) => setSessionText(e.target.value)} placeholder="any" size={14} />
              <button type="submit">Filter by session</button>
              {f.session && (
                <button
                  type="button"
                  className="ghost"
                  onClick={() => {
                    setSessionText('')
                    go({ session: '' })
                  }}
                >
                  Any session
                </button>
              )}
            </form>
          )}
        </div>
        {error && <Notice kind="error">{error}</Notice>}
        {data && (
          <div className="table-wrap">
            <table>
              <caption>
                {count(data.total)} tasks{data.partial ? ' (at least: the filter stopped scanning)' : ''}, page {page} of {pages}
              </caption>
              <thead>
                <tr>
                  <th scope="col">Task</th>
                  <th scope="col">Type</th>
                  <th scope="col">State</th>
                  <th scope="col" className="hide-sm">
                    Priority
                  </th>
                  <th scope="col" className="num hide-sm" title="attempts started, of those allowed">
                    Attempts
                  </th>
                  <th scope="col">Duration</th>
                  <th scope="col">Last error</th>
                  <th scope="col">{f.sort === 'updated' ? 'Changed' : 'Created'}</th>
                </tr>
              </thead>
              <tbody>
                {data.tasks.length === 0 && (
                  <tr>
                    <td colSpan={8} className="empty">
                      No task matches.
                    </td>
                  </tr>
                )}
                {data.tasks.map((t) => (
                  <tr key={t.task_id}>
                    <td>
                      <TaskId id={t.task_id} />
                    </td>
                    <td>
                      <span className="tag">{t.task_type}</span>
                      <Delivery queue={t.queue} limitKey={t.limit_key} />
                    </td>
                    <td>
                      <TaskState task={t} />
                    </td>
                    <td className={`prio-${t.priority} hide-sm`}>{t.priority}</td>
                    <td className="num nowrap hide-sm" title={`${t.retry_count} retries of ${t.max_retries} allowed`}>
                      {attempts(t)} / {t.max_retries + 1}
                    </td>
                    <td className="nowrap">
                      <Duration task={t} />
                    </td>
                    <td>
                      <ErrorText text={t.last_error} max={90} />
                    </td>
                    <td>
                      <Time iso={f.sort === 'updated' ? t.updated_at : t.created_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {data && pages < all && (
          <p className="hint panel-body">
            Showing the first {pages} pages of {all}: to page further, choose a finished state (COMPLETED, FAILED, DLQ, TIMEOUT or
            CANCELLED) sorted by last change, or narrow the filter.
          </p>
        )}
        {data && (
          <nav aria-label="Pages" className="toolbar">
            <button type="button" disabled={page <= 1} onClick={() => go({}, page - 1)}>
              Previous page
            </button>
            <button type="button" disabled={page >= pages} onClick={() => go({}, page + 1)}>
              Next page
            </button>
          </nav>
        )}
      </div>
    </section>
  )
}

// Delivery is a row's queue (when not default) and limit key (when set),
// under its type.
function Delivery({ queue, limitKey }: { queue?: string; limitKey?: string }) {
  const q = queue && queue !== 'default' ? queue : ''
  if (!q && !limitKey) return null
  return (
    <small className="row-meta">
      {q && (
        <span title="named queue" data-testid="row-queue">
          queue {q}
        </span>
      )}
      {q && limitKey && ' · '}
      {limitKey && (
        <span title="limit key" data-testid="row-limit-key">
          key {limitKey}
        </span>
      )}
    </small>
  )
}

// attempts counts the attempts a task started: its retries, plus the
// one it is on or ended with once it started.
function attempts(t: { retry_count: number; started_at?: string | null; state: string }): number {
  return t.retry_count + (t.started_at && t.state !== 'PENDING' ? 1 : 0)
}

// useStateCounts is how many tasks each state holds, for the tabs: the
// admin's from the queue status (every task), a session's from its own
// listing (one small request per state). Read again when the list's
// query changes and every 5 s.
function useStateCounts(role: 'admin' | 'session', key: string): Record<string, number> | null {
  const [counts, setCounts] = useState<Record<string, number> | null>(null)
  const [tick, setTick] = useState(0)
  useEffect(() => {
    let stop = false
    const load =
      role === 'admin'
        ? api<QueueStatus>('/api/v1/queues/status').then((s) => s.states)
        : Promise.all(
            STATES.filter(Boolean).map((st) =>
              api<Page>(`/api/v1/tasks?status=${st}&page_size=1&summary=true`).then((p) => [st, p.total] as const),
            ),
          ).then((xs) => Object.fromEntries(xs))
    load.then((c) => !stop && setCounts(c)).catch(() => undefined)
    const t = setTimeout(() => setTick((x) => x + 1), 5000)
    return () => {
      stop = true
      clearTimeout(t)
    }
  }, [role, key, tick])
  return counts
}

type TaskTypeInfo = components['schemas']['TaskTypes']['task_types'][number]
type Submitted = components['schemas']['Submitted']

// Answer is what the last submit got when the page stays on the form: a
// duplicate of a task holding the unique key, or a replayed answer.
interface Answer {
  task: Submitted
  uniqueKey: string
  replayed: boolean
}

// Submit: a form for every task type the deployment accepts, its params
// generated from the type's JSON schema; summarize (the default) takes its
// text as the task's content. Optional delivery controls: a named queue, a
// limit key, a unique key. Every submit carries an Idempotency-Key, so a
// double click or a retry after a lost answer creates one task. After the
// submit the page follows the new task; a duplicate (the unique key is
// held) or a replayed answer is said on the form, with a link to the task.
export function Submit() {
  const may = useCanChange()
  if (!may) {
    return (
      <section className="card panel panel-body" aria-labelledby="submit-h">
        <h2 id="submit-h">Submit a task</h2>
        <ReadOnly what="submitting a task" />
      </section>
    )
  }
  return <SubmitForm />
}

function SubmitForm() {
  const [types, setTypes] = useState<TaskTypeInfo[]>([])
  const [typ, setTyp] = useState('summarize')
  const [content, setContent] = useState('')
  const [values, setValues] = useState<Record<string, string | boolean>>({})
  const [priority, setPriority] = useState('')
  const [controls, setControls] = useState<Controls>(NO_CONTROLS)
  const [queues, setQueues] = useState<string[]>([])
  const [error, setError] = useState('')
  const [badField, setBadField] = useState('')
  const [answer, setAnswer] = useState<Answer | null>(null)
  const [busy, setBusy] = useState(false)
  const inFlight = useRef(false)
  const submitKey = useRef(new SubmitKey())
  const me = useMe()
  // a session may not read the queue list; any key may (a viewer's too)
  const readsQueues = me?.kind === 'key'
  useEffect(() => {
    api<{ task_types: TaskTypeInfo[] }>('/api/v1/task-types')
      .then((r) => setTypes(r.task_types))
      .catch((err: Error) => setError(err.message))
  }, [])
  useEffect(() => {
    if (!readsQueues) return
    api<{ queues: { name: string }[] }>('/api/v1/queues')
      .then((r) => setQueues(r.queues.map((q) => q.name)))
      .catch(() => setQueues([]))
  }, [readsQueues])
  const setControl = (name: keyof Controls, field: string, v: string) => {
    setControls((old) => ({ ...old, [name]: v }))
    if (badField === field) {
      setBadField('')
      setError('')
    }
  }
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
      className="card panel panel-body"
      noValidate
      // any edit makes the next submit a new one, with a new key
      onChange={() => submitKey.current.reset()}
      onSubmit={(e) => {
        e.preventDefault()
        if (inFlight.current) return // a second click while the first is out
        setError('')
        setBadField('')
        setAnswer(null)
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
        try {
          Object.assign(body, controlsBody(controls))
        } catch (err) {
          if (err instanceof FieldError) setBadField(err.field)
          setError((err as Error).message)
          return
        }
        const text = JSON.stringify(body)
        const key = submitKey.current.start(text)
        inFlight.current = true
        setBusy(true)
        apiResponse<Submitted>('/api/v1/tasks', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key },
          body: text,
        })
          .then((r) => {
            submitKey.current.settled()
            const replayed = r.headers.get('Idempotent-Replayed') === 'true'
            if (r.body.duplicate || replayed) {
              setAnswer({ task: r.body, uniqueKey: String(body.unique_key ?? ''), replayed })
            } else {
              navigate(`/ui/tasks/${r.body.task_id}`)
            }
          })
          .catch((err: Error) => {
            submitKey.current.settled(err)
            if (err instanceof ApiError) setBadField(err.field)
            setError(err.message)
          })
          .finally(() => {
            inFlight.current = false
            setBusy(false)
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
        <p className="hint">
          <Pill state="WAITING" /> No service for {typ} is running: the task waits until one starts.
        </p>
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
      <details className="submit-controls">
        <summary>Queue, limit key, unique key</summary>
        <div className="field">
          <label htmlFor="queue">Queue</label>
          <input
            id="queue"
            list="queue-names"
            aria-invalid={badField === 'queue' || undefined}
            placeholder="the type's default queue"
            autoComplete="off"
            value={controls.queue}
            onChange={(e) => setControl('queue', 'queue', e.target.value)}
          />
          <datalist id="queue-names">
            {queues.map((q) => (
              <option key={q} value={q} />
            ))}
          </datalist>
          <small>A named queue: lower-case letters, digits, ".", "_", "-". A new name makes a new queue.</small>
        </div>
        <div className="field">
          <label htmlFor="limit-key">Limit key</label>
          <input
            id="limit-key"
            aria-invalid={badField === 'limit_key' || undefined}
            placeholder="e.g. tenant-42"
            autoComplete="off"
            value={controls.limitKey}
            onChange={(e) => setControl('limitKey', 'limit_key', e.target.value)}
          />
          <small>What per-key limits count this task against (a tenant, a customer).</small>
        </div>
        <div className="field">
          <label htmlFor="unique-key">Unique key</label>
          <input
            id="unique-key"
            aria-invalid={badField === 'unique_key' || undefined}
            autoComplete="off"
            value={controls.uniqueKey}
            onChange={(e) => setControl('uniqueKey', 'unique_key', e.target.value)}
          />
          <small>While a task of yours with this key is unfinished, submitting again answers that task and creates none.</small>
        </div>
        <div className="field">
          <label htmlFor="unique-for">Unique for (seconds)</label>
          <input
            id="unique-for"
            type="number"
            min={0}
            max={2592000}
            step={1}
            aria-invalid={badField === 'unique_for' || undefined}
            value={controls.uniqueFor}
            onChange={(e) => setControl('uniqueFor', 'unique_for', e.target.value)}
          />
          <small>Also hold the key this long after the submit, even once the task finished (at most 30 days).</small>
        </div>
      </details>
      <button type="submit" className="primary" disabled={busy} aria-busy={busy || undefined}>
        Submit
      </button>
      {error && <Notice kind="error">{error}</Notice>}
      {answer && <AnswerNotice answer={answer} />}
    </form>
  )
}

// AnswerNotice says what a submit that created nothing new got: the task
// holding its unique key (a duplicate), or the first answer to the same
// request again (replayed, said discreetly).
function AnswerNotice({ answer }: { answer: Answer }) {
  const t = answer.task
  const open = (
    <Link href={`/ui/tasks/${t.task_id}`} className="mono">
      Open task {t.task_id}
    </Link>
  )
  const replayed = answer.replayed && (
    <small className="replayed" data-testid="replayed" title="Idempotent-Replayed: this request was answered before; the same answer again, nothing new created">
      {' '}
      replayed
    </small>
  )
  return (
    <div data-testid="submit-answer">
      {t.duplicate ? (
        <Notice kind="info">
          <b>Duplicate: nothing created.</b> Task {t.task_id} ({t.state}) already holds the unique key{' '}
          <code>{answer.uniqueKey}</code>: it is unfinished, or was submitted within its unique_for. {open}
          {replayed}
        </Notice>
      ) : (
        <Notice kind="ok">
          Task {t.task_id} was created by an earlier try of this submit. {open}
          {replayed}
        </Notice>
      )}
    </div>
  )
}
