import { useEffect, useMemo, useState } from 'react'
import { api, getToken, type QueueStatus } from './api'
import { Chart } from './Chart'
import { count, ms as fmtMs } from './format'
import { Link } from './Link'
import { kpis, toCharts, type Series } from './series'
import { Kpi, Notice, PageHead, Pill } from './ui'

// Overview: live counts from the status stream (SSE: a snapshot, then
// fresh queue depths at most every 250 ms while tasks move), and 15 minutes
// of history the API keeps (/api/v1/stats/series), read again every step.
// Task events arrive on the stream too, up to hundreds a second; the page
// renders counts, never one row per event, so it stays smooth under load.
export function Overview() {
  const [status, setStatus] = useState<QueueStatus | null>(null)
  const [live, setLive] = useState<'connecting' | 'live' | 'reconnecting'>('connecting')
  const [series, setSeries] = useState<Series | null>(null)
  const [seriesErr, setSeriesErr] = useState('')

  useEffect(() => {
    const tok = getToken()
    const url = '/api/v1/queues/status/stream' + (tok ? `?access_token=${encodeURIComponent(tok)}` : '')
    const es = new EventSource(url)
    const onStatus = (ev: MessageEvent) => {
      setStatus(JSON.parse(ev.data) as QueueStatus)
      setLive('live')
    }
    es.addEventListener('snapshot', onStatus)
    es.addEventListener('queues', onStatus)
    es.onerror = () => setLive('reconnecting')
    return () => es.close()
  }, [])

  useEffect(() => {
    let stop = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const load = () =>
      api<Series>('/api/v1/stats/series')
        .then((s) => {
          if (stop) return
          setSeries(s)
          setSeriesErr('')
        })
        .catch((e: Error) => !stop && setSeriesErr(e.message))
        .finally(() => {
          if (!stop) timer = setTimeout(load, 5000)
        })
    void load()
    return () => {
      stop = true
      clearTimeout(timer)
    }
  }, [])

  const charts = useMemo(() => (series ? toCharts(series, Date.now() / 1000) : null), [series])
  const k = useMemo(() => (series ? kpis(series, Date.now() / 1000) : null), [series])
  const w = series?.window
  const backlog = status ? status.queues.primary + status.queues.retry : null

  return (
    <section aria-labelledby="ov">
      <PageHead id="ov" title="Overview" sub="Live counts from the status stream; the last 15 minutes from the API's window.">
        <p role="status" className={`live${live === 'live' ? ' live-live' : ''}`}>
          Stream: {live}
        </p>
      </PageHead>
      <div className="kpis" aria-label="Key figures">
        <Kpi
          testid="kpi-throughput"
          label="Throughput"
          value={
            <>
              {k ? k.throughput : '–'}
              <small>tasks/s</small>
            </>
          }
          sub={w ? `completed, last minute · ${count(w.completed)} in 15 min` : 'completed, last minute'}
        />
        <Kpi
          testid="kpi-backlog"
          label="Backlog"
          value={count(backlog)}
          tone={status ? (status.pressure === 'critical' ? 'bad' : status.pressure === 'warning' ? 'warn' : 'ok') : undefined}
          sub={status ? `ready ${count(status.queues.primary)} · retrying ${count(status.queues.retry)} · scheduled ${count(status.queues.scheduled)}` : 'waiting to run'}
        />
        <Kpi
          testid="kpi-failure"
          label="Failure rate"
          value={k?.failureRate == null ? '–' : pct(k.failureRate)}
          tone={k?.failureRate == null ? undefined : k.failureRate > 0.2 ? 'bad' : k.failureRate > 0.05 ? 'warn' : 'ok'}
          sub={w ? `${count(w.failed)} failed attempts · ${count(w.dead_lettered)} dead-lettered · 15 min` : 'failed attempts, 15 min'}
        />
        <Kpi
          testid="kpi-p99"
          label="Start p99"
          value={fmtMs(w?.start_p99_ms)}
          tone={w?.start_p99_ms == null ? undefined : w.start_p99_ms > 5000 ? 'bad' : w.start_p99_ms > 1000 ? 'warn' : 'ok'}
          sub={w ? `p50 ${fmtMs(w.start_p50_ms)} · ${count(w.starts)} starts · 15 min` : 'PENDING → ACTIVE, 15 min'}
        />
      </div>
      {seriesErr && <Notice kind="error">History unavailable: {seriesErr}</Notice>}
      {series && charts && w && (
        <div className="charts">
          <Chart
            name="Throughput"
            title={
              <>
                Throughput <span className="muted">· tasks per second</span>
              </>
            }
            unit="tasks/s"
            data={charts.throughput}
            lines={[
              { label: 'completed/s', color: '--c-green' },
              { label: 'failed/s', color: '--c-vermillion', dash: [6, 4] },
              { label: 'enqueued/s', color: '--c-blue', dash: [2, 3] },
            ]}
          />
          <Chart
            name="Queue depth"
            title={
              <>
                Queue depth <span className="muted">· tasks, sampled every step</span>
              </>
            }
            unit="tasks"
            data={charts.depth}
            lines={charts.depthQueues.map((q, i) => ({ label: q, color: QUEUE_COLORS[i % QUEUE_COLORS.length], dash: DASHES[i % DASHES.length] }))}
          />
          <Chart
            name="Start latency"
            title={
              <>
                Start latency{' '}
                <span className="muted" data-testid="latency-caption">
                  · window p50 {fmtMs(w.start_p50_ms)}, p99 {fmtMs(w.start_p99_ms)} over {count(w.starts)} starts; lines per step
                </span>
              </>
            }
            unit="ms"
            format={(v) => fmtMs(v)}
            data={charts.latency}
            lines={[
              { label: 'p50', color: '--c-blue' },
              { label: 'p99', color: '--c-orange', dash: [6, 4] },
            ]}
          />
        </div>
      )}
      {series && w && (
        <div className="panel table-wrap">
          <table className="summary">
            <caption>Over the window</caption>
            <thead>
              <tr>
                <th scope="col" className="num">
                  Enqueued
                </th>
                <th scope="col" className="num">
                  Completed
                </th>
                <th scope="col" className="num">
                  Failed
                </th>
                <th scope="col" className="num">
                  Dead-lettered
                </th>
                <th scope="col" className="num">
                  Start p50
                </th>
                <th scope="col" className="num">
                  Start p99
                </th>
              </tr>
            </thead>
            <tbody>
              <tr>
                <td className="num">{w.enqueued}</td>
                <td className="num">{w.completed}</td>
                <td className="num">{w.failed}</td>
                <td className="num">{w.dead_lettered}</td>
                <td className="num">{fmtMs(w.start_p50_ms)}</td>
                <td className="num">{fmtMs(w.start_p99_ms)}</td>
              </tr>
            </tbody>
          </table>
        </div>
      )}
      {status && (
        <div className="grid">
          <div className="panel table-wrap">
            <table>
              <caption>Tasks by state</caption>
              <tbody>
                {STATE_ORDER.filter((st) => st in status.states).map((st) => (
                  <tr key={st}>
                    <th scope="row">
                      <Link href={`/ui/tasks?state=${st}`} aria-label={`${st} tasks`}>
                        <Pill state={st} />
                      </Link>
                    </th>
                    <td className="num">{count(status.states[st])}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <CountTable caption="Queues" rows={status.queues} />
          {status.primary_by_priority && <CountTable caption="Primary by priority" rows={status.primary_by_priority} />}
          <div className="panel table-wrap">
            <table>
              <caption>Retry pressure</caption>
              <tbody>
                <tr>
                  <th scope="row">Retry ratio</th>
                  <td className="num">{status.retry_ratio ?? '–'}</td>
                </tr>
                <tr>
                  <th scope="row">Pressure</th>
                  <td className="num">
                    <Pill state={status.pressure === 'normal' ? 'ok' : status.pressure === 'warning' ? 'behind' : 'stuck'}>{status.pressure}</Pill>
                  </td>
                </tr>
              </tbody>
            </table>
          </div>
        </div>
      )}
    </section>
  )
}

const STATE_ORDER = ['PENDING', 'ACTIVE', 'COMPLETED', 'FAILED', 'TIMEOUT', 'DLQ', 'CANCELLED']
const QUEUE_COLORS = ['--c-blue', '--c-orange', '--c-purple', '--c-vermillion', '--c-green']
const DASHES: (number[] | undefined)[] = [undefined, [6, 4], [2, 3], [10, 3, 2, 3], [1, 2]]

function pct(r: number): string {
  const p = r * 100
  return `${p < 10 ? Math.round(p * 10) / 10 : Math.round(p)} %`
}

function CountTable({ caption, rows }: { caption: string; rows: Record<string, number> }) {
  return (
    <div className="panel table-wrap">
      <table>
        <caption>{caption}</caption>
        <tbody>
          {Object.entries(rows).map(([k, v]) => (
            <tr key={k}>
              <th scope="row">{k}</th>
              <td className="num">{count(v)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
