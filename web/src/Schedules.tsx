import { useEffect, useState } from 'react'
import { ReadOnly, useCanChange } from './me'
import { api } from './api'
import type { components } from './api/schema'
import { describeCron } from './cronText'
import { Notice, PageHead, Time } from './ui'

type ScheduleList = components['schemas']['ScheduleList']

// Schedules: the recurring tasks (a session sees its own, the admin all),
// each with its last and next run; create one — the expression read out in words
// before it is saved — and delete one after a confirmation.
export function Schedules() {
  const may = useCanChange()
  const [list, setList] = useState<ScheduleList | null>(null)
  const [types, setTypes] = useState<string[]>([])
  const [id, setID] = useState('')
  const [cron, setCron] = useState('@hourly')
  const [typ, setTyp] = useState('noop')
  const [error, setError] = useState('')
  const [done, setDone] = useState('')
  const [reload, setReload] = useState(0)
  useEffect(() => {
    api<ScheduleList>('/api/v1/schedules')
      .then((l) => setList(l))
      .catch((e: Error) => setError(e.message))
  }, [reload])
  useEffect(() => {
    api<{ task_types: { name: string }[] }>('/api/v1/task-types')
      .then((r) => setTypes(r.task_types.map((t) => t.name)))
      .catch(() => setTypes([]))
  }, [])
  const reading = describeCron(cron)

  async function create() {
    setError('')
    try {
      const body: Record<string, unknown> = { cron: cron.trim(), task_type: typ }
      if (id.trim()) body.id = id.trim()
      const s = await api<{ schedule_id: string; next_run_at?: string }>('/api/v1/schedules', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      })
      setDone(`Schedule ${s.schedule_id} created; next run ${s.next_run_at ?? 'never'}.`)
      setID('')
      setReload((x) => x + 1)
    } catch (e) {
      setError((e as Error).message)
    }
  }

  async function remove(sid: string) {
    if (!confirm(`Delete schedule ${sid}? Tasks it already created stay.`)) return
    try {
      await api(`/api/v1/schedules/${encodeURIComponent(sid)}`, { method: 'DELETE' })
      setDone(`Schedule ${sid} deleted.`)
      setReload((x) => x + 1)
    } catch (e) {
      setError((e as Error).message)
    }
  }

  return (
    <section aria-labelledby="sched-h">
      <PageHead id="sched-h" title="Schedules" sub="Recurring tasks: each expression read out in words, with its last and next run." />
      {error && <Notice kind="error">{error}</Notice>}
      {done && <Notice kind="ok">{done}</Notice>}
      <div className="sched-layout">
        {list && (
          <div className="panel table-wrap">
            <table>
              <caption>{list.count} schedules</caption>
              <thead>
                <tr>
                  <th scope="col">Schedule</th>
                  <th scope="col">Cron</th>
                  <th scope="col">Runs</th>
                  <th scope="col">Task type</th>
                  <th scope="col">Last run</th>
                  <th scope="col">Next run</th>
                  {may && <th scope="col">Actions</th>}
                </tr>
              </thead>
              <tbody>
                {list.schedules.length === 0 && (
                  <tr>
                    <td colSpan={may ? 7 : 6} className="empty">
                      No schedule yet.
                    </td>
                  </tr>
                )}
                {list.schedules.map((s) => (
                  <tr key={s.schedule_id}>
                    <td>{s.schedule_id}</td>
                    <td>
                      <code>{s.cron}</code>
                    </td>
                    <td>{describeCron(s.cron) || '–'}</td>
                    <td>
                      <span className="tag">{s.task_type}</span>
                    </td>
                    <td>
                      <Time iso={s.last_run_at} empty="not yet" />
                    </td>
                    <td>
                      <Time iso={s.next_run_at} empty="never" />
                    </td>
                    {may && (
                      <td>
                        <button type="button" className="danger" onClick={() => void remove(s.schedule_id)}>
                          Delete {s.schedule_id}
                        </button>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {!may && <ReadOnly what="creating or deleting a schedule" />}
        {may && (
        <form
          className="card panel panel-body"
          noValidate
          onSubmit={(e) => {
            e.preventDefault()
            void create()
          }}
        >
          <h3>New schedule</h3>
          <label htmlFor="sched-cron">Cron expression (UTC)</label>
          <input id="sched-cron" value={cron} onChange={(e) => setCron(e.target.value)} aria-describedby="sched-reading" className="mono" />
          <p id="sched-reading" className="hint" data-testid="cron-reading">
            {reading ? `Runs ${reading}.` : 'The server checks this expression when you save it.'}
          </p>
          <label htmlFor="sched-type">Task type</label>
          <select id="sched-type" value={typ} onChange={(e) => setTyp(e.target.value)}>
            {(types.length ? types : [typ]).map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
          <label htmlFor="sched-id">Id (optional)</label>
          <input id="sched-id" value={id} onChange={(e) => setID(e.target.value)} />
          <button type="submit" className="primary">
            Create schedule
          </button>
        </form>
        )}
      </div>
    </section>
  )
}
