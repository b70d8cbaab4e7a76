import { useEffect, useMemo, useState } from 'react'
import { api } from './api'
import type { components } from './api/schema'
import { Link } from './Link'
import { gantt, layoutPlan, shortOp, type PlanGraph } from './planLayout'
import { ErrorText, Notice, PageHead, Pill } from './ui'

type PlanList = components['schemas']['PlanList']
type PlanRun = components['schemas']['PlanRun']

// Plans: the plans this server runs; a plan's DAG (IO nodes read Redis,
// CPU nodes compute; told apart by label and outline, not colour alone);
// a run with a request and a deadline, its output rows and the per-node
// timeline from the engine's trace (?trace=1).
export function Plans({ name }: { name?: string }) {
  const [list, setList] = useState<PlanList | null>(null)
  const [error, setError] = useState('')
  useEffect(() => {
    api<PlanList>('/api/v1/plans')
      .then(setList)
      .catch((e: Error) => setError(e.message))
  }, [])
  return (
    <section aria-labelledby="plans-h">
      {name && (
        <p className="crumbs">
          <Link href="/ui/plans">← Back to the plan list</Link>
        </p>
      )}
      <PageHead id="plans-h" title={name ? `Plan ${name}` : 'Plans'} sub={name ? 'Its DAG, a run, and the run\'s per-node timeline.' : 'The plans this server runs.'} />
      {error && <Notice kind="error">{error}</Notice>}
      {!name && list && (
        <div className="panel table-wrap">
        <table>
          <caption>{list.plans.length} plans</caption>
          <thead>
            <tr>
              <th scope="col">Plan</th>
              <th scope="col">Nodes</th>
              <th scope="col">Outputs</th>
            </tr>
          </thead>
          <tbody>
            {list.plans.map((p) => (
              <tr key={p.name}>
                <td>
                  <Link href={`/ui/plans/${encodeURIComponent(p.name)}`}>{p.name}</Link>
                </td>
                {p.error ? (
                  <td colSpan={2}>
                    <Pill state="stuck">does not compile</Pill> <ErrorText text={p.error} />
                  </td>
                ) : (
                  <>
                    <td>{p.nodes}</td>
                    <td>{p.outputs}</td>
                  </>
                )}
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      )}
      {name && <PlanView name={name} />}
    </section>
  )
}

function PlanView({ name }: { name: string }) {
  const [graph, setGraph] = useState<PlanGraph | null>(null)
  const [error, setError] = useState('')
  const [request, setRequest] = useState('{\n  "user_id": 1\n}')
  const [deadline, setDeadline] = useState('1000')
  const [run, setRun] = useState<PlanRun | null>(null)
  const [runErr, setRunErr] = useState('')
  const [running, setRunning] = useState(false)
  useEffect(() => {
    setGraph(null)
    setRun(null)
    api<PlanGraph>(`/api/v1/plans/${encodeURIComponent(name)}`)
      .then(setGraph)
      .catch((e: Error) => setError(e.message))
  }, [name])

  const submit = async () => {
    setRunErr('')
    let body: Record<string, unknown>
    try {
      body = JSON.parse(request) as Record<string, unknown>
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('the request must be a JSON object')
    } catch (e) {
      setRunErr(`Request: ${e instanceof Error ? e.message : String(e)}`)
      return
    }
    if (deadline.trim() !== '') body.deadline_ms = Number(deadline)
    setRunning(true)
    try {
      const r = await api<PlanRun>(`/api/v1/plans/${encodeURIComponent(name)}/execute?trace=1`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      })
      setRun(r)
    } catch (e) {
      setRun(null)
      setRunErr(`Run failed: ${e instanceof Error ? e.message : String(e)}`)
    } finally {
      setRunning(false)
    }
  }

  return (
    <>
      {error && <Notice kind="error">{error}</Notice>}
      {graph && <Dag graph={graph} />}
      <form
        className="card panel panel-body"
        onSubmit={(e) => {
          e.preventDefault()
          void submit()
        }}
      >
        <h3>Run</h3>
        <div className="field">
          <label htmlFor="plan-request">Request (JSON: user_id, request_id, param_overrides)</label>
          <textarea id="plan-request" rows={5} value={request} onChange={(e) => setRequest(e.target.value)} spellCheck={false} />
        </div>
        <div className="field">
          <label htmlFor="plan-deadline">Deadline (ms)</label>
          <input id="plan-deadline" type="number" min={1} value={deadline} onChange={(e) => setDeadline(e.target.value)} />
        </div>
        <button type="submit" className="primary" disabled={running}>
          {running ? 'Running…' : 'Run plan'}
        </button>
        {runErr && <Notice kind="error">{runErr}</Notice>}
      </form>
      {run && <RunView run={run} />}
    </>
  )
}

function Dag({ graph }: { graph: PlanGraph }) {
  const l = useMemo(() => layoutPlan(graph), [graph])
  return (
    <figure className="dag panel">
      <figcaption>
        DAG: {graph.nodes.length} nodes ({graph.nodes.filter((n) => n.kind === 'IO').length} IO,{' '}
        {graph.nodes.filter((n) => n.kind === 'CPU').length} CPU), output {graph.outputs.join(', ')}
      </figcaption>
      <div className="dag-scroll">
        <svg width={l.width} height={l.height} viewBox={`0 0 ${l.width} ${l.height}`} className="dag-svg" role="img" aria-label={`Graph of plan ${graph.name}`}>
          <defs>
            <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M 0 0 L 10 5 L 0 10 z" className="dag-arrowhead" />
            </marker>
          </defs>
          {l.arrows.map((a) => (
            <polyline
              key={a.from + '>' + a.to}
              className="dag-edge"
              points={a.points.map((p) => `${p.x},${p.y}`).join(' ')}
              markerEnd="url(#arrow)"
            />
          ))}
          {l.boxes.map((b) => (
            <g key={b.id} transform={`translate(${b.x - b.w / 2},${b.y - b.h / 2})`} className={`dag-node dag-${b.kind.toLowerCase()}${b.output ? ' dag-output' : ''}`}>
              <title>{`${b.id}: ${b.op} (${b.kind}${b.output ? ', output' : ''})`}</title>
              <rect width={b.w} height={b.h} rx={b.kind === 'IO' ? 12 : 2} />
              <text x={8} y={18}>
                {shortOp(b.op)}
              </text>
              <text x={8} y={36} className="dag-sub">
                {b.id} · {b.kind}
                {b.output ? ' · output' : ''}
              </text>
            </g>
          ))}
        </svg>
      </div>
      <table className="visually-hidden-table">
        <caption>Nodes of {graph.name}</caption>
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">Op</th>
            <th scope="col">Kind</th>
            <th scope="col">Reads</th>
          </tr>
        </thead>
        <tbody>
          {graph.nodes.map((n) => (
            <tr key={n.id}>
              <td>{n.id}</td>
              <td>{n.op}</td>
              <td>{n.kind}</td>
              <td>{n.deps.join(', ') || '–'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  )
}

function RunView({ run }: { run: PlanRun }) {
  const bars = gantt(run.trace ?? [], run.elapsed_us ?? 0)
  const fields = Array.from(new Set(run.candidates.flatMap((c) => Object.keys(c.fields)))).sort()
  return (
    <>
      <h3>Timeline</h3>
      <p>
        Run <code>{run.engine_request_id}</code>: {run.elapsed_us ?? '?'} µs, {run.candidates.length} candidates.
      </p>
      <div className="panel table-wrap">
      <table className="gantt">
        <caption>Per-node timeline (µs from the run&apos;s start)</caption>
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">Ran</th>
            <th scope="col">Start–end</th>
            <th scope="col">Rows in/out</th>
            <th scope="col">Redis trips</th>
            <th scope="col" className="gantt-bar-col">
              Timeline
            </th>
          </tr>
        </thead>
        <tbody>
          {bars.map((b, i) => {
            const t = run.trace![i]
            return (
              <tr key={b.node}>
                <th scope="row">
                  {b.node} <small>{shortOp(b.op)}</small>
                </th>
                <td>
                  {b.kind}, {b.place}
                </td>
                <td>
                  {t.start_us}–{t.end_us} ({b.us} µs)
                </td>
                <td>
                  {t.rows_in}/{t.rows_out}
                </td>
                <td>{t.redis_round_trips}</td>
                <td className="gantt-bar-col">
                  <div className="gantt-track" aria-hidden="true">
                    <div
                      className={`gantt-bar gantt-${b.kind.toLowerCase()}${b.error ? ' gantt-error' : ''}`}
                      style={{ left: `${b.left * 100}%`, width: `${b.width * 100}%` }}
                    />
                  </div>
                  {b.error && <span role="note">failed: {b.error}</span>}
                </td>
              </tr>
            )
          })}
        </tbody>
      </table>
      </div>
      <h3>Output</h3>
      <div className="panel table-wrap">
      <table>
        <caption>{run.candidates.length} candidates</caption>
        <thead>
          <tr>
            <th scope="col">id</th>
            {fields.map((f) => (
              <th scope="col" key={f}>
                {f}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {run.candidates.map((c) => (
            <tr key={c.id}>
              <td>{c.id}</td>
              {fields.map((f) => (
                <td key={f}>{fmt(c.fields[f])}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      </div>
    </>
  )
}

function fmt(v: number | string | undefined): string {
  if (v === undefined) return '–'
  if (typeof v === 'number' && !Number.isInteger(v)) return String(Math.round(v * 1000) / 1000)
  return String(v)
}
