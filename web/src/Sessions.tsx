import { useEffect, useState } from 'react'
import { api, getToken, type Notification, type NotificationPage } from './api'
import type { components } from './api/schema'
import { Link } from './Link'
import { navigate } from './route'

type TaskList = components['schemas']['TaskList']

// Sessions: one session's notifications, arriving live (WebSocket), the ones
// unread when the page opened marked new, and — signed in as that session —
// its tasks. The admin names the session (?session=…); a session sees its
// own. Showing a notification here delivers it (it is marked read).
export function Sessions({ url }: { url: URL }) {
  const asked = url.searchParams.get('session') ?? ''
  const [sid, setSid] = useState(asked)
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
      }
      ws.onclose = () => {
        if (stop) return
        setLive('reconnecting')
        const next = opened ? 0 : attempt + 1
        retry = setTimeout(() => follow(last, next), Math.min(10_000, 500 * 2 ** next))
      }
    }
    api<NotificationPage>('/api/v1/notifications?' + q.toString())
      .then((pg) => {
        if (stop) return
        setSession(pg.session_id)
        setUnread(new Set(pg.notifications.map((n) => n.id)))
        follow('0', 0)
        if (!asked) {
          // a session's own tasks (the admin's listing is everyone's)
          api<TaskList>('/api/v1/tasks?page_size=25&sort_by=created_at&sort_order=desc')
            .then((t) => !stop && setTasks(t))
            .catch(() => undefined)
        }
      })
      .catch((e: Error) => !stop && setError(e.message))
    return () => {
      stop = true
      clearTimeout(retry)
      ws?.close()
    }
  }, [asked])

  return (
    <section aria-labelledby="sess-h">
      <h2 id="sess-h">Session</h2>
      <form
        className="actions"
        onSubmit={(e) => {
          e.preventDefault()
          navigate('/ui/sessions' + (sid.trim() ? '?session=' + encodeURIComponent(sid.trim()) : ''))
        }}
      >
        <label htmlFor="sess-id">Session id</label>
        <input id="sess-id" value={sid} placeholder="(your own)" onChange={(e) => setSid(e.target.value)} />
        <button type="submit">Show</button>
      </form>
      {error && <p role="alert">{error}</p>}
      {session && (
        <p>
          Session <code>{session}</code> · notifications: {live}
        </p>
      )}
      {session && (
        <table>
          <caption>{notes.length} notifications, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Kind</th>
              <th scope="col">Message</th>
              <th scope="col">Task</th>
              <th scope="col">Unread</th>
            </tr>
          </thead>
          <tbody>
            {notes.map((n) => (
              <tr key={n.id}>
                <td>{n.timestamp}</td>
                <td>{n.type}</td>
                <td>{n.message}</td>
                <td>{n.task_id && <Link href={`/ui/tasks/${n.task_id}`}>{n.task_id}</Link>}</td>
                <td>{unread.has(n.id) ? 'new' : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {tasks && (
        <table>
          <caption>{tasks.total} tasks of this session</caption>
          <thead>
            <tr>
              <th scope="col">Task</th>
              <th scope="col">Type</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {tasks.tasks.map((t) => (
              <tr key={t.task_id}>
                <td>
                  <Link href={`/ui/tasks/${t.task_id}`}>{t.task_id}</Link>
                </td>
                <td>{t.task_type}</td>
                <td>{t.state}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}
