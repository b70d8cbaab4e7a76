import { useEffect, useState } from 'react'
import { api } from './api'
import type { components } from './api/schema'

type Workers = components['schemas']['Workers']
type Services = components['schemas']['Services']
type BreakerResult = components['schemas']['BreakerResult']

// Workers: the live workers, the circuit breakers across them (the worst
// state of each dependency) with Open and Reset, and the external services
// with the task types they take. Read again every 2 s and after an action.
export function WorkersPage() {
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
      <h2 id="workers-h">Workers</h2>
      {error && <p role="alert">{error}</p>}
      {done && <p role="status">{done}</p>}
      {workers && (
        <table>
          <caption>{workers.count} live workers</caption>
          <thead>
            <tr>
              <th scope="col">Worker</th>
              <th scope="col">Host</th>
              <th scope="col">Busy</th>
              <th scope="col">Heartbeat age</th>
              <th scope="col">Task types</th>
            </tr>
          </thead>
          <tbody>
            {workers.workers.map((w) => (
              <tr key={w.worker_id}>
                <td>{w.worker_id}</td>
                <td>{w.host}</td>
                <td>
                  {w.in_flight ?? 0} / {w.concurrency ?? '–'}
                </td>
                <td>{w.heartbeat_age_seconds !== undefined ? `${w.heartbeat_age_seconds.toFixed(1)} s` : '–'}</td>
                <td>{(w.task_types ?? []).join(', ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {workers && (
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
                <td colSpan={3}>No worker declares an outside dependency.</td>
              </tr>
            )}
            {[...breakers.entries()].map(([dep, st]) => (
              <tr key={dep}>
                <td>{dep}</td>
                <td data-testid={`breaker-${dep}`}>{st}</td>
                <td>
                  <div className="actions">
                    <button type="button" onClick={() => void move(dep, true)}>
                      Open {dep}
                    </button>
                    <button type="button" onClick={() => void move(dep, false)}>
                      Reset {dep}
                    </button>
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {services && (
        <table>
          <caption>External services</caption>
          <thead>
            <tr>
              <th scope="col">Service</th>
              <th scope="col">Task types</th>
              <th scope="col">Online</th>
              <th scope="col">Last heartbeat</th>
            </tr>
          </thead>
          <tbody>
            {services.services.length === 0 && (
              <tr>
                <td colSpan={4}>No external service has registered.</td>
              </tr>
            )}
            {services.services.map((s) => (
              <tr key={s.name}>
                <td>{s.name}</td>
                <td>{s.task_types.join(', ')}</td>
                <td>{s.online ? 'online' : 'offline'}</td>
                <td>{s.last_heartbeat ?? '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {services && services.external_types.length > 0 && (
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
                <td>{t.task_type}</td>
                <td>{t.online ? (t.services ?? []).join(', ') : 'no live service (its tasks wait)'}</td>
                <td data-testid={`inflight-${t.task_type}`}>
                  {t.in_flight} / {t.in_flight_bound < 0 ? 'no bound' : t.in_flight_bound}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {services && (
        <table>
          <caption>Consumer groups of task.create</caption>
          <thead>
            <tr>
              <th scope="col">Group</th>
              <th scope="col">Consumers</th>
              <th scope="col">Pending (read, not acknowledged)</th>
              <th scope="col">Lag (not read yet)</th>
            </tr>
          </thead>
          <tbody>
            {services.groups.length === 0 && (
              <tr>
                <td colSpan={4}>No service has read the stream yet.</td>
              </tr>
            )}
            {services.groups.map((g) => (
              <tr key={g.group}>
                <td>{g.group}</td>
                <td>{g.consumers}</td>
                <td>{g.pending}</td>
                <td>{g.lag}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}
