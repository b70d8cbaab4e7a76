import { useEffect, useState } from 'react'
import { api, getToken, type Notification, type NotificationPage } from './api'
import type { components } from './api/schema'
import { count, shortId } from './format'
import { Link } from './Link'
import { navigate } from './route'
import { CopyButton, ErrorText, Notice, PageHead, TaskId, TaskState, Time } from './ui'

type TaskList = components['schemas']['TaskList']
type SessionList = components['schemas']['SessionList']

// Sessions: one session's notifications, arriving live (WebSocket), the ones
// unread when the page opened marked new, and its tasks. A session sees its
// own; the admin picks one from the live sessions (GET /api/v1/sessions)
// or names it (?session=…). Showing a notification here delivers it (it is
// marked read).
export function Sessions({ url, role = 'admin' }: { url: URL; role?: 'admin' | 'session' }) {
  const asked = url.searchParams.get('session') ?? ''
  const pick = role === 'admin' && !asked
  return (
    <section aria-labelledby="sess-h">
      <PageHead
        id="sess-h"
        title="Sessions"
        sub={pick ? 'Pick a session to follow its notifications and tasks.' : role === 'admin' ? 'One session, followed live.' : 'Your session, followed live.'}
      >
        {role === 'admin' && <SessionForm asked={asked} />}
      </PageHead>
      {pick ? <SessionPicker /> : <SessionView asked={asked} admin={role === 'admin'} />}
    </section>
  )
}

function SessionForm({ asked }: { asked: string }) {
  const [sid, setSid] = useState(asked)
  useEffect(() => setSid(asked), [asked])
  return (
    <form
      className="field-inline"
      onSubmit={(e) => {
        e.preventDefault()
        navigate('/ui/sessions' + (sid.trim() ? '?session=' + encodeURIComponent(sid.trim()) : ''))
      }}
    >
      <label htmlFor="sess-id">Session id</label>
      <input id="sess-id" value={sid} placeholder="paste a session id" size={24} onChange={(e) => setSid(e.target.value)} />
      <button type="submit">Show</button>
      {asked && (
        <Link href="/ui/sessions" className="muted">
          All sessions
        </Link>
      )}
    </form>
  )
}

