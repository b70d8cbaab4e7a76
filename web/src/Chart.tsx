import { useEffect, useRef } from 'react'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import type { Columns } from './series'

export interface Line {
  label: string
  color: string
  dash?: number[] // a line is told apart by its dash too, not by colour alone
}

// Chart draws time series with uPlot on a canvas sized to its box. The
// figure's caption and the text summary beside it carry the same numbers
// for readers who cannot see the canvas.
export function Chart({ name, title, lines, data, unit }: { name: string; title: string; lines: Line[]; data: Columns; unit: string }) {
  const box = useRef<HTMLDivElement>(null)
  const plot = useRef<uPlot | null>(null)
  const shape = lines.map((l) => l.label).join('\u0000')

  useEffect(() => {
    const el = box.current
    if (!el) return
    const css = getComputedStyle(document.documentElement)
    const fg = css.getPropertyValue('--muted').trim() || '#666'
    const grid = css.getPropertyValue('--line').trim() || '#ddd'
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } }
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: 180,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [axis, { ...axis, size: 50, label: unit, labelSize: 14 }],
      series: [
        {},
        ...lines.map((l) => ({
          label: l.label,
          stroke: l.color,
          width: 2,
          dash: l.dash,
          spanGaps: false,
          // a value between two gaps has no line to draw: show it as a dot
          points: { show: true, size: 6, fill: l.color, filter: isolated },
        })),
      ],
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
    }
    const u = new uPlot(opts, data as uPlot.AlignedData, el)
    plot.current = u
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: 180 }))
    ro.observe(el)
    return () => {
      ro.disconnect()
      u.destroy()
      plot.current = null
    }
    // the chart is rebuilt only when its lines change; new data is set below
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, unit])

  useEffect(() => {
    plot.current?.setData(data as uPlot.AlignedData)
  }, [data])

  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={`${name} chart, last 15 minutes`} />
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
