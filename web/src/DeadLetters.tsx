import { useEffect, useState } from 'react'
import { ReadOnly, useCanChange } from './me'
import { api } from './api'
import type { components } from './api/schema'
import { navigate } from './route'
import { ErrorText, Notice, PageHead, Pill, TaskId, Time } from './ui'

type DLQPage = components['schemas']['DLQPage']
type BulkResult = components['schemas']['BulkResult']

const PAGE = 50

// DeadLetters: the DLQ, filtered by task type and error type (in the URL),
// with the tasks of the page to select and bulk actions on the selection
// or on everything matching the filter, each confirmed with its count.
export function DeadLetters({ url }: { url: URL }) {
  const may = useCanChange()
  const q = url.searchParams
  const taskType = q.get('task_type') ?? ''
  const errorType = q.get('error_type') ?? ''
  const page = Math.max(1, Number(q.get('page') ?? '1') || 1)
  const [data, setData] = useState<DLQPage | null>(null)
  const [selected, setSelected] = useState<Set<string>>(new Set())
  const [error, setError] = useState('')
  const [done, setDone] = useState('')
  const [reload, setReload] = useState(0)
  const [tt, setTT] = useState(taskType)
  const [et, setET] = useState(errorType)

  useEffect(() => {
    const p = new URLSearchParams({ limit: String(PAGE), offset: String((page - 1) * PAGE) })
    if (taskType) p.set('task_type', taskType)
    if (errorType) p.set('error_type', errorType)
    api<DLQPage>('/api/v1/queues/dlq?' + p.toString())
      .then((d) => {
        setData(d)
        setError('')
        setSelected(new Set())
      })
      .catch((e: Error) => setError(e.message))
  }, [taskType, errorType, page, reload])

  const go = (t: string, e: string, pg: number) => {
    const p = new URLSearchParams()
    if (t) p.set('task_type', t)
    if (e) p.set('error_type', e)
    if (pg > 1) p.set('page', String(pg))
    navigate('/ui/dlq' + (p.size ? '?' + p.toString() : ''))
  }

  async function act(action: 'retry' | 'delete', all: boolean) {
    const n = all ? (data?.total ?? 0) : selected.size
    const what = all ? `all ${n} dead letters matching this filter` : `${n} selected dead letter${n === 1 ? '' : 's'}`
    if (!confirm(`${action === 'retry' ? 'Retry' : 'Delete'} ${what}?`)) return
    const body = all
      ? { all: true, filter: { task_type: taskType || undefined, error_type: errorType || undefined } }
      : { task_ids: [...selected] }
    try {
      const r = await api<BulkResult>('/api/v1/queues/dlq/' + action, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      })
      const verb = action === 'retry' ? 'Retried' : 'Deleted'
      let msg = `${verb} ${r.done} of ${r.matched}.`
      if (r.failed.length) msg += ' Left as they were: ' + r.failed.map((f) => `${f.task_id} (${f.message})`).join('; ')
      if (r.partial) msg += ' More matched than one action takes: run it again.'
      setDone(msg)
      setReload((x) => x + 1)
    } catch (e) {
      setError((e as Error).message)
    }
  }

  const items = data?.tasks ?? []
  const allOnPage = items.length > 0 && items.every((t) => selected.has(t.task_id))
  const pages = data ? Math.max(1, Math.ceil(data.total / PAGE)) : 1
  return (
    <section aria-labelledby="dlq-h">
      <PageHead id="dlq-h" title="Dead letters" sub="Tasks that failed for good. Retry or delete them one by one, or all that match a filter." />
      {error && <Notice kind="error">{error}</Notice>}
      {done && <Notice kind="ok">{done}</Notice>}
      <div className="panel">
        <form
          className="toolbar"
          onSubmit={(e) => {
            e.preventDefault()
            go(tt.trim(), et.trim(), 1)
          }}
        >
          <span className="field-inline">
            <label htmlFor="dlq-type">Task type</label>
            <input id="dlq-type" value={tt} onChange={(e) => setTT(e.target.value)} size={14} />
          </span>
          <span className="field-inline">
            <label htmlFor="dlq-error">Error type</label>
            <input id="dlq-error" value={et} onChange={(e) => setET(e.target.value)} size={14} />
          </span>
          <button type="submit">Filter</button>
        </form>
        {data && (
          <>
            {!may && <ReadOnly what="retrying or deleting dead letters" />}
            {may && (
            <div className="toolbar">
              <span className="muted grow">{selected.size > 0 ? `${selected.size} selected` : 'Select tasks, or act on everything matching the filter.'}</span>
              <button type="button" className="primary" disabled={selected.size === 0} onClick={() => void act('retry', false)}>
                Retry selected ({selected.size})
              </button>
              <button type="button" className="danger" disabled={selected.size === 0} onClick={() => void act('delete', false)}>
                Delete selected ({selected.size})
              </button>
              <button type="button" disabled={data.total === 0} onClick={() => void act('retry', true)}>
                Retry all matching ({data.total})
              </button>
              <button type="button" className="danger" disabled={data.total === 0} onClick={() => void act('delete', true)}>
                Delete all matching ({data.total})
              </button>
            </div>
            )}
            <div className="table-wrap">
              <table>
                <caption>
                  {data.total} dead letters, page {page} of {pages}
                </caption>
                <thead>
                  <tr>
                    {may && (
                    <th scope="col">
                      <input
                        type="checkbox"
                        aria-label="Select all on this page"
                        checked={allOnPage}
                        onChange={(e) => setSelected(e.target.checked ? new Set(items.map((t) => t.task_id)) : new Set())}
                      />
                    </th>
                    )}
                    <th scope="col">Task</th>
                    <th scope="col">Type</th>
                    <th scope="col">State</th>
                    <th scope="col" className="num">
                      Attempts
                    </th>
                    <th scope="col">Error type</th>
                    <th scope="col">Last error</th>
                    <th scope="col">Dead since</th>
                  </tr>
                </thead>
                <tbody>
                  {items.length === 0 && (
                    <tr>
                      <td colSpan={may ? 8 : 7} className="empty">
                        No dead letter{taskType || errorType ? ' matches this filter' : ''}.
                      </td>
                    </tr>
                  )}
                  {items.map((t) => (
                    <tr key={t.task_id}>
                      {may && (
                      <td>
                        <input
                          type="checkbox"
                          aria-label={`Select ${t.task_id}`}
                          checked={selected.has(t.task_id)}
                          onChange={(e) =>
                            setSelected((old) => {
                              const s = new Set(old)
                              if (e.target.checked) s.add(t.task_id)
                              else s.delete(t.task_id)
                              return s
                            })
                          }
                        />
                      </td>
                      )}
                      <td>
                        <TaskId id={t.task_id} />
                      </td>
                      <td>
                        <span className="tag">{t.task_type}</span>
                      </td>
                      <td>
                        <Pill state="DLQ" />
                      </td>
                      <td className="num" title={`${t.dlq?.retry_count ?? t.retry_count} retries of ${t.max_retries} allowed`}>
                        {(t.dlq?.retry_count ?? t.retry_count) + 1}
                      </td>
                      <td>
                        <span className="tag">{t.dlq?.error_type ?? t.error_type ?? '–'}</span>
                      </td>
                      <td>
                        <ErrorText text={t.dlq?.last_error ?? t.last_error} />
                      </td>
                      <td>
                        <Time iso={t.dlq?.dlq_at} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <nav aria-label="Pages" className="toolbar">
              <button type="button" disabled={page <= 1} onClick={() => go(taskType, errorType, page - 1)}>
                Previous
              </button>
              <button type="button" disabled={page >= pages} onClick={() => go(taskType, errorType, page + 1)}>
                Next
              </button>
            </nav>
          </>
        )}
      </div>
    </section>
  )
}