// SessionPicker: the live sessions, newest first, each opening its page.
function SessionPicker() {
  const [list, setList] = useState<SessionList | null>(null)
  const [error, setError] = useState('')
  useEffect(() => {
    let stop = false
    let t: ReturnType<typeof setTimeout> | undefined
    const load = () =>
      api<SessionList>('/api/v1/sessions?limit=200')
        .then((l) => {
          if (stop) return
          setList(l)
          setError('')
        })
        .catch((e: Error) => !stop && setError(e.message))
        .finally(() => {
          if (!stop) t = setTimeout(load, 5000)
        })
    void load()
    return () => {
      stop = true
      clearTimeout(t)
    }
  }, [])
  if (error) return <Notice kind="error">{error}</Notice>
  if (!list) return <p className="muted">Loading…</p>
  return (
    <div className="panel table-wrap">
      <table>
        <caption>
          {list.total > list.count ? `${count(list.count)} newest of ${count(list.total)} live sessions` : `${count(list.total)} live sessions`}
        </caption>
        <thead>
          <tr>
            <th scope="col">Session</th>
            <th scope="col" className="num">
              Tasks
            </th>
            <th scope="col">Opened</th>
            <th scope="col">Ends</th>
          </tr>
        </thead>
        <tbody>
          {list.sessions.length === 0 && (
            <tr>
              <td colSpan={4} className="empty">
                No live session. A client opens one with POST /api/v1/sessions.
              </td>
            </tr>
          )}
          {list.sessions.map((s) => (
            <tr key={s.session_id}>
              <td>
                <span className="id">
                  <Link href={`/ui/sessions?session=${encodeURIComponent(s.session_id)}`} aria-label={`Session ${s.session_id}`} title={s.session_id} className="mono">
                    {shortId(s.session_id)}
                  </Link>
                  <CopyButton text={s.session_id} label={`Copy id ${s.session_id}`} />
                </span>
              </td>
              <td className="num">{count(s.tasks)}</td>
              <td>
                <Time iso={s.created_at} />
              </td>
              <td>
                <Time iso={s.expires_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

function SessionView({ asked, admin }: { asked: string; admin: boolean }) {
  const [session, setSession] = useState('')
  const [unread, setUnread] = useState<Set<string>>(new Set())
  const [notes, setNotes] = useState<Notification[]>([])
  const [tasks, setTasks] = useState<TaskList | null>(null)
  const [live, setLive] = useState<'off' | 'connecting' | 'live' | 'reconnecting'>('off')
  const [error, setError] = useState('')

  useEffect(() => {
    setNotes([])
    setTasks(null)
    setError('')
    const q = new URLSearchParams({ mark_read: 'false' })
    if (asked) q.set('session_id', asked)
    let ws: WebSocket | null = null
    let retry: ReturnType<typeof setTimeout> | undefined
    let stop = false
    // follow: the WebSocket feed (browsers cannot set its headers: the
    // token rides as ?access_token=), resumed after the last notification
    // seen when it drops, with a growing pause
    const follow = (after: string, attempt: number) => {
      const s = new URLSearchParams({ after })
      if (asked) s.set('session_id', asked)
      const tok = getToken()
      if (tok) s.set('access_token', tok)
      const proto = location.protocol === 'https:' ? 'wss:' : 'ws:'
      ws = new WebSocket(`${proto}//${location.host}/api/v1/notifications/ws?${s.toString()}`)
      let last = after
      let opened = false
      setLive(attempt === 0 ? 'connecting' : 'reconnecting')
      ws.onopen = () => {
        opened = true
        setLive('live')
      }
      ws.onmessage = (ev) => {
        const n = JSON.parse(String(ev.data)) as Notification
        last = n.id || last
        setNotes((old) => (old.some((o) => o.id === n.id) ? old : [n, ...old]))
        // a new notification is news of a task: read the tasks again
        if (!stop) loadTasks()
      }
      ws.onclose = () => {
        if (stop) return
        setLive('reconnecting')
        const next = opened ? 0 : attempt + 1
        retry = setTimeout(() => follow(last, next), Math.min(10_000, 500 * 2 ** next))
      }
    }
    // the session's tasks: its own listing, or the admin's filtered by it
    const loadTasks = () => {
      const p = new URLSearchParams({ page_size: '25', sort_by: 'created_at', sort_order: 'desc', summary: 'true' })
      if (asked) p.set('session_id', asked)
      api<TaskList>('/api/v1/tasks?' + p.toString())
        .then((t) => !stop && setTasks(t))
        .catch(() => undefined)
    }
    api<NotificationPage>('/api/v1/notifications?' + q.toString())
      .then((pg) => {
        if (stop) return
        setSession(pg.session_id)
        setUnread(new Set(pg.notifications.map((n) => n.id)))
        follow('0', 0)
        loadTasks()
      })
      .catch((e: Error) => !stop && setError(e.message))
    return () => {
      stop = true
      clearTimeout(retry)
      ws?.close()
    }
  }, [asked])

  return (
    <>
      {error && <Notice kind="error">{error}</Notice>}
      {session && (
        <p className="title-id">
          <span>
            Session <code>{session}</code>
          </span>
          <CopyButton text={session} label={`Copy id ${session}`} />
          <span className={`live${live === 'live' ? ' live-live' : ''}`}>notifications: {live}</span>
          {admin && (
            <Link href={`/ui/tasks?session=${encodeURIComponent(session)}`} className="muted">
              Open in the task list
            </Link>
          )}
        </p>
      )}
      <div className="cols-2">
        {session && (
          <div className="panel table-wrap">
            <table>
              <caption>{notes.length} notifications, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Message</th>
                  <th scope="col">Task</th>
                </tr>
              </thead>
              <tbody>
                {notes.length === 0 && (
                  <tr>
                    <td colSpan={4} className="empty">
                      None yet.
                    </td>
                  </tr>
                )}
                {notes.map((n) => (
                  <tr key={n.id}>
                    <td>
                      <Time iso={n.timestamp} />
                      {unread.has(n.id) && (
                        <>
                          {' '}
                          <span className="pill pill-active">new</span>
                        </>
                      )}
                    </td>
                    <td>
                      <span className="tag">{n.type}</span>
                    </td>
                    <td>{n.message}</td>
                    <td>{n.task_id && <TaskId id={n.task_id} />}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {tasks && (
          <div className="panel table-wrap">
            <table>
              <caption>{tasks.total} tasks of this session</caption>
              <thead>
                <tr>
                  <th scope="col">Task</th>
                  <th scope="col">Type</th>
                  <th scope="col">State</th>
                  <th scope="col">Last error</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {tasks.tasks.map((t) => (
                  <tr key={t.task_id}>
                    <td>
                      <TaskId id={t.task_id} />
                    </td>
                    <td>
                      <span className="tag">{t.task_type}</span>
                    </td>
                    <td>
                      <TaskState task={t} />
                    </td>
                    <td>
                      <ErrorText text={t.last_error} max={60} />
                    </td>
                    <td>
                      <Time iso={t.created_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </>
  )
}
