import { useEffect, useState } from 'react'
import { api } from './api'
import type { components } from './api/schema'
import { NeedsAdmin, managesKeys, useMe } from './me'
import { navigate } from './route'
import { Notice, PageHead, RolePill, TaskId, Time } from './ui'

type AuditPage = components['schemas']['AuditPage']
type AuditEntry = components['schemas']['AuditEntry']

// Audit: every change made with the admin key or a named key, newest
// first, a page at a time (the URL holds the actor filter and the cursor,
// so the browser's Back is "Newer").
export function Audit({ url }: { url: URL }) {
  const me = useMe()
  if (!managesKeys(me)) {
    return (
      <section aria-labelledby="audit-h">
        <PageHead id="audit-h" title="Audit trail" />
        <NeedsAdmin page="Audit" />
      </section>
    )
  }
  return <AuditTrail url={url} />
}

function href(actor: string, before: string): string {
  const q = new URLSearchParams()
  if (actor) q.set('actor', actor)
  if (before) q.set('before', before)
  const s = q.toString()
  return '/ui/audit' + (s ? '?' + s : '')
}

function AuditTrail({ url }: { url: URL }) {
  const actor = url.searchParams.get('actor') ?? ''
  const before = url.searchParams.get('before') ?? ''
  const [who, setWho] = useState(actor)
  const [data, setData] = useState<AuditPage | null>(null)
  const [error, setError] = useState('')
  useEffect(() => setWho(actor), [actor])
  useEffect(() => {
    const q = new URLSearchParams({ limit: '50' })
    if (actor) q.set('actor', actor)
    if (before) q.set('before', before)
    setError('')
    api<AuditPage>('/api/v1/audit?' + q.toString())
      .then(setData)
      .catch((e: Error) => setError(e.message))
  }, [actor, before])

  return (
    <section aria-labelledby="audit-h">
      <PageHead id="audit-h" title="Audit trail" sub="Every change made with the admin key or a named key, newest first. A session's changes to its own tasks are not in it.">
        <form
          className="field-inline"
          role="search"
          onSubmit={(e) => {
            e.preventDefault()
            navigate(href(who.trim(), ''))
          }}
        >
          <label htmlFor="audit-actor">Actor</label>
          <input id="audit-actor" value={who} onChange={(e) => setWho(e.target.value)} size={14} placeholder="any" />
          <button type="submit">Filter</button>
          {actor && (
            <button type="button" className="ghost" onClick={() => navigate(href('', ''))}>
              Clear
            </button>
          )}
        </form>
      </PageHead>
      {error && <Notice kind="error">{error}</Notice>}
      {data && (
        <div className="panel">
          <div className="table-wrap">
            <table>
              <caption>
                {data.entries.length} {data.entries.length === 1 ? 'change' : 'changes'}
                {actor ? ` by ${actor}` : ''}
                {before ? ', older page' : ', the newest'}
              </caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Role</th>
                  <th scope="col">Action</th>
                  <th scope="col">Target</th>
                  <th scope="col" className="hide-sm">
                    Client
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.entries.length === 0 && (
                  <tr>
                    <td colSpan={6} className="empty">
                      No change recorded{actor ? ` by ${actor}` : ''}.
                    </td>
                  </tr>
                )}
                {data.entries.map((e) => (
                  <tr key={e.id} data-testid="audit-entry">
                    <td>
                      <Time iso={e.at} />
                    </td>
                    <td>
                      <a
                        href={href(e.actor, '')}
                        title={`Only ${e.actor}'s changes`}
                        onClick={(ev) => {
                          ev.preventDefault()
                          navigate(href(e.actor, ''))
                        }}
                      >
                        {e.actor}
                      </a>
                    </td>
                    <td>
                      <RolePill role={e.role} />
                    </td>
                    <td>
                      <Action action={e.action} />
                    </td>
                    <td>
                      <Target target={e.target} />
                    </td>
                    <td className="hide-sm">{e.client ? <code>{e.client}</code> : <span className="muted">–</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <nav aria-label="Pages" className="toolbar">
            <button type="button" disabled={!before} onClick={() => navigate(href(actor, ''))}>
              Newest
            </button>
            <button type="button" disabled={!data.next} onClick={() => data.next && navigate(href(actor, data.next))}>
              Older
            </button>
          </nav>
        </div>
      )}
    </section>
  )
}

// Action is the route, its method apart: POST /api/v1/keys.
function Action({ action }: { action: AuditEntry['action'] }) {
  const [method, path] = action.includes(' ') ? action.split(' ', 2) : ['', action]
  return (
    <span className="audit-action">
      {method && <span className="tag">{method}</span>} <code>{path}</code>
    </span>
  )
}

// Target is what the change acted on: a task links to its page.
function Target({ target }: { target: AuditEntry['target'] }) {
  if (!target) return <span className="muted">–</span>
  const m = /^task_id=(.+)$/.exec(target)
  if (m) return <TaskId id={m[1]} />
  return <code>{target}</code>
}
