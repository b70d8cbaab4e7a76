import { useEffect, useState } from 'react'
import { READ_ONLY, useCanChange } from './me'
import { api } from './api'
import type { components } from './api/schema'
import { count, span } from './format'
import { Notice, PageHead, Pill, Time } from './ui'

type Workers = components['schemas']['Workers']
type Services = components['schemas']['Services']
type BreakerResult = components['schemas']['BreakerResult']

// Workers: the live workers, the circuit breakers across them (the worst
// state of each dependency) with Open and Reset, and the external services
// with the task types they take. Read again every 2 s and after an action.
export function WorkersPage() {
  const may = useCanChange()
  const [workers, setWorkers] = useState<Workers | null>(null)
  const [services, setServices] = useState<Services | null>(null)
  const [error, setError] = useState('')
  const [done, setDone] = useState('')
  const [tick, setTick] = useState(0)
  useEffect(() => {
    let stop = false
    Promise.all([api<Workers>('/api/v1/workers'), api<Services>('/api/v1/services')])
      .then(([w, s]) => {
        if (stop) return
        setWorkers(w)
        setServices(s)
        setError('')
      })
      .catch((e: Error) => !stop && setError(e.message))
    const t = setTimeout(() => setTick((x) => x + 1), 2000)
    return () => {
      stop = true
      clearTimeout(t)
    }
  }, [tick])

  // worst state per dependency across the workers
  const rank: Record<string, number> = { CLOSED: 0, HALF_OPEN: 1, OPEN: 2 }
  const breakers = new Map<string, string>()
  for (const w of workers?.workers ?? []) {
    for (const [dep, st] of Object.entries(w.circuit_breakers ?? {})) {
      const old = breakers.get(dep)
      if (old === undefined || rank[st] > rank[old]) breakers.set(dep, st)
    }
  }

  async function move(dependency: string, open: boolean) {
    try {
      const r = await api<BreakerResult>(`/api/v1/workers/${open ? 'open' : 'reset'}-circuit-breaker`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ dependency }),
      })
      setDone(`${dependency}: ${r.state} (sent to ${r.workers} worker${r.workers === 1 ? '' : 's'})`)
      setTick((x) => x + 1)
    } catch (e) {
      setError((e as Error).message)
    }
  }

  return (
    <section aria-labelledby="workers-h">
      <PageHead id="workers-h" title="Workers" sub="Live workers, circuit breakers, external services and the consumer groups that feed them. Read every 2 s." />
      {error && <Notice kind="error">{error}</Notice>}
      {done && <Notice kind="ok">{done}</Notice>}
      {workers && (
        <div className="panel table-wrap">
          <table>
            <caption>{workers.count} live workers</caption>
            <thead>
              <tr>
                <th scope="col">Worker</th>
                <th scope="col">Host</th>
                <th scope="col">Busy</th>
                <th scope="col">Heartbeat</th>
                <th scope="col">Up since</th>
                <th scope="col">Task types</th>
              </tr>
            </thead>
            <tbody>
              {workers.workers.length === 0 && (
                <tr>
                  <td colSpan={6} className="empty">
                    No worker has heartbeated in the last 30 s.
                  </td>
                </tr>
              )}
              {workers.workers.map((w) => {
                const busy = w.in_flight ?? 0
                const of = w.concurrency || 0
                return (
                  <tr key={w.worker_id}>
                    <td className="nowrap">
                      <code>{w.worker_id}</code>
                    </td>
                    <td>{w.host ?? '–'}</td>
                    <td className="nowrap">
                      <span className="meter" title={`${busy} of ${of || '?'} slots busy`}>
                        <span className="meter-track" aria-hidden="true">
                          <span className="meter-fill" style={{ display: 'block', width: `${of ? Math.min(100, (busy / of) * 100) : 0}%` }} />
                        </span>
                        {busy} / {of || '–'}
                      </span>
                    </td>
                    <td className="nowrap">
                      {w.heartbeat_age_seconds !== undefined ? (
                        <Pill state={w.heartbeat_age_seconds > 20 ? 'behind' : 'ok'}>{`${w.heartbeat_age_seconds.toFixed(1)} s ago`}</Pill>
                      ) : (
                        '–'
                      )}
                    </td>
                    <td>
                      <Time iso={w.started_at} />
                    </td>
                    <td>
                      {(w.task_types ?? []).map((t) => (
                        <span key={t} className="tag" style={{ marginRight: 4 }}>
                          {t}
                        </span>
                      ))}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
      <div className="cols-2">
        {workers && (
          <div className="panel table-wrap">
            <table>
              <caption>Circuit breakers</caption>
              <thead>
                <tr>
                  <th scope="col">Dependency</th>
                  <th scope="col">State</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {breakers.size === 0 && (
                  <tr>
                    <td colSpan={3} className="empty">
                      No worker declares an outside dependency.
                    </td>
                  </tr>
                )}
                {[...breakers.entries()].map(([dep, st]) => (
                  <tr key={dep}>
                    <td>
                      <code>{dep}</code>
                    </td>
                    <td data-testid={`breaker-${dep}`}>
                      <Pill state={st.toLowerCase()} title={BREAKER[st]}>
                        {st}
                      </Pill>
                    </td>
                    <td>
                      {may ? (
                        <div className="actions" style={{ margin: 0 }}>
                          <button type="button" className="danger" onClick={() => void move(dep, true)}>
                            Open {dep}
                          </button>
                          <button type="button" onClick={() => void move(dep, false)}>
                            Reset {dep}
                          </button>
                        </div>
                      ) : (
                        <span className="muted" title={READ_ONLY}>
                          read-only
                        </span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {services && (
          <div className="panel table-wrap">
            <table>
              <caption>External services</caption>
              <thead>
                <tr>
                  <th scope="col">Service</th>
                  <th scope="col">Task types</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last heartbeat</th>
                </tr>
              </thead>
              <tbody>
                {services.services.length === 0 && (
                  <tr>
                    <td colSpan={4} className="empty">
                      No external service has registered.
                    </td>
                  </tr>
                )}
                {services.services.map((s) => (
                  <tr key={s.name}>
                    <td>
                      <code>{s.name}</code>
                    </td>
                    <td>
                      {s.task_types.map((t) => (
                        <span key={t} className="tag" style={{ marginRight: 4 }}>
                          {t}
                        </span>
                      ))}
                    </td>
                    <td>
                      <Pill state={s.online ? 'online' : 'offline'}>{s.online ? 'online' : 'offline'}</Pill>
                    </td>
                    <td>
                      <Time iso={s.last_heartbeat} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
      {services && services.external_types.length > 0 && (
        <div className="panel table-wrap">
          <table>
            <caption>External task types</caption>
            <thead>
              <tr>
                <th scope="col">Task type</th>
                <th scope="col">Taken by</th>
                <th scope="col">In flight / bound</th>
              </tr>
            </thead>
            <tbody>
              {services.external_types.map((t) => (
                <tr key={t.task_type}>
                  <td>
                    <span className="tag">{t.task_type}</span>
                  </td>
                  <td>
                    {t.online ? (
                      (t.services ?? []).join(', ')
                    ) : (
                      <Pill state="WAITING" title="its tasks wait until a service for it starts">
                        no live service: its tasks wait
                      </Pill>
                    )}
                  </td>
                  <td data-testid={`inflight-${t.task_type}`}>
                    {t.in_flight} / {t.in_flight_bound < 0 ? 'no bound' : t.in_flight_bound}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {services && (
        <div className="panel table-wrap">
          <table>
            <caption>Consumer groups of task.create</caption>
            <thead>
              <tr>
                <th scope="col">Group</th>
                <th scope="col">Status</th>
                <th scope="col" className="num">
                  Consumers
                </th>
                <th scope="col" className="num" title="delivered to a consumer and not acknowledged">
                  Pending
                </th>
                <th scope="col" title="how long ago the oldest pending entry was published">
                  Oldest pending
                </th>
                <th scope="col" className="num" title="entries in the stream not delivered to the group yet">
                  Not delivered
                </th>
              </tr>
            </thead>
            <tbody>
              {services.groups.length === 0 && (
                <tr>
                  <td colSpan={6} className="empty">
                    No service has read the stream yet.
                  </td>
                </tr>
              )}
              {services.groups.map((g) => {
                const h = groupHealth(g)
                return (
                  <tr key={g.group}>
                    <td>
                      <code>{g.group}</code>
                    </td>
                    <td data-testid={`group-${g.group}`}>
                      <Pill state={h.state} title={h.why}>
                        {h.label}
                      </Pill>
                    </td>
                    <td className="num">{g.consumers}</td>
                    <td className="num">{count(g.pending)}</td>
                    <td>{g.oldest_pending_seconds != null ? span(g.oldest_pending_seconds * 1000) : <span className="muted">–</span>}</td>
                    <td className="num" data-testid={`lag-${g.group}`}>
                      {g.lag_at_least ? `${count(g.lag)}+` : count(g.lag)}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}

const BREAKER: Record<string, string> = {
  CLOSED: 'calls go through',
  HALF_OPEN: 'a trial call decides',
  OPEN: 'calls are refused until it resets',
}

type Group = Services['groups'][number]

// groupHealth says what an operator should do about a consumer group:
// nothing (caught up), look (entries wait, or one is held long), or act
// (no consumer while entries wait).
export function groupHealth(g: Group): { state: string; label: string; why: string } {
  const waiting = g.lag > 0
  if (g.consumers === 0 && (waiting || g.pending > 0)) return { state: 'stuck', label: 'no consumer', why: 'entries wait and no consumer reads the group: start its service' }
  if (g.pending > 0 && (g.oldest_pending_seconds ?? 0) > 300)
    return { state: 'stuck', label: 'held long', why: 'an entry has been delivered and not acknowledged for over 5 minutes: its consumer may be stuck' }
  if (waiting) return { state: 'behind', label: 'behind', why: 'entries in the stream have not been delivered to the group yet' }
  if (g.pending > 0) return { state: 'active', label: 'working', why: 'entries are delivered and being worked on' }
  return { state: 'ok', label: 'caught up', why: 'every entry was delivered and acknowledged' }
}
