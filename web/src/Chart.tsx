import { useEffect, useRef, useState, type ReactNode } from 'react'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { exact } from './format'
import { lastValue, type Columns } from './series'

export interface Line {
  label: string
  color: string // a colour token of style.css, e.g. '--c-green'
  dash?: number[] // a line is told apart by its dash too, not by colour alone
}

// useDark follows the system's colour scheme, so a chart redraws in the
// other theme's colours when it changes.
function useDark(): boolean {
  const [q] = useState(() => (typeof matchMedia === 'function' ? matchMedia('(prefers-color-scheme: dark)') : null))
  const [dark, setDark] = useState(() => q?.matches ?? false)
  useEffect(() => {
    if (!q) return
    const on = () => setDark(q.matches)
    q.addEventListener('change', on)
    return () => q.removeEventListener('change', on)
  }, [q])
  return dark
}

function token(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback
}

// Chart draws time series with uPlot on a canvas sized to its box. Its
// legend is the page's own: each line's latest value, or its value under
// the pointer while it hovers the plot, so the figures read without a
// hover. The caption carries the same numbers for readers who cannot see
// the canvas.
export function Chart({
  name,
  title,
  lines,
  data,
  unit,
  format = (v) => String(v),
}: {
  name: string
  title: ReactNode
  lines: Line[]
  data: Columns
  unit: string
  format?: (v: number) => string
}) {
  const box = useRef<HTMLDivElement>(null)
  const plot = useRef<uPlot | null>(null)
  const [hover, setHover] = useState<number | null>(null)
  const dark = useDark()
  const shape = lines.map((l) => l.label + l.color).join('\u0000')

  useEffect(() => {
    const el = box.current
    if (!el) return
    const fg = token('--muted', '#666')
    const grid = token('--line', '#ddd')
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font: '11px system-ui, sans-serif' }
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: 190,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [axis, { ...axis, size: 52, label: unit, labelSize: 14, labelFont: '11px system-ui, sans-serif' }],
      series: [
        {},
        ...lines.map((l) => {
          const c = token(l.color, '#888')
          return {
            label: l.label,
            stroke: c,
            width: 2,
            dash: l.dash,
            spanGaps: false,
            // a value between two gaps has no line to draw: show it as a dot
            points: { show: true, size: 6, fill: c, filter: isolated },
          }
        }),
      ],
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      hooks: { setCursor: [(u) => setHover(u.cursor.idx ?? null)] },
    }
    const u = new uPlot(opts, data as uPlot.AlignedData, el)
    plot.current = u
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: 190 }))
    ro.observe(el)
    return () => {
      ro.disconnect()
      u.destroy()
      plot.current = null
    }
    // the chart is rebuilt only when its lines or the theme change; new
    // data is set below
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, unit, dark])

  useEffect(() => {
    plot.current?.setData(data as uPlot.AlignedData)
  }, [data])

  const at = hover != null && hover < data[0].length ? hover : null
  return (
    <figure className="chart panel">
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={`${name} chart, last 15 minutes`} />
      <ul className="legend" aria-label={`${name}: ${at == null ? 'latest values' : 'values under the pointer'}`}>
        <li className="legend-at" title={at == null ? undefined : exact(data[0][at] * 1000)}>
          {at == null ? 'now' : new Date(data[0][at] * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' })}
        </li>
        {lines.map((l, i) => {
          const col = data[i + 1] ?? []
          const v = at == null ? lastValue(col) : col[at]
          return (
            <li key={l.label}>
              <svg width="22" height="10" aria-hidden="true">
                <line x1="1" y1="5" x2="21" y2="5" stroke={`var(${l.color})`} strokeWidth="2.5" strokeDasharray={l.dash?.join(' ')} />
              </svg>
              {l.label} <b>{v == null ? '–' : format(v)}</b>
            </li>
          )
        })}
      </ul>
    </figure>
  )
}

// isolated picks the points of a line that have no neighbour on either side.
function isolated(u: uPlot, si: number): number[] {
  const d = u.data[si]
  const out: number[] = []
  for (let i = 0; i < d.length; i++) {
    if (d[i] != null && (i === 0 || d[i - 1] == null) && (i === d.length - 1 || d[i + 1] == null)) out.push(i)
  }
  return out
}
