import { useEffect, useMemo, useState } from 'react'
import { api, getToken, type QueueStatus } from './api'
import { Chart } from './Chart'
import { lastValue, mean, toCharts, type Series } from './series'

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

  return (
    <section aria-labelledby="ov">
      <h2 id="ov">Overview</h2>
      <p role="status">Stream: {live}</p>
      {status && (
        <div className="grid">
          <CountTable caption="Queues" rows={status.queues} />
          <CountTable caption="Tasks by state" rows={status.states} />
          {status.primary_by_priority && <CountTable caption="Primary by priority" rows={status.primary_by_priority} />}
          <table>
            <caption>Retry pressure</caption>
            <tbody>
              <tr>
                <th scope="row">Retry ratio</th>
                <td>{status.retry_ratio ?? '–'}</td>
              </tr>
              <tr>
                <th scope="row">Pressure</th>
                <td>{status.pressure ?? '–'}</td>
              </tr>
            </tbody>
          </table>
        </div>
      )}
      <h3>Last 15 minutes</h3>
      {seriesErr && <p role="alert">History unavailable: {seriesErr}</p>}
      {series && charts && (
        <>
          <table className="summary">
            <caption>Over the window</caption>
            <thead>
              <tr>
                <th scope="col">Enqueued</th>
                <th scope="col">Completed</th>
                <th scope="col">Failed</th>
                <th scope="col">Dead-lettered</th>
                <th scope="col">Start p50</th>
                <th scope="col">Start p99</th>
              </tr>
            </thead>
            <tbody>
              <tr>
                <td>{series.window.enqueued}</td>
                <td>{series.window.completed}</td>
                <td>{series.window.failed}</td>
                <td>{series.window.dead_lettered}</td>
                <td>{ms(series.window.start_p50_ms)}</td>
                <td>{ms(series.window.start_p99_ms)}</td>
              </tr>
            </tbody>
          </table>
          <div className="charts">
            <Chart
              name="Throughput"
              title={`Throughput (per second; now: completed ${lastValue(charts.throughput[1]) ?? 0}, failed ${lastValue(charts.throughput[2]) ?? 0}, enqueued ${lastValue(charts.throughput[3]) ?? 0})`}
              unit="tasks/s"
              data={charts.throughput}
              lines={[
                { label: 'completed/s', color: '#2e8b57' },
                { label: 'failed/s', color: '#d0453a', dash: [6, 4] },
                { label: 'enqueued/s', color: '#3b6fd8', dash: [2, 3] },
              ]}
            />
            <Chart
              name="Queue depth"
              title={`Queue depth (now: ${charts.depthQueues.map((q, i) => `${q} ${lastValue(charts.depth[i + 1]) ?? '–'}`).join(', ') || 'no sample yet'})`}
              unit="tasks"
              data={charts.depth}
              lines={charts.depthQueues.map((q, i) => ({ label: q, color: QUEUE_COLORS[i % QUEUE_COLORS.length], dash: DASHES[i % DASHES.length] }))}
            />
            <Chart
              name="Start latency"
              title={`Start latency, ms (mean of steps: p50 ${mean(charts.latency[1]) ?? '–'}, p99 ${mean(charts.latency[2]) ?? '–'})`}
              unit="ms"
              data={charts.latency}
              lines={[
                { label: 'p50', color: '#3b6fd8' },
                { label: 'p99', color: '#b8860b', dash: [6, 4] },
              ]}
            />
          </div>
        </>
      )}
    </section>
  )
}

const QUEUE_COLORS = ['#3b6fd8', '#b8860b', '#8a5cc2', '#d0453a', '#2e8b57']
const DASHES: (number[] | undefined)[] = [undefined, [6, 4], [2, 3], [10, 3, 2, 3], [1, 2]]

function ms(v: number | null | undefined): string {
  return v == null ? '–' : `${v} ms`
}

function CountTable({ caption, rows }: { caption: string; rows: Record<string, number> }) {
  return (
    <table>
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Count</th>
        </tr>
      </thead>
      <tbody>
        {Object.entries(rows).map(([k, v]) => (
          <tr key={k}>
            <th scope="row">{k}</th>
            <td>{v}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}
