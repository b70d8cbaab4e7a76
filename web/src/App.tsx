import { useEffect, useState } from 'react'
import { api, ApiError, getToken, setToken, type QueueStatus } from './api'
import { Overview } from './Overview'
import { Link } from './Link'
import { route, useLocation } from './route'
import { DeadLetters } from './DeadLetters'
import { Plans } from './Plans'
import { Schedules } from './Schedules'
import { Sessions } from './Sessions'
import { Submit, TaskDetail, Tasks } from './Tasks'
import { WorkersPage } from './Workers'

type Auth = 'checking' | 'signed-out' | 'signed-in'

export function App() {
  const [auth, setAuth] = useState<Auth>('checking')
  const [role, setRole] = useState<'admin' | 'session'>('admin')
  const [error, setError] = useState('')
  const url = useLocation()
  const { page, rest } = route(url.pathname)

  // probe: the admin key (or open mode) reads the queues; a session token
  // is refused there (403) and reads what any caller may (its own tasks,
  // notifications and the task types).
  async function probe() {
    try {
      await api<QueueStatus>('/api/v1/queues/status')
      setRole('admin')
      setAuth('signed-in')
    } catch (e) {
      if (e instanceof ApiError && e.status === 403 && getToken()) {
        try {
          await api('/api/v1/task-types')
          setRole('session')
          setAuth('signed-in')
          return
        } catch (e2) {
          e = e2
        }
      }
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
        if (getToken()) setError(e.message)
        setAuth('signed-out')
      } else {
        setError(e instanceof Error ? e.message : String(e))
        setAuth('signed-out')
      }
    }
  }
  useEffect(() => {
    void probe()
  }, [])

  return (
    <div className="shell">
      <header>
        <h1>taskflow</h1>
        <nav aria-label="Main">
          <Link href="/ui/" aria-current={page === '' ? 'page' : undefined}>Overview</Link>{' '}
          <Link href="/ui/tasks" aria-current={page === 'tasks' ? 'page' : undefined}>Tasks</Link>{' '}
          <Link href="/ui/dlq" aria-current={page === 'dlq' ? 'page' : undefined}>Dead letters</Link>{' '}
          <Link href="/ui/workers" aria-current={page === 'workers' ? 'page' : undefined}>Workers</Link>{' '}
          <Link href="/ui/schedules" aria-current={page === 'schedules' ? 'page' : undefined}>Schedules</Link>{' '}
          <Link href="/ui/sessions" aria-current={page === 'sessions' ? 'page' : undefined}>Session</Link>{' '}
          <Link href="/ui/plans" aria-current={page === 'plans' ? 'page' : undefined}>Plans</Link>{' '}
          <Link href="/ui/submit" aria-current={page === 'submit' ? 'page' : undefined}>Submit</Link>
        </nav>
        {auth === 'signed-in' && getToken() && (
          <button
            type="button"
            onClick={() => {
              setToken(null)
              setAuth('signed-out')
            }}
          >
            Sign out
          </button>
        )}
      </header>
      <main>
        {auth === 'checking' && <p>Loading…</p>}
        {auth === 'signed-out' && (
          <SignIn
            error={error}
            onSubmit={(t) => {
              setToken(t)
              setError('')
              void probe()
            }}
          />
        )}
        {auth === 'signed-in' && page === '' && role === 'admin' && <Overview />}
        {auth === 'signed-in' && page === '' && role === 'session' && (
          <p>
            Signed in as a session: the overview, dead letters and workers are the operators&apos; (admin key). Your
            tasks are under <Link href="/ui/tasks">Tasks</Link>, your notifications under{' '}
            <Link href="/ui/sessions">Session</Link>.
          </p>
        )}
        {auth === 'signed-in' && page === 'tasks' && rest[0] && <TaskDetail id={rest[0]} />}
        {auth === 'signed-in' && page === 'tasks' && !rest[0] && <Tasks url={url} />}
        {auth === 'signed-in' && page === 'dlq' && <DeadLetters url={url} />}
        {auth === 'signed-in' && page === 'workers' && <WorkersPage />}
        {auth === 'signed-in' && page === 'schedules' && <Schedules />}
        {auth === 'signed-in' && page === 'sessions' && <Sessions url={url} />}
        {auth === 'signed-in' && page === 'submit' && <Submit />}
        {auth === 'signed-in' && page === 'plans' && <Plans name={rest[0] ? decodeURIComponent(rest[0]) : undefined} />}
        {auth === 'signed-in' && !['', 'tasks', 'dlq', 'workers', 'schedules', 'sessions', 'submit', 'plans'].includes(page) && (
          <p>No page {url.pathname}.</p>
        )}
      </main>
    </div>
  )
}

function SignIn({ error, onSubmit }: { error: string; onSubmit: (t: string) => void }) {
  const [tok, setTok] = useState('')
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault()
        onSubmit(tok.trim())
      }}
    >
      <h2>Sign in</h2>
      <label htmlFor="token">Admin key or session token</label>
      <input id="token" type="password" autoComplete="off" value={tok} onChange={(e) => setTok(e.target.value)} />
      <button type="submit">Sign in</button>
      {error && <p role="alert">{error}</p>}
    </form>
  )
}
