import { useEffect, useState } from 'react'
import { api, ApiError, getToken, setToken } from './api'
import { Audit } from './Audit'
import { Keys } from './Keys'
import { MeContext, managesKeys, READ_ONLY, type Me } from './me'
import { Overview } from './Overview'
import { Link } from './Link'
import { route, useLocation } from './route'
import { DeadLetters } from './DeadLetters'
import { Plans } from './Plans'
import { Queues } from './Queues'
import { Schedules } from './Schedules'
import { Sessions } from './Sessions'
import { Submit, TaskDetail, Tasks } from './Tasks'
import { WorkersPage } from './Workers'
import { PageHead, RolePill } from './ui'

type Auth = 'checking' | 'signed-out' | 'signed-in'

export function App() {
  const [auth, setAuth] = useState<Auth>('checking')
  const [me, setMe] = useState<Me | null>(null)
  const [error, setError] = useState('')
  const url = useLocation()
  const { page, rest } = route(url.pathname)
  // a key of any role sees every task (role 'admin' to the pages that ask
  // whose tasks to show); a session sees its own
  const role: 'admin' | 'session' = me?.kind === 'key' ? 'admin' : 'session'

  // probe: who the token (or open mode) is — a key with its role, or a
  // session — so that each page offers only what it may do.
  async function probe() {
    try {
      setMe(await api<Me>('/api/v1/me'))
      setAuth('signed-in')
    } catch (e) {
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
        if (getToken()) setError(e.message)
      } else {
        setError(e instanceof Error ? e.message : String(e))
      }
      setMe(null)
      setAuth('signed-out')
    }
  }
  useEffect(() => {
    void probe()
  }, [])

  // the menu (a phone's width) closes when the page changes
  const [menu, setMenu] = useState(false)
  useEffect(() => setMenu(false), [url.pathname])

  const item = (href: string, name: string, key: string) => (
    <Link href={href} aria-current={page === key ? 'page' : undefined}>
      {name}
    </Link>
  )
  return (
    <div className="shell">
      <header className="topbar">
        <Link href="/ui/" className="brand" aria-label="taskflow, overview">
          <Logo />
          <h1>taskflow</h1>
        </Link>
        <button type="button" className="menu-toggle ghost" aria-expanded={menu} aria-controls="main-nav" onClick={() => setMenu((m) => !m)}>
          <svg width="16" height="16" viewBox="0 0 16 16" aria-hidden="true">
            <path d="M2 4 H14 M2 8 H14 M2 12 H14" stroke="currentColor" strokeWidth="1.6" strokeLinecap="round" />
          </svg>
          Menu
        </button>
        <nav id="main-nav" className="nav" aria-label="Main" data-open={menu ? 'true' : 'false'}>
          {item('/ui/', 'Overview', '')}
          {item('/ui/tasks', 'Tasks', 'tasks')}
          {item('/ui/dlq', 'Dead letters', 'dlq')}
          {item('/ui/queues', 'Queues', 'queues')}
          {item('/ui/workers', 'Workers', 'workers')}
          {item('/ui/schedules', 'Schedules', 'schedules')}
          {item('/ui/sessions', 'Sessions', 'sessions')}
          {item('/ui/plans', 'Plans', 'plans')}
          {item('/ui/submit', 'Submit', 'submit')}
          {managesKeys(me) && item('/ui/keys', 'Keys', 'keys')}
          {managesKeys(me) && item('/ui/audit', 'Audit', 'audit')}
        </nav>
        {auth === 'signed-in' && me && (
          <div className="topbar-end">
            <span
              className="whoami"
              data-testid="whoami"
              title={me.role === 'viewer' ? READ_ONLY : me.kind === 'session' ? `session ${me.session_id}` : `${me.role} key ${me.name}`}
            >
              {me.role ? <RolePill role={me.role} /> : <span className="tag">session</span>}
              <span aria-hidden="true">·</span>
              <b>{me.kind === 'session' ? (me.session_id ?? '').slice(0, 8) : me.name}</b>
            </span>
            {getToken() && (
              <button
                type="button"
                onClick={() => {
                  setToken(null)
                  setMe(null)
                  setAuth('signed-out')
                }}
              >
                Sign out
              </button>
            )}
          </div>
        )}
      </header>
      <MeContext.Provider value={me}>
      <main>
        {auth === 'checking' && <p className="muted">Loading…</p>}
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
          <section aria-labelledby="ov">
            <PageHead id="ov" title="Overview" />
            <p className="notice notice-info">
              Signed in as a session: the overview, dead letters and workers are the operators&apos; (admin key). Your
              tasks are under <Link href="/ui/tasks">Tasks</Link>, your notifications under{' '}
              <Link href="/ui/sessions">Sessions</Link>.
            </p>
          </section>
        )}
        {auth === 'signed-in' && page === 'tasks' && rest[0] && <TaskDetail id={rest[0]} />}
        {auth === 'signed-in' && page === 'tasks' && !rest[0] && <Tasks url={url} role={role} />}
        {auth === 'signed-in' && page === 'dlq' && <DeadLetters url={url} />}
        {auth === 'signed-in' && page === 'queues' && <Queues />}
        {auth === 'signed-in' && page === 'workers' && <WorkersPage />}
        {auth === 'signed-in' && page === 'schedules' && <Schedules />}
        {auth === 'signed-in' && page === 'sessions' && <Sessions url={url} role={role} />}
        {auth === 'signed-in' && page === 'submit' && <Submit />}
        {auth === 'signed-in' && page === 'plans' && <Plans name={rest[0] ? decodeURIComponent(rest[0]) : undefined} />}
        {auth === 'signed-in' && page === 'keys' && <Keys />}
        {auth === 'signed-in' && page === 'audit' && <Audit url={url} />}
        {auth === 'signed-in' && !['', 'tasks', 'dlq', 'queues', 'workers', 'schedules', 'sessions', 'submit', 'plans', 'keys', 'audit'].includes(page) && (
          <p>No page {url.pathname}.</p>
        )}
      </main>
      </MeContext.Provider>
    </div>
  )
}

// Logo: three stacked bars moving right, the queue's flow.
function Logo() {
  return (
    <svg width="22" height="22" viewBox="0 0 22 22" aria-hidden="true">
      <rect x="2" y="3" width="12" height="4" rx="2" fill="currentColor" opacity="0.55" />
      <rect x="5" y="9" width="12" height="4" rx="2" fill="currentColor" opacity="0.8" />
      <rect x="8" y="15" width="12" height="4" rx="2" fill="currentColor" />
    </svg>
  )
}

function SignIn({ error, onSubmit }: { error: string; onSubmit: (t: string) => void }) {
  const [tok, setTok] = useState('')
  return (
    <form
      className="card panel signin"
      onSubmit={(e) => {
        e.preventDefault()
        onSubmit(tok.trim())
      }}
    >
      <h2>Sign in</h2>
      <label htmlFor="token">Admin key, named key (tfk_…) or session token</label>
      <input id="token" type="password" autoComplete="off" value={tok} onChange={(e) => setTok(e.target.value)} />
      <button type="submit" className="primary">
        Sign in
      </button>
      {error && <p role="alert">{error}</p>}
    </form>
  )
}
