import { useEffect, useState } from 'react'
import { ReadOnly, useCanChange } from './me'
import { api } from './api'
import type { components } from './api/schema'
import { count, span } from './format'
import { Notice, PageHead, Pill } from './ui'

type QueueList = components['schemas']['QueueList']
type Limit = components['schemas']['LimitView']

// limitText reads a limit out: "10 per 1 s, 2 at once".
export function limitText(l: Limit): string {
  const parts: string[] = []
  if (l.rate) parts.push(`${l.rate.limit} per ${l.rate.per} s`)
  if (l.concurrency !== null && l.concurrency !== undefined) parts.push(`${l.concurrency} at once`)
  return parts.join(', ')
}

// Queues: the named queues with what waits in each (by priority), retries,
// running, completed per minute and the oldest wait; pause and resume a
// queue or a task type (operator, admin); the fleet-wide limits, set and
// removed. Refreshed every 2 s.
export function Queues() {
  const may = useCanChange()
  const [list, setList] = useState<QueueList | null>(null)
  const [limits, setLimits] = useState<Limit[]>([])
  const [error, setError] = useState('')
  const [done, setDone] = useState('')
  const [reload, setReload] = useState(0)
  const [scope, setScope] = useState('task_type')
  const [name, setName] = useState('')
  const [rate, setRate] = useState('')
  const [per, setPer] = useState('1')
  const [conc, setConc] = useState('')
  const [ptype, setPtype] = useState('')
  useEffect(() => {
    let live = true
    const load = () => {
      api<QueueList>('/api/v1/queues')
        .then((l) => live && setList(l))
        .catch((e: Error) => live && setError(e.message))
      api<{ limits: Limit[] }>('/api/v1/limits')
        .then((l) => live && setLimits(l.limits))
        .catch((e: Error) => live && setError(e.message))
    }
    load()
    const t = setInterval(load, 2000)
    return () => {
      live = false
      clearInterval(t)
    }
  }, [reload])

  async function act(path: string, what: string, init?: RequestInit) {
    setError('')
    try {
      await api(path, { method: 'POST', ...init })
      setDone(what)
      setReload((x) => x + 1)
    } catch (e) {
      setError((e as Error).message)
    }
  }

  async function setLimit() {
    const body: Record<string, unknown> = { scope, name: name.trim() }
    if (rate.trim()) body.rate = { limit: Number(rate), per: Number(per) }
    if (conc.trim()) body.concurrency = Number(conc)
    await act('/api/v1/limits', `Limit on ${scope} ${name.trim()} set.`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    })
  }

  return (
    <section aria-labelledby="queues-h">
      <PageHead id="queues-h" title="Queues" sub="Named queues: what waits in each, what runs, how fast they complete; pauses and fleet-wide limits." />
      {error && <Notice kind="error">{error}</Notice>}
      {done && <Notice kind="ok">{done}</Notice>}
      {list && (
        <div className="panel table-wrap">
          <table>
            <caption>{list.queues.length === 1 ? '1 queue' : `${list.queues.length} queues`}</caption>
            <thead>
              <tr>
                <th scope="col">Queue</th>
                <th scope="col">State</th>
                <th scope="col">High</th>
                <th scope="col">Normal</th>
                <th scope="col">Low</th>
                <th scope="col">Retry</th>
                <th scope="col">Scheduled</th>
                <th scope="col">Running</th>
                <th scope="col">Completed/min</th>
                <th scope="col">Oldest wait</th>
                <th scope="col">Limits</th>
                {may && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {list.queues.map((q) => (
                <tr key={q.name} data-testid={'queue-' + q.name}>
                  <td className="nowrap">{q.name}</td>
                  <td>{q.paused ? <Pill state="PENDING">paused</Pill> : <Pill state="ACTIVE">running</Pill>}</td>
                  <td className="num">{count(q.pending.high)}</td>
                  <td className="num">{count(q.pending.normal)}</td>
                  <td className="num">{count(q.pending.low)}</td>
                  <td className="num">{count(q.retry)}</td>
                  <td className="num">{count(q.scheduled)}</td>
                  <td className="num">{count(q.active)}</td>
                  <td className="num">{q.completed_per_min.toFixed(1)}</td>
                  <td className="num">{q.oldest_pending_age > 0 ? span(q.oldest_pending_age * 1000) : '–'}</td>
                  <td>{q.limits.map(limitText).join('; ') || '–'}</td>
                  {may && (
                    <td>
                      {q.paused ? (
                        <button type="button" aria-label={`Resume ${q.name}`} onClick={() => void act(`/api/v1/queues/${encodeURIComponent(q.name)}/resume`, `Queue ${q.name} resumed.`)}>
                          Resume
                        </button>
                      ) : (
                        <button type="button" className="danger" aria-label={`Pause ${q.name}`} onClick={() => void act(`/api/v1/queues/${encodeURIComponent(q.name)}/pause`, `Queue ${q.name} paused.`)}>
                          Pause
                        </button>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list && (
        <div className="panel panel-body">
          <h3>Paused task types</h3>
          {list.paused_task_types.length === 0 && <p className="hint">None.</p>}
          <ul>
            {list.paused_task_types.map((t) => (
              <li key={t} data-testid={'paused-type-' + t}>
                <span className="tag">{t}</span>{' '}
                {may && (
                  <button type="button" onClick={() => void act(`/api/v1/task-types/${encodeURIComponent(t)}/resume`, `Task type ${t} resumed.`)}>
                    Resume {t}
                  </button>
                )}
              </li>
            ))}
          </ul>
          {Object.keys(list.parked).length > 0 && (
            <p className="hint">
              Held back by a pause or a limit:{' '}
              {Object.entries(list.parked)
                .map(([s, n]) => `${s} ${n}`)
                .join(', ')}
            </p>
          )}
          {may && (
            <form
              noValidate
              onSubmit={(e) => {
                e.preventDefault()
                if (ptype.trim()) void act(`/api/v1/task-types/${encodeURIComponent(ptype.trim())}/pause`, `Task type ${ptype.trim()} paused.`)
              }}
            >
              <span className="field-row">
                <label htmlFor="pause-type">Task type to pause</label>
                <input id="pause-type" value={ptype} onChange={(e) => setPtype(e.target.value)} />
                <button type="submit" className="danger">
                  Pause task type
                </button>
              </span>
            </form>
          )}
        </div>
      )}
      <div className="panel table-wrap">
        <table>
          <caption>{limits.length === 1 ? '1 limit' : `${limits.length} limits`}</caption>
          <thead>
            <tr>
              <th scope="col">Scope</th>
              <th scope="col">Name</th>
              <th scope="col">Limit</th>
              {may && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {limits.length === 0 && (
              <tr>
                <td colSpan={may ? 4 : 3} className="empty">
                  No limit.
                </td>
              </tr>
            )}
            {limits.map((l) => (
              <tr key={l.scope + '/' + l.name}>
                <td>{l.scope}</td>
                <td>{l.name}</td>
                <td>{limitText(l)}</td>
                {may && (
                  <td>
                    <button
                      type="button"
                      className="danger"
                      aria-label={`Remove limit ${l.name}`}
                      onClick={() =>
                        void act(`/api/v1/limits/${encodeURIComponent(l.scope)}/${encodeURIComponent(l.name)}`, `Limit on ${l.scope} ${l.name} removed.`, { method: 'DELETE' })
                      }
                    >
                      Remove
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {!may && <ReadOnly what="pausing a queue or setting a limit" />}
      {may && (
        <form
          className="card panel panel-body"
          noValidate
          onSubmit={(e) => {
            e.preventDefault()
            void setLimit()
          }}
        >
          <h3>Set a limit</h3>
          <label htmlFor="limit-scope">Scope</label>
          <select id="limit-scope" value={scope} onChange={(e) => setScope(e.target.value)}>
            <option value="task_type">task type</option>
            <option value="queue">queue</option>
            <option value="key">limit key (* for each key)</option>
          </select>
          <label htmlFor="limit-name">Name</label>
          <input id="limit-name" value={name} onChange={(e) => setName(e.target.value)} />
          <label htmlFor="limit-rate">Rate: starts</label>
          <input id="limit-rate" inputMode="numeric" value={rate} onChange={(e) => setRate(e.target.value)} />
          <label htmlFor="limit-per">per seconds</label>
          <input id="limit-per" inputMode="decimal" value={per} onChange={(e) => setPer(e.target.value)} />
          <label htmlFor="limit-conc">Concurrency: at most running at once</label>
          <input id="limit-conc" inputMode="numeric" value={conc} onChange={(e) => setConc(e.target.value)} />
          <button type="submit" className="primary">
            Set limit
          </button>
        </form>
      )}
    </section>
  )
}
